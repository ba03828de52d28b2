"""LLM backends for the judge: in-process llama.cpp (any GGUF) and an OpenAI-compatible HTTP endpoint.

Both turn chat messages into a prompt, count its tokens with the model's own tokenizer, and generate
JSON-schema-constrained replies. Every generation returns, per generated token, the top log-probabilities
(before sampling), so the judge can compute a probability-weighted "expected" score per item.
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Protocol, Sequence

import numpy as np

from engine.core.jobs import check_cancelled, current_cancel_token, report_tokens
from engine.llm.prompt_fence import CONTROL_STRINGS
from engine.core.stamps import json_key

TOP_LOGPROBS = 20

# GGUF general.file_type -> quantization name (llama.cpp's LLAMA_FTYPE_*)
GGUF_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
               11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
               18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
               25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
               32: "BF16", 36: "TQ1_0", 37: "TQ2_0"}


class BackendError(Exception):
    """The backend could not run; the message says why and what to do."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    prompt_seconds: float  # time to the first generated token (prompt evaluation, minus cached prefix)
    decode_seconds: float
    finish_reason: str = ""
    token_texts: list[str] = field(default_factory=list)
    top_logprobs: list[dict[str, float]] = field(default_factory=list)  # per generated token: text -> logprob
    prompt_new_tokens: Optional[int] = None  # of prompt_tokens, those evaluated now (the rest came from the cache)


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared by the backend itself; callers read it and never probe for methods."""

    concurrent: bool = False  # serves several requests at once (the judge may keep several summaries in flight)
    tokenizer: bool = False  # ``tokenize(text) -> list[int]`` in process, cheaply: a run can be planned in tokens
    saved_prefix: bool = False  # ``use_shared_prefix(prompts, cache_id)``: keeps the shared prompt prefix evaluated
    grammar: bool = True  # output constrained to the JSON schema (grammar or the server's response format)
    logprobs: bool = True  # asks for the rating tokens' log-probabilities (servers that omit them give none)
    reuse_batch: int = 1  # a reused prompt prefix is cut to a multiple of this many tokens


class Backend(Protocol):
    name: str
    capabilities: Capabilities

    def describe(self) -> dict: ...

    def render(self, messages: Sequence[dict]) -> str: ...

    def count_tokens(self, text: str) -> int: ...

    @property
    def n_ctx(self) -> int: ...

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation: ...


# ----------------------------------------------------------------------------------------------- prompts


class RenderedPrompt(str):
    """A rendered chat prompt that remembers which characters the chat template wrote and which came from the
    messages' contents. Backends tokenise contents as plain text: a control string in the data
    (``<start_of_turn>``, ``<|im_start|>``, ``<|eot_id|>`` …) stays text and never becomes a special token."""

    segments: tuple[tuple[str, bool], ...]  # (text, written by the template)

    def __new__(cls, segments: Sequence[tuple[str, bool]]) -> "RenderedPrompt":
        obj = super().__new__(cls, "".join(t for t, _ in segments))
        obj.segments = tuple((t, bool(tpl)) for t, tpl in segments if t)
        return obj


def render_segments(messages: Sequence[dict], render_text) -> RenderedPrompt:
    """Render ``messages`` with ``render_text`` (a chat template), keeping track of the contents: each content is
    replaced by a random stand-in for the rendering, and the stand-ins are then swapped back as content segments."""
    nonce = secrets.token_hex(8)
    marks = [f"\ue000{nonce}:{i}\ue001" for i in range(len(messages))]
    text = render_text([{**m, "content": marks[i]} for i, m in enumerate(messages)])
    parts = re.split("\ue000" + nonce + r":(\d+)\ue001", text)
    segments: list[tuple[str, bool]] = []
    for k, part in enumerate(parts):
        segments.append((part, True) if k % 2 == 0 else (messages[int(part)]["content"], False))
    return RenderedPrompt(segments)


# Chat-template control strings of the common model families. Over HTTP the server applies its own template
# and tokenises what we send, so these are broken up in the data (a word joiner after the first character):
# they still read the same but cannot be parsed as control tokens.
WORD_JOINER = "\u2060"


def neutralise_control_strings(text: str) -> str:
    """``text`` with every chat-template control string broken by a word joiner after its first character."""
    return CONTROL_STRINGS.sub(lambda m: m.group(0)[0] + WORD_JOINER + m.group(0)[1:], text)


# ----------------------------------------------------------------------------------------------- llama.cpp


def _gemma_render(messages: Sequence[dict], bos: str) -> str:
    """Gemma's turn format (its GGUF may carry no chat template). The system text joins the first user turn."""
    out, system = [bos], ""
    for m in messages:
        if m["role"] == "system":
            system = m["content"] + "\n\n"
            continue
        role = "model" if m["role"] == "assistant" else "user"
        content = (system + m["content"]) if role == "user" and system else m["content"]
        if role == "user":
            system = ""
        out.append(f"<start_of_turn>{role}\n{content}<end_of_turn>\n")
    out.append("<start_of_turn>model\n")
    return "".join(out)


