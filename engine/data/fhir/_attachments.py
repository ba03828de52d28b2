"""A document's text from its FHIR content: an ``Attachment`` with base64 ``data`` or a ``url`` to a ``Binary`` of
the same export, and a Composition's XHTML narrative.

* What is read: ``text/plain``; HTML (``text/html``, ``application/xhtml+xml``), reduced to text by
  :mod:`engine.data.fhir._narrative`; a C-CDA document (``application/cda+xml``, ``application/xml``, ``text/xml``),
  read by :mod:`engine.data.fhir._ccda`. An attachment whose ``contentType`` names anything else (a PDF, an image) is
  skipped, whether its bytes are inline or behind a url, and the document's skipped attachments are counted.
* A DocumentReference's ``content`` may offer several attachments: the first plain-text one is read, else the first
  HTML one, else the first C-CDA one; the others are counted as not read.
* ``data`` is ``base64Binary`` as FHIR defines it: ASCII whitespace (line breaks every 76 characters) is allowed and
  removed, then the rest must be strict base64.
* Nothing is fetched: a readable attachment whose url is outside the export is a problem, not followed (unless
  another attachment of the document was read, when it is counted as not read).
"""
from __future__ import annotations

import base64
import binascii
import codecs
import string
from dataclasses import dataclass, replace
from typing import Optional

from engine.data.fhir._ccda import CDA_TYPES, read_cda
from engine.data.fhir._narrative import Reduced, TooDeep, html_to_text, reduce_html
from engine.data.fhir.source import Export, Located

__all__ = ["Content", "PLAIN_TYPES", "HTML_TYPES", "composition_text", "document_text", "html_to_text",
           "decode_base64"]

PLAIN_TYPES = ("text/plain",)
HTML_TYPES = ("text/html", "application/xhtml+xml")
READ_TYPES = PLAIN_TYPES + HTML_TYPES + CDA_TYPES
_WHITESPACE = str.maketrans("", "", string.whitespace)


@dataclass(frozen=True)
class Content:
    """The text of one document, or why there is none.

    ``problem`` is an error to report (``field`` names where; ``external`` when it is a readable attachment behind
    a url outside the export); ``skipped_type`` a content type that is not text (the document is skipped and
    counted); ``unreadable`` why a C-CDA document cannot be read (a warning; the document is skipped). With text,
    ``field`` is where the text came from, ``date`` / ``note_type`` / ``codes`` what a C-CDA document says of
    itself (``date_field`` where its date is), ``dropped`` what the HTML reducer left out and ``others`` the
    content types of the document's attachments that were not read."""

    text: Optional[str] = None
    problem: Optional[str] = None
    field: str = ""
    hint: str = ""
    skipped_type: Optional[str] = None
    unreadable: Optional[str] = None
    external: bool = False
    date: Optional[str] = None
    date_field: str = ""
    note_type: Optional[str] = None
    codes: tuple[str, ...] = ()
    dropped: Optional[Reduced] = None
    others: tuple[str, ...] = ()
    mime: str = ""


def decode_base64(data: object) -> Optional[bytes]:
    """The bytes of a FHIR ``base64Binary`` value (ASCII whitespace removed, then strict base64); None when it is
    not one."""
    if not isinstance(data, str):
        return None if data is not None else b""
    try:
        return base64.b64decode(data.translate(_WHITESPACE), validate=True)
    except (binascii.Error, ValueError):
        return None


def _mime(content_type: object) -> tuple[str, str]:
    """(media type, charset) of a contentType such as "text/plain; charset=ISO-8859-1"."""
    if not isinstance(content_type, str):
        return "", "utf-8"
    parts = [p.strip() for p in content_type.split(";")]
    charset = "utf-8"
    for p in parts[1:]:
        k, _, v = p.partition("=")
        if k.strip().lower() == "charset" and v.strip():
            charset = v.strip().strip('"').lower()
    return parts[0].lower(), charset


def _html(html: str, fld: str) -> Content:
    try:
        reduced = reduce_html(html)
    except TooDeep as exc:
        return Content(problem=str(exc), field=fld, hint="export the document as plain text")
    return Content(text=reduced.text, field=fld, dropped=reduced)


def _read(raw: bytes, mime: str, charset: str, fld: str) -> Content:
    """The text of an attachment's bytes, by its media type."""
    if mime not in READ_TYPES:
        return Content(skipped_type=mime or "(no contentType)", mime=mime)
    if mime in CDA_TYPES:
        note = read_cda(raw)
        if note.problem:
            return Content(unreadable=note.problem, field=fld, mime=mime)
        return Content(text=note.text, field=fld, date=note.date, date_field=f"{fld} (ClinicalDocument.effectiveTime)",
                       note_type=note.note_type, codes=note.codes, mime=mime)
    try:
        codecs.lookup(charset)
    except LookupError:
        return Content(problem=f"unknown character set {charset[:40]!r}", field=fld,
                       hint="export the document as UTF-8")
    try:
        text = raw.decode(charset)
    except UnicodeDecodeError as exc:
        return Content(problem=f"the document is not valid {charset} text (bad data at byte {exc.start})", field=fld,
                       hint="export the document again, as UTF-8")
    text = text.removeprefix("\ufeff")
    if mime in HTML_TYPES:
        return replace(_html(text, fld), mime=mime)
    return Content(text=text, field=fld, mime=mime)


