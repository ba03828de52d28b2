"""GGUF models already on this machine: the ones Ollama and LM Studio keep on disk.

A model pulled with ``ollama pull`` is a GGUF file in Ollama's blob store (``~/.ollama/models/blobs/sha256-…``,
named by its hash, found through the manifest of each tag); LM Studio keeps plain ``.gguf`` files under
``~/.lmstudio/models/<publisher>/<repo>/`` (older versions: ``~/.cache/lm-studio/models``). :func:`discover` lists
them with their size, architecture and quantization (read from the GGUF header, not guessed from the name), so
one of them can be the in-process judge without downloading anything again. Nothing here writes or fetches.
"""
from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from engine.llm.backends import GGUF_FILE_TYPES

OLLAMA_MODEL_MEDIA = "application/vnd.ollama.image.model"
MAX_MANIFEST_BYTES = 1 << 20


@dataclass(frozen=True)
class LocalModel:
    source: str  # "Ollama" | "LM Studio"
    name: str  # e.g. "llama3.1:8b" or "lmstudio-community/Meta-Llama-3.1-8B-Instruct-GGUF/…Q4_K_M.gguf"
    path: str
    size_bytes: int
    architecture: str
    quantization: str
    context_length: Optional[int]

    @property
    def label(self) -> str:
        return (f"{self.name} — {self.source}, {self.size_bytes / 1e9:.1f} GB, {self.quantization}, "
                f"{self.architecture or 'unknown architecture'}")


# ----------------------------------------------------------------------------------------------- GGUF header

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_WANTED = ("general.architecture", "general.name", "general.file_type")


class _Reader:
    def __init__(self, fh, limit: int):
        self.fh, self.left = fh, limit

    def read(self, n: int) -> bytes:
        if n < 0 or n > self.left:
            raise ValueError("GGUF header larger than expected")
        self.left -= n
        data = self.fh.read(n)
        if len(data) != n:
            raise ValueError("GGUF header cut off")
        return data

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.read(self.unpack("<Q")).decode("utf-8", errors="replace")

    def value(self, vtype: int):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, count = self.unpack("<I"), self.unpack("<Q")
            if etype in _SCALARS:  # skip without decoding (tokenizer arrays are large)
                self.read(struct.calcsize(_SCALARS[etype]) * count)
            else:
                for _ in range(count):
                    self.value(etype)
            return None
        raise ValueError(f"unknown GGUF value type {vtype}")


def read_gguf_metadata(path: Path, limit: int = 64 << 20) -> dict:
    """The header keys we show (architecture, name, file type, context length) of a GGUF file; reads at most
    ``limit`` bytes of header. Raises ValueError for a file that is not GGUF."""
    out: dict = {}
    with open(path, "rb") as fh:
        r = _Reader(fh, limit)
        if r.read(4) != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        version = r.unpack("<I")
        if version < 2:
            raise ValueError(f"{path}: GGUF version {version} is too old")
        r.unpack("<Q")  # tensor count
        n_kv = r.unpack("<Q")
        for _ in range(n_kv):
            key = r.string()
            val = r.value(r.unpack("<I"))
            if key in _WANTED or key.endswith(".context_length"):
                out[key] = val
            if all(k in out for k in _WANTED) and any(k.endswith(".context_length") for k in out):
                break
    return out


def _describe(source: str, name: str, path: Path) -> Optional[LocalModel]:
    try:
        if not path.is_file():
            return None
        meta = read_gguf_metadata(path)
        size = path.stat().st_size
    except (OSError, ValueError, struct.error):
        return None
    arch = str(meta.get("general.architecture") or "")
    ctx = meta.get(f"{arch}.context_length") if arch else None
    ft = meta.get("general.file_type")
    quant = GGUF_FILE_TYPES.get(int(ft), "unknown") if isinstance(ft, int) else "unknown"
    return LocalModel(source, name, str(path), size, arch, quant, int(ctx) if isinstance(ctx, int) else None)


# ----------------------------------------------------------------------------------------------- stores


def ollama_dirs() -> list[Path]:
    """Where Ollama keeps models: $OLLAMA_MODELS, the user's ~/.ollama/models, the Linux service's folder."""
    dirs = []
    if os.environ.get("OLLAMA_MODELS"):
        dirs.append(Path(os.environ["OLLAMA_MODELS"]).expanduser())
    dirs += [Path.home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models"),
             Path("/var/lib/ollama/.ollama/models")]
    return dirs


def lmstudio_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("LMSTUDIO_MODELS"):
        dirs.append(Path(os.environ["LMSTUDIO_MODELS"]).expanduser())
    dirs += [Path.home() / ".lmstudio" / "models", Path.home() / ".cache" / "lm-studio" / "models"]
    return dirs


def _ollama_models(root: Path) -> list[LocalModel]:
    manifests = root / "manifests"
    if not manifests.is_dir():
        return []
    out = []
    for mf in sorted(p for p in manifests.rglob("*") if p.is_file()):
        try:
            if mf.stat().st_size > MAX_MANIFEST_BYTES:
                continue
            data = json.loads(mf.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        layers = data.get("layers") if isinstance(data, dict) else None
        digest = next((x.get("digest") for x in layers or [] if isinstance(x, dict)
                       and x.get("mediaType") == OLLAMA_MODEL_MEDIA and isinstance(x.get("digest"), str)), None)
        if not digest:
            continue
        rel = mf.relative_to(manifests).parts  # registry / namespace / model / tag
        name = f"{rel[-2]}:{rel[-1]}" if len(rel) >= 2 else mf.name
        if len(rel) >= 3 and rel[-3] != "library":
            name = f"{rel[-3]}/{name}"
        model = _describe("Ollama", name, root / "blobs" / digest.replace(":", "-"))
        if model is not None:
            out.append(model)
    return out


def _lmstudio_models(root: Path) -> list[LocalModel]:
    if not root.is_dir():
        return []
    out = []
    for f in sorted(root.rglob("*.gguf")):
        if "mmproj" in f.name.lower():  # vision projectors are not language models
            continue
        model = _describe("LM Studio", str(f.relative_to(root)), f)
        if model is not None:
            out.append(model)
    return out


def discover(ollama: Optional[Iterable[Path]] = None, lmstudio: Optional[Iterable[Path]] = None) -> list[LocalModel]:
    """Every GGUF model that Ollama or LM Studio keeps on this machine (each file once)."""
    seen: set[str] = set()
    out: list[LocalModel] = []
    for root in (ollama_dirs() if ollama is None else ollama):
        for m in _ollama_models(Path(root)):
            if m.path not in seen:
                seen.add(m.path)
                out.append(m)
    for root in (lmstudio_dirs() if lmstudio is None else lmstudio):
        for m in _lmstudio_models(Path(root)):
            if m.path not in seen:
                seen.add(m.path)
                out.append(m)
    return out
