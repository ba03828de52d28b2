"""Citation verdicts on redundant multi-note records, with known wrong citations.

The set (built here, deterministically, from our own writing): the 12 sample patients' notes, plus two notes that
repeat earlier ones as real records do — a copy-forward progress note that copies the first note's statements and a
discharge summary that repeats the statements of every note (``sample_data/note_facts``: each fact's exact source
span). One summary per case: the reference summary's sentences, every one citing ``<Note ID:n>`` (lists as
``<Note ID:1>, <Note ID:3>``):

* right citations: the notes the sentence's facts come from, or (for every third sentence) the discharge summary
  that repeats them;
* wrong citations (every fourth sentence, seeded): a note that holds none of the sentence's statements.

Reported per split: precision and recall of "wrong" for the rule in the code (the cited notes must support the
sentence, :data:`engine.evidence.support.alignment.CITED_SUPPORT`) and for the old rule ("wrong" when another note supports it best);
``--choose`` sweeps the threshold on the development split only and prints the one with the best F1 there.

    python bench/citation_benchmark.py [--choose]
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from validity_set import DEV_CASES, FACTS  # noqa: E402


def build():
    """(dataset, labels: summary id -> [True where the sentence's citation is wrong])."""
    from engine.data import load_paths
    from engine.core import Case, Dataset, Note, Summary
    from engine.sample import SAMPLE_BUNDLE

    base, _ = load_paths([str(SAMPLE_BUNDLE / "cases.csv"), str(SAMPLE_BUNDLE / "notes.csv")], name="cit")
    cases, summaries, labels = [], [], {}
    for c in base.cases:
        d = json.loads((FACTS / f"{c.case_id}.json").read_text(encoding="utf-8"))
        facts = {f["fact_id"]: f for f in d["facts"]}
        ids = [n.note_id for n in c.notes]
        first = ids[0]
        copy_id, dc_id = str(len(ids) + 1), str(len(ids) + 2)
        copied = [f["source_span"] for f in d["facts"] if f["note_id"] == first]
        copy_note = Note(copy_id, "Progress note. Interval history unchanged. Copied forward from admission:\n"
                         + "\n".join(s.rstrip(".") + "." for s in copied), None, "Progress note", None)
        dc_note = Note(dc_id, "DISCHARGE SUMMARY\nHospital course and findings:\n"
                       + "\n".join(f["source_span"].rstrip(".") + "." for f in d["facts"]), None,
                       "Discharge summary", None)
        case = Case(c.case_id, c.target_specialty, tuple(c.notes) + (copy_note, dc_note))
        cases.append(case)
        rng = random.Random(f"cit:{c.case_id}")
        sents, wrong = [], []
        for i, s in enumerate(d["reference"]):
            own = sorted({facts[f]["note_id"] for f in s["facts"] if f in facts}, key=lambda n: (len(n), n))
            spans = [facts[f]["source_span"] for f in s["facts"] if f in facts]
            holds_none = [n.note_id for n in c.notes if not any(sp in n.text for sp in spans)]
            if i % 4 == 3 and holds_none:
                cite, bad = [rng.choice(holds_none)], True
            elif i % 3 == 2:
                cite, bad = [dc_id], False
            else:
                cite, bad = own or [dc_id], False
            sents.append(s["text"] + " " + ", ".join(f"<Note ID:{n}>" for n in cite))
            wrong.append(bad)
        sid = f"{c.case_id}-cit"
        summaries.append(Summary(sid, c.case_id, " ".join(sents)))
        labels[sid] = wrong
    return Dataset("cit", cases, summaries), labels


def _pr(pred, truth):
    tp = sum(p and t for p, t in zip(pred, truth))
    fp = sum(p and not t for p, t in zip(pred, truth))
    fn = sum(t and not p for p, t in zip(pred, truth))
    prec = tp / (tp + fp) if tp + fp else float("nan")
    rec = tp / (tp + fn) if tp + fn else float("nan")
    return prec, rec, tp, fp, fn


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--choose", action="store_true", help="sweep the threshold on the development split")
    args = ap.parse_args(argv)
    from engine.evidence.support import CITED_SUPPORT, align_summary
    from engine.evidence import Embedder
    from engine.llm import injection

    ds, labels = build()
    emb = Embedder()
    rows = []  # (split, truth wrong, cited support, old-rule wrong, verdict)
    injection = 0
    for s in ds.summaries:
        injection += len(injection.scan(s.text))
        res = align_summary(ds.case(s.case_id), s, emb)
        split = "dev" if s.case_id in DEV_CASES else "test"
        truth = labels[s.summary_id]
        cited = [a for a in res.sentences if a.citations]  # a written sentence ends with its citation
        if len(cited) != len(truth):
            print(f"warning: {s.summary_id}: {len(cited)} cited sentences found, {len(truth)} written; left out")
            continue
        for a, t in zip(cited, truth):
            rows.append((split, t, a.cited_support, a.best_note not in a.citations, a.citation_verdict))
    print(f"{len(ds.summaries)} summaries, {len(rows)} cited sentences, {sum(r[1] for r in rows)} wrong by "
          f"construction; injection findings on these summaries: {injection}")
    if args.choose:
        dev = [r for r in rows if r[0] == "dev"]
        best = None
        for k in range(20, 71):
            thr = k / 100
            p, r, *_ = _pr([x[2] is not None and x[2] < thr for x in dev], [x[1] for x in dev])
            f1 = 2 * p * r / (p + r) if p == p and r == r and p + r else 0.0
            if best is None or f1 > best[0] + 1e-9:
                best = (f1, thr, p, r)
        print(f"development split: best F1 {best[0]:.3f} at CITED_SUPPORT = {best[1]:.2f} (precision {best[2]:.2f}, "
              f"recall {best[3]:.2f})")
    for split in ("dev", "test"):
        part = [r for r in rows if r[0] == split]
        truth = [r[1] for r in part]
        for label, pred in (("rule in the code (cited notes must support it, threshold "
                             f"{CITED_SUPPORT:.2f})", [r[4] == "wrong" for r in part]),
                            ("old rule (another note supports it best)", [r[3] for r in part])):
            p, r, tp, fp, fn = _pr(pred, truth)
            print(f"[{split}] {label}: 'wrong' precision {p:.2f}, recall {r:.2f} (tp {tp}, fp {fp}, fn {fn}, "
                  f"{len(part)} sentences)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