def _chatml_render(messages: Sequence[dict]) -> str:
    out = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    return "".join(out) + "<|im_start|>assistant\n"


PREFIX_CACHE_ENV = "SUMCHECK_CACHE_DIR"
PREFIX_CACHE_MAX_FILES = 8  # saved prefixes kept (least recently used ones go) ...
PREFIX_CACHE_MAX_BYTES = 2 << 30  # ... and at most this much (an 8B model's rubric prefix is ~200 MB)
_PREFIX_MAGIC = b"SUMCHECK-KV-PREFIX-1\n"


def gpu_offload_supported() -> bool:
    """Whether the installed llama.cpp build can offload layers to a GPU (CUDA, Metal, Vulkan …)."""
    try:
        import llama_cpp

        return bool(llama_cpp.llama_supports_gpu_offload())
    except (ImportError, AttributeError, OSError):
        return False


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


class LlamaCppBackend:
    """In-process llama.cpp through llama-cpp-python. Load once and reuse (the prompt prefix is cached).

    Prompt reuse: a new prompt reuses the longest common token prefix with what the context already holds, cut to
    a whole number of evaluation batches (``n_batch``). llama.cpp's logits depend on how a prompt is split into
    batches, so a prefix reused at a batch boundary gives exactly the logits of evaluating the prompt from scratch:
    a result never depends on what was evaluated before it. :meth:`use_shared_prefix` declares the prefix every
    judge prompt shares (the rubric); its llama.cpp state is saved to :func:`prefix_cache_dir` once and a fresh
    backend loads it instead of evaluating it — bit-exact as well."""

    name = "llama.cpp"

    def __init__(self, model_path: str | os.PathLike, n_ctx: int = 8192, n_threads: int = 0, n_gpu_layers: int = 0,
                 seed: int = 0):
        from engine.llm.modelfiles import check_gguf, ModelError

        path = Path(model_path)
        try:
            check_gguf(path)
        except ModelError as exc:
            raise BackendError(str(exc)) from exc
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - installed by requirements
            raise BackendError("llama-cpp-python is not installed; run 'make install'") from exc
        self._llama_cpp = llama_cpp
        if not os.environ.get("SUMCHECK_LLAMA_LOG"):  # llama.cpp's load chatter is noise for users
            import logging

            llama_cpp.llama_cpp  # noqa: B018 - the logger module is set up on import
            logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)
        threads = n_threads or max(1, (os.cpu_count() or 2))
        try:
            self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=int(n_ctx), n_threads=threads,
                                       n_threads_batch=threads, n_gpu_layers=int(n_gpu_layers), seed=seed,
                                       logits_all=False, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(f"llama.cpp could not load {path.name}: {exc}. The file may be corrupt or of an "
                               "architecture this llama.cpp build does not support.") from exc
        self.path = path
        self.params = {"n_ctx": int(n_ctx), "n_threads": threads, "n_gpu_layers": int(n_gpu_layers)}
        meta = self.llm.metadata
        self.arch = meta.get("general.architecture", "")
        self.template = meta.get("tokenizer.chat_template")
        self._bos_text = self._piece(self.llm.token_bos())
        self._eos_text = self._piece(self.llm.token_eos())
        self.quantization = GGUF_FILE_TYPES.get(int(meta.get("general.file_type", -1)), "unknown")
        self._formatter = None
        if self.template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            try:
                self._formatter = Jinja2ChatFormatter(template=self.template, eos_token=self._eos_text,
                                                      bos_token=self._bos_text)
            except Exception:  # a template jinja2 cannot compile: fall back to the built-in formats
                self._formatter = None
        self._grammars: dict[str, object] = {}
        self._cached_prompt: Optional[list[int]] = None
        self.last_new_tokens: Optional[int] = None  # prompt tokens the last call evaluated (not from the cache)
        self._cached_logits: Optional[np.ndarray] = None
        self._prefix: Optional[list[int]] = None  # the declared shared prefix (a whole number of batches)
        self._prefix_file: Optional[Path] = None  # where its state is kept (None: not kept on disk)
        self._prefix_on_disk = False
        self.prefix_stats = {"tokens": 0, "loaded": 0, "saved": 0, "evaluated": 0, "error": ""}
        # one llama.cpp context serves every session of the app (loaded once): one generation at a time
        self._gen_lock = threading.Lock()
        self._abort_token = None  # the cancel token of the job whose prompt is being evaluated (see _eval_cancellable)
        backend = self  # the callback holds the backend, not the other way round only: both live as long

        def _abort(_data) -> bool:
            tok = backend._abort_token
            return bool(tok is not None and tok.cancelled)

        self._abort_cb = llama_cpp.ggml_abort_callback(_abort)  # kept: llama.cpp holds only the C pointer

    def _piece(self, token: int) -> str:
        if token < 0:
            return ""
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    @property
    def n_ctx(self) -> int:
        return self.llm.n_ctx()

    def describe(self) -> dict:
        import llama_cpp

        return {"backend": self.name, "model_file": self.path.name, "model_path": str(self.path),
                "quantization": self.quantization, "architecture": self.arch,
                "chat_format": "gguf-template" if self._formatter else ("gemma" if self.arch.startswith("gemma")
                                                                        else "chatml"),
                "llama_cpp_python": llama_cpp.__version__, "gpu_offload": gpu_offload_supported(), **self.params}

    def _render_text(self, messages: Sequence[dict]) -> str:
        if self._formatter is not None:
            text = self._formatter(messages=list(messages)).prompt
        elif self.arch.startswith("gemma"):
            text = _gemma_render(messages, self._bos_text)
        else:
            text = _chatml_render(messages)
        if self._bos_text and not text.startswith(self._bos_text) and self.llm.metadata.get(
                "tokenizer.ggml.add_bos_token", "true") != "false":
            text = self._bos_text + text
        return text

    def render(self, messages: Sequence[dict]) -> RenderedPrompt:
        return render_segments(messages, self._render_text)

    def _special_tokens(self) -> tuple[Optional[re.Pattern], dict[str, int]]:
        """The vocabulary's control (and unknown) tokens — those llama.cpp parses out of text only when asked to
        parse specials — as one alternation, longest first, with their ids. Built once per model. (User-defined
        tokens, e.g. Gemma's whitespace runs, are ordinary text: llama.cpp matches them either way.)"""
        if getattr(self, "_specials", None) is None:
            lc = self._llama_cpp
            vocab = lc.llama_model_get_vocab(self.llm._model.model)
            wanted = lc.LLAMA_TOKEN_ATTR_CONTROL | lc.LLAMA_TOKEN_ATTR_UNKNOWN
            ids: dict[str, int] = {}
            for tok in range(self.llm.n_vocab()):
                if lc.llama_vocab_get_attr(vocab, tok) & wanted:
                    piece = self._piece(tok)
                    if piece:
                        ids.setdefault(piece, tok)
            pattern = re.compile("|".join(re.escape(t) for t in sorted(ids, key=len, reverse=True))) if ids else None
            self._specials = (pattern, ids)
        return self._specials

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text``. A :class:`RenderedPrompt` has its template's control strings parsed as special
        tokens and its contents tokenised as plain text; any other string is plain text throughout (data).

        This is what llama.cpp does with ``special=True`` (split the text at special tokens, tokenise each stretch
        between them on its own), except that only the template's text is searched for special tokens."""
        segments = getattr(text, "segments", None)
        if segments is None:
            return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        pattern, ids = self._special_tokens()
        out: list[int] = []
        stretch: list[str] = []

        def flush() -> None:
            if stretch:
                out.extend(self.llm.tokenize("".join(stretch).encode("utf-8"), add_bos=False, special=False))
                stretch.clear()

        for seg, from_template in segments:
            if not from_template or pattern is None:
                stretch.append(seg)
                continue
            pos = 0
            for m in pattern.finditer(seg):
                stretch.append(seg[pos:m.start()])
                flush()
                out.append(ids[m.group(0)])
                pos = m.end()
            stretch.append(seg[pos:])
        flush()
        return out

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def _grammar(self, schema: dict):
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        return self._grammars[key]

    # -- constrained decoding ------------------------------------------------------------------------
    # llama-cpp-python's own sampler applies the grammar to the whole vocabulary at every step (262k tokens
    # for Gemma: ~35 ms a token on 2 cores). This loop does what llama.cpp's common sampler does instead:
    # pick a token from the raw logits, ask the grammar about that one token, and only when it is rejected
    # apply the grammar to the whole vocabulary and pick again. The output is still exactly
    # grammar-constrained; only the cost changes. The evaluated prompt is kept, so a second sample with the
    # same prompt starts decoding at once.

    def _logits_now(self) -> np.ndarray:
        lc = self._llama_cpp
        ptr = lc.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)).copy()

    @property
    def _batch(self) -> int:
        """Prompt tokens per llama.cpp evaluation call; reuse is cut to a multiple of it (see the class doc)."""
        nb = int(self.llm.n_batch)
        nub = int(getattr(self.llm.context_params, "n_ubatch", nb) or nb)
        return nb if nb % nub == 0 else nb * nub // math.gcd(nb, nub)

    @property
    def reuse_batch(self) -> int:
        """A reused prompt prefix is cut to a multiple of this many tokens (what a run plan must assume)."""
        return self._batch

    @property
    def capabilities(self) -> Capabilities:
        """One llama.cpp context: one generation at a time; tokenizer, saved prefix, grammar and log-probs."""
        return Capabilities(concurrent=False, tokenizer=True, saved_prefix=True, grammar=True, logprobs=True,
                            reuse_batch=self._batch)

    def _eval_cancellable(self, tokens: list[int], start: int, end: int) -> None:
        """Evaluate ``tokens[start:end]`` batch by batch (llama.cpp's own split, so the logits are the same).

        Inside a cancellable job a batch is also cut short: llama.cpp's abort callback asks the job's token between
        graph nodes, the decode returns "aborted", llama-cpp-python leaves ``n_tokens`` where it was, and its next
        evaluation drops every KV cell from there on — so the context stays exactly as before that batch. Only
        prompt batches get the callback (a generated token is one short decode, checked after it)."""
        lc = self._llama_cpp
        token = current_cancel_token()
        step = self._batch
        if token is not None:
            self._abort_token = token
            lc.llama_set_abort_callback(self.llm._ctx.ctx, self._abort_cb, None)
        try:
            report_tokens("prompt", 0, end - start, start)
            for at in range(start, end, step):
                check_cancelled()
                try:
                    self.llm.eval(tokens[at:min(at + step, end)])
                except RuntimeError:
                    check_cancelled()  # aborted because of the cancel: say so
                    raise
                report_tokens("prompt", min(at + step, end) - start, end - start, start)
        finally:
            if token is not None:
                lc.llama_set_abort_callback(self.llm._ctx.ctx, lc.ggml_abort_callback(), None)
                self._abort_token = None

    def _prompt_logits(self, tokens: list[int]) -> np.ndarray:
        """Evaluate ``tokens`` (reusing the longest cached prefix, at a batch boundary) and return the next-token
        logits."""
        if self._cached_prompt == tokens and self._cached_logits is not None:
            self.llm.n_tokens = len(tokens)  # drop the previous sample's tokens; KV entries are overwritten
            self.last_new_tokens = 0
            return self._cached_logits.copy()
        common = 0
        for a, b in zip(self.llm.input_ids[: self.llm.n_tokens], tokens):
            if a != b:
                break
            common += 1
        common = min(common, len(tokens) - 1)
        common -= common % self._batch
        pre = self._prefix
        if pre and len(tokens) > len(pre) and tokens[: len(pre)] == pre:
            common = self._ensure_prefix(tokens, common)
        self.llm.n_tokens = common
        self._cached_prompt, self._cached_logits = None, None
        self.last_new_tokens = len(tokens) - common
        self._eval_cancellable(tokens, common, len(tokens))
        logits = self._logits_now()
        self._cached_prompt, self._cached_logits = list(tokens), logits
        return logits.copy()

    # -- the shared prompt prefix, kept across cases and processes -------------------------------------------

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
        import hashlib

        lc, ctx, path = self._llama_cpp, self.llm._ctx.ctx, self._prefix_file
        try:
            size = int(lc.llama_state_seq_get_size(ctx, 0))
            buf = (ctypes.c_uint8 * size)()
            got = int(lc.llama_state_seq_get_data(ctx, buf, size, 0))
            if got <= 0 or got > size:
                raise OSError(f"llama.cpp returned {got} of {size} state bytes")
            data = memoryview(buf)[:got].tobytes()
            header = json.dumps({"tokens": list(map(int, self._prefix)), "bytes": got,
                                 "sha256": hashlib.sha256(data).hexdigest()}).encode()
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(_PREFIX_MAGIC + len(header).to_bytes(8, "little") + header)
                fh.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            self.prefix_stats["error"] = f"could not save the prompt prefix to {path}: {exc}"
            self._prefix_file = None  # keep working in process
            return
        self._prefix_on_disk = True
        self.prefix_stats["saved"] += 1
        self._prune_prefix_files(path.parent, keep=path)

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
        import hashlib

        lc, ctx, path = self._llama_cpp, self.llm._ctx.ctx, self._prefix_file
        try:
            raw = path.read_bytes()
            if not raw.startswith(_PREFIX_MAGIC):
                raise ValueError("not a prefix file")
            pos = len(_PREFIX_MAGIC)
            hlen = int.from_bytes(raw[pos:pos + 8], "little")
            header = json.loads(raw[pos + 8:pos + 8 + hlen])
            data = raw[pos + 8 + hlen:]
            if (header.get("tokens") != self._prefix or header.get("bytes") != len(data)
                    or header.get("sha256") != hashlib.sha256(data).hexdigest()):
                raise ValueError("the file does not hold this prefix (or is damaged)")
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            return self._drop_prefix_file(f"could not read the saved prompt prefix {path}: {exc}")
        lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
        self.llm.n_tokens = 0
        self._cached_prompt, self._cached_logits = None, None
        src = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if int(lc.llama_state_seq_set_data(ctx, src, len(data), 0)) != len(data):
            lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
            return self._drop_prefix_file(f"llama.cpp refused the saved prompt prefix {path}")
        n = len(self._prefix)
        self.llm.input_ids[:n] = self._prefix
        self.llm.n_tokens = n
        self.prefix_stats["loaded"] += 1
        try:
            os.utime(path)  # recently used: pruned last
        except OSError:
            pass
        return True

    def _drop_prefix_file(self, why: str) -> bool:
        self.prefix_stats["error"] = why
        try:
            self._prefix_file.unlink(missing_ok=True)
        except OSError:
            pass
        self._prefix_on_disk = False
        return False

    def _grammar_sampler(self, schema: dict):
        g = self._grammar(schema)
        vocab = self._llama_cpp.llama_model_get_vocab(self.llm._model.model)
        smpl = self._llama_cpp.llama_sampler_init_grammar(vocab, g._grammar.encode("utf-8"), g._root.encode("utf-8"))
        if not smpl:
            raise BackendError("llama.cpp rejected the output grammar")
        return smpl

    def _allowed(self, smpl, token: int) -> bool:
        lc = self._llama_cpp
        one = (lc.llama_token_data * 1)(lc.llama_token_data(token, 0.0, 0.0))
        arr = lc.llama_token_data_array(one, 1, -1, False)
        lc.llama_sampler_apply(smpl, ctypes.byref(arr))
        return math.isfinite(one[0].logit)

    def _apply_grammar(self, smpl, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """Grammar-masked logits for the candidate token ids (-inf where the grammar forbids the token)."""
        lc = self._llama_cpp
        n = len(ids)
        buf = (lc.llama_token_data * n)()
        view = np.ctypeslib.as_array(buf).view(np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)]))
        view["id"] = ids
        view["logit"] = logits[ids]
        arr = lc.llama_token_data_array(buf, n, -1, False)
        lc.llama_sampler_apply(smpl, ctypes.byref(arr))  # the grammar masks in place (order and size kept)
        return view["logit"].copy()

    def _constrained_logits(self, smpl, logits: np.ndarray, temperature: float) -> np.ndarray:
        """Logits with every grammar-forbidden token at -inf.

        Cheap path: only the SUBSET highest-logit tokens are checked. That is exact when a token outside the
        subset could not be chosen anyway: greedy decoding with an allowed token inside, or sampling where
        every outside token falls under the min-p cut-off relative to the best allowed token. Otherwise the
        whole vocabulary is checked."""
        n = logits.shape[0]
        subset = min(self.SUBSET, n)
        idx = np.argpartition(logits, -subset)[-subset:] if subset < n else np.arange(n)
        masked_sub = self._apply_grammar(smpl, idx.astype(np.int32), logits)
        out = np.full(n, -np.inf, dtype=np.float32)
        out[idx] = masked_sub
        if subset == n or not np.isfinite(masked_sub).any():
            return out if subset == n else self._apply_full(smpl, logits)
        best = float(masked_sub.max())
        floor = float(logits[idx].min())  # every token outside the subset has a logit <= floor
        if temperature <= 0 or floor < best + math.log(self.MIN_P):
            return out
        return self._apply_full(smpl, logits)

    def _apply_full(self, smpl, logits: np.ndarray) -> np.ndarray:
        return self._apply_grammar(smpl, np.arange(logits.shape[0], dtype=np.int32), logits)

    SUBSET = 2048
    MIN_P = 0.05

    @classmethod
    def _pick(cls, logits: np.ndarray, temperature: float, rng: np.random.Generator, top_k: int = 40,
              top_p: float = 0.95) -> int:
        """Greedy, or top-k → top-p → min-p → temperature sampling (llama.cpp's defaults)."""
        if temperature <= 0:
            return int(np.argmax(logits))
        m = float(logits.max())
        cand = np.flatnonzero(logits >= m + math.log(cls.MIN_P))  # min-p on the untempered distribution
        if len(cand) > top_k:
            cand = cand[np.argpartition(logits[cand], -top_k)[-top_k:]]
        z = np.exp(logits[cand].astype(np.float64) - m)
        p = z / z.sum()
        order = np.argsort(-p)
        keep = order[: int(np.searchsorted(np.cumsum(p[order]), top_p) + 1)]
        zt = np.exp((np.log(p[keep]) - np.log(p[keep]).max()) / temperature)
        return int(cand[keep][rng.choice(len(keep), p=zt / zt.sum())])

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation:
        """One grammar-constrained reply. Raises :class:`engine.core.jobs.Cancelled` between prompt batches or after any
        generated token once the calling job is cancelled (the context stays consistent for the next call)."""
        while not self._gen_lock.acquire(timeout=0.2):  # another session's job holds the model: wait, cancellable
            check_cancelled()
        try:
            return self._generate(prompt, schema, max_tokens, temperature, seed, want_logprobs)
        finally:
            self._gen_lock.release()

    def _generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                  want_logprobs: bool) -> Generation:
        lc = self._llama_cpp
        tokens = self.tokenize(prompt)
        if len(tokens) + max_tokens > self.n_ctx:
            raise BackendError(f"prompt of {len(tokens)} tokens plus {max_tokens} for the reply exceeds the "
                               f"context of {self.n_ctx} tokens")
        vocab = lc.llama_model_get_vocab(self.llm._model.model)
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        logits = self._prompt_logits(tokens)
        t_first = time.perf_counter()
        smpl = self._grammar_sampler(schema)
        out_bytes = b""
        token_texts: list[str] = []
        top: list[dict[str, float]] = []
        finish = "length"
        try:
            for _ in range(max_tokens):
                if want_logprobs:
                    cand = np.argpartition(logits, -TOP_LOGPROBS)[-TOP_LOGPROBS:]
                    m = float(logits.max())
                    lse = m + math.log(float(np.exp(logits - m).sum()))
                    top.append({self._piece(int(t)): float(logits[t]) - lse for t in cand})
                tok = self._pick(logits, temperature, rng)
                if not self._allowed(smpl, tok):  # rare once the model follows the format
                    masked = self._constrained_logits(smpl, logits, temperature)
                    if not np.isfinite(masked).any():
                        raise BackendError("the output grammar allows no further token")
                    tok = self._pick(masked, temperature, rng)
                if lc.llama_vocab_is_eog(vocab, tok):
                    finish = "stop"
                    if want_logprobs:
                        top.pop()
                    break
                lc.llama_sampler_accept(smpl, tok)
                piece = self.llm.detokenize([tok])
                out_bytes += piece
                token_texts.append(piece.decode("utf-8", errors="replace"))
                if b"}" in piece and _complete_json(out_bytes):
                    finish = "stop"
                    break
                check_cancelled()  # within the call: the token just taken is accepted, nothing half-done
                report_tokens("decode", len(token_texts), max_tokens)
                self.llm.eval([tok])
                logits = self._logits_now()
        finally:
            lc.llama_sampler_free(smpl)
        t1 = time.perf_counter()
        return Generation(text=out_bytes.decode("utf-8", errors="replace"), prompt_tokens=len(tokens),
                          completion_tokens=len(token_texts), prompt_seconds=t_first - t0,
                          decode_seconds=t1 - t_first, finish_reason=finish,
                          token_texts=token_texts if want_logprobs else [], top_logprobs=top,
                          prompt_new_tokens=self.last_new_tokens)


