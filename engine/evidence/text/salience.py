"""Salience of source text: how likely a good summary is to carry a piece of a note.

Uncovered-region ranking (:func:`engine.evidence.coverage.regions.merge_regions`) multiplies each region's raw omission score by
this weight, so boilerplate and small talk — text no good summary would carry, and which a summary therefore never
"covers" — no longer lead the "possibly omitted" list. The rule is deterministic and cheap (regular expressions
and word lists, no model); every lexicon it uses is a constant of this module.

The rule
--------
A note is cut into **segments**: its sentences (:func:`engine.evidence.text.sentences.split_sentences`), each further cut at
line breaks. A segment is read after stripping a leading speaker tag (``[doctor]``, ``Patient:``) and a list
marker (``1.``, ``-``). Its weight, first match wins:

1. **Header → 0.0**: a section label alone on its line (:data:`SECTION_LABELS`: "HPI:", "Assessment and Plan",
   "Plan:"), a short label ending in a colon (≤ 4 words, no clinical content: "Discharge meds:"), or a title line
   without digits or clinical acronyms whose words are all note-type / specialty / role words
   (:data:`TITLE_WORDS`: "ED Provider Note", "Telephone Encounter - Cardiology RN", "Hepatology clinic (Dr.
   Varga)."; a title's words count as title words even where they could be clinical, as in "Lab follow-up").
2. **Clinical content → 1.0.** The segment, once the boilerplate phrases of step 3 are removed from it (so a
   phrase never hides what follows it), holds any digit (values, doses, dates, ages — except the date/time stamp
   of a sign-off and a billing time statement, which their patterns consume), a number word with a unit ("two
   weeks"), a pertinent negative ("No tremor.", "denies fevers"), a clinical acronym (two or more capitals, e.g.
   ``LVEF``, ``NKDA``, ``CHA2DS2-VASc``, outside the administrative :data:`NONCLINICAL_ACRONYMS` such as ``ED``,
   ``PCP``, ``HPI``; ignored in an all-caps line), a word with a medication suffix (:data:`MED_SUFFIXES`, e.g.
   *-pril*, *-olol*, *-xaban*, *-statin*; at least 6 letters, a few ordinary words excepted), or a word of
   :data:`CLINICAL_TERMS` (symptoms, findings, body parts, diagnoses, tests, treatments). Clinical content is
   never down-weighted: "Pt verbalized understanding; start apixaban 5 mg bid" keeps 1.0.
3. **Boilerplate → 0.0**: the segment matches a phrase of :data:`BOILERPLATE_PATTERNS` (sign-offs
   "Electronically signed by …", "Dictated but not read"; "Pt verbalized understanding of plan", "all questions
   answered", "Return precautions given"; attestations "I have personally seen and examined the patient";
   discharge boilerplate "follow up with your PCP", "take medications as prescribed"; billing time statements)
   and at most :data:`BOILERPLATE_MAX_REST` content words remain once the phrases are removed.
4. **Small talk → 0.1**, only in conversation transcripts (a note with at least two lines opening with a speaker
   tag, :func:`is_dialogue`): the segment matches :data:`SMALL_TALK_PATTERNS` (greetings,
   thanks, goodbyes, pleasantries, conversation management such as "what brings you in today") or holds
   :data:`FILLERS` ("um", "okay", "mm-hmm", "yeah", "sounds good"), and at most
   :data:`SMALL_TALK_MAX_REST` content word remains once those and an addressed name ("ms. taylor") are removed.
   A bare "yes"/"no" is a backchannel: its content lives in the question, which keeps its own weight.
5. **No content word → 0.3**: nothing but stopwords, generic words ("patient", "wife"), punctuation and — in a
   transcript — fillers ("Will do."; in a note "Doing well." is content).
6. **Non-clinical talk → 0.3**, only in transcripts: content words but no clinical content (step 2) — logistics,
   family news, small talk the lexicons do not list ("the parking garage is a bit of a maze"). In a note such a
   line keeps 1.0. Added with the omission benchmark (``bench/omission_benchmark.py``): on its development conversations, with
   unit coverage, it raises the localisation AUROC of removed facts against every other unit from 0.62 to 0.71,
   at the cost of 0.85 → 0.81 against the kept facts only and 0.65 → 0.62 Spearman (``bench/omission_benchmark.py``).
7. Anything else → 1.0.

**Copy-forward**: a segment of at least :data:`REPEAT_MIN_WORDS` words whose normalised text (lower case,
letters and digits only) already occurred earlier in the case (notes in case order) weighs at most
:data:`REPEAT_WEIGHT`; its first occurrence keeps its own weight, so repeated content is still ranked — once.

A unit (a sentence or a token, with character offsets in one note) weighs the **largest** weight of the segments
it overlaps, so a unit touching any clinical segment keeps 1.0; a unit between segments (whitespace) weighs 1.0.
"Content words" are words of three or more letters outside :data:`STOPWORDS`, :data:`GENERIC_WORDS` and
:data:`FILLERS`. In :mod:`engine.evidence.coverage.regions` regions rank by raw omission score × salience, where a region's
salience makes that product its best salience-weighted unit score (a header merged into a content sentence ranks
by the sentence's score); salience-0 regions come last, and ``Region.score`` stays the raw score. Global scores and
thresholds do not use salience.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Optional, Protocol, Sequence

from engine.core import Case
from engine.evidence.text._phrase_patterns import BOILERPLATE_PATTERNS, SMALL_TALK_PATTERNS
from engine.evidence.text.tokenizer import NUMBER_WORDS, QUANTITY_WORDS, tokenize

# ------------------------------------------------------------------------------------------------- weights

HEADER_WEIGHT = 0.0
BOILERPLATE_WEIGHT = 0.0
SMALL_TALK_WEIGHT = 0.1
DIALOGUE_NONCLINICAL_WEIGHT = 0.3  # a transcript segment with content words but no clinical content
REPEAT_WEIGHT = 0.2
NO_CONTENT_WEIGHT = 0.3
REPEAT_MIN_WORDS = 3
BOILERPLATE_MAX_REST = 2
SMALL_TALK_MAX_REST = 1
LOW_SALIENCE = 0.5  # a region below this counts as boilerplate / small talk in reports and benchmarks

# ------------------------------------------------------------------------------------------------- lexicons

SECTION_LABELS: frozenset[str] = frozenset("""
cc|chief complaint|hpi|history|history of present illness|interval history|subjective|objective|s|o|a|p|
assessment|plan|assessment and plan|assessment plan|a p|ap|impression|impression and plan|impression plan|
recommendations|recs|ros|review of systems|pe|physical exam|physical examination|exam|examination|vitals|
vital signs|labs|laboratory|laboratory data|data|results|imaging|studies|meds|medications|current medications|
home medications|discharge medications|discharge meds|allergies|pmh|past medical history|psh|past surgical history|
fhx|family history|shx|sh|social history|problem list|hospital course|ed course|course|disposition|dispo|
diagnosis|diagnoses|discharge diagnosis|discharge diagnoses|discharge instructions|instructions|follow up|
follow-up|followup|procedures|procedure|consults|addendum|note|progress note|signature|attestation
""".replace("\n", "").split("|"))

# Words a note title is made of (with specialties, note types, roles); a line of only these is a title.
TITLE_WORDS: frozenset[str] = frozenset("""
note notes provider progress visit visits clinic consult consultation consultations econsult e-consult encounter
telephone phone call calls follow-up followup follow up results result review reviewed summary discharge admission
history physical h&p new patient established hospital post-hospital posthospital imaging lab labs procedure
procedures service services chart inpatient outpatient office televisit telehealth video virtual addendum update
documentation report record interval annual preop pre-op postop post-op day daily initial subsequent brief
department emergency urgent care primary team attending resident fellow nurse nursing np rn md do pa ed er pcp
cardiology endocrinology hepatology gastroenterology nephrology neurology pulmonology oncology rheumatology
infectious disease diseases medicine internal family surgery surgical psychiatry psychology pediatrics obstetrics
gynecology dermatology urology orthopedics orthopaedics ophthalmology radiology hematology geriatrics palliative
interventional stroke medical icu micu transplant sports physician physicians
""".split())

# Capitalised abbreviations that are administrative, not clinical content.
NONCLINICAL_ACRONYMS: frozenset[str] = frozenset("""
ED ER PCP RN NP MD DO PA PA-C LPN CNA MA HPI CC ROS PE PMH PSH FHX SHX A/P AP ID OK AM PM RTC F/U FU H&P DOB MRN
CSN FIN EHR EMR TEL NOTE ATTN CC: FYI PLAN MBBS PHD FACP FACC FAAN II III IV
""".split())

# Suffixes of generic drug names (a word of at least 6 letters ending in one is a medication).
MED_SUFFIXES: tuple[str, ...] = tuple("""
pril sartan olol alol ilol dipine statin xaban gatran parin mab nib tinib zumab ximab umab azole conazole prazole
cillin mycin micin floxacin cycline cef sulfa tidine semide etanide thiazide gliptin gliflozin glutide tide formin
sone solone olone lukast terol tropium azepam zolam pam triptyline oxetine aline faxine pramine ipine apine idone
azine codone morphone fentanil fentanyl caine dronate setron vir navir ciclovir profen fenac coxib triptan dopa
mide zosin osin thyroxine insulin platin taxel rubicin phosphamide trexate mustine gabalin barbital
""".split())

# Single clinical words (matched in lower case; a plural "s" is allowed).
CLINICAL_TERMS: frozenset[str] = frozenset("""
pain ache aches aching sore hurt hurts hurting burning cramp cramping tender tenderness swelling swollen edema
fever fevers chills sweats cough coughing sputum wheeze wheezing dyspnea breath breathing orthopnea nausea vomiting
diarrhea constipation bleeding blood bloody rash itch itching numbness tingling weakness weak fatigue tired dizzy
dizziness vertigo syncope faint fainting seizure seizures headache headaches migraine palpitations chest heart
lung lungs kidney kidneys liver stomach abdomen abdominal belly back neck head knee knees hip hips shoulder arm arms
leg legs foot feet ankle ankles hand hands wrist elbow eye eyes ear ears throat skin joint joints bone bones muscle
muscles spine brain bladder bowel urine urinary vision hearing weight appetite sleep insomnia mood anxiety
depression depressed anxious suicidal stress confusion memory fall falls injury fracture sprain wound infection
infected sepsis pneumonia asthma copd diabetes diabetic hypertension hypotension cancer tumor tumour mass nodule
lesion cyst polyp stroke attack failure fibrillation arrhythmia murmur anemia thyroid cholesterol glucose sugar
pressure pulse temperature oxygen saturation allergy allergies allergic nkda denies denied negative positive
normal abnormal elevated low high stable unstable worse worsening improved improving resolved chronic acute
diagnosis diagnosed biopsy scan ultrasound x-ray xray echo echocardiogram ecg ekg mri ct labs lab culture
cultures surgery operation procedure dialysis transfusion stent pacemaker catheter intubation ventilator
medication medications medicine meds pill pills tablet tablets dose doses dosage injection infusion inhaler
vaccine vaccines vaccination shot antibiotic antibiotics steroid steroids chemo chemotherapy radiation therapy
aspirin insulin warfarin heparin metformin acetaminophen tylenol ibuprofen advil motrin aleve
nitroglycerin albuterol prednisone oxycodone morphine opioid opioids alcohol drinking drinks smoking smoker
tobacco cigarettes vaping side ow ouch marijuana cannabis drug drugs pregnant pregnancy contraception menstrual period
milligram milligrams mg units mcg referral hospice dnr dnar code mg/dl bp hr spo2 rr bmi a1c inr
""".split())

# An amount before a unit: a number word or a quantity word of engine.evidence.text.tokenizer ("two", "a few", "half"),
# except the number words this rule has never read: reading them lifts two turns of the sample's conversations
# ("ninety percent", "eighteen pounds") from 0.3 to 1.0, which moves the omission benchmark's figures.
UNREAD_NUMBER_WORDS = frozenset("zero thirteen fourteen sixteen seventeen eighteen nineteen seventy eighty ninety "
                                "hundreds thousand thousands".split())
AMOUNT_WORDS = "(?:" + "|".join(sorted((NUMBER_WORDS - UNREAD_NUMBER_WORDS) | set(QUANTITY_WORDS),
                                       key=lambda w: (-len(w), w))) + ")"
UNIT_WORDS = (r"(?:minutes?|hours?|days?|weeks?|months?|years?|times?|milligrams?|grams?|units?|pounds?|"
              r"kilos?|percent|puffs?|pills?|tablets?|doses?|drinks?|cigarettes?|packs?)")

FILLERS: frozenset[str] = frozenset("""
um umm uh uhh er erm hmm hm mm mmm mhm mm-hmm mm-hm uh-huh uh-uh huh okay ok oh ah yeah yep yup yes no nope nah
sure right alright so well like just really totally exactly absolutely definitely cool gotcha wow great good fine
perfect true awesome excellent wonderful nice sorry hey thanks
""".split())

GENERIC_WORDS: frozenset[str] = frozenset("""
pt pts patient patients wife husband family daughter son mother father parents parent caregiver caregivers
spouse partner friend him her them
""".split())

STOPWORDS: frozenset[str] = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of
off on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom why will with would you your yours yourself yourselves i'm you're it's that's there's let's
don't can't won't i've you've we're we'll i'll i'd get got go going gonna want wanna today tonight now yet still
per incl etc think know see say said tell told thing things lot bit little kind sort way okay yeah also maybe
""".split())

