"""The PDSQI-9 instrument, defined once for the whole product.

Source: Provider Documentation Summarization Quality Instrument (PDSQI-9), Appendix C of
Croxford et al. ("Development and Validation of the Provider Documentation Summarization Quality Instrument for
Large Language Models"). The item texts and level anchors below are a faithful paraphrase of that appendix; the
judge prompt and the in-app rating form both render them from here, so there is exactly one definition.

Scales
------
* ``likert``  – integer 1..5 (1 = "Not at all", 5 = "Extremely").
* ``binary``  – yes/no, stored as 1.0 / 0.0.
* ``likert_na`` – integer 1..5, or NA (stored as ``None``). Used by *Synthesized*, which is NA
  when the rater answered "no" to *Abstraction needed*.

Missing vs NA: a rating row that does not exist means "not rated"; a row whose value is ``None``
means the rater explicitly answered NA.
"""
from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Iterable, Optional


class Scale(str, Enum):
    LIKERT = "likert"
    BINARY = "binary"
    LIKERT_NA = "likert_na"


@dataclass(frozen=True)
class Item:
    key: str
    label: str
    question: str
    scale: Scale
    guidance: str = ""
    anchors: tuple[str, ...] = ()  # five anchors (levels 1..5) for likert scales

    @property
    def allows_na(self) -> bool:
        return self.scale is Scale.LIKERT_NA

    @property
    def is_likert(self) -> bool:
        return self.scale in (Scale.LIKERT, Scale.LIKERT_NA)

    @property
    def allowed_values(self) -> tuple[Optional[float], ...]:
        if self.scale is Scale.BINARY:
            return (0.0, 1.0)
        vals: tuple[Optional[float], ...] = (1.0, 2.0, 3.0, 4.0, 5.0)
        return vals + ((None,) if self.allows_na else ())

    def anchor(self, level: int) -> str:
        return self.anchors[level - 1]


