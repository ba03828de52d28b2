"""Which source sentences support each summary sentence (faithfulness evidence after Adams et al., "A
Meta-Evaluation of Faithfulness Metrics for Long-Form Hospital-Course Summarization").

Per summary sentence:
* **ROUGE-TopK** (k = 5): the source sentences with the highest mean of ROUGE-1/2/L F1;
* **ROUGE-Gain**: greedily add source sentences while the ROUGE of the summary sentence against the selected
  set keeps improving (the paper's compact alignment);
* **embedding-TopK** (k = 5): cosine of sentence embeddings;
* **support**: BERTScore-style precision — each content token of the summary sentence takes its best cosine
  with the tokens of its aligned source sentences (ROUGE-Gain ∪ embedding top-1), averaged;
* **weak support** (chosen and measured by ``bench/support_benchmark.py``; see *The weak-support
  rule* below): ``support_score`` = ½(lexical + semantic), weak when it is below :data:`WEAK_SUPPORT` or when the
  sentence states a number or a patient name that the source never states;
* **citation check**: a sentence without <NoteID:n> is *missing*; a cited note that does not exist is *unknown*;
  when the cited notes do not hold the sentence's best support it is *wrong* (the best note is named).
Per summary: extractive **coverage** and **density** (Grusky et al., 2018) against the whole source, the mean
support, and the combined score g = ½(z(support) + z(coverage)) with z over the summaries of a dataset.

Source units are the sentences of the notes; in a conversation transcript (a note with at least two lines
opening with a speaker tag, :func:`engine.evidence.text.salience.is_dialogue`) each unit loses its speaker tag ("[doctor]") and
its disfluencies ("um", "uh", "mm-hmm", "you know", "i mean") before ROUGE and embeddings see it. The returned
source references keep the original sentence text and offsets.

The weak-support rule
---------------------
The old rule (``support`` < 0.65, alignment-v2) was tuned on our notes; on conversations, where the summary
says in clinical words what was said in lay words, it marked about half of the genuine note sentences weak (55 %
on held-out real conversations, 46–53 % on our synthetic ones). The rule now reads three pieces of evidence, each
comparable across source kinds:

* **lexical** — the share of the sentence's content words (Porter stems, stopwords, generic words and fillers
  left out) found anywhere in the source, each word weighted by its rarity in a fixed background of clinical
  sources, ``idf = ln((N + 1) / (df + 0.5))``: a common word ("daily", "history") would be found in almost any
  source and counts little, a specific one ("apixaban", "meniscus") counts much. The background
  (``engine/resources/support_background.json``: stem document frequencies over N sources) is computed by
  ``python bench/support_benchmark.py --write-background`` from the *development* half of our own synthetic
  sample (note cases and conversations); without the file every word weighs the same (a documented fallback, the
  plain share).
* **semantic** — the best cosine between the sentence's embedding and a source unit or a pair of adjacent units
  (an answer carries its question: "[doctor] are you taking it?" "[patient] yes, every morning.").
* **foreign specifics** — a number the sentence states that the source never states, in digits or in words
  ("one thirty-eight" = 138, "twelve and a half" = 12.5; list markers are not numbers, and an age counts only when
  the source states an age), or a patient name after a title ("Mrs. Kessler") absent from the source. One is
  enough: the sentence is weak whatever its score.

* **false specifics** (:mod:`engine.evidence.support.specifics`) — a drug or named finding no note contains, a value the notes
  give for that term only with other values, the other side. One is enough, with what the notes say instead.

A section heading ("ASSESSMENT AND PLAN") is never weak. ``support`` keeps its meaning (and feeds the mean support
and g); the rule's figures are in ``support_score``, ``lexical``, ``semantic``, ``foreign`` and ``weak_reason``.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

import numpy as np

from engine.evidence.support import specifics
from engine.core import citations
from engine.evidence.embeddings import Embedder
from engine.evidence.text import BACKGROUND_PATH, rouge_scorer, words
from engine.core import Case, Summary
from engine.evidence.text import Sentence, split_sentences
from engine.evidence.support._source_profile import (SourceProfile, SupportEvidence, note_support, sentence_support,
                                                     source_profile, source_units)
from engine.evidence.support._source_profile import clean_unit, foreign_specifics  # noqa: F401 - read from here

# Part of every stored result's key (bump when the alignment code changes; shipped results then recompute).
# v2: citations read by engine.core.citations. v3: the weak-support rule (support_score, lexical, semantic,
# foreign), and transcript units without speaker tags and disfluencies.
# v4: a citation is right when the cited note supports the sentence. v5: fact-level checks (engine.evidence.support.specifics) in the
# weak rule and the citation check.
ALIGNMENT_VERSION = "alignment-v6"  # v6: restatements inside the summary (engine.evidence.support.redundancy)
# The cited notes support a sentence when ½(lexical + semantic) against those notes alone reaches this. Chosen by
# bench/citation_benchmark.py on its development split (redundant multi-note records with known wrong citations).
CITED_SUPPORT = 0.46
ALSO_MARGIN = 0.10  # another note supports it this much better: said as information, not a defect
# citation verdicts that are no issue: "ok" (also when another note supports it better: said as information),
# "n/a" (the case or dataset expects no citation) and "" (no verdict)
NO_CITATION_ISSUE = ("ok", "n/a", "")
TOP_K = 5
# support_score below this marks a sentence as weakly supported. Chosen by bench/support_benchmark.py on its
# development split only (the lowest threshold giving >= 85 % recall of swapped-in sentences in both source
# kinds); on its test split (our synthetic data) it flags 0 % of genuine note-case sentences and 5.8 % of genuine
# conversation-note sentences at 83 % / 84 % recall of sentences swapped in from another case (AUROC 0.999 / 0.921;
# the old rule, support < 0.65: 16 % / 46 % flagged).
WEAK_SUPPORT = 0.284
LEGACY_WEAK_SUPPORT = 0.65  # alignment-v2's threshold on ``support``; the benchmark's baseline


@dataclass
class SourceRef:
    note_id: str
    sentence: int
    start: int
    end: int
    text: str
    score: float


@dataclass
class SentenceAlignment:
    index: int
    start: int
    end: int
    text: str
    citations: list[str]
    rouge_topk: list[SourceRef]
    rouge_gain: list[SourceRef]
    embed_topk: list[SourceRef]
    support: float
    weak: bool
    best_note: str
    citation_verdict: str  # ok | missing | unknown | wrong | n/a (no citation expected)
    citation_detail: str
    # the weak-support rule (alignment-v3); None in results stored before it
    support_score: Optional[float] = None  # ½(lexical + semantic)
    lexical: Optional[float] = None  # rarity-weighted share of the content words found in the source
    semantic: Optional[float] = None  # best cosine with a source unit or a pair of adjacent units
    foreign: list[str] = field(default_factory=list)  # numbers and names the source never states
    weak_reason: str = ""
    cited_support: Optional[float] = None  # ½(lexical + semantic) against the cited notes alone (alignment-v4)
    also_supported: str = ""  # information: another note supports the sentence better (not a defect)
    specifics: list[str] = field(default_factory=list)  # false-looking specifics, described (engine.evidence.support.specifics)
    restates: Optional[int] = None  # index of an earlier sentence this one says again (alignment-v6)
    restates_detail: str = ""  # the restatement, described (engine.evidence.support.redundancy)


@dataclass
class AlignmentResult:
    summary_id: str
    sentences: list[SentenceAlignment]
    coverage: float
    density: float
    mean_support: float
    combined: Optional[float] = None  # set by combined_scores() across a dataset
    citation_issues: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


# ------------------------------------------------------------------------------------------ the support rule

def citation_verdict(text: str, cites: Sequence[str], note_ids: set, profile: SourceProfile, vec: np.ndarray,
                     stems_of: dict[str, frozenset], index: Optional["specifics.SourceIndex"] = None,
                     unexpected: str = "") -> tuple[str, str, Optional[float], str]:
    """(verdict, detail, support of the cited notes, also-supported note) for one sentence. Right = the cited
    notes support it and give its values; wrong = they do not (naming the note that does, if any), or a value
    the sentence attaches to a term is given by another note and by none of the cited ones
    (:func:`engine.evidence.support.specifics.values_elsewhere`, read when ``index`` is given); a note that supports it better is
    only information: on real records later notes repeat earlier ones, and citing the earlier one is not wrong.
    ``unexpected``: why no citation is expected here (see :func:`citations_unexpected`); an uncited sentence is then
    "n/a", never "missing"."""
    if not cites:
        if unexpected:  # nothing to cite between (one source) or the dataset never cites: no citation is missing
            return "n/a", f"no citation expected: {unexpected}", None, ""
        return "missing", "no note citation", None, ""
    bad = [c for c in cites if c not in note_ids]
    if bad:
        return "unknown", f"cites note(s) {', '.join(bad)}, which the case does not have", None, ""
    cited = note_support(text, profile, cites, vec, stems_of)
    others = {n: note_support(text, profile, [n], vec, stems_of) for n in sorted(note_ids - set(cites))}
    best = max(others, key=others.get) if others else ""
    elsewhere = specifics.values_elsewhere(text, index, cites) if index is not None else []
    if elsewhere:
        return "wrong", (f"cites note {', '.join(cites)}, which does not give " + "; ".join(elsewhere)), \
            round(cited, 4), ""
    if cited >= CITED_SUPPORT:
        also = best if best and others[best] >= cited + ALSO_MARGIN else ""
        return "ok", (f"also supported by note {best} ({others[best]:.2f} vs {cited:.2f})" if also else ""), \
            round(cited, 4), also
    where = (f"; the best support is in note {best} ({others[best]:.2f})" if best and others[best] >= CITED_SUPPORT
             else "; no single note supports it")
    return "wrong", (f"cites note {', '.join(cites)}, which does not support it (support {cited:.2f} < "
                     f"{CITED_SUPPORT:.2f}){where}"), round(cited, 4), ""


def is_heading(text: str) -> bool:
    from engine.evidence.text import classify

    return classify(text, dialogue=False).kind == "header"


def weak_verdict(ev: SupportEvidence, text: str = "", specifics: Sequence[str] = ()) -> tuple[bool, str]:
    """(weak, why) under the rule: a foreign number or name, a false specific (``specifics``: described
    findings of :mod:`engine.evidence.support.specifics`), or support_score below WEAK_SUPPORT."""
    if text and is_heading(text):
        return False, ""
    if ev.foreign:
        return True, "not in the source: " + ", ".join(ev.foreign)
    if specifics:
        return True, "; ".join(specifics)
    if ev.score < WEAK_SUPPORT:
        return True, (f"support score {ev.score:.2f} < {WEAK_SUPPORT:.2f} (content words found, rarity-weighted: "
                      f"{ev.lexical:.0%}; best source match {ev.semantic:.2f})")
    return False, ""


def extractive_fragments(summary_words: Sequence[str], source_words: Sequence[str]) -> list[int]:
    """Grusky et al.'s greedy extractive fragments: lengths of the longest shared word sequences."""
    index: dict[str, list[int]] = {}
    for j, w in enumerate(source_words):
        index.setdefault(w, []).append(j)
    frags, i = [], 0
    while i < len(summary_words):
        best = 0
        for j in index.get(summary_words[i], ()):
            k = 0
            while (i + k < len(summary_words) and j + k < len(source_words)
                   and summary_words[i + k] == source_words[j + k]):
                k += 1
            best = max(best, k)
        if best:
            frags.append(best)
            i += best
        else:
            i += 1
    return frags


