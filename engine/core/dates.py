"""Note dates: the free text of an export read once, with ``python-dateutil``, into an ISO 8601 value that orders
correctly ("12/20/2023" before "01/05/2024"), the original text kept beside it.

Conventions (the import report states them):

* numeric dates are read month first, as US exports write them ("01/05/2024" is 5 January 2024); a first number
  above 12 can only be a day ("20/12/2023" is 20 December 2023) and is read so;
* a date must name its year, month and day: dateutil fills a missing part from a default date, so
  :func:`parse_note_date` parses twice with two different defaults and refuses any text whose reading depends on
  the default ("March 2024", "12/20") rather than guess;
* a time of day is kept ("2024-01-05T14:30:00"); a date without one is the bare date ("2024-01-05"), which sorts
  before any time of the same day. Time zones are dropped (the wall-clock time is kept).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Optional

from dateutil import parser as _dateutil_parser

DATE_CONVENTION = "numeric dates read month first (US: 01/05/2024 = 5 January 2024)"
_DEFAULTS = (datetime(1901, 1, 1, 0, 0, 0), datetime(1902, 2, 2, 1, 1, 1))


@dataclass(frozen=True)
class ParsedDate:
    """``iso`` is the sortable value (None when the text could not be read); ``problem`` says why not."""

    text: str
    iso: Optional[str]
    problem: Optional[str] = None


def _has_time(a: datetime, b: datetime) -> bool:
    """The text named an hour (minutes and seconds it leaves out are read as zero)."""
    return a.hour == b.hour


def parse_note_date(text: str) -> ParsedDate:
    """Read one note date (see the module docstring for the conventions)."""
    t = (text or "").strip()
    if not t:
        return ParsedDate(text, None, "the date is empty")
    try:
        a, b = (_dateutil_parser.parse(t, default=d, dayfirst=False, ignoretz=True) for d in _DEFAULTS)
    except (ValueError, OverflowError) as e:
        return ParsedDate(text, None, f"not a date ({e})")
    if (a.year, a.month, a.day) != (b.year, b.month, b.day):
        missing = [n for n, x, y in (("year", a.year, b.year), ("month", a.month, b.month), ("day", a.day, b.day))
                   if x != y]
        return ParsedDate(text, None, f"the date has no {' or '.join(missing)}")
    if not 1800 <= a.year <= 2300:  # MIMIC shifts dates into 2100-2250
        return ParsedDate(text, None, f"year {a.year} is out of range")
    if _has_time(a, b):
        return ParsedDate(text, a.isoformat(timespec="seconds"))
    return ParsedDate(text, a.date().isoformat())


@lru_cache(maxsize=65536)
def iso_date(text: Optional[str]) -> Optional[str]:
    """The ISO value of a date text, or None when there is none or it cannot be read."""
    return parse_note_date(text).iso if text else None
