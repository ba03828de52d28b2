"""One decoding step of the in-process llama.cpp backend: the next token's log-probabilities after a prompt whose
leading messages stay evaluated between calls.

:class:`NextTokenStep` (a part of :class:`engine.llm.llama.LlamaCppBackend`) serves narrow yes/no questions
about one record: the record's messages are evaluated once, and each question evaluates only its own tokens
after them. The kept part is always evaluated the same way (from a batch boundary) and every question starts
right after it, so an answer's probability never depends on which question came before. A generated reply whose
prompt is marked kept (:func:`engine.llm.backends.keep_messages`: the judge, MED-OMIT's differential) holds its head
the same way (:meth:`NextTokenStep._kept_logits`), so every check of a case reuses one evaluated record
(:meth:`NextTokenStep.token_counts` counts what the heads cost). It relies on its host's
llama context (``self.llm``, ``self._llama_cpp``), tokenizer (``self.tokenize``), renderer (``self.render``),
batch size (``self._batch``), cancellable evaluation (``self._eval_cancellable``), its generation lock and its
prompt cache (``self._recalled_logits``, ``self._remembered_logits``; ``self._cached_prompt``, which it
invalidates).
"""
from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from engine.core import check_cancelled
from engine.llm.backends import BackendError, NextToken, TOP_LOGPROBS, split_rendered

LOAD_RATHER_THAN_READ = 64  # a kept head with more tokens than this left to evaluate is loaded when it was saved (a
# 1.5B reads ~70 tokens/s on 2 cores; a saved record of 4,000 tokens loads in well under a second)


class NextTokenStep:
    """``next_token(messages, keep)`` for the llama.cpp backend (mixed in)."""

    def next_token(self, messages: Sequence[dict], keep: int) -> NextToken:
        """Log-probabilities of the first token of the reply to ``messages``; the first ``keep`` messages (and the
        template text opening the next) stay evaluated for the next call that starts with them."""
        rendered = self.render(messages)
        head, tail = split_rendered(rendered, keep)
        pre, post = self.tokenize(head), self.tokenize(tail)
        if len(pre) + len(post) + 1 > self.n_ctx:
            raise BackendError(f"prompt of {len(pre) + len(post)} tokens exceeds the context of {self.n_ctx} tokens")
        while not self._gen_lock.acquire(timeout=0.2):
            check_cancelled()
        try:
            t0 = time.perf_counter()
            new = self._hold_prefix(pre, rendered, keep)
            self.llm.n_tokens = len(pre)
            self._cached_prompt, self._cached_logits = None, None  # the context now ends elsewhere
            self._eval_cancellable(post, 0, len(post))
            logits = self._logits_now().astype(np.float64)
            new += len(post)
        finally:
            self._gen_lock.release()
        m = float(logits.max())
        lse = m + math.log(float(np.exp(logits - m).sum()))
        cand = np.argpartition(logits, -TOP_LOGPROBS)[-TOP_LOGPROBS:]
        out: dict[str, float] = {}
        for t in cand[np.argsort(-logits[cand])]:
            piece = self._piece(int(t))
            out.setdefault(piece, float(logits[t]) - lse)  # two ids may print alike: the likelier one counts
        return NextToken(logprobs=out, prompt_tokens=len(pre) + len(post), new_tokens=new,
                         seconds=time.perf_counter() - t0)

    def _shorter_heads(self, rendered, keep: int, pre: list[int]) -> list[int]:
        """Token lengths of the heads of ``rendered`` that end at an earlier message (``keep - 1`` messages down to
        one), longest first, where they are a prefix of ``pre`` token for token: a state saved for one of them (a
        case's record, when ``pre`` adds a task after it) can start ``pre``."""
        out = []
        for k in range(keep - 1, 0, -1):
            ids = self.tokenize(split_rendered(rendered, k)[0])
            if len(ids) < len(pre) and pre[:len(ids)] == ids:
                out.append(len(ids))
        return out

    def _kept_logits(self, pre: list[int], post: list[int], rendered=None, keep: int = 0) -> np.ndarray:
        """The next-token logits after ``pre + post`` with ``pre`` held as :meth:`next_token` holds its kept messages
        (:meth:`_hold_prefix`) and ``post`` evaluated after it in one go: a result never depends on what was
        evaluated before, and every prompt about a case reuses its record."""
        tokens = pre + post
        recalled = self._recalled_logits(tokens)
        if recalled is not None:
            return recalled
        new = self._hold_prefix(pre, rendered, keep)
        self.llm.n_tokens = len(pre)
        self._cached_prompt, self._cached_logits = None, None
        self._eval_cancellable(tokens, len(pre), len(tokens))
        self.last_new_tokens = new + len(post)
        return self._remembered_logits(tokens)

    def token_counts(self) -> dict:
        """Prompt tokens evaluated so far: all of them (``prompt``), those of kept prompt heads — a case's record, or
        the summary the omission questions share — (``head``) and the head tokens loaded from disk instead
        (``head_loaded``)."""
        return {"prompt": self._prompt_tokens_evaluated, "head": self.kept_stats["evaluated_tokens"],
                "head_loaded": self.kept_stats["loaded_tokens"]}

    def _hold_prefix(self, pre: list[int], rendered=None, keep: int = 0) -> int:
        """Make the context hold exactly ``pre`` at its start and return the tokens evaluated for it. What the
        context holds is reused from its last batch boundary; else the state saved for ``pre`` is loaded
        (:meth:`engine.llm._prefix_cache.SavedPrefix.keep_on_disk`); else the state saved for the longest head of
        ``rendered`` (whose first ``keep`` messages are ``pre``) that ends at an earlier message, such as the case's
        record before a task (:meth:`_shorter_heads`), is loaded, cut back to its last batch boundary, and the rest
        evaluated; else the declared shared prefix is loaded and the rest evaluated. The state of ``pre`` is then
        saved. Every way gives the logits of evaluating ``pre`` from scratch."""
        n = int(self.llm.n_tokens)
        held = self.llm.input_ids[:min(n, len(pre))]
        common = 0
        if len(held):
            diff = np.flatnonzero(np.asarray(held) != np.asarray(pre[:len(held)]))
            common = int(diff[0]) if len(diff) else len(held)
        if common == len(pre):
            return 0
        common -= common % self._batch
        if len(pre) - common > LOAD_RATHER_THAN_READ:
            if self._load_kept(pre):
                return 0
            for n in (self._shorter_heads(rendered, keep, pre) if rendered is not None else ()):
                if n - n % self._batch - common > LOAD_RATHER_THAN_READ and self._load_kept(pre[:n]):
                    common = n - n % self._batch  # from a batch boundary, as a cold evaluation splits it
                    break
        shared = self._prefix  # the case-record instructions (engine.llm.case_record.keep_records)
        if shared and len(pre) > len(shared) and pre[:len(shared)] == shared:
            common = self._ensure_prefix(pre, common)
        self.llm.n_tokens = common
        self._cached_prompt, self._cached_logits = None, None
        self._eval_cancellable(pre, common, len(pre))
        self.kept_stats["evaluated_tokens"] += len(pre) - common
        self._save_kept(pre)
        return len(pre) - common