ITEMS: tuple[Item, ...] = (
    Item(
        "cited", "Cited", "Are citations present and appropriate?", Scale.LIKERT,
        "An assertion is a statement of one or more sentences; each should point to the note(s) it came from.",
        (
            "Several citations are wrong, or there are no citations at all.",
            "One citation is wrong, or citations are lumped together instead of attached to individual assertions.",
            "Citations that are given are correct, but some assertions have none.",
            "Every assertion is cited correctly, with some prioritisation by relevance.",
            "Every assertion is cited correctly and the citations are prioritised by relevance.",
        ),
    ),
    Item(
        "accurate", "Accurate", "Is the summary accurate in what it extracts?", Scale.LIKERT,
        "Incorrect information is fabrication (plausible but non-existent facts) or falsification (a real fact "
        "with critical details changed, or a status that was true once but no longer). Faithfully repeating a "
        "provider's own questionable statement is not an error.",
        (
            "Several major errors with overt fabrication or falsification.",
            "One major error: an assertion with an overt fabrication or falsification.",
            "At least one assertion is taken from a note but put in the wrong context, e.g. wrong specificity of a "
            "diagnosis or treatment.",
            "At least one assertion is misaligned with its source or its timing but is still factually correct.",
            "Every assertion can be traced back to the notes.",
        ),
    ),
    Item(
        "thorough", "Thorough", "Is the summary thorough, without omissions?", Scale.LIKERT,
        "Pertinent omissions are missing details that could change care for the target provider (would prompt an "
        "action now or later); potentially pertinent omissions are useful context that would not change the "
        "current decision.",
        (
            "More than one pertinent omission.",
            "One pertinent omission and several potentially pertinent omissions.",
            "Exactly one pertinent omission.",
            "Only some potentially pertinent omissions.",
            "No pertinent or potentially pertinent omission.",
        ),
    ),
    Item(
        "useful", "Useful", "Is the summary useful to the target provider?", Scale.LIKERT,
        "Everything useful to the intended audience is there, and the content is relevant to them.",
        (
            "No assertion is pertinent to the target user.",
            "Some assertions are pertinent to the target user.",
            "Assertions are pertinent, but the level of detail is wrong (too much or too little).",
            "No non-pertinent assertions, but some are only potentially pertinent to the target user.",
            "No non-pertinent assertions and the level of detail suits the target user.",
        ),
    ),
    Item(
        "organized", "Organized", "Is the summary organized?", Scale.LIKERT,
        "Well formed, and structured so the reader can follow the patient's clinical course.",
        (
            "All assertions out of order and groupings incoherent (completely disorganised).",
            "Some assertions out of order, or grouping incoherent.",
            "Order and grouping simply copied from the input (temporal or by system/problem), unchanged.",
            "Logical order or logical grouping (temporal or by system/problem) for all assertions, but not both.",
            "Logical order and logical grouping for all assertions: completely organised.",
        ),
    ),
    Item(
        "comprehensible", "Comprehensible", "Is the summary comprehensible, with clear language?", Scale.LIKERT,
        "Clear, unambiguous, with no passages that are hard to understand.",
        (
            "Overly complex, inconsistent sentence structure and terminology unfamiliar to the target user.",
            "Some overly complex, inconsistent or unfamiliar terminology for the target user.",
            "Wording left as in the input, keeping overly complex terms where it could have been improved.",
            "Some changes in structure and terminology towards clarity.",
            "Plain, well-structured language entirely familiar to the target user.",
        ),
    ),
    Item(
        "succinct", "Succinct", "Is the summary succinct, with economy of language?", Scale.LIKERT,
        "Brief, to the point, without redundancy.",
        (
            "Wordy throughout, with syntactic and semantic redundancy across assertions.",
            "More than one assertion carries contextual semantic redundancy.",
            "One assertion has contextual semantic redundancy, or several have syntactic redundancy.",
            "No syntactic redundancy, but at least one assertion could have been shorter.",
            "Every assertion is made in the fewest words possible, with no redundancy of syntax or meaning.",
        ),
    ),
    Item(
        "abstraction", "Abstraction needed", "Does this summary need abstraction (synthesis beyond extraction)?",
        Scale.BINARY,
        "Abstraction paraphrases and synthesises (e.g. 'poorly controlled diabetes due to suboptimal adherence' "
        "instead of listing HbA1c, metformin and diet). Yes / No; if No, Synthesized is NA.",
    ),
    Item(
        "synthesized", "Synthesized", "How well does the summary synthesise (abstract) the information?",
        Scale.LIKERT_NA,
        "Only scored when abstraction is needed; otherwise NA. Reflects inference and clinical reasoning over "
        "the assertions, in line with the author's understanding and plan of care.",
        (
            "Incorrect reasoning, or incorrect grouping of the connections between assertions.",
            "Abstraction where none was needed, or accurate groupings that are not appropriate.",
            "Assertions stated independently with no reasoning or grouping where there could have been "
            "(a missed opportunity to abstract).",
            "Assertions grouped into themes, but without fully formed reasoning towards a final clinically "
            "relevant diagnosis or treatment.",
            "Reasoning over events yields a fully integrated clinical synopsis with prioritised information.",
        ),
    ),
    Item(
        "stigmatizing_notes", "Stigmatizing (notes)", "Do the source notes contain stigmatizing language?",
        Scale.BINARY,
        "Discrediting or doubt-casting words ('claims', 'insists', 'reportedly'), blame or labels ('refuses', "
        "'noncompliant', 'drug abuser', 'alcoholic', 'diabetic patient' instead of person-first language), "
        "quotes implying disbelief, terms with punitive connotations ('dirty urine').",
    ),
    Item(
        "stigmatizing_summary", "Stigmatizing (summary)", "Does the summary contain stigmatizing language?",
        Scale.BINARY,
        "Same criteria as for the notes, applied to the summary.",
    ),
)

ITEM_KEYS: tuple[str, ...] = tuple(i.key for i in ITEMS)
LIKERT_KEYS: tuple[str, ...] = tuple(i.key for i in ITEMS if i.is_likert)
_BY_KEY = {i.key: i for i in ITEMS}


def item_label(key: str) -> str:
    """The label of item ``key`` for tables; a key the rubric does not have ("overall") stays as it is."""
    item = _BY_KEY.get(key)
    return item.label if item is not None else key


def get_item(key: str) -> Item:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"unknown PDSQI-9 item {key!r}; known items: {', '.join(ITEM_KEYS)}") from None


_YES = {"1", "yes", "y", "true", "t"}
_NO = {"0", "no", "n", "false", "f"}
_NA = {"na", "n/a", "not applicable"}


class ValueError_(ValueError):
    """Raised by :func:`parse_value` with a message fit for a validation report."""


_ASCII_LEVEL = re.compile(r"[0-9]{1,3}(?:\.0+)?", re.ASCII)  # "4", or "4.0" as spreadsheets export it
_ASCII_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?", re.ASCII)


