"""The fact-controlled verification set, built from real conversations and the notes clinicians wrote from them.

Source: the ``realdev`` folder of the shared reference data beside the repository — the MTS-Dialog training
set (Ben Abacha et al., EACL 2023) and the ACI-BENCH training split (Yim et al., Scientific Data 2023), CC BY
4.0. Conversations are split by conversation id (sha256 of ``source:id``, even → development, odd → test) before
anything is chosen.

Items (a note sentence checked against a version of its conversation; label 1 = not supported):
  supported      a note sentence against its full conversation                                            (0)
  removed        the same kind of sentence against the conversation with the turns that state its facts
                 taken out (its content words drop to at most half) — fact-controlled leave-N-out          (1)
  edit:<kind>    a supported sentence with one fact changed, against the full conversation: number, side,
                 negation, drug, an added age, an added setting                                           (1)
  natural:<kind> what real summarizers add, against the full conversation (label 1): a history the
                 conversation never gives (``history``), a finding never reported (``finding``), a pertinent
                 negative on a topic never raised (``negative``), a second value or a relative's value changed
                 (``second-value``), a dose and frequency the conversation leaves open (``dose``). Drawn with
                 their own seeded generator per conversation, so the other items stay as they were. The
                 ``edit:age`` and ``edit:setting`` items (added demographics and settings) count as natural-like.
  reference-unsupported  a note sentence that states a number or an age the conversation never gives: the
                 clinician wrote it from other knowledge. Labelled by that rule, kept out of the main figures
                 and reported on its own (label 1).
The "supported" label is automatic: a note sentence with no number or age foreign to the conversation. A note
can still say what the conversation never said in words (a setting, a history): such sentences are label noise
in the supported class, which makes the figures conservative.
"""
from __future__ import annotations

import csv
import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path

from engine.evidence.text import content_stems, numbers
from engine.evidence.support import specifics
from engine.evidence.text import split_sentences, terms  # noqa: E402

REALDEV = Path(__file__).resolve().parents[2] / "shared" / "realdev"
MTS_SECTIONS = ("GENHX", "PASTMEDICALHX", "FAM/SOCHX", "MEDICATIONS", "PASTSURGICAL", "ROS", "ALLERGY",
                "ASSESSMENT", "CC", "DISPOSITION", "PLAN", "EDCOURSE")
ACI_SECTIONS = ("HISTORY OF PRESENT ILLNESS", "ASSESSMENT AND PLAN", "RESULTS", "PHYSICAL EXAMINATION")
DRUGS = ("metoprolol", "lisinopril", "atorvastatin", "warfarin", "amiodarone", "prednisone", "gabapentin",
         "levothyroxine", "furosemide", "sertraline")
AGE_TALK = re.compile(r"\b(?:years? old|year-old|how old|aged?|birthday)\b", re.I)


@dataclass(frozen=True)
class Item:
    conv_id: str  # "mts:123" / "aci:virtassist-D2N001"
    split: str  # dev | test
    source: str  # mts | aci
    record: str  # the conversation as checked (full, or with turns removed)
    variant: str  # "full" or "minus:<sentence index>"
    sentence: str
    label: int  # 1: not supported by the record
    category: str


def split_of(conv_id: str) -> str:
    return "dev" if int(hashlib.sha256(conv_id.encode()).hexdigest(), 16) % 2 == 0 else "test"


