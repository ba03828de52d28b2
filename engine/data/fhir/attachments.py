"""A document's text from its FHIR content: an ``Attachment`` with base64 ``data`` or a ``url`` to a ``Binary`` of
the same export, and a Composition's XHTML narrative.

HTML is reduced to text by the standard library's HTML tokenizer, never rendered: markup is dropped, the content of
``script``, ``style`` and other non-text elements is dropped with it, block elements become line breaks and
entities are decoded once. Nothing is fetched: a url outside the export is reported, not followed.
"""
from __future__ import annotations

import base64
import binascii
import codecs
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Optional

from engine.data.fhir.source import Export, Located

PLAIN_TYPES = ("text/plain",)
HTML_TYPES = ("text/html", "application/xhtml+xml")
_SKIPPED_ELEMENTS = {"script", "style", "head", "template", "noscript", "iframe", "object", "embed", "svg", "math",
                     "title", "select", "textarea", "button"}
_BLOCK_ELEMENTS = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6",
                   "section", "article", "header", "footer", "blockquote", "pre", "dd", "dt", "dl", "hr", "td", "th"}


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in _SKIPPED_ELEMENTS:
            self.skip += 1
        elif tag in _BLOCK_ELEMENTS:
            self.parts.append("\n")
        if tag == "li" and not self.skip:
            self.parts.append("- ")
        elif tag in ("td", "th") and not self.skip:
            self.parts.append(" ")

    def handle_startendtag(self, tag, attrs):
        if tag in _BLOCK_ELEMENTS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in _SKIPPED_ELEMENTS:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK_ELEMENTS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    """The readable text of an HTML or XHTML fragment (see the module docstring)."""
    p = _TextOnly()
    p.feed(html)
    p.close()
    lines = [re.sub(r"[ \t\r\f\v\u00a0]+", " ", ln).strip() for ln in "".join(p.parts).split("\n")]
    out: list[str] = []
    for ln in lines:
        if ln or (out and out[-1]):
            out.append(ln)
    return "\n".join(out).strip()


@dataclass(frozen=True)
class Content:
    """The text of one document, or why there is none: ``problem`` is an error to report, ``skipped_type`` a
    content type that is not text (the document is skipped and counted)."""

    text: Optional[str] = None
    problem: Optional[str] = None
    field: str = ""
    hint: str = ""
    skipped_type: Optional[str] = None


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


def _decode(raw: bytes, mime: str, charset: str, fld: str) -> Content:
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
        text = html_to_text(text)
    return Content(text=text)


def _attachment(att: dict, owner: Located, export: Export, fld: str) -> Content:
    mime, charset = _mime(att.get("contentType"))
    if "data" in att:
        data = att.get("data")
        try:
            raw = base64.b64decode(data if isinstance(data, str) else "", validate=True)
        except (binascii.Error, ValueError) as exc:
            return Content(problem=f"the attachment's data is not base64 ({exc})", field=f"{fld}.data",
                           hint="export the document again")
        source_mime = mime
    elif isinstance(att.get("url"), str):
        url = att["url"]
        target = export.resolve(url, owner)
        if target is None:
            where = "not in the export (SumCheck never fetches from a server)" \
                if url.startswith(("http://", "https://")) else "not in the export"
            return Content(problem=f"the attachment's url {url[:120]!r} refers to a Binary {where}",
                           field=f"{fld}.url",
                           hint="export the Binary resources with the documents (Bulk Data: include Binary in "
                                "_type), or put the text in the attachment's data")
        if target.rtype != "Binary":
            return Content(problem=f"the attachment's url refers to {target.label}, a {target.rtype}, not a Binary",
                           field=f"{fld}.url", hint="point the attachment to the Binary that holds the text")
        data = target.resource.get("data")
        try:
            raw = base64.b64decode(data if isinstance(data, str) else "", validate=True)
        except (binascii.Error, ValueError) as exc:
            return Content(problem=f"{target.label} data is not base64 ({exc})", field=f"{fld}.url",
                           hint="export the Binary again")
        source_mime, b_charset = _mime(target.resource.get("contentType"))
        mime = mime or source_mime
        charset = charset if "charset" in str(att.get("contentType", "")) else b_charset
    else:
        return Content(problem="the attachment has neither data nor a url", field=fld,
                       hint="export the document with its text")
    if (mime or source_mime) not in PLAIN_TYPES + HTML_TYPES:
        return Content(skipped_type=mime or source_mime or "(no contentType)")
    return _decode(raw, mime or source_mime, charset, fld)


def document_text(doc: Located, export: Export) -> Content:
    """The text of a DocumentReference: its first plain-text content, else its first HTML content; a document with
    no text content is skipped (its content type named), one whose text cannot be read is a problem."""
    contents = doc.resource.get("content") or []
    found: list[tuple[int, Content]] = []
    for i, c in enumerate(contents):
        att = c.get("attachment") if isinstance(c, dict) else None
        if not isinstance(att, dict):
            continue
        got = _attachment(att, doc, export, f"content[{i}].attachment")
        if got.problem:
            return got
        rank = 0 if got.text is not None and _mime(att.get("contentType"))[0] in PLAIN_TYPES else \
            1 if got.text is not None else 2
        found.append((rank, got))
    if not found:
        return Content(problem="the document has no content attachment", field="content",
                       hint="export the document with its text")
    return min(found, key=lambda p: p[0])[1]


def composition_text(comp: Located) -> str:
    """A Composition's sections as text: each section's title on its own line, then its narrative, nested sections
    after their parent."""
    out: list[str] = []

    def walk(sections, depth: int) -> None:
        if not isinstance(sections, list) or depth > 8:
            return
        for s in sections:
            if not isinstance(s, dict):
                continue
            title = s.get("title")
            if isinstance(title, str) and title.strip():
                out.append(title.strip() + ":")
            div = (s.get("text") or {}).get("div") if isinstance(s.get("text"), dict) else None
            if isinstance(div, str):
                body = html_to_text(div)
                if body:
                    out.append(body)
            walk(s.get("section"), depth + 1)

    walk(comp.resource.get("section"), 0)
    return "\n".join(out)