def parse_value(item: Item, raw: object) -> Optional[float]:
    """Parse one rating value for ``item``. Returns the stored float, or ``None`` for NA.

    Accepts text, an int or a finite float; ``None`` means NA; a bool only for yes/no items. Raises
    :class:`ValueError_` with a message that says what is allowed for anything else: a bool for a 1-5 item,
    lists, objects, ``nan``, ``inf``, ``1e400`` (infinite once read), fractions and values outside the scale.
    """
    if raw is None:
        if item.allows_na:
            return None
        raise ValueError_(f"{item.label}: a value is required (NA is only allowed for Synthesized)")
    if isinstance(raw, bool):
        if item.scale is Scale.BINARY:  # a Python bool from a form is a yes/no answer (loaders refuse JSON true)
            return 1.0 if raw else 0.0
        raise ValueError_(f"{item.label}: {str(raw).lower()} is not a score; expected {describe_scale(item)}")
    if isinstance(raw, (int, float)):
        if isinstance(raw, float) and not math.isfinite(raw):
            raise ValueError_(f"{item.label}: {raw!r} is not a finite number; expected {describe_scale(item)}")
        if not -10 ** 6 < raw < 10 ** 6:
            raise ValueError_(f"{item.label}: a number this large is outside the scale; expected {describe_scale(item)}")
        text = repr(raw) if isinstance(raw, float) else str(raw)
    elif isinstance(raw, str):
        text = raw.strip()
    else:
        raise ValueError_(f"{item.label}: a {type(raw).__name__} is not a score; expected {describe_scale(item)}")
    shown = text if len(text) <= 40 else text[:37] + "..."
    low = text.lower()
    if low in _NA:
        if item.allows_na:
            return None
        raise ValueError_(f"{item.label}: NA is not allowed; expected {describe_scale(item)}")
    if item.scale is Scale.BINARY:
        if low in _YES or low == "1.0":
            return 1.0
        if low in _NO or low == "0.0":
            return 0.0
        raise ValueError_(f"{item.label}: {shown!r} is not a yes/no value; expected {describe_scale(item)}")
    if not _ASCII_LEVEL.fullmatch(text):
        # only ASCII digits, as written by people and spreadsheets: no exponent (4e0), sign, other scripts'
        # digits (Arabic-Indic, full-width) or anything else that float() would quietly read as a level
        if _ASCII_NUMBER.fullmatch(text):
            raise ValueError_(f"{item.label}: {shown} is outside the scale; expected {describe_scale(item)}")
        raise ValueError_(f"{item.label}: {shown!r} is not a number written with the digits 0-9; expected "
                          f"{describe_scale(item)}")
    num = float(text)
    if not math.isfinite(num):
        raise ValueError_(f"{item.label}: {shown!r} is not a finite number; expected {describe_scale(item)}")
    if num != int(num) or not 1 <= num <= 5:
        raise ValueError_(f"{item.label}: {shown} is outside the scale; expected {describe_scale(item)}")
    return float(num)


def describe_scale(item: Item) -> str:
    if item.scale is Scale.BINARY:
        return "yes/no (1/0)"
    if item.scale is Scale.LIKERT_NA:
        return "an integer 1-5 or NA"
    return "an integer 1-5"


def format_value(item: Item, value: Optional[float]) -> str:
    """How one rating is shown and exported: ``yes``/``no`` for yes/no items, ``NA``, or the 1-5 level. For a
    median or any other aggregate over several ratings use :func:`format_aggregate`."""
    if value is None:
        return "NA"
    if item.scale is Scale.BINARY:
        return "yes" if value >= 0.5 else "no"
    return f"{value:g}"


def format_share(yes: int, n: int) -> str:
    """The one wording for a share of yes answers, everywhere: ``"2 of 3 yes (67%)"`` (blank when ``n`` is 0)."""
    if not n:
        return ""
    return f"{yes} of {n} yes ({yes / n:.0%})"


def format_aggregate(item: Item, values: Iterable[Optional[float]]) -> str:
    """How an aggregate over several ratings of one item is shown (raters of a summary, samples of the LLM judge,
    summaries of a dataset): the median for 1-5 items, the share of *yes* for yes/no items (never 0.5 or 1.0).

    ``values`` are the ratings (``None`` = NA); nothing rated gives ``""``; only NA gives ``"NA"``.
    """
    values = list(values)
    if not values:
        return ""
    numeric = [float(v) for v in values if v is not None]
    if not numeric:
        return "NA"
    if item.scale is Scale.BINARY:
        return format_share(sum(1 for v in numeric if v >= 0.5), len(numeric))
    return f"{statistics.median(numeric):g}"
