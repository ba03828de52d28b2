"""The allergy check (:mod:`engine.evidence.support.allergies`) on real notes and the conversations they were
written from (the realdev set, split by conversation as in ``bench/verify_set.py``).

Two figures per split:

* **false findings**: every sentence of a clinician's note (ACI-BENCH notes, MTS-Dialog sections) that claims an
  allergen, checked against its own conversation; a finding there is a false alarm, or a note that states what the
  conversation does not (both are counted, the sentences listed with ``--show``);
* **swapped allergens found**: the same sentences with one claimed allergen replaced by a drug the conversation
  names outside its allergy talk (a medication the patient takes, named as an allergy: the invented allergy whose
  word is in the record), or by a common allergen the conversation never names: the share the check finds.

The patterns and word lists were chosen reading the development split; the test split is reported as it falls.

    python bench/allergy_realdev.py [--split dev|test] [--show]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from verify_set import read_rows, split_of  # noqa: E402

from engine.evidence.support import allergy_stems, claimed_allergens, unrecorded_allergens  # noqa: E402
from engine.evidence.text import is_specific, stem, tokens  # noqa: E402


def pairs(split: str) -> list[tuple[str, str, str]]:
    """(conversation id, conversation, note sentence) for every note sentence of ``split`` claiming an allergen."""
    out = []
    for r in read_rows("mts_dialog_train.csv"):
        cid = f"mts:{r['ID']}"
        if split_of(cid) == split:
            out += [(cid, r["dialogue"], s) for s in _sentences(r["section_text"])]
    for r in read_rows("aci_bench_train.csv"):
        cid = f"aci:{r['dataset']}-{r['encounter_id']}"
        if split_of(cid) == split:
            out += [(cid, r["dialogue"], s) for s in _sentences(r["note"])]
    return [(c, d, s) for c, d, s in out if claimed_allergens(s)]


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


COMMON = ("penicillin", "sulfa", "codeine", "latex", "shellfish", "peanuts", "morphine", "iodine")


def swapped(conv: str, sentence: str, elsewhere: bool = True) -> str | None:
    """``sentence`` with its first claimed allergen replaced by a drug the conversation names outside its allergy
    talk (``elsewhere``) or by a common allergen the conversation never names; None when there is none."""
    talk = allergy_stems([("c", conv)])
    if elsewhere:
        pool = [t.low for t in tokens(conv) if t.low.isalpha() and is_specific(t.low) and stem(t.low) not in talk]
    else:
        words = {stem(t.low) for t in tokens(conv)}
        pool = [w for w in COMMON if stem(w) not in words]
    first = claimed_allergens(sentence)[0]
    if not pool:
        return None
    return re.sub(rf"\b{re.escape(first)}\b", pool[0], sentence, count=1, flags=re.I)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    ps = pairs(args.split)
    fired = [(c, s, unrecorded_allergens(s, [("c", d)])) for c, d, s in ps]
    fired = [f for f in fired if f[2]]
    print(f"{args.split}: {len(ps)} note sentences claim an allergen; "
          f"{len(fired)} get a finding against their conversation ({len(fired) / max(len(ps), 1):.1%})")
    if args.show:
        for c, s, w in fired:
            print(f"  {c}: {w} | {s[:160]}")
    kept = [(c, d, s) for c, d, s in ps if not unrecorded_allergens(s, [("c", d)])]
    for elsewhere, what in ((True, "a drug the conversation names elsewhere"), (False, "a common allergen it never names")):
        sw = [(c, d, swapped(d, s, elsewhere)) for c, d, s in kept]
        sw = [(c, d, s) for c, d, s in sw if s]
        found = [s for c, d, s in sw if unrecorded_allergens(s, [("c", d)])]
        print(f"  swapped allergen ({what}): {len(found)} of {len(sw)} found ({len(found) / max(len(sw), 1):.1%})")
        if args.show:
            for c, d, s in sw:
                print(f"    {'found' if s in found else 'missed'} {c}: {s[:150]}")

if __name__ == "__main__":
    main()