# ------------------------------------------------------------------------------------------------- compiled

_BOILER_RE = [re.compile(p, re.I) for p in BOILERPLATE_PATTERNS]
_SMALL_RE = [re.compile(p, re.I) for p in SMALL_TALK_PATTERNS]
# a leading speaker tag ("[doctor]", "Patient:", "Mother:"): the one pattern coverage and alignment use too
SPEAKER_TAG = re.compile(r"^\s*(?:\[[^\]\n]{1,30}\]|(?:doctor|patient|dr|pt|provider|clinician|nurse|speaker\s*\d*|"
                         r"mother|father|parent|caregiver)\s*:)\s*", re.I)
_LIST_RE = re.compile(r"^\s*(?:[-*•·]+|\(?\d{1,2}[.)]|\(?[a-h][.)])\s+")
_ADDRESS_RE = re.compile(r"\b(?:mr|mrs|ms|miss|mx|dr|doctor)\.?\s+[a-z][a-z'-]+", re.I)
_NUM_UNIT_RE = re.compile(rf"\b{AMOUNT_WORDS}\s+{UNIT_WORDS}\b", re.I)
_NEGATIVE_RE = re.compile(r"\b(?:no|denies|denied|denying|without|negative\s+for)\s+([a-z][a-z-]{2,})", re.I)
_FILLER_RE = re.compile(r"(?<![\w-])(?:" + "|".join(sorted((re.escape(f) for f in FILLERS), key=len, reverse=True))
                        + r")(?![\w-])", re.I)


