"""Note citations in summaries: one registry of the forms found in practice, one id grammar, one parser.

Forms (:data:`FORMS`):

* ``angle`` — ``<NoteID:2>``, ``<Note ID:2>``, ``<Note ID: 2>``, ``<note_id:2>``, ``<NoteID:1,3>``; the form of our
  sample and of the published PDSQI-9 judge implementation's example cases (which write ``<Note ID:1>, <Note ID:3>``
  for several notes).
* ``bracket_note`` — ``[Note 3]``, ``[Note ID: 3]``, ``[Notes 1, 3]``.
* ``bracket_number`` — ``[3]``, ``[1, 3]``: ambiguous in general (a reference, a dose in brackets), so it counts
  only for a dataset that uses it *consistently* (:func:`detect_style`).

Every consumer (the data model, the sentence splitter, coverage, alignment, the Case page badges, the judge
prompt) calls :func:`find` / :func:`strip` / :func:`cited_ids` with the dataset's :class:`CitationStyle`, so
parsing and stripping never disagree.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

ID = r"[A-Za-z0-9_.\-]*[A-Za-z0-9]"  # one id grammar (ids end in a letter or digit: "3." is id 3 and a full stop)
_SEP = r"\s*(?:,|;|&|\band\b)\s*"
_IDS = rf"{ID}(?:{_SEP}{ID})*"
_NUMS = r"\d{1,4}(?:\s*[,;]\s*\d{1,4})*"


@dataclass(frozen=True)
class CitationForm:
    key: str
    label: str  # how the form is written, with n for the id
    pattern: re.Pattern  # one citation; the group "ids" holds one or more ids
    consistent_only: bool = False  # counts only where the dataset uses it consistently


FORMS: tuple[CitationForm, ...] = (
    CitationForm("angle", "<NoteID:n>",
                 re.compile(rf"<\s*Note\s*[_ ]?\s*ID\s*[:#=]?\s*(?P<ids>{_IDS})\s*>", re.IGNORECASE)),
    CitationForm("bracket_note", "[Note n]",
                 re.compile(rf"\[\s*Notes?\s*(?:ID\s*)?[:#]?\s*(?P<ids>{_IDS})\s*\]", re.IGNORECASE)),
    CitationForm("bracket_number", "[n]", re.compile(rf"\[\s*(?P<ids>{_NUMS})\s*\]"), consistent_only=True),
)
FORMS_BY_KEY = {f.key: f for f in FORMS}


@dataclass(frozen=True)
class Citation:
    start: int
    end: int
    note_ids: tuple[str, ...]
    form: str
    text: str


@dataclass(frozen=True)
class CitationStyle:
    """The citation forms a dataset uses, and how its summaries write the main one (for the judge prompt)."""

    forms: tuple[str, ...] = ("angle", "bracket_note")
    written: str = "<NoteID:n>"

    def patterns(self) -> list[tuple[str, re.Pattern]]:
        return [(k, FORMS_BY_KEY[k].pattern) for k in self.forms]


DEFAULT_STYLE = CitationStyle()


def _split_ids(ids: str) -> tuple[str, ...]:
    return tuple(x for x in re.split(_SEP, ids.strip()) if x)


def find(text: str, style: CitationStyle = DEFAULT_STYLE) -> list[Citation]:
    """Every citation in ``text``, in order, without overlaps (an earlier, then longer match wins)."""
    found: list[Citation] = []
    for key, pattern in style.patterns():
        for m in pattern.finditer(text or ""):
            found.append(Citation(m.start(), m.end(), _split_ids(m.group("ids")), key, m.group(0)))
    found.sort(key=lambda c: (c.start, -(c.end - c.start)))
    out: list[Citation] = []
    for c in found:
        if not out or c.start >= out[-1].end:
            out.append(c)
    return out


def spans(text: str, style: CitationStyle = DEFAULT_STYLE) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, cited note ids) per citation: plain data for the page that draws the badges."""
    return [(c.start, c.end, c.note_ids) for c in find(text, style)]