def coverage_density(summary_text: str, source_text: str) -> tuple[float, float]:
    sw, src = words(citations.strip(summary_text, keep_offsets=True)), words(source_text)
    if not sw:
        return 0.0, 0.0
    f = extractive_fragments(sw, src)
    return sum(f) / len(sw), sum(x * x for x in f) / len(sw)


def _content_mask(text: str, spans) -> np.ndarray:
    from engine.evidence.coverage import stopword_set

    keep = np.zeros(len(spans), bool)
    for i, (s, e) in enumerate(spans):
        piece = text[s:e]
        ws, we = s, e
        while ws > 0 and text[ws - 1].isalnum():
            ws -= 1
        while we < len(text) and text[we].isalnum():
            we += 1
        keep[i] = bool(re.search(r"[A-Za-z0-9]", piece)) and text[ws:we].lower() not in stopword_set()
    return keep


def citations_unexpected(case: Case, dataset_cites: bool = True) -> str:
    """Why a summary of ``case`` is not expected to cite notes ("" when it is): a single source note leaves nothing
    to tell apart; a dataset none of whose summaries cites anything was not written to cite."""
    if len(case.notes) <= 1:
        return "the case has one source note"
    return "" if dataset_cites else "no summary of this dataset cites a note"


def _rouge_gain(rouge, utext: list[str], text: str, r: np.ndarray) -> list[int]:
    """ROUGE-Gain: from the 20 best units by ROUGE ``r``, add greedily (up to TOP_K) while ROUGE keeps rising."""
    chosen: list[int] = []
    best_score = 0.0
    candidates = list(np.argsort(-r)[:20])
    while candidates and len(chosen) < TOP_K:
        trial = [(rouge.mean_f(" ".join(utext[j] for j in sorted(chosen + [c])), text), c) for c in candidates]
        sc, c = max(trial)
        if sc <= best_score:
            break
        best_score = sc
        chosen.append(c)
        candidates.remove(c)
    return chosen


