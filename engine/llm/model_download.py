"""“Get a judge model”: a short curated list of instruction-tuned GGUF judges, downloaded on explicit request.

This is the only network action in the product. It runs only when the user presses the button on the Get a model page (or
runs ``python -m engine get-model KEY``), sends no data (a plain file download from the Hugging Face hub, or from
the ``endpoint`` given, e.g. a hospital mirror), and:

* checks the free disk space against the file's size first;
* shows progress (bytes) through a callback and resumes an interrupted download from its ``.part`` file with
  an HTTP range request (also within one run, when the connection drops);
* verifies the file's sha256 against the hub's LFS sha256 (the ``X-Linked-Etag`` of the file) and deletes a
  file that does not match;
* checks that the result is a GGUF file.

The rest of the app runs with ``HF_HUB_OFFLINE=1``; the download lifts that for its own call only.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from engine.llm.modelfiles import GGUF_MAGIC


class DownloadError(Exception):
    """The download could not be done; the message says why and what to do."""


@dataclass(frozen=True)
class CatalogEntry:
    key: str
    label: str
    repo_id: str
    filename: str
    approx_gb: float  # download size (about)
    ram_gb: float  # memory needed to run it with an 8k context (about)
    licence: str
    note: str = ""


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry("llama-3.1-8b-q4km", "Llama 3.1 8B Instruct · Q4_K_M", "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
                 "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", 4.9, 7.0, "Llama 3.1 Community License",
                 "the size the PDSQI-9 judge papers worked with; 128k context"),
    CatalogEntry("qwen2.5-7b-q4km", "Qwen2.5 7B Instruct · Q4_K_M", "bartowski/Qwen2.5-7B-Instruct-GGUF",
                 "Qwen2.5-7B-Instruct-Q4_K_M.gguf", 4.7, 6.5, "Apache-2.0", "strong JSON following"),
    CatalogEntry("mistral-7b-v0.3-q4km", "Mistral 7B Instruct v0.3 · Q4_K_M", "bartowski/Mistral-7B-Instruct-v0.3-GGUF",
                 "Mistral-7B-Instruct-v0.3-Q4_K_M.gguf", 4.4, 6.0, "Apache-2.0"),
    CatalogEntry("gemma-3-4b-q4km", "Gemma 3 4B IT · Q4_K_M", "bartowski/google_gemma-3-4b-it-GGUF",
                 "google_gemma-3-4b-it-Q4_K_M.gguf", 2.5, 4.0, "Gemma Terms of Use", "for machines with 8 GB RAM"),
    CatalogEntry("phi-3.5-mini-q4km", "Phi-3.5 mini instruct · Q4_K_M", "bartowski/Phi-3.5-mini-instruct-GGUF",
                 "Phi-3.5-mini-instruct-Q4_K_M.gguf", 2.4, 4.0, "MIT", "smallest usable judge"),
)
CATALOG_BY_KEY = {e.key: e for e in CATALOG}


def default_models_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(os.environ.get("SUMCHECK_MODELS_DIR") or Path(user_data_dir("sumcheck")) / "models")


@contextmanager
def _online() -> Iterator[None]:
    """Lift HF_HUB_OFFLINE for this one explicit download."""
    from huggingface_hub import constants

    saved_env, saved_const = os.environ.get("HF_HUB_OFFLINE"), constants.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"] = "0"
    constants.HF_HUB_OFFLINE = False
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved_const
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _fetch(url: str, part: Path, final: Path, size: int, progress: Callable[[int, int], None],
           attempts: int = 4) -> None:
    """Download ``url`` into ``part`` (resuming what is there) and move it to ``final`` when complete."""
    import requests

    last = ""
    for _ in range(attempts):
        start = part.stat().st_size if part.exists() else 0
        if size and start > size:
            part.unlink()
            start = 0
        if size and start == size:
            break
        headers = {"Range": f"bytes={start}-"} if start else {}
        try:
            with requests.get(url, headers=headers, stream=True, timeout=(10, 60), allow_redirects=True) as r:
                if r.status_code not in (200, 206):
                    raise DownloadError(f"the hub answered HTTP {r.status_code} for {final.name}")
                if r.status_code == 200:
                    start = 0  # the server sent the whole file
                done = start
                progress(done, size)
                with part.open("ab" if start else "wb") as fh:
                    for chunk in r.iter_content(1 << 20):
                        fh.write(chunk)
                        done += len(chunk)
                        progress(done, size)
        except requests.RequestException as exc:
            last = f"{exc.__class__.__name__}: {exc}"
            continue
        if not size or part.stat().st_size >= size:
            break
    have = part.stat().st_size if part.exists() else 0
    if size and have != size:
        raise DownloadError(f"the download of {final.name} stopped at {have / 1e6:.0f} of {size / 1e6:.0f} MB "
                            f"({last or 'connection closed'}). Press the button again to resume.")
    part.replace(final)


@dataclass(frozen=True)
class Downloaded:
    path: str
    sha256: str
    size_bytes: int


def download(entry: CatalogEntry, dest: Optional[Path] = None, endpoint: Optional[str] = None,
             progress: Callable[[int, int], None] = lambda done, total: None,
             disk_free: Callable[[Path], int] = lambda p: shutil.disk_usage(p).free) -> Downloaded:
    """Download ``entry`` into ``dest`` (default: the user data folder), resuming a partial download, and
    verify it. Returns the file's path and sha256."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    dest = Path(dest or default_models_dir())
    dest.mkdir(parents=True, exist_ok=True)
    with _online():
        try:
            url = hf_hub_url(entry.repo_id, entry.filename, endpoint=endpoint)
            meta = get_hf_file_metadata(url)
        except Exception as exc:  # network, 404, auth: say which
            raise DownloadError(f"cannot reach the model hub for {entry.repo_id}/{entry.filename}: "
                                f"{exc.__class__.__name__}: {exc}. Check the network or the mirror address.") from exc
        size = int(meta.size or 0)
        expected = (meta.etag or "").strip('"').lower()
        part = dest / (entry.filename + ".part")
        partial = part.stat().st_size if part.exists() else 0
        need = max(0, size - partial) + (64 << 20)
        if size and disk_free(dest) < need:
            raise DownloadError(f"{entry.label} needs {size / 1e9:.1f} GB but only {disk_free(dest) / 1e9:.1f} GB is "
                                f"free in {dest}. Free some space or choose another folder.")
        path = dest / entry.filename
        if not path.exists():
            _fetch(url, dest / (entry.filename + ".part"), path, size, progress)
    digest = _sha256(path)
    if len(expected) == 64 and digest != expected:
        path.unlink(missing_ok=True)
        raise DownloadError(f"{entry.filename} does not match the hub's sha256 ({digest[:12]}… ≠ {expected[:12]}…); "
                            "the file was deleted. Download it again.")
    with path.open("rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise DownloadError(f"{path.name} is not a GGUF file")
    return Downloaded(str(path), digest, path.stat().st_size)
