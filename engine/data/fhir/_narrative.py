"""Markup reduced to text, never rendered: an HTML or XHTML document or fragment (a DocumentReference's ``text/html``
attachment, a Composition's narrative ``div``) and a C-CDA section's narrative block.

HTML is parsed by ``html5lib``, a parser that follows the HTML5 specification, so a document reads as a browser reads
it (an omitted ``</head>``, an unclosed ``<p>`` or ``<li>``). Every text node is kept except the content of
``script``, ``style`` and ``template``: that is dropped, and how many elements and characters were dropped is
returned (:class:`Reduced`) so the import report can say so. Markup never survives into the text: tags and comments
go, entities are decoded once, block elements become line breaks, list items start with "- " and table cells are
spaced apart.

Two consequences of following the specification, and what is done about them:

* an unclosed ``<script>`` or ``<style>`` holds everything after it as its own content. That *is* script content,
  so it is dropped like any other, but :attr:`Reduced.unclosed` names the element so the report can warn that the
  text after it was lost;
* ``iframe``, ``noembed``, ``noframes``, ``xmp`` and ``plaintext`` hold raw text that may itself be markup (the
  fallback of an ``iframe``; everything after an unclosed one). That text is parsed again as HTML and its text kept,
  so neither the text nor its markup is lost or let through.

A document nested deeper than :data:`MAX_DEPTH` elements is refused (:class:`TooDeep`): the parser's cost grows with
the square of the depth, and no note is nested that deep.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional
from xml.etree.ElementTree import Element

import html5lib

MAX_DEPTH = 512
_DROPPED = {"script", "style", "template"}
_REPARSED = {"iframe", "noembed", "noframes", "xmp", "plaintext"}
_BLOCK = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "h1", "h2", "h3", "h4", "h5", "h6", "section",
          "article", "header", "footer", "blockquote", "pre", "dd", "dt", "dl", "hr", "td", "th", "title", "option",
          "caption", "main", "nav", "aside", "address", "figure", "figcaption", "details", "summary", "fieldset",
          "legend", "form", "body", "head", "textarea", "select", "optgroup", "tbody", "thead", "tfoot"}
_VOID = {"br", "hr"}  # a line break where they stand, not one before and one after
_BULLET = {"li"}
_CELL = {"td", "th"}
# the CDA narrative block (urn:hl7-org:v3): paragraph, list/item, table/tr/td, content, br, caption, footnote
_CDA_BLOCK = {"paragraph", "list", "item", "table", "tr", "td", "th", "br", "caption", "thead", "tbody", "tfoot",
              "footnote"}
_CDA_BULLET = {"item"}


class TooDeep(ValueError):
    """The markup is nested more than :data:`MAX_DEPTH` elements deep."""


@dataclass(frozen=True)
class Reduced:
    """The text of some markup, and what was left out of it: ``dropped_elements`` script, style and template
    elements holding ``dropped_chars`` characters; ``unclosed`` the name of such an element that was never closed
    (so it held the rest of the document), ``unclosed_chars`` what it held."""

    text: str
    dropped_elements: int = 0
    dropped_chars: int = 0
    unclosed: Optional[str] = None
    unclosed_chars: int = 0


@dataclass(frozen=True)
class _Style:
    block: frozenset
    bullet: frozenset
    cell: frozenset
    dropped: frozenset


_HTML = _Style(frozenset(_BLOCK), frozenset(_BULLET), frozenset(_CELL), frozenset(_DROPPED))
_CDA = _Style(frozenset(_CDA_BLOCK), frozenset(_CDA_BULLET), frozenset({"td", "th"}), frozenset())

_EtreeBuilder = html5lib.getTreeBuilder("etree")


class _BoundedBuilder(_EtreeBuilder):  # type: ignore[misc, valid-type]
    """html5lib's ElementTree builder, refusing to open more than :data:`MAX_DEPTH` elements at once."""

    def insertElementNormal(self, token):  # noqa: N802 (html5lib's name)
        if len(self.openElements) >= MAX_DEPTH:
            raise TooDeep(f"the HTML is nested more than {MAX_DEPTH} elements deep")
        return super().insertElementNormal(token)

    def insertElementTable(self, token):  # noqa: N802
        if len(self.openElements) >= MAX_DEPTH:
            raise TooDeep(f"the HTML is nested more than {MAX_DEPTH} elements deep")
        return super().insertElementTable(token)


def _local(tag: object) -> Optional[str]:
    """An element's name without its namespace; None for a comment or processing instruction."""
    if not isinstance(tag, str):
        return None
    return tag.rsplit("}", 1)[-1].lower()


