"""A C-CDA document (HL7 CDA R2, ``urn:hl7-org:v3``) as a note: the title and narrative of each section of its
structured body, in document order (nested sections after their parent), its ``effectiveTime`` as the note's date and
the label of its ``code`` (the LOINC document type) as the note's type.

The XML is parsed with ``defusedxml``: a document type declaration (and with it any entity declaration) is refused,
nothing is fetched. A document that is not a ``ClinicalDocument``, has no ``structuredBody`` (a ``nonXMLBody`` wraps a
PDF or an image) or has no narrative text is not read; :class:`CdaNote` says why.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional
from xml.etree.ElementTree import Element, ParseError

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring

from engine.data.fhir._narrative import cda_text

NS = "urn:hl7-org:v3"
CDA_TYPES = ("application/cda+xml", "application/hl7-cda+xml", "application/xml", "text/xml")
LOINC_OID = "2.16.840.1.113883.6.1"
_TS = re.compile(r"(\d{4})(\d{2})?(\d{2})?(?:(\d{2})(\d{2})?(\d{2})?(\.\d{1,6})?)?([+-]\d{4})?")


@dataclass(frozen=True)
class CdaNote:
    """What a C-CDA document holds for a note, or why it cannot be read (``problem``)."""

    text: Optional[str] = None
    date: Optional[str] = None
    date_raw: Optional[str] = None
    note_type: Optional[str] = None
    codes: tuple[str, ...] = ()
    problem: Optional[str] = None


def _q(name: str) -> str:
    return f"{{{NS}}}{name}"


def hl7_date(ts: str) -> Optional[str]:
    """An HL7 TS value ("20240105143000-0500") as ISO 8601 ("2024-01-05T14:30:00-05:00"); a value precise to the
    day has no time ("2024-01-05"), one less precise than the day keeps only what it has ("2024-01"). None when it
    is not a TS value."""
    m = _TS.fullmatch(ts.strip())
    if not m:
        return None
    year, month, day, hour, minute, second, frac, zone = m.groups()
    out = year + (f"-{month}" if month else "") + (f"-{day}" if month and day else "")
    if day and hour:
        out += f"T{hour}:{minute or '00'}:{second or '00'}{frac or ''}"
        if zone:
            out += f"{zone[:3]}:{zone[3:]}"
    return out


def _code(doc: Element) -> tuple[Optional[str], tuple[str, ...]]:
    """The document type's label (displayName, else the code) and its codes (``code`` and ``system|code``, the
    LOINC OID written as http://loinc.org)."""
    code = doc.find(_q("code"))
    if code is None:
        return None, ()
    value, system = code.get("code"), code.get("codeSystem")
    codes: tuple[str, ...] = ()
    if value:
        url = "http://loinc.org" if system == LOINC_OID else (f"urn:oid:{system}" if system else None)
        codes = (value, f"{url}|{value}") if url else (value,)
    label = (code.get("displayName") or "").strip() or value
    return label or None, codes


def _sections(body: Element) -> list[str]:
    """Each section's title (as "Title:") and narrative text, nested sections after their parent; empty when no
    section has narrative text."""
    out: list[str] = []
    narrated = False
    stack: list[Element] = list(reversed(_child_sections(body)))
    while stack:
        section = stack.pop()
        title = section.find(_q("title"))
        title_text = " ".join(cda_text(title).split()) if title is not None else ""
        if title_text:
            out.append(title_text if title_text.endswith(":") else title_text + ":")
        narrative = section.find(_q("text"))
        if narrative is not None:
            body_text = cda_text(narrative)
            if body_text:
                out.append(body_text)
                narrated = True
        stack.extend(reversed(_child_sections(section)))
    return out if narrated else []


def _child_sections(parent: Element) -> list[Element]:
    return [s for comp in parent.findall(_q("component")) for s in comp.findall(_q("section"))]


def read_cda(raw: bytes) -> CdaNote:
    """The note a C-CDA document holds (see the module docstring)."""
    try:
        doc = fromstring(raw, forbid_dtd=True)
    except DefusedXmlException as exc:
        return CdaNote(problem="the XML declares a document type or entities, which SumCheck does not read "
                               f"({type(exc).__name__})")
    except ParseError as exc:
        return CdaNote(problem=f"the XML is malformed ({exc})")
    except (ValueError, RecursionError) as exc:
        return CdaNote(problem=f"the XML cannot be read ({str(exc)[:120]})")
    if doc.tag != _q("ClinicalDocument"):
        return CdaNote(problem=f"the XML is not a C-CDA ClinicalDocument (its root is {doc.tag[:80]!r})")
    body = doc.find(f"{_q('component')}/{_q('structuredBody')}")
    if body is None:
        why = "a nonXMLBody (a wrapped file, not text)" if doc.find(f"{_q('component')}/{_q('nonXMLBody')}") \
            is not None else "no body"
        return CdaNote(problem=f"the ClinicalDocument has no structuredBody ({why})")
    text = "\n".join(_sections(body))
    if not text.strip():
        return CdaNote(problem="the ClinicalDocument's sections hold no narrative text")
    when = doc.find(_q("effectiveTime"))
    raw_date = (when.get("value") or "").strip() if when is not None else ""
    label, codes = _code(doc)
    return CdaNote(text=text, date=(hl7_date(raw_date) or raw_date) if raw_date else None, date_raw=raw_date or None,
                   note_type=label, codes=codes)
