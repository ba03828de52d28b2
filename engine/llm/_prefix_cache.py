"""Evaluated prompt states of the in-process llama.cpp backend, kept on disk: the shared prefix and each kept head.

Every case's prompts start with the same instructions and rubric (:mod:`engine.llm.case_record`).
:class:`SavedPrefix` (a part of :class:`engine.llm.llama.LlamaCppBackend`) evaluates that prefix once, saves its
llama.cpp state under :func:`prefix_cache_dir` (checked by a magic header and the model, pruned to the most recent
files and bytes) and lets a fresh backend load it instead of evaluating it again: bit-exact, because the prefix is
cut at a whole number of evaluation batches. With :meth:`SavedPrefix.keep_on_disk` every prompt head the backend
holds for the prompts to come (a case's record, the summary the omission questions share) is saved the same way,
keyed by the model and the head's tokens, so a reopened case reads nothing again. It relies on its host's llama
context (``self.llm``, ``self._llama_cpp``), its batch size (``self._batch``), its cancellable evaluation
(``self._eval_cancellable``) and its prompt cache (``self._cached_prompt``, ``self._cached_logits``).
"""
from __future__ import annotations

import ctypes
import json
import os
import secrets
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from engine.core import json_key


PREFIX_CACHE_ENV = "SUMCHECK_CACHE_DIR"
PREFIX_CACHE_MAX_FILES = 64  # saved prompt states kept (least recently used ones go) ...
PREFIX_CACHE_MAX_BYTES = 2 << 30  # ... and at most this much (a 1.5B's case record of 4,000 tokens is ~115 MB)
_PREFIX_MAGIC = b"SUMCHECK-KV-PREFIX-1\n"
def prefix_cache_dir() -> Path:
    """Where evaluated prompt prefixes are kept: ``$SUMCHECK_CACHE_DIR/prefix``, else the user cache dir's."""
    env = os.environ.get(PREFIX_CACHE_ENV, "").strip()
    if env:
        base = Path(env).expanduser()
    else:
        try:
            from platformdirs import user_cache_dir

            base = Path(user_cache_dir("sumcheck"))
        except ImportError:  # pragma: no cover - platformdirs is a requirement
            base = Path.home() / ".cache" / "sumcheck"
    return base / "prefix"