def _by_url(att: dict, mime: str, charset: str, owner: Located, export: Export, fld: str) -> Content:
    url = att["url"]
    target = export.resolve(url, owner)
    if target is None:
        external = url.startswith(("http://", "https://"))
        where = "not in the export (SumCheck never fetches from a server)" if external else "not in the export"
        return Content(problem=f"the attachment's url {url[:120]!r} refers to a Binary {where}", field=f"{fld}.url",
                       external=external,
                       hint="export the Binary resources with the documents (Bulk Data: include Binary in "
                            "_type), or put the text in the attachment's data")
    if target.rtype != "Binary":
        return Content(problem=f"the attachment's url refers to {target.label}, a {target.rtype}, not a Binary",
                       field=f"{fld}.url", hint="point the attachment to the Binary that holds the text")
    raw = decode_base64(target.resource.get("data"))
    if raw is None:
        return Content(problem=f"{target.label} data is not base64", field=f"{fld}.url", hint="export the Binary again")
    b_mime, b_charset = _mime(target.resource.get("contentType"))
    charset = charset if "charset" in str(att.get("contentType", "")) else b_charset
    return _read(raw, mime or b_mime, charset, f"{fld}.url")


def _attachment(att: dict, owner: Located, export: Export, fld: str) -> Content:
    mime, charset = _mime(att.get("contentType"))
    if mime and mime not in READ_TYPES:
        return Content(skipped_type=mime, mime=mime)  # not text: its bytes are neither decoded nor looked for
    if "data" in att:
        raw = decode_base64(att.get("data"))
        if raw is None:
            return Content(problem="the attachment's data is not base64", field=f"{fld}.data",
                           hint="export the document again")
        return _read(raw, mime, charset, f"{fld}.data")
    if isinstance(att.get("url"), str):
        return _by_url(att, mime, charset, owner, export, fld)
    return Content(problem="the attachment has neither data nor a url", field=fld,
                   hint="export the document with its text")


def _rank(got: Content) -> int:
    return 0 if got.mime in PLAIN_TYPES else 1 if got.mime in HTML_TYPES else 2


def document_text(doc: Located, export: Export) -> Content:
    """The text of a DocumentReference (see the module docstring): the best attachment read, with the types of the
    others in ``others``; else the first problem; else the first unreadable C-CDA; else the skipped type."""
    found: list[Content] = []
    for i, c in enumerate(doc.resource.get("content") or []):
        att = c.get("attachment") if isinstance(c, dict) else None
        if isinstance(att, dict):
            found.append(_attachment(att, doc, export, f"content[{i}].attachment"))
    if not found:
        return Content(problem="the document has no content attachment", field="content",
                       hint="export the document with its text")
    fatal = next((g for g in found if g.problem and not g.external), None)
    if fatal is not None:
        return fatal
    read = [g for g in found if g.text is not None]
    if not read:
        pick = next((g for g in found if g.problem), None) or next((g for g in found if g.unreadable), None) \
            or found[0]
    else:
        pick = min(read, key=_rank)
    others = tuple(_other_label(g) for g in found if g is not pick)
    return replace(pick, others=others)


def _other_label(got: Content) -> str:
    if got.external:
        return "at an external url"
    if got.unreadable:
        return "C-CDA not readable"
    return got.mime or got.skipped_type or "(no contentType)"


def composition_text(comp: Located) -> Content:
    """A Composition's sections as text: each section's title on its own line, then its narrative, nested sections
    after their parent (what the HTML reducer left out is added up in ``dropped``)."""
    out: list[str] = []
    elements = chars = unclosed_chars = 0
    unclosed: Optional[str] = None
    top = comp.resource.get("section")
    stack = [(s, f"section[{i}]") for i, s in reversed(list(enumerate(top if isinstance(top, list) else [])))]
    while stack:
        s, path = stack.pop()
        if not isinstance(s, dict):
            continue
        title = s.get("title")
        if isinstance(title, str) and title.strip():
            out.append(title.strip() + ":")
        div = (s.get("text") or {}).get("div") if isinstance(s.get("text"), dict) else None
        if isinstance(div, str):
            got = _html(div, f"{path}.text.div")
            if got.problem or got.dropped is None:
                return got
            if got.text:
                out.append(got.text)
            elements, chars = elements + got.dropped.dropped_elements, chars + got.dropped.dropped_chars
            if unclosed is None and got.dropped.unclosed:
                unclosed, unclosed_chars = got.dropped.unclosed, got.dropped.unclosed_chars
        subs = s.get("section")
        if isinstance(subs, list):
            stack.extend((sub, f"{path}.section[{i}]") for i, sub in reversed(list(enumerate(subs))))
    dropped = Reduced("", elements, chars, unclosed, unclosed_chars)
    return Content(text="\n".join(out), field="section", dropped=dropped)