# the lexicons' words, lower-cased, with their apostrophes and hyphens ("don't", "mm-hmm"); acronym candidates as
# written, standing apart ("CHA2DS2-VASc", "H&P", "A/P"); letters and digits, lower-cased (a header's or repeat's key)
_words = partial(tokenize, letters="ascii_nocase", digits="none", joiners="'-", joiner_runs=True)
_acronym_candidates = partial(tokenize, case="keep", joiners="/&-", joiner_runs=True, apart=("/", "/"), min_len=2)
_norm_words = partial(tokenize, case="lower_text")


def _strip_prefix(text: str) -> str:
    t = SPEAKER_TAG.sub("", text, count=1)
    return _LIST_RE.sub("", t, count=1).strip()


def _is_acronym(tok: str) -> bool:
    caps = sum(c.isupper() for c in tok)
    return caps >= 2 and tok.upper() not in NONCLINICAL_ACRONYMS and tok.rstrip(":").upper() not in NONCLINICAL_ACRONYMS


def _is_med(word: str) -> bool:
    w = word.lower()
    return len(w) >= 6 and w.endswith(MED_SUFFIXES) and w not in _MED_EXCEPTIONS


_MED_EXCEPTIONS = frozenset("""
baseline outline online deadline guideline guidelines timeline decline airline pipeline hotline discipline
mainline saline reason person poison prison comparison lesson season garrison unison caffeine beside inside outside
decide decided reside provide divide guide peptide nucleotide oxide dioxide peroxide fluoride bromide cyanide
pesticide suicide homicide tirade parade arcade episode erode anode kamikaze overdose stroll
""".split())  # ordinary words that happen to end in a medication suffix (saline stays clinical via CLINICAL_TERMS)