def _token_support(ste, s_keep: np.ndarray, sent: Sentence, aligned: list[tuple[str, Sentence]], note_te) -> float:
    """``support``: token-level precision of the sentence's content tokens against the aligned source sentences."""
    tok_idx = [k for k, (a, b) in enumerate(ste.spans) if a >= sent.start and b <= sent.end and s_keep[k]]
    pool = []
    for nid, x in aligned:
        te = note_te[nid]
        pool += [te.vectors[k] for k, (a, b) in enumerate(te.spans) if a >= x.start and b <= x.end]
    if tok_idx and pool:
        return float((ste.vectors[tok_idx] @ np.array(pool).T).max(axis=1).mean())
    return 0.0


def align_summary(case: Case, summary: Summary, emb: Embedder, dataset_cites: bool = True) -> AlignmentResult:
    """Align every summary sentence with its supporting source sentences, check its citations and specifics.
    ``dataset_cites``: whether any summary of the dataset cites notes (:meth:`engine.core.models.Dataset
    .cites_notes`); when none does, or the case has one note, an uncited sentence is not a missing citation."""
    from engine.evidence.coverage import checked_summary_text

    unexpected = citations_unexpected(case, dataset_cites)

    blanked = checked_summary_text(summary.text)
    ssents = split_sentences(summary.text)
    units = source_units(case)
    src: list[tuple[str, Sentence]] = [(nid, s) for nid, s, _ in units]
    utext = [u for _, _, u in units]  # what ROUGE and the embeddings read (transcripts: no tags, no disfluencies)
    note_ids = {n.note_id for n in case.notes}
    notes = tuple((n.note_id, n.text) for n in case.notes)
    index = specifics.index_for(notes)
    rouge = rouge_scorer()
    profile = source_profile(case, emb, units)
    S = emb.sentence_embeddings([s.clean for s in ssents])
    X = profile.unit_vecs[:len(src)]
    sims = S @ X.T
    ste = emb.token_embeddings(blanked)
    s_keep = _content_mask(blanked, ste.spans)
    note_te = {n.note_id: emb.token_embeddings(n.text) for n in case.notes}
    stems_of: dict[str, frozenset] = {}
    for nid, _, u in units:
        stems_of[nid] = stems_of.get(nid, frozenset()) | frozenset(rouge.tokens(u))

    def ref(j: int, score: float) -> SourceRef:
        nid, s = src[j]
        return SourceRef(nid, s.index, s.start, s.end, s.text, round(float(score), 4))

    out: list[SentenceAlignment] = []
    for i, sent in enumerate(ssents):
        r = np.array([rouge.mean_f(u, sent.clean) for u in utext])
        topk = np.argsort(-r)[:TOP_K]
        chosen = _rouge_gain(rouge, utext, sent.clean, r)
        etop = np.argsort(-sims[i])[:TOP_K]
        aligned = sorted(set(chosen) | {int(etop[0])})
        support = _token_support(ste, s_keep, sent, [src[j] for j in aligned], note_te)
        best_note = src[int(etop[0])][0]
        # which note holds the best support: the note with the highest combined evidence
        note_score: dict[str, float] = {}
        for j in set(chosen) | set(int(x) for x in etop[:3]):
            note_score[src[j][0]] = max(note_score.get(src[j][0], 0.0), float(sims[i, j]) + float(r[j]))
        if note_score:
            best_note = max(note_score, key=note_score.get)
        cites = list(sent.citations)
        verdict, detail, cited_support, also = citation_verdict(sent.clean, cites, note_ids, profile, S[i], stems_of,
                                                                index, unexpected)
        ev = sentence_support(sent.clean, profile, emb, S[i])
        found = [f.describe() for f in specifics.check_sentence(sent.clean, notes)]
        weak, why = weak_verdict(ev, sent.clean, found)
        out.append(SentenceAlignment(i, sent.start, sent.end, sent.text, cites,
                                     [ref(j, r[j]) for j in topk], [ref(j, r[j]) for j in chosen],
                                     [ref(j, sims[i, j]) for j in etop], round(support, 4),
                                     weak, best_note, verdict, detail, round(ev.score, 4), round(ev.lexical, 4),
                                     round(ev.semantic, 4), ev.foreign, why, cited_support, also, found))
    from engine.evidence.support.redundancy import restatements

    for r in restatements([x.clean for x in ssents], S, skip=[is_heading(x.clean) for x in ssents]):
        out[r.later].restates, out[r.later].restates_detail = r.first, r.describe()
    cov, dens = coverage_density(summary.text, "\n".join(n.text for n in case.notes))
    mean_support = float(np.mean([a.support for a in out])) if out else 0.0
    issues = [{"sentence": a.index, "verdict": a.citation_verdict, "detail": a.citation_detail, "text": a.text}
              for a in out if a.citation_verdict not in NO_CITATION_ISSUE]
    return AlignmentResult(summary.summary_id, out, round(cov, 4), round(dens, 4), round(mean_support, 4),
                           None, issues)