def compact(text: str, style: CitationStyle = DEFAULT_STYLE) -> str:
    """``text`` with each citation written short, as ``[1, 3]`` (for one-line labels)."""
    out, pos = [], 0
    for c in find(text, style):
        out.append(text[pos:c.start] + "[" + ", ".join(c.note_ids) + "]")
        pos = c.end
    return "".join(out) + text[pos:]


def cited_ids(text: str, style: CitationStyle = DEFAULT_STYLE) -> list[str]:
    """The note ids cited in ``text``, in order of first citation, each once."""
    seen: dict[str, None] = {}
    for c in find(text, style):
        for nid in c.note_ids:
            seen.setdefault(nid, None)
    return list(seen)


def _runs(text: str, style: CitationStyle) -> list[tuple[int, int]]:
    """Spans of citation runs: adjacent citations with the separators between them ("<a>, <b>")."""
    runs: list[list[int]] = []
    for c in find(text, style):
        if runs and re.fullmatch(r"[\s,;]*(?:and|&)?[\s,;]*", text[runs[-1][1]:c.start]):
            runs[-1][1] = c.end
        else:
            runs.append([c.start, c.end])
    return [(s, e) for s, e in runs]


def strip(text: str, style: CitationStyle = DEFAULT_STYLE, keep_offsets: bool = False) -> str:
    """``text`` without its citations (runs with their separators). ``keep_offsets`` blanks them with spaces
    instead, so character offsets stay valid."""
    out, pos = [], 0
    for s, e in _runs(text, style):
        out.append(text[pos:s])
        out.append(" " * (e - s) if keep_offsets else " ")
        pos = e
    out.append(text[pos:])
    joined = "".join(out)
    return joined if keep_offsets else re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", joined)).strip()


def leading_run(text: str, style: CitationStyle = DEFAULT_STYLE) -> int:
    """Length of the citation run (with whitespace) that opens ``text``; 0 when it does not open with one."""
    lead = len(text) - len(text.lstrip())
    for s, e in _runs(text, style):
        if s == lead:
            m = re.match(r"[\s,;.]*", text[e:])
            return e + (m.end() if m else 0)
        break
    return 0


def detect_style(summaries: Iterable[str], note_ids: Optional[Iterable[str]] = None) -> CitationStyle:
    """The citation style of a dataset's summaries.

    The unambiguous forms are always read. Bare bracketed numbers count only when the dataset uses them
    consistently: at least half the summaries carry them, no summary uses another form, and (when the note ids
    are given) at least 90 % of the numbers name an existing note. ``written`` is the most common literal shape
    of the main form (e.g. ``<Note ID:n>``), so the judge prompt describes what the summaries actually say."""
    texts = [t for t in summaries if t]
    known = set(note_ids) if note_ids is not None else None
    every = CitationStyle(tuple(f.key for f in FORMS))
    per_form: Counter = Counter()
    shapes: Counter = Counter()
    summaries_with: Counter = Counter()
    number_ids: list[str] = []
    for t in texts:
        seen = set()
        for c in find(t, every):
            per_form[c.form] += 1
            seen.add(c.form)
            shapes[(c.form, _shape(c))] += 1
            if c.form == "bracket_number":
                number_ids.extend(c.note_ids)
        for k in seen:
            summaries_with[k] += 1
    forms = ["angle", "bracket_note"]
    others = summaries_with["angle"] + summaries_with["bracket_note"]
    if (texts and summaries_with["bracket_number"] >= len(texts) / 2 and others == 0
            and (known is None or not number_ids or sum(i in known for i in number_ids) >= 0.9 * len(number_ids))):
        forms.append("bracket_number")
    main = max((k for k in forms if per_form[k]), key=lambda k: per_form[k], default="angle")
    written = max(((s, n) for (k, s), n in shapes.items() if k == main), key=lambda x: x[1],
                  default=(FORMS_BY_KEY[main].label, 0))[0]
    return CitationStyle(tuple(forms), written)


def _shape(c: Citation) -> str:
    """The literal shape of a single-id citation with the id replaced by n ("<Note ID: n>")."""
    first = c.note_ids[0]
    i = c.text.find(first)
    shape = c.text[:i] + "n" + c.text[i + len(first):] if i >= 0 and len(c.note_ids) == 1 else FORMS_BY_KEY[c.form].label
    return shape