def has_clinical_content(text: str) -> bool:
    """True when ``text`` holds a digit, a number word with a unit, a clinical acronym, a medication name or a
    clinical term (step 1 of the module's rule)."""
    if re.search(r"\d", text) or _NUM_UNIT_RE.search(text):
        return True
    for m in _NEGATIVE_RE.finditer(text):  # a pertinent negative ("No tremor.", "denies fevers")
        if content_words(m.group(1)):
            return True
    letters = [c for c in text if c.isalpha()]
    shouting = bool(letters) and sum(c.isupper() for c in letters) / len(letters) > 0.6  # all-caps heading
    if not shouting and any(_is_acronym(t) for t in _acronym_candidates(text)):
        return True
    for lw in _words(text):
        if lw in CLINICAL_TERMS or (lw.endswith("s") and lw[:-1] in CLINICAL_TERMS) or _is_med(lw):
            return True
        if "-" in lw and any(p in CLINICAL_TERMS or _is_med(p) for p in lw.split("-")):
            return True
    return False


def content_words(text: str, fillers: bool = True) -> list[str]:
    """Words of three or more letters outside the stopword, generic-word and (``fillers``) filler lists."""
    return [w for w in _words(text)
            if len(w) >= 3 and w not in STOPWORDS and w not in GENERIC_WORDS and not (fillers and w in FILLERS)]


