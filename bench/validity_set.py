"""The judge-validity set: summaries with known, graded defects per PDSQI-9 item, built from our own writing.

Source: the 12 sample patients' notes and the complete reference summaries we wrote for them
(``sample_data/note_facts/<case>.json``: every reference sentence lists the facts it states, every fact names the
note it comes from). From each reference we build, deterministically:

* ``clean``: every sentence, in order, each cited to the notes of its facts (``<NoteID:n>``).
* ``thorough`` 1 / 2: sentences dropped until at least 25 % / 50 % of the facts are gone.
* ``accurate`` 1 / 2: one number falsified / two numbers falsified and one fabricated sentence added.
* ``cited`` 1 / 2: half of the sentences lose their citations / no citation at all.
* ``succinct`` 1 / 2: two restatements added / filler on every sentence and three restatements.
* ``organized`` 1 / 2: the first and last sentences swapped / every sentence shuffled.
* ``comprehensible`` 1 / 2: clinical shorthand / shorthand in one run-on fragment list.
* ``stigmatizing_summary`` 1: one stigmatizing sentence about the patient added.

Severity 0 is the clean control. Cases are split by case into a development half (calibration, choices) and a test
half that is only reported.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FACTS = ROOT / "sample_data" / "note_facts"
DEV_CASES = ("card-01", "endo-01", "gi-01", "neuro-01", "id-01")  # chosen before any judge run, by specialty spread
ITEM_OF_KIND = {"thorough": "thorough", "accurate": "accurate", "cited": "cited", "succinct": "succinct",
                "organized": "organized", "comprehensible": "comprehensible", "stigma": "stigmatizing_summary"}

FABRICATED = (
    "A transthoracic echocardiogram in the same week showed a new 2 cm left atrial myxoma.",
    "He was also started on warfarin 5 mg daily for a newly found mechanical mitral valve thrombus.",
    "A repeat CT showed a new 3 cm right adrenal mass, and endocrine surgery was consulted.",
)
FILLERS = ("It is important to note that ", "As was previously documented in the record, ",
           "Of note, and as mentioned elsewhere, ", "In terms of the overall clinical picture, ")
STIGMA_SENTENCE = "He is a known drug seeker, is noncompliant with his medications and is a poor historian."
SHORTHAND = [
    (r"\bpatient\b", "pt"), (r"\bhistory\b", "hx"), (r"\bwith\b", "w/"), (r"\bwithout\b", "w/o"),
    (r"\btreatment\b", "tx"), (r"\bdiagnosis\b", "dx"), (r"\bmedications?\b", "meds"), (r"\bdaily\b", "qd"),
    (r"\btwice daily\b", "bid"), (r"\bfollow-up\b", "f/u"), (r"\bsymptoms\b", "sx"), (r"\bbecause of\b", "2/2"),
    (r"\band\b", "&"), (r"\bwas\b", ""), (r"\bwere\b", ""), (r"\bthe\b", ""), (r"\ba\b", ""),
    (r"\bstarted\b", "init'd"), (r"\bstopped\b", "d/c'd"), (r"\bincreased\b", "\u2191"), (r"\bdecreased\b", "\u2193"),
    (r"\bshowed\b", "c/w"), (r"\bhospital\b", "hosp"), (r"\bblood pressure\b", "BP"), (r"\bheart rate\b", "HR"),
]


@dataclass(frozen=True)
class Variant:
    summary_id: str
    case_id: str
    kind: str  # clean or a defect kind
    severity: int  # 0 clean, 1, 2
    text: str

    @property
    def item(self) -> str:
        return ITEM_OF_KIND.get(self.kind, "")

    @property
    def split(self) -> str:
        return "dev" if self.case_id in DEV_CASES else "test"


def _cite(sentence: dict, facts: dict) -> str:
    notes = sorted({facts[f]["note_id"] for f in sentence["facts"] if f in facts}, key=lambda n: (len(n), n))
    return sentence["text"] + (" " + "".join(f"<NoteID:{n}>" for n in notes) if notes else "")


def _falsify(text: str, rng: random.Random) -> str:
    """Change the first stand-alone number that is not a date part into another plausible one."""
    for m in re.finditer(r"(?<![\d/.-])(\d+(?:\.\d+)?)(?![\d/])", text):
        val = m.group(1)
        if "." in val:
            new = f"{float(val) * 1.8:.1f}"
        else:
            n = int(val)
            if 1990 <= n <= 2030:
                continue
            new = str(n * 2 if n < 50 else n + 37)
        return text[:m.start(1)] + new + text[m.end(1):]
    return text


def _shorthand(text: str) -> str:
    for pat, rep in SHORTHAND:
        text = re.sub(pat, rep, text, flags=re.IGNORECASE)
    return re.sub(r"\s{2,}", " ", text).replace(" ,", ",").strip()


def variants_for(case_id: str) -> list[Variant]:
    d = json.loads((FACTS / f"{case_id}.json").read_text(encoding="utf-8"))
    facts = {f["fact_id"]: f for f in d["facts"]}
    ref = d["reference"]
    rng = random.Random(f"validity:{case_id}")
    cited = [_cite(s, facts) for s in ref]
    out = [Variant(f"{case_id}-clean", case_id, "clean", 0, " ".join(cited))]

    # thorough: drop sentences (never the first) until the share of facts dropped reaches the level
    order = list(range(1, len(ref)))
    rng.shuffle(order)
    total = len(facts)
    for sev, share in ((1, 0.25), (2, 0.50)):
        gone, dropped = set(), set()
        for i in order:
            if len(gone) / total >= share:
                break
            dropped.add(i)
            gone |= set(ref[i]["facts"])
        kept_facts = set().union(*(set(ref[i]["facts"]) for i in range(len(ref)) if i not in dropped))
        gone = set(facts) - kept_facts
        out.append(Variant(f"{case_id}-thorough{sev}", case_id, "thorough", sev,
                           " ".join(c for i, c in enumerate(cited) if i not in dropped)))

    # accurate: falsified numbers (+ a fabricated sentence at level 2)
    numbered = [i for i, s in enumerate(ref) if _falsify(s["text"], rng) != s["text"]]
    one = list(cited)
    if numbered:
        i = numbered[len(numbered) // 2]
        one[i] = _cite({"text": _falsify(ref[i]["text"], rng), "facts": ref[i]["facts"]}, facts)
    out.append(Variant(f"{case_id}-accurate1", case_id, "accurate", 1, " ".join(one)))
    two = list(one)
    if len(numbered) > 1:
        i = numbered[0]
        two[i] = _cite({"text": _falsify(ref[i]["text"], rng), "facts": ref[i]["facts"]}, facts)
    two.insert(len(two) // 2, FABRICATED[sum(map(ord, case_id)) % len(FABRICATED)] + " <NoteID:1>")
    out.append(Variant(f"{case_id}-accurate2", case_id, "accurate", 2, " ".join(two)))

    # cited: half the citations missing / none at all
    plain = [s["text"] for s in ref]
    out.append(Variant(f"{case_id}-cited1", case_id, "cited", 1,
                       " ".join(c if i % 2 == 0 else p for i, (c, p) in enumerate(zip(cited, plain)))))
    out.append(Variant(f"{case_id}-cited2", case_id, "cited", 2, " ".join(plain)))

    # succinct: restatements (+ filler on every sentence)
    def restate(sents: list[str], k: int) -> list[str]:
        res = list(sents)
        for j in range(k):
            src = cited[(j * 3 + 1) % len(cited)]
            res.append("To reiterate, " + src[0].lower() + src[1:])
        return res

    out.append(Variant(f"{case_id}-succinct1", case_id, "succinct", 1, " ".join(restate(cited, 2))))
    padded = [FILLERS[i % len(FILLERS)] + c[0].lower() + c[1:] for i, c in enumerate(cited)]
    out.append(Variant(f"{case_id}-succinct2", case_id, "succinct", 2, " ".join(restate(padded, 3))))

    # organized: first and last swapped / fully shuffled
    swapped = list(cited)
    swapped[0], swapped[-1] = swapped[-1], swapped[0]
    out.append(Variant(f"{case_id}-organized1", case_id, "organized", 1, " ".join(swapped)))
    shuffled = list(cited)
    while shuffled[:2] == cited[:2]:
        rng.shuffle(shuffled)
    out.append(Variant(f"{case_id}-organized2", case_id, "organized", 2, " ".join(shuffled)))

    # comprehensible: shorthand / shorthand fragments in one run-on list
    short = [_shorthand(s["text"]) + (" " + c[len(s["text"]):].strip() if c != s["text"] else "")
             for s, c in zip(ref, cited)]
    out.append(Variant(f"{case_id}-comprehensible1", case_id, "comprehensible", 1, " ".join(short)))
    runon = "; ".join(x.rstrip(".") for x in short)
    out.append(Variant(f"{case_id}-comprehensible2", case_id, "comprehensible", 2, runon.lower() + "."))

    # stigmatizing language in the summary
    st = list(cited)
    st.insert(1, STIGMA_SENTENCE)
    out.append(Variant(f"{case_id}-stigma1", case_id, "stigma", 1, " ".join(st)))
    return out


def all_variants() -> list[Variant]:
    return [v for p in sorted(FACTS.glob("*.json")) for v in variants_for(p.stem)]


def dataset(variants: list[Variant], name: str = "validity"):
    """The sample's cases (notes as shipped) with these variants as summaries, no ratings."""
    import sys

    sys.path.insert(0, str(ROOT))
    from engine.data import load_paths
    from engine.core import Dataset, Summary
    from engine.sample import SAMPLE_BUNDLE

    files = [str(SAMPLE_BUNDLE / "cases.csv"), str(SAMPLE_BUNDLE / "notes.csv")]
    base, _ = load_paths(files, name=name)
    cases = {v.case_id for v in variants}
    return Dataset(name, [c for c in base.cases if c.case_id in cases],
                   [Summary(v.summary_id, v.case_id, v.text, quality_group=v.kind) for v in variants])


if __name__ == "__main__":
    vs = all_variants()
    print(f"{len(vs)} variants over {len({v.case_id for v in vs})} cases "
          f"({sum(v.split == 'dev' for v in vs)} dev, {sum(v.split == 'test' for v in vs)} test)")
    for v in variants_for("card-01"):
        print(f"--- {v.summary_id} ({v.kind} {v.severity})\n{v.text[:400]}")
