"""Untrusted text: every string that comes from data is shown, plotted or exported only through this module.

Notes, summaries, ids, names, file names, reviewer comments and model replies come from other systems and
other people. Each *sink* has exactly one function here:

* :func:`md` — text placed into anything Streamlit renders as Markdown (``st.markdown``, ``st.caption``,
  ``st.info``/``st.error``…, headers, tab / expander / radio / metric labels, progress and status texts).
  Every ASCII punctuation character is backslash-escaped (CommonMark allows that for all of them), so the text
  can form no link, image, emphasis, HTML tag, LaTeX (``$``) or Streamlit colour directive (``:red[…]``).
  Escapes are not enough against the rewrites that Streamlit's Markdown pipeline applies to the *text* after
  parsing (GFM literal autolinks ``www.x`` / ``https://x`` / ``a@b.c``, emoji and ``:material/…:`` shortcodes):
  an invisible WORD JOINER (U+2060) after every ``:`` and ``@`` and between ``www`` and ``.`` breaks those
  patterns, so the text still *shows* exactly as written. :func:`md_inline` also folds line breaks, for
  one-line labels.
* :func:`html` — text placed into HTML that we build ourselves (``unsafe_allow_html=True`` blocks). Line
  breaks become character references: a blank line would end the HTML block and the rest would be parsed as
  Markdown again. Our HTML and SVG fragments are Jinja2 templates loaded by :func:`markup_environment`, whose
  autoescape is this function.
* :func:`plot` — text placed into plotly titles, labels and hover text (plotly renders a subset of HTML,
  ``<a href>`` included; entities are shown as characters).
* :func:`csv_cell` / :func:`csv_frame` / :func:`csv_text` / :func:`dataframe_csv` — every CSV the app or the
  CLI writes. A cell that a spreadsheet would run as a formula (OWASP "CSV injection": a text cell starting
  with ``=``, ``+``, ``-``, ``@``, tab or carriage return) gets a leading apostrophe; numbers (also numbers
  written as text, e.g. ``-0.5``) stay numbers.
* :func:`filename` — a data string used as a download file name.
* :func:`term` — text printed to a terminal by the CLI. Control characters (C0 but tab, DEL, C1, ESC and so
  every escape sequence) and bidirectional overrides / isolates are shown as visible escapes (``\x1b``,
  ``\u202e``), so data can neither recolour, move the cursor, overwrite a line nor reorder what is shown;
  line breaks are shown as ``\n`` too, so one value stays on one line.

Places that show text verbatim by construction (``st.text``, ``st.code``, ``st.json``, ``st.dataframe`` cells,
selectbox options) need no escaping, and must not get it (the backslashes would show).
"""
from __future__ import annotations

import csv
import html as _html
import io
import re
import string
from typing import Any, Iterable, Optional, Sequence

_MD_SPECIAL = re.compile("([" + re.escape(string.punctuation) + "])")
_WS = re.compile(r"\s+")
WORD_JOINER = "\u2060"
# Places where a text-level rewrite of the Markdown pipeline could start: after ':' (https://, :emoji:,
# :material/icon:), after '@' (e-mail autolinks) and between 'www' and '.' (www. autolinks).
_TEXT_REWRITE = re.compile(r"(?<=[:@])|(?<=www)(?=\.)", re.IGNORECASE)
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_FILENAME_BAD = re.compile(r"[^A-Za-z0-9._-]+")
_TERM_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def term(value: Any) -> str:
    """Text for a terminal: every control or bidi-control character shown as a visible escape."""

    def esc(m: re.Match) -> str:
        c = ord(m.group(0))
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _TERM_UNSAFE.sub(esc, str(value))


def md(value: Any) -> str:
    """``value`` as Markdown that renders as exactly its text (no markup, no link, no HTML)."""
    text = "" if value is None else str(value)
    return _MD_SPECIAL.sub(r"\\\1", _TEXT_REWRITE.sub(WORD_JOINER, text))


def md_inline(value: Any, limit: Optional[int] = None) -> str:
    """:func:`md` for one-line labels: whitespace runs fold to one space; ``limit`` shortens with an ellipsis."""
    text = _WS.sub(" ", "" if value is None else str(value)).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    return md(text)


def html(value: Any) -> str:
    """``value`` escaped for HTML text or a double- or single-quoted attribute; line breaks as character
    references (so the text cannot end the HTML block it sits in)."""
    text = _html.escape("" if value is None else str(value), quote=True)
    return text.replace("\r", "&#13;").replace("\n", "&#10;")


def markup_environment(directory):
    """A Jinja2 environment for the HTML and SVG templates in ``directory``: autoescape on, and every value a
    template writes that is not already markup (a ``markupsafe.Markup``, a macro's output) escaped by :func:`html`,
    so a template escapes exactly as this module does (quotes, ``&``, line breaks); a missing name is an error
    (``StrictUndefined``); a block tag takes its line's indent and the line break after it with it."""
    import jinja2
    from markupsafe import Markup

    def escaped(value: Any):
        return value if hasattr(value, "__html__") else Markup(html(value))

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(directory)), autoescape=True, finalize=escaped,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=False)


def plot(value: Any) -> str:
    """``value`` for plotly text (titles, axis labels, hover names): no tag can form."""
    return _html.escape("" if value is None else str(value), quote=False)


def csv_cell(value: Any) -> Any:
    """One CSV cell with formula prefixes neutralised (strings only; numbers, numbers written as text, None
    and bools pass through)."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_frame(df):
    """A copy of a pandas DataFrame whose text cells, column names and index labels are safe to open in a
    spreadsheet."""
    from pandas.api import types

    out = df.copy()
    for col in range(out.shape[1]):
        series = out.iloc[:, col]
        if not (types.is_numeric_dtype(series.dtype) or types.is_bool_dtype(series.dtype)
                or types.is_datetime64_any_dtype(series.dtype)):
            out.isetitem(col, series.astype(object).map(csv_cell))
    out.columns = [csv_cell(c) for c in out.columns]
    if not types.is_numeric_dtype(out.index.dtype):
        out.index = [csv_cell(i) for i in out.index]
    return out


def csv_text(rows: Iterable[Sequence[Any]], header: Optional[Sequence[str]] = None) -> str:
    """Rows (sequences) as CSV text, every cell through :func:`csv_cell`."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header is not None:
        w.writerow([csv_cell(h) for h in header])
    for row in rows:
        w.writerow([csv_cell(v) for v in row])
    return buf.getvalue()


def dataframe_csv(df) -> bytes:
    """A DataFrame as UTF-8 CSV bytes for a download button, cells neutralised."""
    return csv_frame(df).to_csv(index=False).encode("utf-8")


def filename(value: Any, suffix: str = "", limit: int = 80) -> str:
    """A data string as a safe download file name: letters, digits, ``.``, ``_`` and ``-`` only."""
    stem = _FILENAME_BAD.sub("_", "" if value is None else str(value)).strip("._-")[:limit] or "data"
    return stem + suffix