def _complete_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
        return True
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


# ----------------------------------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class ServerInfo:
    """What an OpenAI-compatible server says about itself (each field None where it does not say)."""

    dialect: str  # llama.cpp | vllm | ollama | lmstudio | openai-compatible
    models: tuple[str, ...]
    n_ctx: Optional[int]
    n_ctx_source: str  # where the context size came from
    tokenize: Optional[str]  # "llama.cpp" | "vllm" | None (no tokenizer endpoint)


# Model families whose tokenizer ships with this program (the embedded Gemma 3 GGUF): counts for them are exact.
_BUNDLED_TOKENIZER_FAMILIES = ("gemma-3", "gemma3")
ESTIMATE_BYTES_PER_TOKEN = 3.0  # BPE tokenizers average ~4 bytes per token on English clinical text
ESTIMATE_MARGIN = 1.15


class OpenAIHTTPBackend:
    """An OpenAI-compatible server: llama.cpp's server, vLLM, Ollama, LM Studio (on this machine or the hospital
    network).

    * Replies come from ``/v1/chat/completions`` with a JSON-schema response format.
    * Token counts: the server's ``/tokenize`` (llama.cpp or vLLM style) when it has one; otherwise the bundled
      Gemma 3 tokenizer for Gemma 3 models, else a stated conservative estimate (UTF-8 bytes / 3, plus 15 %).
      :meth:`describe` says which was used.
    * Context size: read from the server where it says it (llama.cpp ``/props``, vLLM ``max_model_len``, Ollama
      ``/api/show``, LM Studio ``/api/v0/models``), else the ``n_ctx`` given (the Settings value).
    * HTTP through ``requests`` with timeouts and retries with exponential backoff on 429, 5xx and dropped
      connections (``Retry-After`` honoured)."""

    name = "openai-http"
    # a server takes several requests at once; counting tokens costs a request, so no run plan in tokens
    capabilities = Capabilities(concurrent=True, tokenizer=False, saved_prefix=False, grammar=True, logprobs=True)

    def __init__(self, base_url: str, model: str = "", api_key: str = "", n_ctx: int = 8192, timeout: float = 600,
                 retries: int = 4, backoff: float = 0.5, probe: bool = True):
        import requests
        from requests.adapters import HTTPAdapter
        from urllib3.util.retry import Retry

        self.base = base_url.rstrip("/")
        if self.base.endswith("/v1"):
            self.base = self.base[:-3]
        self.model = model
        self.api_key = api_key
        self._n_ctx_setting = int(n_ctx)
        self.timeout = timeout
        self._messages_by_prompt: dict[str, list[dict]] = {}
        self._requests = requests
        self.session = requests.Session()
        retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                      status_forcelist=(429, 500, 502, 503, 504), allowed_methods=None, raise_on_status=False,
                      respect_retry_after_header=True)
        adapter = HTTPAdapter(max_retries=retry, pool_maxsize=32)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if api_key:
            self.session.headers["Authorization"] = f"Bearer {api_key}"
        self._info: Optional[ServerInfo] = None
        self._token_method: Optional[str] = None
        self._gemma_counter = None
        self._probe = probe

    # -- transport
    def _call(self, method: str, path: str, body: Optional[dict] = None, quiet: bool = False):
        """(status, JSON or None). Raises BackendError when the server cannot be reached at all; with ``quiet`` an
        error status is returned rather than raised (probing what a server offers)."""
        url = self.base + path
        try:
            r = self.session.request(method, url, json=body, timeout=(min(10.0, self.timeout), self.timeout))
        except self._requests.RequestException as exc:
            raise BackendError(f"cannot reach {url}: {exc.__class__.__name__}: {exc}. Is the server running, and is "
                               "the address right (Ollama: http://127.0.0.1:11434/v1, LM Studio: "
                               "http://127.0.0.1:1234/v1, llama.cpp server: http://127.0.0.1:8080/v1)?") from exc
        try:
            data = r.json()
        except ValueError:
            data = None
        if r.status_code >= 400 and not quiet:
            raise BackendError(f"{url} answered HTTP {r.status_code}: {r.text[:300]}")
        return r.status_code, data

    def _post(self, path: str, body: dict) -> dict:
        status, data = self._call("POST", path, body)
        if not isinstance(data, dict):
            raise BackendError(f"{self.base}{path} did not answer with a JSON object (HTTP {status})")
        return data

    # -- what the server says about itself
    def server_info(self) -> ServerInfo:
        if self._info is None:
            self._info = self._discover()
        return self._info

    def _discover(self) -> ServerInfo:
        models: list[str] = []
        n_ctx: Optional[int] = None
        source = "settings"
        dialect = "openai-compatible"
        status, data = self._call("GET", "/v1/models", quiet=True)
        entries = (data or {}).get("data") if isinstance(data, dict) else None
        for m in entries or []:
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                models.append(m["id"])
                if m.get("owned_by") == "vllm":
                    dialect = "vllm"
                if isinstance(m.get("max_model_len"), int) and (not self.model or m["id"] == self.model):
                    n_ctx, source, dialect = m["max_model_len"], "vLLM /v1/models max_model_len", "vllm"
                meta = m.get("meta")
                if n_ctx is None and isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):
                    dialect = "llama.cpp"
        if n_ctx is None:  # llama.cpp server
            status, props = self._call("GET", "/props", quiet=True)
            if status == 200 and isinstance(props, dict):
                dgs = props.get("default_generation_settings") or {}
                val = dgs.get("n_ctx") if isinstance(dgs, dict) else None
                val = val if isinstance(val, int) else props.get("n_ctx")
                if isinstance(val, int) and val > 0:
                    n_ctx, source, dialect = val, "llama.cpp /props n_ctx", "llama.cpp"
        if n_ctx is None:  # LM Studio's own REST API
            status, lm = self._call("GET", "/api/v0/models", quiet=True)
            for m in ((lm or {}).get("data") or []) if isinstance(lm, dict) else []:
                if isinstance(m, dict) and (not self.model or m.get("id") == self.model):
                    val = m.get("loaded_context_length") or m.get("max_context_length")
                    if isinstance(val, int) and val > 0:
                        n_ctx, source, dialect = val, "LM Studio /api/v0/models", "lmstudio"
                        break
        if n_ctx is None:  # Ollama
            name = self.model or (models[0] if models else "")
            status, show = self._call("POST", "/api/show", {"model": name}, quiet=True) if name else (404, None)
            if status == 200 and isinstance(show, dict):
                dialect = "ollama"
                params = str(show.get("parameters") or "")
                m = re.search(r"^\s*num_ctx\s+(\d+)", params, re.MULTILINE)
                info = show.get("model_info") or {}
                trained = next((v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)),
                               None) if isinstance(info, dict) else None
                if m:
                    n_ctx, source = int(m.group(1)), "Ollama /api/show num_ctx"
                elif trained:
                    # Ollama serves with its default window unless num_ctx is set; we send num_ctx with each request
                    n_ctx = min(trained, self._n_ctx_setting) if self._n_ctx_setting else trained
                    source = "Ollama /api/show context_length (capped by Settings; sent as num_ctx)"
        tokenize = self._probe_tokenize()
        return ServerInfo(dialect, tuple(models), n_ctx, source if n_ctx else "settings", tokenize)

    def _probe_tokenize(self) -> Optional[str]:
        status, data = self._call("POST", "/tokenize", {"content": "probe"}, quiet=True)
        if status == 200 and isinstance(data, dict) and isinstance(data.get("tokens"), list):
            return "llama.cpp"
        status, data = self._call("POST", "/tokenize", {"model": self.model, "prompt": "probe"}, quiet=True)
        if status == 200 and isinstance(data, dict) and isinstance(data.get("count"), int):
            return "vllm"
        return None

    def list_models(self) -> list[str]:
        return list(self.server_info().models)

    @property
    def n_ctx(self) -> int:
        if self._probe:
            info = self.server_info()
            if info.n_ctx:
                return int(info.n_ctx)
        return self._n_ctx_setting

    def describe(self) -> dict:
        d = {"backend": self.name, "model_file": self.model or "(server default)", "endpoint": self.base,
             "quantization": "unknown", "n_ctx": self.n_ctx,
             "data_control_strings": "neutralised (word joiner): the server tokenises the messages"}
        if self._probe:
            info = self.server_info()
            d.update(dialect=info.dialect, n_ctx_source=info.n_ctx_source)
        if self._token_method:
            d["token_count"] = self._token_method
        d["response_format"] = getattr(self, "_schema_style", "json_schema")
        return d

    def render(self, messages: Sequence[dict]) -> str:
        # the server applies its own chat template; keep the messages for generate()
        text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
        self._messages_by_prompt[text] = list(messages)
        return text

    def count_tokens(self, text: str) -> int:
        how = self.server_info().tokenize if self._probe else self._probe_tokenize()
        if how == "llama.cpp":
            self._token_method = "server /tokenize (llama.cpp)"
            return len(self._post("/tokenize", {"content": text})["tokens"])
        if how == "vllm":
            self._token_method = "server /tokenize (vLLM)"
            return int(self._post("/tokenize", {"model": self.model, "prompt": text})["count"])
        if any(f in self.model.lower().replace(" ", "") for f in _BUNDLED_TOKENIZER_FAMILIES):
            counter = self._gemma()
            if counter is not None:
                self._token_method = "bundled Gemma 3 tokenizer (the server has no /tokenize)"
                return counter(text)
        self._token_method = (f"estimate: UTF-8 bytes / {ESTIMATE_BYTES_PER_TOKEN:g} + {ESTIMATE_MARGIN - 1:.0%} "
                              "margin (the server has no /tokenize)")
        return math.ceil(len(text.encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN * ESTIMATE_MARGIN)

    def _response_format(self, schema: dict) -> dict:
        """The JSON-schema response format in the style this server accepts (found on the first refusal)."""
        if getattr(self, "_schema_style", "json_schema") == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "pdsqi9", "schema": schema, "strict": True}}

    def _gemma(self):
        if self._gemma_counter is None:
            try:
                from engine.llm.modelfiles import SMOKE_EMBEDDED, embedded_model_path, judge_token_counter

                counter, how = judge_token_counter(str(embedded_model_path(SMOKE_EMBEDDED)))
                self._gemma_counter = counter if how == "judge-model tokens" else False
            except Exception:  # no embedded model here: fall back to the estimate
                self._gemma_counter = False
        return self._gemma_counter or None

    def generate(self, prompt: str, schema: dict, max_tokens: int, temperature: float, seed: int,
                 want_logprobs: bool) -> Generation:
        check_cancelled()  # a request once sent runs to its end on the server: stop before sending the next
        messages = self._messages_by_prompt.get(prompt) or [{"role": "user", "content": prompt}]
        messages = [{**m, "content": neutralise_control_strings(m["content"])} for m in messages]
        body = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature, "seed": seed,
                "response_format": self._response_format(schema)}
        if self.model:
            body["model"] = self.model
        if self._probe and self.server_info().dialect == "ollama":
            body["options"] = {"num_ctx": self.n_ctx}  # Ollama otherwise serves with its small default window
        if want_logprobs:
            body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        t0 = time.perf_counter()
        try:
            r = self._post("/v1/chat/completions", body)
        except BackendError as exc:
            # llama-cpp-python's server takes only {"type": "json_object", "schema": ...}; others take json_schema
            if getattr(self, "_schema_style", "json_schema") != "json_schema" or "response_format" not in str(exc):
                raise
            self._schema_style = "json_object"
            body["response_format"] = self._response_format(schema)
            r = self._post("/v1/chat/completions", body)
        t1 = time.perf_counter()
        try:
            choice = r["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"unexpected reply from {self.base}: {str(r)[:300]}") from exc
        usage = r.get("usage") or {}
        token_texts, top = [], []
        for entry in ((choice.get("logprobs") or {}).get("content") or []):
            token_texts.append(entry.get("token", ""))
            top.append({t["token"]: t["logprob"] for t in entry.get("top_logprobs", [])})
        return Generation(text=text, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", len(token_texts))),
                          prompt_seconds=0.0, decode_seconds=t1 - t0, finish_reason=choice.get("finish_reason", ""),
                          token_texts=token_texts, top_logprobs=top)