def _is_header(t: str) -> bool:
    """A section label alone, a short label ending in a colon, or a title made of :data:`TITLE_WORDS` (a title's
    words are title words even where they could be clinical: "Lab follow-up", "Surgery clinic")."""
    core = t.strip().rstrip(".").strip()
    words = _norm_words(core)
    if not words:
        return True
    if " ".join(words) in SECTION_LABELS:
        return True
    if re.search(r"\d", core):
        return False
    if core.endswith(":") and len(words) <= 4 and not has_clinical_content(core):
        return True
    rest = _ADDRESS_RE.sub(" ", core)  # "(Dr. Varga)"
    rest = _TRAILING_NAME_RE.sub(lambda m: m.group(0) if m.group(0).lower() in TITLE_WORDS else " ", rest)
    if any(_is_acronym(tok) for tok in _acronym_candidates(rest)):
        return False
    ws = [w for w in tokenize(rest, case="lower_text", digits="none", extra="&", joiners="'-", joiner_runs=True,
                              open_end=True) if w not in STOPWORDS]  # "h&p", "follow-up", "patient's"
    return bool(ws) and all(w in TITLE_WORDS or all(p in TITLE_WORDS for p in w.split("-")) for w in ws)


_TRAILING_NAME_RE = re.compile(r"\b[A-Z][a-z]+\b(?=\s*[),]|\s*$)")  # a name closing a title ("with Okafor)")


@dataclass(frozen=True)
class SegmentSalience:
    weight: float
    kind: str  # "clinical", "header", "boilerplate", "small-talk", "no-content", "content", "repeat", "empty"


def is_dialogue_line(text: str) -> bool:
    """The line opens with a speaker tag ("[doctor]", "Patient:")."""
    return bool(SPEAKER_TAG.match(text))


def is_dialogue(text: str) -> bool:
    """A note is a conversation transcript when at least two of its lines open with a speaker tag."""
    return sum(1 for line in text.splitlines() if SPEAKER_TAG.match(line)) >= 2