def combined_scores(results: Sequence[AlignmentResult]) -> None:
    """g = ½(z(mean support) + z(coverage)) with z-scores over the given summaries (set in place)."""
    if len(results) < 2:
        for r in results:
            r.combined = 0.0
        return
    f = np.array([r.mean_support for r in results])
    c = np.array([r.coverage for r in results])

    def z(v):
        sd = v.std()
        return (v - v.mean()) / sd if sd > 0 else np.zeros_like(v)

    for r, g in zip(results, 0.5 * (z(f) + z(c))):
        r.combined = round(float(g), 4)


def result_from_dict(d: dict) -> AlignmentResult:
    sents = []
    for a in d["sentences"]:
        a = dict(a)
        for k in ("rouge_topk", "rouge_gain", "embed_topk"):
            a[k] = [SourceRef(**x) for x in a[k]]
        sents.append(SentenceAlignment(**a))
    return AlignmentResult(d["summary_id"], sents, d["coverage"], d["density"], d["mean_support"], d["combined"],
                           d["citation_issues"])


def alignment_key(case: Case, summary: Summary, dataset_cites: bool = True) -> str:
    """The stored result's key: code version, embedding model, the fact checks' version, the notes and the summary
    (and, only where no citation is expected, why — so the keys of cases whose summaries cite are unchanged)."""
    import hashlib

    from engine.evidence.embeddings import EMBEDDING_NAME

    try:  # the weak-support rule's background: regenerating it recomputes stored results
        bg = hashlib.sha256(BACKGROUND_PATH.read_bytes()).hexdigest()[:16]
    except OSError:
        bg = "none"
    from engine.core import json_key

    unexpected = citations_unexpected(case, dataset_cites)
    return json_key({"v": ALIGNMENT_VERSION, "model": EMBEDDING_NAME, "background": bg, "weak": WEAK_SUPPORT,
                     "checks": specifics.CHECKS_VERSION, "notes": [asdict(n) for n in case.notes],
                     "summary": summary.text,
                     **({"citations": f"n/a: {unexpected}"} if unexpected else {})})


def alignment_cached(store, dataset: str, case: Case, summary: Summary, emb, dataset_cites: bool = True
                     ) -> AlignmentResult:
    """Align once and keep the result in the workspace (``emb``: an Embedder or a function returning one)."""
    import json

    key = alignment_key(case, summary, dataset_cites)
    hit = store.get_evidence(dataset, "alignment", key, summary.summary_id) if store is not None else None
    if hit is not None:
        return result_from_dict(json.loads(hit))
    res = align_summary(case, summary, emb if isinstance(emb, Embedder) else emb(), dataset_cites)
    if store is not None:
        store.put_evidence(dataset, "alignment", key, summary.summary_id, "complete", json.dumps(res.to_dict()))
    return res
