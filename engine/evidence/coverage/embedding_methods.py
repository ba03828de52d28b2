"""The coverage methods beside unit coverage: EmbedKDECheck (token-embedding density of the source against the
summary), sentence coverage and topic coverage.
"""
from __future__ import annotations

import re
from typing import Optional

import numpy as np

from engine.core import Case, Summary
from engine.evidence.coverage.results import (CoverageError, CoverageParams, Region, Unit, checked_summary_text,
                                              global_of)
from engine.evidence.embeddings import Embedder, TokenEmbeddings
from engine.evidence.text import split_sentences


_STOP: Optional[frozenset] = None


def stopword_set() -> frozenset:
    global _STOP
    if _STOP is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STOP = frozenset(ENGLISH_STOP_WORDS)
    return _STOP


def _keep_mask(text: str, te: TokenEmbeddings, clean: bool, min_len: int) -> np.ndarray:
    keep = np.ones(len(te.spans), bool)
    for i, (s, e) in enumerate(te.spans):
        piece = text[s:e]
        if not re.search(r"[A-Za-z0-9]", piece):
            keep[i] = False
            continue
        if clean:
            ws, we = s, e
            while ws > 0 and text[ws - 1].isalnum():
                ws -= 1
            while we < len(text) and text[we].isalnum():
                we += 1
            word = text[ws:we].lower()
            if word in stopword_set() or (len(word) < min_len and not word.isdigit()):
                keep[i] = False
    return keep


def _bandwidth(spec: str, data: np.ndarray) -> float:
    """Gaussian KDE bandwidth: Scott's or Silverman's rule scaled by the data's mean standard deviation,
    likelihood cross-validation ("cv"), or a fixed number."""
    n, d = data.shape
    scale = float(np.sqrt(data.var(axis=0).mean())) or 1.0
    if spec == "scott":
        return scale * n ** (-1.0 / (d + 4))
    if spec == "silverman":
        return scale * (n * (d + 2) / 4.0) ** (-1.0 / (d + 4))
    if spec == "cv":
        from sklearn.model_selection import GridSearchCV
        from sklearn.neighbors import KernelDensity

        grid = {"bandwidth": scale * np.logspace(-1.5, 0.5, 12)}
        cv = GridSearchCV(KernelDensity(kernel="gaussian"), grid, cv=min(5, n))
        return float(cv.fit(data).best_params_["bandwidth"])
    return float(spec) * scale


def _kde_logdens(train: np.ndarray, query: np.ndarray, bw: float, chunk: int = 2048) -> np.ndarray:
    """Exact Gaussian KDE log-density (as sklearn's KernelDensity computes it), brute force in numpy chunks —
    faster than a tree in 5-20 dimensions."""
    n, d = train.shape
    t2 = (train ** 2).sum(axis=1)
    const = -np.log(n) - 0.5 * d * np.log(2 * np.pi * bw * bw)
    out = np.empty(len(query))
    for i in range(0, len(query), chunk):
        q = query[i:i + chunk]
        d2 = np.maximum((q ** 2).sum(axis=1)[:, None] + t2[None, :] - 2.0 * q @ train.T, 0.0)
        a = -d2 / (2 * bw * bw)
        m = a.max(axis=1)
        out[i:i + chunk] = m + np.log(np.exp(a - m[:, None]).sum(axis=1)) + const
    return out


