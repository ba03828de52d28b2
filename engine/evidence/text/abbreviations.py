"""Clinical abbreviations and their words, so that "DCCV" in a note and "cardioversion" in a summary meet.

:data:`ABBREVIATIONS` is a hand-written list of abbreviations common in notes and summaries, each with the words it
stands for. :func:`expand` adds those words after each abbreviation it finds (the abbreviation stays), so word
checks that read both sides through it see the same content words whichever form either side wrote. Only
unambiguous abbreviations are listed: "MS" (multiple sclerosis, mitral stenosis, morphine) and "PT" (patient,
physical therapy, prothrombin time) are not.
"""
from __future__ import annotations

from functools import lru_cache

from engine.evidence.text.tokenizer import tokenize

ABBREVIATIONS: dict[str, str] = {
    "afib": "atrial fibrillation", "a-fib": "atrial fibrillation", "aki": "acute kidney injury",
    "bph": "benign prostatic hyperplasia", "cabg": "coronary artery bypass graft", "cad": "coronary artery disease",
    "chf": "congestive heart failure", "ckd": "chronic kidney disease",
    "copd": "chronic obstructive pulmonary disease", "cva": "stroke cerebrovascular accident",
    "cxr": "chest x-ray", "dccv": "direct current cardioversion", "dka": "diabetic ketoacidosis",
    "dm": "diabetes mellitus", "dm2": "type 2 diabetes mellitus", "t2dm": "type 2 diabetes mellitus",
    "dvt": "deep vein thrombosis", "ecg": "electrocardiogram", "ekg": "electrocardiogram",
    "egd": "upper endoscopy esophagogastroduodenoscopy", "esrd": "end-stage renal disease",
    "gerd": "gastroesophageal reflux disease", "gi": "gastrointestinal", "hld": "hyperlipidemia",
    "htn": "hypertension", "hfref": "heart failure with reduced ejection fraction",
    "hfpef": "heart failure with preserved ejection fraction", "ibd": "inflammatory bowel disease",
    "icd": "implantable cardioverter defibrillator", "lvef": "left ventricular ejection fraction",
    "ef": "ejection fraction", "mi": "myocardial infarction", "nstemi": "non-st elevation myocardial infarction",
    "stemi": "st elevation myocardial infarction", "osa": "obstructive sleep apnea", "pe": "pulmonary embolism",
    "pci": "percutaneous coronary intervention", "pna": "pneumonia", "ra": "rheumatoid arthritis",
    "rvr": "rapid ventricular response", "sob": "shortness of breath", "doe": "dyspnea on exertion",
    "tia": "transient ischemic attack", "uti": "urinary tract infection", "sle": "systemic lupus erythematosus",
    "hcv": "hepatitis c virus", "hbv": "hepatitis b virus", "hiv": "human immunodeficiency virus",
    "nsaid": "nonsteroidal anti-inflammatory drug", "nsaids": "nonsteroidal anti-inflammatory drugs",
    "ppi": "proton pump inhibitor", "doac": "direct oral anticoagulant", "tte": "transthoracic echocardiogram",
    "tee": "transesophageal echocardiogram", "echo": "echocardiogram", "mri": "magnetic resonance imaging",
    "ct": "computed tomography", "abx": "antibiotics", "hx": "history", "fhx": "family history", "sx": "symptoms",
    "tx": "treatment", "dx": "diagnosis", "ddx": "differential diagnosis", "rx": "prescription",
    "prn": "as needed", "bid": "twice daily", "b.i.d": "twice daily", "tid": "three times daily",
    "qd": "once daily", "qhs": "at bedtime", "po": "by mouth orally", "iv": "intravenous",
    "sq": "subcutaneous", "sc": "subcutaneous", "ed": "emergency department", "er": "emergency room",
    "icu": "intensive care unit", "f/u": "follow-up", "fu": "follow-up", "yo": "year old", "y/o": "year old",
    "hr": "heart rate", "bp": "blood pressure", "rr": "respiratory rate", "uri": "upper respiratory infection",
    "hgb": "hemoglobin", "hb": "hemoglobin", "wbc": "white blood cell count", "plt": "platelets",
    "cr": "creatinine", "bun": "blood urea nitrogen", "inr": "international normalized ratio",
    "a1c": "hemoglobin a1c", "hba1c": "hemoglobin a1c", "tsh": "thyroid stimulating hormone", "bmi": "body mass index",
    "sz": "seizure", "ms": "", "pt": "",  # ambiguous: never expanded (listed so the test keeps them out)
}

# written in lower case, these are still the abbreviation; any other is expanded only with a capital letter in it
# ("ED", "Er"), so the words "er", "ed", "sob" or "tee" of a conversation stay words
LOWER_CASE_TOO = frozenset("""afib a-fib dccv prn bid tid qhs b.i.d f/u y/o htn copd gerd ckd aki cabg hfref hfpef
nsaid nsaids abx hx fhx sx dx ddx a1c hba1c ekg ecg cxr egd esrd tsh inr lvef nstemi stemi dvt uti tia doac ppi osa hld
bph wbc bun hgb plt echo t2dm dm2""".split())


@lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    return {k: v for k, v in ABBREVIATIONS.items() if v}


def expand(text: str) -> str:
    """``text`` with the words of each listed abbreviation added after it ("DCCV" -> "DCCV (direct current
    cardioversion)"); the rest of the text is unchanged. A token in lower case is expanded only when it is in
    :data:`LOWER_CASE_TOO`."""
    table = _table()
    out, pos = [], 0
    # a token opens with a letter, is kept whole across ".", "/" and "-" ("b.i.d", "f/u", "a-fib") and stands
    # apart: none glued to a word character, a slash or a hyphen (a full stop may close it: "HTN.")
    for w in tokenize(text, case="keep", digits="inner", joiners="./-", apart=("/.-", "/-"), offsets=True):
        key = w.text.lower()
        words = table.get(key) if (w.text != key or key in LOWER_CASE_TOO) else None
        if words:
            out += [text[pos:w.end], f" ({words})"]
            pos = w.end
    return "".join(out) + text[pos:]


def words_for(token: str) -> str:
    """The words an abbreviation stands for ("" when it is not listed, or is a lower-case word that is not in
    :data:`LOWER_CASE_TOO`)."""
    key = token.lower()
    return _table().get(key, "") if (token != key or key in LOWER_CASE_TOO) else ""