def classify(text: str, dialogue: Optional[bool] = None) -> SegmentSalience:
    """Weight and kind of one line or sentence under the module's rule (without the copy-forward step).

    ``dialogue``: whether the text comes from a conversation transcript (the small-talk step applies only there);
    None = the text itself opens with a speaker tag."""
    if dialogue is None:
        dialogue = is_dialogue_line(text)
    t = _strip_prefix(text)
    if not re.search(r"[A-Za-z0-9]", t):
        return SegmentSalience(HEADER_WEIGHT, "empty")
    if _is_header(t):
        return SegmentSalience(HEADER_WEIGHT, "header")
    rest = t
    boiler = False
    for rx in _BOILER_RE:
        rest, n = rx.subn(" ", rest)
        boiler = boiler or n > 0
    if has_clinical_content(rest):
        return SegmentSalience(1.0, "clinical")
    if boiler and len(content_words(_ADDRESS_RE.sub(" ", rest))) <= BOILERPLATE_MAX_REST:
        return SegmentSalience(BOILERPLATE_WEIGHT, "boilerplate")
    if not dialogue:  # in a note "Doing well." is a status, not a filler
        return SegmentSalience(NO_CONTENT_WEIGHT, "no-content") if not content_words(t, fillers=False) else \
            SegmentSalience(1.0, "content")
    small = t
    talk = False
    for rx in _SMALL_RE:
        small, n = rx.subn(" ", small)
        talk = talk or n > 0
    small, n = _FILLER_RE.subn(" ", small)
    talk = talk or n > 0
    small = _ADDRESS_RE.sub(" ", small)
    if talk and len(content_words(small)) <= SMALL_TALK_MAX_REST:
        return SegmentSalience(SMALL_TALK_WEIGHT, "small-talk")
    if not content_words(t):
        return SegmentSalience(NO_CONTENT_WEIGHT, "no-content")
    # conversation without any clinical content is logistics, family news or small talk the lexicons missed
    # ("the parking garage is a bit of a maze"); measured on the development split of bench/omission_benchmark.py
    return SegmentSalience(DIALOGUE_NONCLINICAL_WEIGHT, "non-clinical talk")


def line_salience(text: str, dialogue: Optional[bool] = None) -> float:
    """Salience weight in [0, 1] of one line or sentence (0 = boilerplate / small talk, 1 = content);
    ``dialogue`` as in :func:`classify`."""
    return classify(text, dialogue).weight


# ------------------------------------------------------------------------------------------------- units


class _UnitLike(Protocol):
    note_id: str
    start: int
    end: int


@lru_cache(maxsize=256)
def _segments(text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of a note's segments: its sentences, cut at line breaks."""
    from engine.evidence.text.sentences import split_sentences

    out: list[tuple[int, int]] = []
    for s in split_sentences(text):
        pos = s.start
        for line in text[s.start:s.end].split("\n"):
            a = pos + len(line) - len(line.lstrip())
            b = pos + len(line.rstrip())
            if b > a:
                out.append((a, b))
            pos += len(line) + 1
    return tuple(out)


def segment_weights(case: Case) -> dict[str, list[tuple[int, int, float]]]:
    """Per note of the case, its segments ``(start, end, weight)`` with the copy-forward step applied."""
    seen: set[str] = set()
    out: dict[str, list[tuple[int, int, float]]] = {}
    for note in case.notes:
        rows = []
        dialogue = is_dialogue(note.text)
        for a, b in _segments(note.text):
            w = _classify_cached(note.text[a:b], dialogue).weight
            words = _norm_words(_strip_prefix(note.text[a:b]))
            key = " ".join(words)
            if len(words) >= REPEAT_MIN_WORDS:
                if key in seen:
                    w = min(w, REPEAT_WEIGHT)
                seen.add(key)
            rows.append((a, b, w))
        out[note.note_id] = rows
    return out


@lru_cache(maxsize=4096)
def _classify_cached(text: str, dialogue: bool) -> SegmentSalience:
    return classify(text, dialogue)


def unit_salience(case: Case, units: Sequence[_UnitLike],
                  weights: Optional[dict[str, list[tuple[int, int, float]]]] = None) -> list[float]:
    """Salience of each unit (``note_id``, ``start``, ``end``): the largest weight of the segments it overlaps;
    1.0 for a unit that overlaps none (or whose note is not in the case)."""
    segs = weights if weights is not None else segment_weights(case)
    starts = {nid: [a for a, _, _ in rows] for nid, rows in segs.items()}
    out: list[float] = []
    for u in units:
        rows = segs.get(u.note_id)
        if not rows:
            out.append(1.0)
            continue
        i = max(bisect_right(starts[u.note_id], u.start) - 1, 0)
        best: Optional[float] = None
        while i < len(rows) and rows[i][0] < max(u.end, u.start + 1):
            a, b, w = rows[i]
            if b > u.start and a < max(u.end, u.start + 1):
                best = w if best is None else max(best, w)
            i += 1
        out.append(1.0 if best is None else best)
    return out