def read_rows(name: str) -> list[dict]:
    """The rows of one of the real-text sets (a CSV in the shared realdev folder), as dicts."""
    csv.field_size_limit(1 << 30)
    with open(REALDEV / name, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def foreign(sentence: str, conv: str) -> bool:
    """The sentence states a number or an age the conversation never gives."""
    if specifics.ages(sentence) and not (AGE_TALK.search(conv) or specifics.ages(conv)):
        return True
    return bool(numbers(sentence) - numbers(conv, generous=True) - {"1", "0"})


def coverage(stems: list[str], lines: list[str]) -> float:
    """The share of ``stems`` (a sentence's content-word stems) that some line of ``lines`` states (1.0 for none)."""
    have = set(s for ln in lines for s in content_stems(ln))
    return sum(s in have for s in stems) / len(stems) if stems else 1.0


def remove_turns(sentence: str, lines: list[str], max_removed: int = 4) -> tuple[list[str], list[int]] | None:
    """The conversation without the turns that state the sentence's facts, or None when its content words stay
    (more than half of them still present after ``max_removed`` turns go)."""
    stems = content_stems(sentence)
    if len(stems) < 3:
        return None
    keep = list(range(len(lines)))
    removed: list[int] = []
    while coverage(stems, [lines[i] for i in keep]) > 0.5:
        if len(removed) >= max_removed:
            return None
        best = max(keep, key=lambda i: (len(set(content_stems(lines[i])) & set(stems)), -i))
        if not set(content_stems(lines[best])) & set(stems):
            return None
        keep.remove(best)
        removed.append(best)
    return [lines[i] for i in keep], sorted(removed)


_NEG = [(r"\bdenies\b", "reports"), (r"\bdenied\b", "reported"), (r"\breports\b", "denies"),
        (r"\bis not\b", "is"), (r"\bdoes not\b", "does"), (r"\bdid not\b", "did"), (r"\bno history of\b", "a history of"),
        (r"\bnegative for\b", "positive for"), (r"\bhas\b", "has never had"), (r"\bwas\b", "was not")]


def edit(sentence: str, conv: str, kind: str, rng: random.Random) -> str | None:
    """``sentence`` with one fact of ``kind`` changed so the conversation no longer supports it (None: not
    applicable to this sentence)."""
    conv_nums = numbers(conv, generous=True)
    low = conv.lower()
    if kind == "number":
        for m in re.finditer(r"\b\d+(?:\.\d+)?\b", sentence):
            v = float(m.group(0))
            new = v + max(2, round(v * 0.4)) if v < 1000 else v + 10
            txt = str(int(new)) if new == int(new) else f"{new:g}"
            if txt not in conv_nums:
                return sentence[:m.start()] + txt + sentence[m.end():]
        return None
    if kind == "side":
        m = re.search(r"\b(left|right)\b", sentence, re.I)
        if not m:
            return None
        other = "right" if m.group(1).lower() == "left" else "left"
        other = other.capitalize() if m.group(1)[0].isupper() else other
        return sentence[:m.start()] + other + sentence[m.end():]
    if kind == "negation":
        for rx, rep in _NEG:
            m = re.search(rx, sentence, re.I)
            if m:
                return sentence[:m.start()] + rep + sentence[m.end():]
        return None
    if kind == "drug":
        words = re.findall(r"[A-Za-z]+", sentence)
        drug = next((w for w in words if len(w) >= 6 and w.lower().endswith(terms.DRUG_STEMS)), None)
        if not drug:
            return None
        choices = [d for d in DRUGS if d not in low and d != drug.lower()]
        return re.sub(rf"\b{re.escape(drug)}\b", rng.choice(choices), sentence, count=1) if choices else None
    if kind == "age":
        if AGE_TALK.search(conv) or specifics.ages(sentence):
            return None
        m = re.match(r"(?:The patient|Patient|She|He)\b", sentence)
        if not m:
            return None
        age = rng.choice([34, 47, 58, 63, 71, 74])
        return f"The {age}-year-old patient" + sentence[m.end():]
    if kind == "setting":
        if "emergency" in low or not sentence.rstrip().endswith("."):
            return None
        return sentence.rstrip()[:-1] + " in the emergency department."
    raise ValueError(kind)


EDIT_KINDS = ("number", "side", "negation", "drug", "age", "setting")


HISTORIES = ("hypertension", "type 2 diabetes", "hyperlipidemia", "asthma", "hypothyroidism", "atrial fibrillation",
             "chronic kidney disease", "depression")
FINDINGS = (("ecg", "an ECG showed normal sinus rhythm"), ("x-ray", "a chest X-ray was clear"),
            ("murmur", "no murmur was heard on exam"), ("edema", "there was mild pitting edema of both ankles"),
            ("hemoglobin", "hemoglobin was 11.2"))
NEGATIVES = (("chest pain", "chest pain"), ("fever", "fever"), ("short", "shortness of breath"),
             ("nausea", "nausea or vomiting"), ("headache", "headaches"), ("weight", "weight loss"))
RELATIVES = r"\b(?:mother|father|sister|brother|son|daughter|wife|husband|mom|dad|grandmother|grandfather)\b"
DOSE_DRUGS = frozenset("""lisinopril metformin ibuprofen naproxen tylenol acetaminophen advil motrin aleve prednisone
gabapentin omeprazole amlodipine atorvastatin albuterol levothyroxine synthroid aspirin sertraline metoprolol losartan
hydrochlorothiazide furosemide lasix tramadol cyclobenzaprine flexeril meloxicam celebrex zoloft prozac fluoxetine
lexapro escitalopram xanax lorazepam ativan ambien coumadin warfarin eliquis plavix clopidogrel lipitor crestor
simvastatin pravastatin norvasc nexium prilosec zantac singulair montelukast zyrtec claritin benadryl keflex
amoxicillin augmentin azithromycin cipro ciprofloxacin doxycycline bactrim flomax tamsulosin finasteride wellbutrin
bupropion trazodone topamax topiramate depakote keppra lamictal lyrica norco vicodin percocet oxycodone morphine
dilaudid medrol methotrexate humira plaquenil allopurinol colchicine glipizide januvia jardiance ozempic
insulin""".split())
FREQUENCIES = ("twice daily", "once daily", "three times a day", "every 8 hours", "at bedtime")
NATURAL_KINDS = ("history", "finding", "negative", "second-value", "dose")


def _clause(sentence: str, clause: str) -> str | None:
    body = sentence.rstrip()
    if not body.endswith("."):
        return None
    return body[:-1] + clause + "."


def natural(sentence: str, conv: str, kind: str, rng: random.Random) -> str | None:
    """``sentence`` with content a summarizer might add that the conversation never gives (None: not applicable)."""
    low = conv.lower()
    if kind == "history":
        choices = [h for h in HISTORIES if h.split()[-1] not in low and h not in sentence.lower()]
        return _clause(sentence, f", with a history of {rng.choice(choices)}") if choices else None
    if kind == "finding":
        choices = [text for topic, text in FINDINGS if topic not in low]
        return _clause(sentence, f"; {rng.choice(choices)}") if choices else None
    if kind == "negative":
        choices = [text for topic, text in NEGATIVES if topic not in low]
        return _clause(sentence, f", and the patient denies {rng.choice(choices)}") if choices else None
    if kind == "second-value":
        conv_nums = numbers(conv, generous=True)
        found = list(re.finditer(r"\b\d+(?:\.\d+)?\b", sentence))
        relative = re.search(RELATIVES, sentence, re.I)
        if relative:
            found = [m for m in found if m.start() > relative.start()] or found
        elif len(found) >= 2:
            found = found[1:]
        else:
            return None
        for m in found:
            v = float(m.group(0))
            new = v + 10 if v >= 10 else v + 2
            txt = str(int(new)) if new == int(new) else f"{new:g}"
            if txt not in conv_nums:
                return sentence[:m.start()] + txt + sentence[m.end():]
        return None
    if kind == "dose":
        for m in re.finditer(r"[A-Za-z]+", sentence):
            w = m.group(0)
            if w.lower() not in DOSE_DRUGS:
                continue
            after = sentence[m.end():m.end() + 25]
            if re.match(r"\s*\d", after) or re.search(r"\b(?:daily|twice|times|every|mg)\b", low):
                return None
            conv_nums = numbers(conv, generous=True)
            dose = next((d for d in rng.sample([5, 10, 20, 25, 40, 50, 100], 7) if str(d) not in conv_nums), None)
            if dose is None:
                return None
            return sentence[:m.end()] + f" {dose} mg {rng.choice(FREQUENCIES)}" + sentence[m.end():]
        return None
    raise ValueError(kind)


def natural_items(conv_id: str, source: str, conv: str, sents: list[str], n: int) -> list[Item]:
    """Up to ``n`` natural-like items per kind for the conversation, from its supported-looking sentences, with a
    generator seeded by the conversation id."""
    rng = random.Random(int(hashlib.sha256(("natural:" + conv_id).encode()).hexdigest(), 16) % (1 << 32))
    good = [s for s in sents if not foreign(s, conv)]
    out: list[Item] = []
    for kind in NATURAL_KINDS:
        made = 0
        for s in rng.sample(good, len(good)):
            if made >= n:
                break
            e = natural(s, conv, kind, rng)
            if e and e != s:
                out.append(Item(conv_id, split_of(conv_id), source, conv, "full", e, 1, f"natural:{kind}"))
                made += 1
    return out


def note_sentences(text: str) -> list[str]:
    """The note's sentences of five words or more, list bullets taken off; a line in capitals (a heading) is left
    out."""
    out = []
    for s in split_sentences(text):
        t = re.sub(r"^[•\-*]\s*", "", s.clean).strip()
        if len(t.split()) >= 5 and not t.isupper():
            out.append(t)
    return out


def conversation_items(conv_id: str, source: str, conv: str, sents: list[str], rng: random.Random,
                       n_supported: int, n_removed: int, n_edits: int, n_natural: int = 1) -> list[Item]:
    """The items of one conversation: its note sentences with a foreign number or age as reference-unsupported,
    up to ``n_removed`` removals (each with its sentence as a supported item), ``n_supported`` more supported
    sentences, ``n_edits`` one-fact edits and up to ``n_natural`` natural-like items per kind."""
    split = split_of(conv_id)
    lines = [ln for ln in conv.splitlines() if ln.strip()]
    items: list[Item] = []
    good = []
    for s in sents:
        if foreign(s, conv):
            items.append(Item(conv_id, split, source, conv, "full", s, 1, "reference-unsupported"))
        else:
            good.append(s)
    rng.shuffle(good)
    removed_done = 0
    used = set()
    for i, s in enumerate(good):
        if removed_done >= n_removed:
            break
        cut = remove_turns(s, lines)
        if cut is None:
            continue
        rest, _ = cut
        items.append(Item(conv_id, split, source, "\n".join(rest), f"minus:{i}", s, 1, "removed"))
        items.append(Item(conv_id, split, source, conv, "full", s, 0, "supported"))
        used.add(s)
        removed_done += 1
    others = [s for s in good if s not in used]
    for s in others[:n_supported]:
        items.append(Item(conv_id, split, source, conv, "full", s, 0, "supported"))
    made = 0
    for s in others[n_supported:] + others[:n_supported]:
        if made >= n_edits:
            break
        start = rng.randrange(len(EDIT_KINDS) - 1)  # the setting edit (always applicable) comes last
        kinds = list(EDIT_KINDS[start:-1] + EDIT_KINDS[:start]) + ["setting"]
        for k in kinds:
            e = edit(s, conv, k, rng)
            if e and e != s:
                items.append(Item(conv_id, split, source, conv, "full", e, 1, f"edit:{k}"))
                made += 1
                break
    return items + natural_items(conv_id, source, conv, sents, n_natural)




def build(n_mts: int = 60, n_aci: int = 8, seed: int = 7) -> list[Item]:
    """The whole set, both splits: up to ``n_mts`` MTS-Dialog and ``n_aci`` ACI-BENCH conversations per split."""
    rng = random.Random(seed)
    items: list[Item] = []
    mts = [r for r in read_rows("mts_dialog_train.csv") if r["section_header"] in MTS_SECTIONS]
    for split in ("dev", "test"):
        rows = [r for r in mts if split_of(f"mts:{r['ID']}") == split]
        random.Random(seed).shuffle(rows)
        taken = 0
        for r in rows:
            if taken >= n_mts:
                break
            sents = note_sentences(r["section_text"])
            if not sents:
                continue
            items += conversation_items(f"mts:{r['ID']}", "mts", r["dialogue"].strip(), sents, rng, 1, 1, 1)
            taken += 1
    aci = read_rows("aci_bench_train.csv")
    for split in ("dev", "test"):
        rows = [r for r in aci if split_of(f"aci:{r['dataset']}-{r['encounter_id']}") == split]
        random.Random(seed).shuffle(rows)
        for r in rows[:n_aci]:
            sents = [s for s in aci_sentences(r["note"])]
            items += conversation_items(f"aci:{r['dataset']}-{r['encounter_id']}", "aci", r["dialogue"].strip(),
                                        sents, rng, 4, 2, 3)
    return items


def aci_sentences(note: str) -> list[str]:
    """Sentences of the note's narrative sections (history, results, exam, assessment and plan)."""
    out, keep = [], False
    for block in re.split(r"\n(?=[A-Z][A-Z /&]+\n)", note):
        head = block.strip().split("\n", 1)[0].strip()
        if head.isupper():
            keep = head in ACI_SECTIONS
            block = block.strip().split("\n", 1)[1] if "\n" in block.strip() else ""
        if keep:
            out += note_sentences(block)
    return out
