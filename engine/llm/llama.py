"""In-process llama.cpp through llama-cpp-python: chat templates that keep data out of control tokens, grammar-
constrained sampling with log-probabilities, bit-exact prompt reuse and the saved rubric prefix.
"""
from __future__ import annotations

import math
import os
import re
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from engine.core import check_cancelled, current_cancel_token, report_tokens
from engine.llm._constrained_decoding import (MIN_P, SUBSET, complete_json, constrained_logits, grammar_for,
                                              grammar_sampler, logits_now, pick, token_allowed, top_logprobs)
from engine.llm._next_token import NextTokenStep
from engine.llm._prefix_cache import SavedPrefix
from engine.llm._threads import ThreadGovernor
from engine.llm.backends import (BackendError, Capabilities, Generation, GGUF_FILE_TYPES, RenderedPrompt,
                                 render_segments, split_rendered)


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


def gpu_offload_supported() -> bool:
    """Whether the installed llama.cpp build can offload layers to a GPU (CUDA, Metal, Vulkan …)."""
    try:
        import llama_cpp

        return bool(llama_cpp.llama_supports_gpu_offload())
    except (ImportError, AttributeError, OSError):
        return False


class LlamaCppBackend(SavedPrefix, NextTokenStep):
    """In-process llama.cpp through llama-cpp-python. Load once and reuse (the prompt prefix is cached).

    Prompt reuse: a new prompt reuses the longest common token prefix with what the context already holds, cut to
    a whole number of evaluation batches (``n_batch``). llama.cpp's logits depend on how a prompt is split into
    batches, so a prefix reused at a batch boundary gives exactly the logits of evaluating the prompt from scratch:
    a result never depends on what was evaluated before it. :meth:`use_shared_prefix` declares the prefix every
    judge prompt shares (the rubric); its llama.cpp state is saved to :func:`engine.llm._prefix_cache.prefix_cache_dir`
    once and a fresh backend loads it instead of evaluating it — bit-exact as well."""

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
        verbose = bool(os.environ.get("SUMCHECK_LLAMA_LOG"))
        if not verbose:  # llama.cpp's load chatter is noise for users
            import logging

            llama_cpp.llama_cpp  # noqa: B018 - the logger module is set up on import
            logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)
        threads = n_threads or max(1, (os.cpu_count() or 2))
        try:
            self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=int(n_ctx), n_threads=threads,
                                       n_threads_batch=threads, n_gpu_layers=int(n_gpu_layers), seed=seed,
                                       logits_all=False, verbose=verbose)
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(f"llama.cpp could not load {path.name}: {exc}. The file may be corrupt or of an "
                               "architecture this llama.cpp build does not support.") from exc
        self.path = path
        self.params = {"n_ctx": int(n_ctx), "n_threads": threads, "n_gpu_layers": int(n_gpu_layers)}
        self.threads = ThreadGovernor(threads)  # the count in use follows the measured speeds (engine.llm._threads)
        self._threads_now = threads
        meta = self.llm.metadata
        self.arch = meta.get("general.architecture", "")
        # sliding-window attention (Gemma 3): a saved state of a long head was measured not to restore bit-exactly, so
        # such a model keeps its prompt heads in process only (SavedPrefix.keep_on_disk)
        self.sliding_window = meta.get(f"{self.arch}.attention.sliding_window")
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
        self._keep_id: Optional[str] = None  # kept prompt heads are saved on disk under this model id (keep_on_disk)
        # kept prompt heads (a case's record, a summary): states loaded, saved and discarded; their tokens loaded
        # and evaluated
        self.kept_stats = {"loaded": 0, "loaded_tokens": 0, "saved": 0, "discarded": 0, "evaluated_tokens": 0}
        self._prompt_tokens_evaluated = 0  # every prompt token this backend evaluated (token_counts)
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

    def special_token_ids(self) -> set[int]:
        """Ids of the vocabulary's control and unknown tokens (read by :meth:`tokenize` only in a template's text)."""
        return set(self._special_tokens()[1].values())

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
        return grammar_for(self._grammars, schema)

    # -- constrained decoding (how and why: engine.llm._constrained_decoding) --------------------------

    def _logits_now(self) -> np.ndarray:
        return logits_now(self._llama_cpp, self.llm)

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
        """One llama.cpp context: one generation at a time; tokenizer, saved prefix, grammar, log-probs and one-step
        answers with the record kept evaluated; fast writing only with layers offloaded to a GPU."""
        return Capabilities(concurrent=False, tokenizer=True, saved_prefix=True, grammar=True, logprobs=True,
                            reuse_batch=self._batch, next_token=True,
                            fast_decode=self.params["n_gpu_layers"] != 0 and gpu_offload_supported())

    def _use_threads(self, n: int) -> None:
        """Decode with ``n`` threads from the next step on. Prompt batches keep the configured count: the governor
        measures decoding only, and a count it tried for one window must not slow the prompts that follow."""
        if n != self._threads_now:
            self._llama_cpp.llama_set_n_threads(self.llm._ctx.ctx, n, self.params["n_threads"])
            self._threads_now = n

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
                self._prompt_tokens_evaluated += min(at + step, end) - at
                report_tokens("prompt", min(at + step, end) - start, end - start, start)
        finally:
            if token is not None:
                lc.llama_set_abort_callback(self.llm._ctx.ctx, lc.ggml_abort_callback(), None)
                self._abort_token = None

    def _recalled_logits(self, tokens: list[int]) -> Optional[np.ndarray]:
        """The logits kept after evaluating exactly ``tokens`` (a second sample of the same prompt), the context cut
        back to them; None when the last evaluated prompt was another."""
        if self._cached_prompt != tokens or self._cached_logits is None:
            return None
        self.llm.n_tokens = len(tokens)  # drop the previous sample's tokens; KV entries are overwritten
        self.last_new_tokens = 0
        return self._cached_logits.copy()

    def _remembered_logits(self, tokens: list[int]) -> np.ndarray:
        """The logits after ``tokens``, just evaluated, kept for :meth:`_recalled_logits`."""
        logits = self._logits_now()
        self._cached_prompt, self._cached_logits = list(tokens), logits
        return logits.copy()

    def _prompt_logits(self, tokens: list[int]) -> np.ndarray:
        """Evaluate ``tokens`` (reusing the longest cached prefix, at a batch boundary) and return the next-token
        logits."""
        recalled = self._recalled_logits(tokens)
        if recalled is not None:
            return recalled
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
        return self._remembered_logits(tokens)

    # -- the shared prompt prefix, kept across cases and processes -------------------------------------------

    def _grammar_sampler(self, schema: dict):
        return grammar_sampler(self._llama_cpp, self.llm, self._grammar(schema))

    def _allowed(self, smpl, token: int) -> bool:
        return token_allowed(self._llama_cpp, smpl, token)

    def _constrained_logits(self, smpl, logits: np.ndarray, temperature: float) -> np.ndarray:
        return constrained_logits(self._llama_cpp, smpl, logits, temperature, self.SUBSET, self.MIN_P)

    SUBSET = SUBSET
    MIN_P = MIN_P

    @classmethod
    def _pick(cls, logits: np.ndarray, temperature: float, rng: np.random.Generator, top_k: int = 40,
              top_p: float = 0.95) -> int:
        return pick(logits, temperature, rng, top_k, top_p, cls.MIN_P)

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
        keep = prompt.keep if isinstance(prompt, RenderedPrompt) else 0
        if keep:
            head, tail = split_rendered(prompt, keep)
            pre, post = self.tokenize(head), self.tokenize(tail)
            tokens = pre + post
        else:
            tokens = self.tokenize(prompt)
        if len(tokens) + max_tokens > self.n_ctx:
            raise BackendError(f"prompt of {len(tokens)} tokens plus {max_tokens} for the reply exceeds the "
                               f"context of {self.n_ctx} tokens")
        vocab = lc.llama_model_get_vocab(self.llm._model.model)
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        logits = self._kept_logits(pre, post, prompt, keep) if keep else self._prompt_logits(tokens)
        t_first = time.perf_counter()
        smpl = self._grammar_sampler(schema)
        out_bytes = b""
        token_texts: list[str] = []
        top: list[dict[str, float]] = []
        finish = "length"
        try:
            for _ in range(max_tokens):
                if want_logprobs:
                    top.append(top_logprobs(logits, self._piece))
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
                if b"}" in piece and complete_json(out_bytes):
                    finish = "stop"
                    break
                check_cancelled()  # within the call: the token just taken is accepted, nothing half-done
                report_tokens("decode", len(token_texts), max_tokens)
                t_step = time.perf_counter()
                self.llm.eval([tok])
                self._use_threads(self.threads.step(time.perf_counter() - t_step))
                logits = self._logits_now()
        finally:
            lc.llama_sampler_free(smpl)
        t1 = time.perf_counter()
        return Generation(text=out_bytes.decode("utf-8", errors="replace"), prompt_tokens=len(tokens),
                          completion_tokens=len(token_texts), prompt_seconds=t_first - t0,
                          decode_seconds=t1 - t_first, finish_reason=finish,
                          token_texts=token_texts if want_logprobs else [], top_logprobs=top,
                          prompt_new_tokens=self.last_new_tokens)
