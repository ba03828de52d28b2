"""MED-OMIT's facts on real clinical notes: how much of a note the model's fact list reaches, and what the passages
no fact covers (engine.evidence.medomit.gaps) add.

Data: ACI-BENCH training split (Yim et al., Scientific Data 2023; CC BY 4.0), the complete clinical notes, split
by conversation id exactly as bench/verify_set.py splits them (sha256 of ``aci:<dataset>-<encounter_id>``; even →
development, odd → test) before anything is chosen. Each note is a one-note case. Its summary is the note with a
quarter of its sentences (the units unit coverage reads, of at least five words, headings left out; seeded) taken
out; the other sentences stay word for word.

Per setting (the model's facts alone; with passages at each ``min_carried`` and with / without the key-term rule;
and the "statements" fact source of engine.evidence.medomit.facts — every unit of the note a fact, no model facts,
which is the passages with no fact list to cover anything):
  * facts per note (the cost: each fact is one more importance rating and one more omission question);
  * reach: the share of the taken-out sentences on which some fact lies (a fact's linked span overlaps the
    sentence) — the ceiling of what MED-OMIT can report. With passages this is near 1 by construction wherever
    the rule fires (the passage *is* the sentence's unit): a pipeline check, not a result; the result is the reach
    of the model's facts alone and the number of facts the passages add;
  * detected / false reports with the coverage-only decision (engine.evidence.medomit.decision, ``use_model=False``):
    a taken-out sentence is detected when a fact on it is decided omitted; a kept sentence is falsely reported
    when a fact on it is. Kept sentences are word for word, so false reports here test the decision's coverage
    on real wording, not paraphrase (the paraphrase set of bench/omission_realdev.py does that).
The development split chooses the setting: the highest detected share, then the fewest facts. The test split
reports the chosen setting (``--split test --only MIN_CARRIED,KEYTERMS``) and, for comparison, the model's facts
alone. Extraction replies are cached in bench/out/medomit_passages.sqlite (a rerun is free).
Usage: python bench/medomit_passages_realdev.py [--split dev|test] [--notes 8] [--model qwen2.5-coder-1.5b]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import verify_set  # noqa: E402
from engine.core import Case, Note  # noqa: E402
from engine.data import Store  # noqa: E402
from engine.evidence.coverage import source_units  # noqa: E402
from engine.evidence.medomit import DecisionParams, GapParams, MedOmit, decide, passage_facts  # noqa: E402

SETTINGS = [None] + [GapParams(min_carried=m, key_terms=k) for m in (0.3, 0.5, 0.7) for k in (True, False)]
STATEMENTS = "statements"  # the "statements" fact source: every unit of the note, no model facts


def label(p) -> str:
    if p == STATEMENTS:
        return "the notes' statements (no model facts)"
    return "model facts only" if p is None else f"+ passages (carried < {p.min_carried}, key terms {p.key_terms})"


def notes_of(split: str, n: int, seed: int = 5) -> list[tuple[str, str]]:
    rows = [r for r in verify_set.read_rows("aci_bench_train.csv")
            if verify_set.split_of(f"aci:{r['dataset']}-{r['encounter_id']}") == split]
    random.Random(seed).shuffle(rows)
    return [(f"aci:{r['dataset']}-{r['encounter_id']}", r["note"].strip()) for r in rows[:n]]


def summary_of(case: Case, conv: str, share: float = 0.25) -> tuple[str, list[tuple[int, int]],
                                                                     list[tuple[int, int]]]:
    """The note without a seeded quarter of its sentences (units of at least five words that are not a heading);
    (summary, taken-out spans, kept spans)."""
    note = case.notes[0].text
    sents = [(u.start, u.end) for u in source_units(case) if len(u.text.split()) >= 5 and not u.text.isupper()]
    rng = random.Random(f"passages:{conv}")
    order = list(range(len(sents)))
    rng.shuffle(order)
    gone = set(order[:round(share * len(sents))])
    removed = [s for k, s in enumerate(sents) if k in gone]
    kept = [s for k, s in enumerate(sents) if k not in gone]
    text = note
    for a, b in sorted(removed, reverse=True):
        text = text[:a] + text[b:]
    return text, removed, kept


def on(f, span) -> bool:
    return f.start is not None and f.start < span[1] and span[0] < f.end


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--notes", type=int, default=8)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--only", default="", help="MIN_CARRIED,KEYTERMS (e.g. 0.5,1): report this setting only")
    args = ap.parse_args()
    from engine.evidence import Embedder
    from engine.judge import open_llama_backend

    settings = SETTINGS
    if args.only:
        m, k = args.only.split(",")
        settings = [None, GapParams(min_carried=float(m), key_terms=k.strip() in ("1", "true", "True"))]
    settings = settings + [STATEMENTS]
    be, sha = open_llama_backend("", n_ctx=8192, n_threads=args.threads, embedded_key=args.model)
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    mo = MedOmit(be, sha, cache=Store(out / "medomit_passages.sqlite"), facts="model")
    emb = Embedder()
    coverage_only = DecisionParams(use_model=False)
    tot = {label(p): {"facts": 0, "reach": 0, "det": 0, "false": 0} for p in settings}
    n_removed = n_kept = 0
    t0 = time.perf_counter()
    for i, (conv, text) in enumerate(notes_of(args.split, args.notes)):
        case = Case(conv, "", (Note("1", text),))
        records: list = []
        t1 = time.perf_counter()
        facts = mo.extract_facts(case, records)
        if facts is None:
            print(f"  {conv}: extraction failed ({records[-1].error})", file=sys.stderr)
            continue
        linked = [f for f in facts if f.link != "unlinked"]
        summary, removed, kept = summary_of(case, conv)
        n_removed, n_kept = n_removed + len(removed), n_kept + len(kept)
        print(f"  {conv}: {len(facts)} facts ({len(linked)} linked) in {time.perf_counter() - t1:.0f} s; "
              f"{len(removed)} sentences taken out, {len(kept)} kept", file=sys.stderr, flush=True)
        for p in settings:
            fs = (passage_facts(case, []) if p == STATEMENTS else
                  linked + ([] if p is None else passage_facts(case, linked, p)))
            dec = {d.fact_id: d.omitted for d in decide([f.fact_id for f in fs], [f.text for f in fs],
                                                         summary, emb, None, coverage_only)}
            t = tot[label(p)]
            t["facts"] += len(fs)
            t["reach"] += sum(any(on(f, s) for f in fs) for s in removed)
            t["det"] += sum(any(on(f, s) and dec[f.fact_id] for f in fs) for s in removed)
            t["false"] += sum(any(on(f, s) and dec[f.fact_id] for f in fs) for s in kept)
        print(f"    after {i + 1} notes ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    n = max(1, args.notes)
    print(f"ACI-BENCH {args.split} split: {args.notes} notes, {n_removed} sentences taken out, {n_kept} kept; "
          f"model {args.model}; decision on coverage alone")
    for name, t in tot.items():
        print(f"  {name:48s} facts/note {t['facts'] / n:5.1f}  reach {t['reach'] / max(1, n_removed):.2f}  "
              f"detected {t['det'] / max(1, n_removed):.2f}  false reports {t['false'] / max(1, n_kept):.2f}")
    if args.split == "dev" and not args.only:
        best = max((p for p in settings if p not in (None, STATEMENTS)),
                   key=lambda p: (tot[label(p)]["det"], -tot[label(p)]["facts"]))
        print(f"chosen on dev: min_carried {best.min_carried}, key terms {best.key_terms}")


if __name__ == "__main__":
    main()