def kde_scores(case: Case, summary: Summary, emb: Embedder, p: CoverageParams):
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    stext = checked_summary_text(summary.text)
    ste = emb.token_embeddings(stext)
    skeep = _keep_mask(stext, ste, p.clean, p.min_word_length)
    if skeep.sum() < 2:  # a one-word summary: keep its every token (word pieces and stopwords included)
        skeep = np.array([bool(re.search(r"[A-Za-z0-9]", stext[a:b])) for a, b in ste.spans])
    src_vecs, src_units = [], []
    for n in case.notes:
        te = emb.token_embeddings(n.text)
        keep = _keep_mask(n.text, te, p.clean, p.min_word_length)
        src_vecs.append(te.vectors[keep])
        src_units += [(n.note_id, s, e) for (s, e), k in zip(te.spans, keep) if k]
    X = np.vstack(src_vecs)
    Y = ste.vectors[skeep]
    both = np.vstack([X, Y])
    k = int(min(p.pca_components, both.shape[1], both.shape[0] - 1))
    Z = PCA(n_components=k, random_state=0).fit_transform(StandardScaler().fit_transform(both))
    Zx, Zy = Z[: len(X)], Z[len(X):]
    # a KDE on a single summary token has no spread of its own: take the bandwidth rule from the source instead
    bw = _bandwidth(p.bandwidth, Zy) if len(Zy) >= 2 and float(Zy.var(axis=0).mean()) > 0 else \
        _bandwidth(p.bandwidth, Zx)
    log_src = _kde_logdens(Zy, Zx, bw)
    log_sum_self = _kde_logdens(Zy, Zy, bw)
    scores = float(log_sum_self.min()) - log_src  # log(1/r), r = density / min summary density
    units = [Unit(nid, s, e, float(sc)) for (nid, s, e), sc in zip(src_units, scores)]
    # reverse direction: summary tokens in low source density
    bw_src = _bandwidth(p.bandwidth, Zx)
    rev = float(_kde_logdens(Zx, Zx, bw_src).min()) - _kde_logdens(Zx, Zy, bw_src)
    s_spans = [sp for sp, kk in zip(ste.spans, skeep) if kk]
    unsupported = [Region("summary", s, e, summary.text[s:e], float(v)) for (s, e), v in zip(s_spans, rev)
                   if v >= p.resolved_threshold()]
    return units, float(scores.max()), unsupported, {"pca_components": k, "bandwidth": round(bw, 4),
                                                     "source_tokens": len(X), "summary_tokens": len(Y)}


def _sentence_setup(case: Case, summary: Summary, emb: Embedder):
    """(source sentences with note ids, summary sentence vectors, source sentence vectors)."""
    checked_summary_text(summary.text)
    src = [(n.note_id, s) for n in case.notes for s in split_sentences(n.text)]
    if not src:
        raise CoverageError("the source notes have no sentence to score")
    S = emb.sentence_embeddings([s.clean for s in split_sentences(summary.text)])
    X = emb.sentence_embeddings([s.clean for _, s in src])
    return src, S, X


def sentcov_scores(case: Case, summary: Summary, emb: Embedder, p: CoverageParams):
    src, S, X = _sentence_setup(case, summary, emb)
    scores = 1.0 - (X @ S.T).max(axis=1)
    units = [Unit(nid, s.start, s.end, float(v)) for (nid, s), v in zip(src, scores)]
    return units, global_of(units), [], {"source_sentences": len(src), "summary_sentences": len(S)}


def topic_clusters(X: np.ndarray, distance: float) -> np.ndarray:
    """Topic label per source sentence: average-linkage clustering on cosine distance, cut at ``distance``."""
    if len(X) < 2:
        return np.zeros(len(X), int)
    from sklearn.cluster import AgglomerativeClustering

    return AgglomerativeClustering(n_clusters=None, distance_threshold=distance, metric="cosine",
                                   linkage="average").fit_predict(X)


def topiccov_scores(case: Case, summary: Summary, emb: Embedder, p: CoverageParams):
    """Topic-level coverage: source sentences are grouped into topics; a topic is as covered as its best-covered
    sentence (cosine with the nearest summary sentence). Shortening every summary sentence keeps each topic's
    head matched; dropping a topic leaves all of its sentences unmatched — so this separates omission from
    compression. Each source sentence shows its topic's score; the global score is the mean over topics."""
    src, S, X = _sentence_setup(case, summary, emb)
    cov = (X @ S.T).max(axis=1)
    topic = topic_clusters(X, p.topic_distance)
    tcov = {t: float(cov[topic == t].max()) for t in set(topic.tolist())}
    units = [Unit(nid, s.start, s.end, 1.0 - tcov[int(t)]) for (nid, s), t in zip(src, topic)]
    g = float(np.mean([1.0 - v for v in tcov.values()]))
    return units, g, [], {"source_sentences": len(src), "topics": len(tcov), "summary_sentences": len(S)}
