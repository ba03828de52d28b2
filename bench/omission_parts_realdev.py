"""MED-OMIT's omission decision on facts a summary states only in part, on real clinical notes.

A fact the 1.5B extracts, or a passage of the notes taken whole (engine.evidence.medomit.gaps), often joins several
statements ("start warfarin, INR goal 2-3, with enoxaparin 1 mg/kg SC b.i.d."). A summary that keeps one and drops
the other either gets the whole line reported omitted — pointing the reviewer at what the summary does say — or
none of it. This bench compares deciding such a fact whole with deciding it part by part
(engine.evidence.medomit.decision, ``DecisionParams.by_parts``).

Data: ACI-BENCH training split (Yim et al., Scientific Data 2023; CC BY 4.0), split by conversation id exactly as
bench/verify_set.py splits it (even hash → development, odd → test) before anything is chosen; the same notes and
cached fact lists as bench/medomit_passages_realdev.py. Each note is a one-note case. Its summary is the note with,
per sentence (a unit of at least five words, not a heading; seeded):
  * a sentence of several statements (engine.evidence.medomit.decision.fact_parts): one statement taken out with
    probability ½ (the sentence is then *partial*);
  * a sentence of one statement: taken out whole with probability ¼.
Everything else stays word for word. The facts are the product's own: the 1.5B's facts (from the cache) and the
passages. A fact's decision points to regions of the note (``FactScore.regions``: the parts left out, else the
fact's span). Per decision:
  * taken-out statements detected: a reported region overlaps it (whole sentences and single statements apart);
  * kept statements wrongly reported: a reported region overlaps a statement the summary keeps — the error a
    reviewer sees as "the summary leaves this out" when it does not.
The decision runs on coverage alone (``--model none``, the default: seconds) or with the model asked where coverage
does not decide (``--model default``: the 1.5B; minutes). The development split chooses whether facts are decided by
parts (more detected at no more wrong reports); the test split is reported with the choice.
Usage: python bench/omission_parts_realdev.py [--split dev|test] [--notes 8] [--model none|default]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from medomit_passages_realdev import notes_of  # noqa: E402
from engine.core import Case, Note  # noqa: E402
from engine.data import Store  # noqa: E402
from engine.evidence.coverage import source_units  # noqa: E402
from engine.evidence.medomit import (DEFAULT_DECISION, FactScore, MedOmit, decide, fact_parts, passage_facts)  # noqa: E402


def partial_summary(case: Case, conv: str) -> tuple[str, list, list, list]:
    """(summary, whole sentences taken out, statements taken out of a sentence, statements kept) — spans in the
    note."""
    note = case.notes[0].text
    rng = random.Random(f"parts:{conv}")
    whole, part, kept = [], [], []
    for u in source_units(case):
        if len(u.text.split()) < 5 or u.text.isupper():
            continue
        ps = [(u.start + a, u.start + b) for _, a, b in fact_parts(u.text)]
        if len(ps) > 1 and rng.random() < 0.5:
            k = rng.randrange(len(ps))
            part.append(ps[k])
            kept += [s for j, s in enumerate(ps) if j != k]
        elif len(ps) == 1 and rng.random() < 0.25:
            whole.append(ps[0])
        else:
            kept += ps
    text = note
    for a, b in sorted(whole + part, reverse=True):
        text = text[:a] + text[b:]
    return text, whole, part, kept


def overlaps(regions, span) -> bool:
    return any(a < span[1] and span[0] < b for _, a, b in regions)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--notes", type=int, default=8)
    ap.add_argument("--model", default="none", choices=("none", "default"))
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    from engine.evidence import Embedder
    from engine.judge import open_llama_backend

    be, sha = open_llama_backend("", n_ctx=8192, n_threads=args.threads, embedded_key="qwen2.5-coder-1.5b")
    mo = MedOmit(be, sha, cache=Store(ROOT / "bench" / "out" / "medomit_passages.sqlite"), facts="model")
    emb = Embedder()
    use_model = args.model != "none"
    variants = {"whole": replace(DEFAULT_DECISION, by_parts=False, use_model=use_model),
                "by parts": replace(DEFAULT_DECISION, by_parts=True, use_model=use_model)}
    tot = {k: {"whole": 0, "part": 0, "kept": 0, "reported": 0, "questions": 0} for k in variants}
    n = {"whole": 0, "part": 0, "kept": 0, "facts": 0}
    t0 = time.perf_counter()
    for conv, text in notes_of(args.split, args.notes):
        case = Case(conv, "", (Note("1", text),))
        records: list = []
        facts = mo.extract_facts(case, records)
        if facts is None:
            print(f"  {conv}: extraction failed", file=sys.stderr)
            continue
        linked = [f for f in facts if f.link != "unlinked"]
        fs = linked + passage_facts(case, linked)
        summary, whole, part, kept = partial_summary(case, conv)
        n["whole"], n["part"], n["kept"], n["facts"] = (n["whole"] + len(whole), n["part"] + len(part),
                                                       n["kept"] + len(kept), n["facts"] + len(fs))
        for name, params in variants.items():
            decs = decide([f.fact_id for f in fs], [f.text for f in fs], summary, emb, be if use_model else None,
                          params)
            regions = []
            for f, d in zip(fs, decs):
                if not d.omitted:
                    continue
                sc = FactScore(f.fact_id, True, None, 0.0, [], 0.0, [], missing=f.placed(text, d.missing))
                regions += sc.regions(f)
            t = tot[name]
            t["whole"] += sum(overlaps(regions, s) for s in whole)
            t["part"] += sum(overlaps(regions, s) for s in part)
            t["kept"] += sum(overlaps(regions, s) for s in kept)
            t["reported"] += sum(d.omitted for d in decs)
            t["questions"] += sum(1 for d in decs for x in (d.parts or (d,)) if x.p_stated is not None)
        print(f"  {conv}: {len(fs)} facts; {len(whole)} sentences and {len(part)} statements taken out, "
              f"{len(kept)} kept ({time.perf_counter() - t0:.0f} s); so far " + "; ".join(
                  f"{k}: {t['whole']}/{n['whole']} sentences, {t['part']}/{n['part']} statements, {t['kept']}/"
                  f"{n['kept']} kept reported" for k, t in tot.items()), file=sys.stderr, flush=True)
    print(f"ACI-BENCH {args.split} split: {args.notes} notes, {n['facts']} facts; {n['whole']} whole sentences and "
          f"{n['part']} statements of a longer sentence taken out, {n['kept']} statements kept; decision "
          f"{'with the 1.5B where coverage does not decide' if use_model else 'on coverage alone'}")
    for name, t in tot.items():
        print(f"  {name:9s} whole sentences detected {t['whole'] / max(1, n['whole']):.2f}  statements detected "
              f"{t['part'] / max(1, n['part']):.2f}  kept statements wrongly reported "
              f"{t['kept'] / max(1, n['kept']):.3f} ({t['kept']})  facts reported {t['reported']}"
              + (f"  questions {t['questions']}" if use_model else ""))
    if args.split == "dev":
        w, p = tot["whole"], tot["by parts"]
        better = p["part"] + p["whole"] > w["part"] + w["whole"] and p["kept"] <= w["kept"]
        print(f"chosen on dev: {'by parts' if better else 'whole'}")


if __name__ == "__main__":
    main()