class SavedPrefix:
    """Evaluate, save, load and prune the shared prompt prefix (mixed into the llama.cpp backend)."""

    def use_shared_prefix(self, prompts: Sequence[str], cache_id: Optional[str] = None) -> int:
        """Declare the prefix that every prompt to come shares, as the common token prefix of ``prompts`` (two or
        more renderings that differ right after it), cut to a whole number of batches. With ``cache_id`` (what
        identifies the model file and the prompt, e.g. its sha256 and prompt version) the prefix's llama.cpp state
        is kept in :func:`prefix_cache_dir`, keyed by that, the llama.cpp version, the context settings and the
        prefix tokens: the first prompt that starts with it saves it, a fresh backend loads it instead of
        evaluating it. Returns the prefix length in tokens (0: none)."""
        toks = [self.tokenize(p) for p in prompts]
        n = 0
        if len(toks) >= 2:
            for column in zip(*toks):
                if any(t != column[0] for t in column):
                    break
                n += 1
        n -= n % self._batch
        prefix = toks[0][:n] if n else None
        path = None
        if prefix and cache_id:
            import hashlib

            import llama_cpp

            meta = {"id": cache_id, "tokens": hashlib.sha256(np.asarray(prefix, dtype=np.int32).tobytes()).hexdigest(),
                    "n": n, "llama_cpp_python": llama_cpp.__version__, "n_batch": self._batch,
                    "type_k": int(self.llm.context_params.type_k), "type_v": int(self.llm.context_params.type_v),
                    **self.params}
            key = json_key(meta)
            path = prefix_cache_dir() / f"{key[:40]}.kvprefix"
        if prefix != self._prefix or path != self._prefix_file:
            self._prefix, self._prefix_file = prefix, path
            self._prefix_on_disk = bool(path and path.is_file())
        self.prefix_stats["tokens"] = n
        return n

    def _ensure_prefix(self, tokens: list[int], common: int) -> int:
        """Make the context hold the declared prefix (``tokens`` start with it; ``common`` tokens are held) and
        return how many tokens of ``tokens`` it now holds. Loads the saved state, or evaluates the prefix and saves
        it; every split is at a batch boundary, so the logits are those of a cold evaluation."""
        n = len(self._prefix)
        if self._prefix_file is None:
            return common  # nothing kept on disk: ordinary reuse
        if not self._prefix_on_disk:
            if common < n:
                self.llm.n_tokens = common
                self._eval_cancellable(tokens, common, n)
                self.prefix_stats["evaluated"] += 1
            else:  # the context holds more than the prefix: keep only the prefix for saving
                self.llm.n_tokens = n
                self.llm._ctx.kv_cache_seq_rm(-1, n, -1)
            self._save_prefix()
            return n
        if common >= n:
            return common
        if self._load_prefix():
            return n
        self.llm.n_tokens = common  # the saved state was unusable (and is gone): evaluate and save it again
        self._eval_cancellable(tokens, common, n)
        self.prefix_stats["evaluated"] += 1
        self._save_prefix()
        return n

    def _save_prefix(self) -> None:
        """Write the context's state (exactly the prefix) to the prefix file, atomically; errors only disable it."""
        path = self._prefix_file
        error = self._save_state(path, self._prefix)
        if error:
            self.prefix_stats["error"] = error
            self._prefix_file = None  # keep working in process
            return
        self._prefix_on_disk = True
        self.prefix_stats["saved"] += 1

    def _save_state(self, path: Path, tokens: Sequence[int]) -> str:
        """Write the context's state (exactly ``tokens``) to ``path`` atomically and prune the folder; returns ""
        or why it could not be written."""
        import hashlib

        lc, ctx = self._llama_cpp, self.llm._ctx.ctx
        try:
            size = int(lc.llama_state_seq_get_size(ctx, 0))
            buf = (ctypes.c_uint8 * size)()
            got = int(lc.llama_state_seq_get_data(ctx, buf, size, 0))
            if got <= 0 or got > size:
                raise OSError(f"llama.cpp returned {got} of {size} state bytes")
            data = memoryview(buf)[:got].tobytes()
            header = json.dumps({"tokens": list(map(int, tokens)), "bytes": got,
                                 "sha256": hashlib.sha256(data).hexdigest()}).encode()
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(_PREFIX_MAGIC + len(header).to_bytes(8, "little") + header)
                fh.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            return f"could not save the evaluated prompt to {path}: {exc}"
        self._prune_prefix_files(path.parent, keep=path)
        return ""

    @staticmethod
    def _prune_prefix_files(folder: Path, keep: Path) -> None:
        """Keep ``keep`` and the most recently used others within the count and size limits."""
        try:
            files = sorted(((p.stat().st_mtime, p.stat().st_size, p) for p in folder.glob("*.kvprefix") if p != keep),
                           reverse=True)
            total = keep.stat().st_size
            for i, (_, size, p) in enumerate(files):
                total += size
                if i + 1 >= PREFIX_CACHE_MAX_FILES or total > PREFIX_CACHE_MAX_BYTES:
                    p.unlink(missing_ok=True)
        except OSError:
            pass

    def _load_prefix(self) -> bool:
        """Load the saved prefix state into the (cleared) context; False (file removed) when it is unusable."""
        error = self._load_state(self._prefix_file, self._prefix)
        if error:
            return self._drop_prefix_file(error)
        self.prefix_stats["loaded"] += 1
        return True

    def _load_state(self, path: Path, tokens: Sequence[int]) -> str:
        """Load the state of exactly ``tokens`` saved at ``path`` into the cleared context (it then holds them);
        returns "" or why the file is unusable (it is then removed and the context is empty)."""
        import hashlib

        lc, ctx = self._llama_cpp, self.llm._ctx.ctx
        tokens = list(map(int, tokens))
        try:
            raw = path.read_bytes()
            if not raw.startswith(_PREFIX_MAGIC):
                raise ValueError("not a saved prompt state")
            pos = len(_PREFIX_MAGIC)
            hlen = int.from_bytes(raw[pos:pos + 8], "little")
            header = json.loads(raw[pos + 8:pos + 8 + hlen])
            data = raw[pos + 8 + hlen:]
            if (header.get("tokens") != tokens or header.get("bytes") != len(data)
                    or header.get("sha256") != hashlib.sha256(data).hexdigest()):
                raise ValueError("the file does not hold this prompt (or is damaged)")
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            _unlink(path)
            return f"could not read the saved prompt state {path}: {exc}"
        lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
        self.llm.n_tokens = 0
        self._cached_prompt, self._cached_logits = None, None
        src = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if int(lc.llama_state_seq_set_data(ctx, src, len(data), 0)) != len(data):
            lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
            _unlink(path)
            return f"llama.cpp refused the saved prompt state {path}"
        n = len(tokens)
        self.llm.input_ids[:n] = tokens
        self.llm.n_tokens = n
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return ""

    # -- kept states: any prompt head a caller holds (a case's record), saved once and loaded after

    def keep_on_disk(self, cache_id: Optional[str]) -> None:
        """Keep every evaluated prompt head that :meth:`next_token` or a kept :func:`~engine.llm.backends.keep_messages`
        prompt holds on disk under :func:`prefix_cache_dir`, keyed by ``cache_id`` (the model file's sha256), the
        llama.cpp version, the context settings and the head's tokens (its prompt version and content): a fresh
        backend loads it instead of evaluating it. None: kept in process only. A model with sliding-window attention
        (Gemma 3) keeps its heads in process only: restoring its saved state of a 2,200-token record gave another
        reply than evaluating it (a model without one, Qwen2.5, gave the same reply and scores)."""
        self._keep_id = cache_id or None

    def _kept_path(self, tokens: Sequence[int]) -> Optional[Path]:
        cache_id = getattr(self, "_keep_id", None)
        if not cache_id or not tokens or self.sliding_window:
            return None
        import hashlib

        import llama_cpp

        meta = {"id": cache_id, "kept": hashlib.sha256(np.asarray(tokens, dtype=np.int32).tobytes()).hexdigest(),
                "n": len(tokens), "llama_cpp_python": llama_cpp.__version__, "n_batch": self._batch,
                "type_k": int(self.llm.context_params.type_k), "type_v": int(self.llm.context_params.type_v),
                **self.params}
        return prefix_cache_dir() / f"{json_key(meta)[:40]}.kvprefix"

    def _load_kept(self, tokens: Sequence[int]) -> bool:
        """Load the saved state of ``tokens`` when there is one (True: the context now holds exactly them). A file of
        another model, prompt or llama.cpp is never found (its key differs); a damaged one is discarded with a log
        line."""
        path = self._kept_path(tokens)
        if path is None or not path.is_file():
            return False
        error = self._load_state(path, tokens)
        if error:
            import logging

            logging.getLogger("sumcheck").warning("%s; evaluating it again", error)
            self.kept_stats["discarded"] += 1
            return False
        self.kept_stats["loaded"] += 1
        self.kept_stats["loaded_tokens"] += len(tokens)
        return True

    def _save_kept(self, tokens: Sequence[int]) -> None:
        """Save the context's state, which holds exactly ``tokens``, when kept on disk (errors are logged only)."""
        path = self._kept_path(tokens)
        if path is None or path.is_file():
            return
        self.llm._ctx.kv_cache_seq_rm(-1, len(tokens), -1)
        error = self._save_state(path, tokens)
        if error:
            import logging

            logging.getLogger("sumcheck").warning(error)
        else:
            self.kept_stats["saved"] += 1

    def _drop_prefix_file(self, why: str) -> bool:
        self.prefix_stats["error"] = why
        _unlink(self._prefix_file)
        self._prefix_on_disk = False
        return False


def _unlink(path: Optional[Path]) -> None:
    try:
        if path is not None:
            path.unlink(missing_ok=True)
    except OSError:
        pass
