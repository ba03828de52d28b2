"""Does MED-OMIT's importance read rank what clinicians keep? Real conversations, the notes clinicians wrote from them.

Data: the MTS-Dialog training set in the ``realdev`` folder beside the repository (Ben Abacha et al., EACL 2023;
CC BY 4.0), split by conversation id before anything was chosen (``verify_set.split_of``: sha256 of ``mts:<ID>``,
even → development, odd → test). A conversation is taken when it has 120-650 words and its note section at least two sentences, in
file order: the first ``--n`` of the chosen split.

For each conversation (the case's one note) the facts are its atomic statements
(:func:`engine.evidence.medomit.statements.statement_facts`), the differential is the model's and each fact's
importance is read in one step (:mod:`engine.evidence.medomit._importance`), exactly as the one-step MED-OMIT
pipeline does. A fact's label comes from the clinician's note section, fixed before any weight was looked at:
*kept* when the note carries it — the better of its best embedding cosine with a note sentence and the share of
its content words and numbers the note writes is at least 0.6 —, *left out* when that is below 0.35; facts in
between are not labelled. The note is the clinician's own choice of what matters in the conversation.

Printed per split: AUROC kept vs left out, pooled over the split's facts and the mean over conversations with both
labels, for the expected weight (Σ P·1/0.5/0.1), P(critical), and a baseline (the fact's number of content words).
The readout used in the product is chosen on the development split; the test split is reported. Model steps are
cached in ``bench/out/importance_realdev.json`` by their inputs, so a rerun costs only what is new.
Usage: python bench/importance_realdev.py [--split dev|test] [--n 12] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import verify_set  # noqa: E402
from engine.core import Case, Note  # noqa: E402
from engine.statistics import auroc  # noqa: E402

OUT = ROOT / "bench" / "out" / "importance_realdev.json"
KEPT, LEFT = 0.6, 0.35
MIN_WORDS, MAX_WORDS = 120, 650


class FileCache:
    """A step cache (``get_llm_step`` / ``put_llm_step``) in one JSON file."""

    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text()) if path.is_file() else {}

    def get_llm_step(self, key):
        return self.data.get(key)

    def put_llm_step(self, key, step, model_id, value):
        self.data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data))


def conversations(split: str, n: int) -> list[dict]:
    out = []
    for row in verify_set.read_rows("mts_dialog_train.csv"):
        if verify_set.split_of(f"mts:{row['ID']}") != split:
            continue
        words = len(row["dialogue"].split())
        sents = [s for s in re.split(r"(?<=[.!?])\s+", row["section_text"].strip()) if s.strip()]
        if MIN_WORDS <= words <= MAX_WORDS and len(sents) >= 2:
            out.append(row)
        if len(out) == n:
            break
    return out


def labels(facts, note: str, emb) -> list[int | None]:
    """1 kept, 0 left out, None in between (see the module docstring)."""
    from engine.evidence.coverage import lexical_set
    from engine.evidence.text import split_sentences

    sents = [s.text for s in split_sentences(note)] or [note]
    X = emb.sentence_embeddings([f.text for f in facts])
    Y = emb.sentence_embeddings(sents)
    cos = (X @ Y.T).max(axis=1)
    have = lexical_set(note)
    out = []
    for f, c in zip(facts, cos):
        ls = lexical_set(f.text)
        lex = len(ls & have) / len(ls) if ls else 0.0
        v = max(float(c), lex)
        out.append(1 if v >= KEPT else 0 if v < LEFT else None)
    return out


def kept_auroc(pos: list[float], neg: list[float]) -> float:
    """AUROC of a score for kept (``pos``) against left-out (``neg``) facts (engine.statistics.auroc); NaN when
    either side is empty."""
    return auroc([1] * len(pos) + [0] * len(neg), list(pos) + list(neg))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("dev", "test"), default="dev")
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    from engine.evidence.coverage import lexical_set
    from engine.evidence import default_embedder
    from engine.evidence.medomit import MedOmit, StepRecord, statement_facts
    from engine.llm import LlamaCppBackend, default_embedded_key, embedded_model_path, embedded_sha256

    key = default_embedded_key()
    be = LlamaCppBackend(embedded_model_path(key), n_ctx=8192, n_threads=args.threads)
    emb = default_embedder()
    mo = MedOmit(be, embedded_sha256(key), cache=FileCache(OUT), embedder=emb, facts="claims")
    rows = conversations(args.split, args.n)
    scores = {"weight": ([], []), "P(critical)": ([], []), "baseline: content words": ([], [])}
    per_conv = {k: [] for k in scores}
    n_facts = n_lab = 0
    secs = []
    for row in rows:
        case = Case(f"mts-{row['ID']}", "Primary Care", (Note("1", row["dialogue"], None, "Conversation transcript"),))
        facts = statement_facts(case)
        if not facts:
            continue
        t0 = time.perf_counter()
        records: list[StepRecord] = []
        ddx = mo.source_ddx(case, facts, records)
        if ddx is None:
            print(f"{case.case_id}: no differential ({records[-1].error})")
            continue
        _, probs = mo.importance(case, facts, ddx, records)
        secs.append(time.perf_counter() - t0)
        lab = labels(facts, row["section_text"], emb)
        n_facts += len(facts)
        conv = {k: ([], []) for k in scores}
        for f, y in zip(facts, lab):
            p = probs.get(f.fact_id)
            if y is None or p is None:
                continue
            n_lab += 1
            vals = {"weight": p["critical"] * 1 + p["important"] * 0.5 + p["other"] * 0.1,
                    "P(critical)": p["critical"], "baseline: content words": float(len(lexical_set(f.text)))}
            for k, v in vals.items():
                (conv[k][0] if y else conv[k][1]).append(v)
                (scores[k][0] if y else scores[k][1]).append(v)
        for k in scores:
            a = kept_auroc(*conv[k])
            if not math.isnan(a):
                per_conv[k].append(a)
        print(f"{case.case_id}: {len(facts)} facts, {sum(x == 1 for x in lab)} kept, {sum(x == 0 for x in lab)} left "
              f"out; {secs[-1]:.0f} s", flush=True)
    print(f"\nsplit {args.split}: {len(rows)} conversations, {n_facts} facts, {n_lab} labelled "
          f"({len(scores['weight'][0])} kept, {len(scores['weight'][1])} left out); median {statistics.median(secs):.0f} s "
          "per conversation (differential + importance, cached steps count 0)")
    print(f"{'score':<26} {'AUROC pooled':>13} {'mean per conversation':>22} {'conversations':>14}")
    for k, (pos, neg) in scores.items():
        a = kept_auroc(pos, neg)
        m = statistics.mean(per_conv[k]) if per_conv[k] else float("nan")
        print(f"{k:<26} {a:>13.3f} {m:>22.3f} {len(per_conv[k]):>14}")


if __name__ == "__main__":
    main()