class _Walk:
    """One pass over an element tree, in document order, without recursion (the tree may be deep)."""

    def __init__(self, style: _Style, depth: int) -> None:
        self.style, self.depth = style, depth
        self.parts: list[str] = []
        self.dropped_elements = self.dropped_chars = 0
        self.dropped_last: dict[str, int] = {}  # element name -> characters in the last one of that name

    def run(self, root: Element) -> None:
        stack: list[tuple[Element, bool]] = [(root, False)]
        while stack:
            el, closing = stack.pop()
            name = _local(el.tag)
            if closing:
                if name in self.style.block and name not in _VOID:
                    self.parts.append("\n")
                if el.tail and el is not root:
                    self.parts.append(el.tail)
                continue
            stack.append((el, True))
            if name is None:  # a comment: its tail (pushed above) is text, its content is not
                continue
            if name in self.style.dropped:
                n = sum(len(t) for t in _texts(el))
                self.dropped_elements += 1
                self.dropped_chars += n
                self.dropped_last[name] = n
                continue
            if name in self.style.block:
                self.parts.append("\n")
            if name in self.style.bullet:
                self.parts.append("- ")
            elif name in self.style.cell:
                self.parts.append(" ")
            if name in _REPARSED and self.style is _HTML:
                self._reparse(el.text or "")
                continue
            if el.text:
                self.parts.append(el.text)
            stack.extend((child, False) for child in reversed(list(el)))

    def _reparse(self, raw: str) -> None:
        """The raw text of an iframe (or the like) read again as HTML."""
        if not raw.strip():
            return
        if self.depth >= 16:
            self.dropped_elements += 1
            self.dropped_chars += len(raw)
            return
        inner = _Walk(self.style, self.depth + 1)
        inner.run(_parse_html(raw))
        self.parts.append("\n")
        self.parts.extend(inner.parts)
        self.parts.append("\n")
        self.dropped_elements += inner.dropped_elements
        self.dropped_chars += inner.dropped_chars
        self.dropped_last.update(inner.dropped_last)


def _texts(el: Element):
    """Every text inside an element (its own text and its descendants' text and tails), without recursion."""
    stack = [el]
    while stack:
        e = stack.pop()
        if e.text and _local(e.tag) is not None:
            yield e.text
        for child in e:
            if child.tail:
                yield child.tail
            stack.append(child)


def _parse_html(html: str) -> Element:
    return html5lib.HTMLParser(tree=_BoundedBuilder, namespaceHTMLElements=False).parse(html)


def tidy_lines(text: str) -> str:
    """Runs of spaces collapsed, lines trimmed, at most one blank line in a row, no blank lines at either end."""
    lines = [re.sub(r"[ \t\r\f\v\u00a0]+", " ", ln).strip() for ln in text.split("\n")]
    out: list[str] = []
    for ln in lines:
        if ln or (out and out[-1]):
            out.append(ln)
    return "\n".join(out).strip()


def _unclosed(html: str, names) -> Optional[str]:
    """A dropped element whose end tag the source lacks (it held the rest of the document)."""
    for name in names:
        opened = len(re.findall(rf"<{name}(?=[\s/>])", html, re.IGNORECASE))
        closed = len(re.findall(rf"</{name}\s*>", html, re.IGNORECASE))
        if opened > closed:
            return name
    return None


def reduce_html(html: str) -> Reduced:
    """The readable text of an HTML or XHTML document or fragment (see the module docstring); raises
    :class:`TooDeep` for markup nested too deeply to parse."""
    walk = _Walk(_HTML, 0)
    walk.run(_parse_html(html))
    unclosed = _unclosed(html, walk.dropped_last)
    return Reduced(tidy_lines("".join(walk.parts)), walk.dropped_elements, walk.dropped_chars, unclosed,
                   walk.dropped_last.get(unclosed, 0) if unclosed else 0)


def html_to_text(html: str) -> str:
    """The readable text of an HTML or XHTML fragment (the text of :func:`reduce_html`; empty when too deep)."""
    try:
        return reduce_html(html).text
    except TooDeep:
        return ""


def cda_text(element: Element) -> str:
    """The text of a CDA narrative block (a section's ``text``): paragraphs, list items, table rows and ``br``
    become line breaks, list items start with "- ", table cells are spaced apart."""
    walk = _Walk(_CDA, 0)
    walk.run(element)
    return tidy_lines("".join(walk.parts))
