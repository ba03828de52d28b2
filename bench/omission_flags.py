"""Note-level omission flags (engine.evidence.coverage.note_flags) on the omission benchmark's cases.

The two flag rules were written while reading the sample's summaries (its documented dropped facts are their
floor, tests/test_evidence_defects.py); nothing here was tuned, so both splits are reported.

Constructions, per note case and removal order (bench/omission_benchmark.py's seeded orders):
  complete   the complete reference summary, every sentence citing the notes of its facts
  half       50 % of its fact-bearing sentences removed; the kept sentences cite the notes of their facts, so a
             note whose every fact went with the removed sentences is cited by none
Figures:
  flags      how many flags of each kind fire on complete summaries (nothing is omitted there: each one is a false
             alarm) and on half-omitted ones
  precision  share of the half-omitted summaries' flags whose passage holds a removed fact
  conv.      the same for the conversations (one transcript: no citation flag can fire; pending flags read the
             transcript)
Usage: python bench/omission_flags.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import omission_benchmark as ob  # noqa: E402
from engine.core import Summary  # noqa: E402
from engine.evidence.coverage import CoverageParams, score_coverage  # noqa: E402
from engine.evidence import Embedder  # noqa: E402
from engine.evidence.coverage import FLAG_KINDS, omission_flags  # noqa: E402


def cited_text(item: ob.Item, keep: set[int]) -> str:
    """The kept sentences of the complete summary, each followed by citations of its facts' notes."""
    out = []
    for i, s in enumerate(item.sents):
        if i not in keep:
            continue
        notes = sorted({sp[0] for f in item.sent_facts[i] for sp in item.spans[f]}, key=lambda n: (len(n), n))
        out.append(s + "".join(f" <NoteID:{n}>" for n in notes if item.kind == "notes"))
    return "\n".join(out)


def main() -> int:
    emb = Embedder()
    items = ob.load_conversations() + ob.load_note_cases()
    splits = ob.split(items)
    print("flag kind".ljust(14), "split".ljust(5), "kind".ljust(13), "on complete", "on half", "precision (half)")
    for name in ("dev", "test"):
        counts: dict[tuple, list] = {}
        for it in splits[name]:
            for role, share, orders in (("complete", 0.0, (0,)), ("half", 0.5, ob.ORDERS)):
                for order in orders:
                    gone, removed = ob.removed_sentences(it, order, share)
                    keep = set(range(len(it.sents))) - gone
                    text = cited_text(it, keep)
                    r = score_coverage(it.case, Summary("bench", it.case.case_id, text), emb,
                                       CoverageParams(method="unitcov"))
                    for fl in omission_flags(it.case, text, r.units, r.threshold):
                        hit = any(sp[0] == fl.note_id and sp[1] < fl.end and sp[2] > fl.start
                                  for f in removed for sp in it.spans[f])
                        counts.setdefault((fl.kind, it.kind, role), []).append(hit)
        for kind in FLAG_KINDS:
            for src in ("notes", "conversation"):
                comp = counts.get((kind, src, "complete"), [])
                half = counts.get((kind, src, "half"), [])
                prec = f"{sum(half)}/{len(half)} ({sum(half) / len(half):.2f})" if half else "—"
                print(kind.ljust(14), name.ljust(5), src.ljust(13), str(len(comp)).ljust(11), str(len(half)).ljust(7),
                      prec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
