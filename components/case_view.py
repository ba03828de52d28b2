"""Case rendering: notes with their ids, the summary with visible citations, the rater score table."""
from __future__ import annotations

from typing import Sequence

import streamlit as st
from markupsafe import Markup

from components.evidence_view import marks_html
from components.html import fragment
from engine.core import untrusted

def _text_html(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return fragment("text_lines", lines=lines)


def note_anchor(nid: str) -> str:
    """The id of a note's block on the page: a hash, so no text from data goes into an attribute."""
    import hashlib

    return "note-" + hashlib.sha256(nid.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _badge(nid: str, known_note_ids: Sequence[str]) -> str:
    ok = nid in known_note_ids
    colour = "#1f6feb" if ok else "#cf222e"
    title = f"cites note {nid} (click to show it)" if ok else f"cites note {nid}, which is not in this case"
    # a cited note that exists: the badge scrolls its notes box to it (an in-page link, nothing leaves the page)
    return fragment("citation_badge", nid=nid, title=title, colour=colour, anchor=note_anchor(nid) if ok else "")


# stigmatizing-language categories (engine/resources/stigma_lexicon.json) -> highlight colour
STIGMA_COLOURS = {"credibility": "rgba(191,135,0,0.35)", "disapproval": "rgba(207,34,46,0.30)",
                  "stereotyping": "rgba(130,80,223,0.30)", "social_descriptor": "rgba(31,111,235,0.28)"}
STIGMA_DEFAULT_COLOUR = "rgba(207,34,46,0.30)"

Mark = tuple[int, int, str, str]  # (start, end, css background, title shown on hover)


def _marked_html(text: str, offset: int, marks: Sequence[Mark]) -> str:
    """``text`` (which starts at ``offset`` of the full text), escaped with its line breaks kept, with the marks
    that fall inside it."""
    return marks_html(text, marks, offset, escape=_text_html)


# a sentence's problems, shown where it ends: symbol and colour per kind (engine.views.case.FLAG_KINDS)
FLAG_STYLE = {"citation wrong": ("✗ cite", "#cf222e"), "citation missing": ("? cite", "#bf8700"),
              "false specific": ("≠ fact", "#8250df"), "restatement": ("↺ again", "#57606a"),
              "weak support": ("~ weak", "#0969da")}


def _flag_badge(kind: str, title: str) -> str:
    symbol, colour = FLAG_STYLE.get(kind, ("!", "#cf222e"))
    return fragment("flag_badge", kind=kind, title=title, symbol=symbol, colour=colour)


def flag_legend() -> str:
    """HTML legend of the sentence flags."""
    return fragment("flag_legend", flags=[(k, symbol, colour) for k, (symbol, colour) in FLAG_STYLE.items()])


def summary_html(text: str, citations: Sequence[tuple[int, int, Sequence[str]]], known_note_ids: Sequence[str],
                 marks: Sequence[Mark] = (), flags: Sequence[tuple[int, str, str]] = ()) -> str:
    """The summary, escaped, with every citation (start, end, cited note ids — from ``engine.core.citations``, in
    whatever form the dataset writes them) shown as one badge per note (red if the note does not exist),
    ``marks`` (e.g. stigmatizing language) highlighted with their title on hover, and ``flags`` (end, kind, reason)
    shown as small badges where their sentence ends."""
    cuts = sorted({e for e, _, _ in flags} | {s for s, _, _ in citations} | {e for _, e, _ in citations} | {0})
    by_end: dict[int, list[tuple[str, str]]] = {}
    for end, kind, title in flags:
        by_end.setdefault(end, []).append((kind, title))
    cites = {start: (end, ids) for start, end, ids in sorted(citations)}
    out, pos = [], 0
    for cut in cuts + [len(text)]:
        if cut < pos:
            continue
        out.append(_marked_html(text[pos:cut], pos, marks))
        pos = cut
        if cut in cites:
            end, ids = cites[cut]
            out.append(" ".join(_badge(nid, known_note_ids) for nid in ids))
            pos = end
        if pos in by_end:
            out.append("".join(_flag_badge(k, t) for k, t in by_end.pop(pos)))
    out.append(_marked_html(text[pos:], pos, marks))
    out += ["".join(_flag_badge(k, t) for k, t in v) for v in by_end.values()]  # a flag past the text's end
    return fragment("summary_block", body=Markup("".join(out)))  # escaped text, marks and badges built above


def stigma_legend(categories: dict[str, str]) -> str:
    """HTML legend: one swatch per stigmatizing-language category (``categories``: key -> label)."""
    return fragment("stigma_legend", chips=[(STIGMA_COLOURS.get(k, STIGMA_DEFAULT_COLOUR), v)
                                            for k, v in categories.items()])


NOTE_STYLE = "font-family:inherit;font-size:0.92em;line-height:1.55"


def note_html(n: dict, marks: Sequence[Mark] = ()) -> str:
    """One note as a block: its header (id, date, type, author) and its text in the page's own font, with ``marks``
    (stigmatizing language) highlighted; the block's id is :func:`note_anchor` so a citation badge can reach it."""
    meta = " · ".join(x for x in (n.get("date"), n.get("note_type"), n.get("author_specialty")) if x)
    head = f"Note {n['note_id']}" + (f" — {meta}" if meta else "") + f" — {len(n['text'].split())} words"
    body = _marked_html(n["text"], 0, marks) if marks else _text_html(n["text"])
    return fragment("note_block", anchor=note_anchor(n["note_id"]), head=head, style=NOTE_STYLE,
                    body=Markup(body))  # the note's text, escaped by _marked_html or _text_html


def render_notes(notes: Sequence[dict], marks: dict[str, Sequence[Mark]] | None = None) -> None:
    """notes: dicts with note_id, date, note_type, author_specialty, text; ``marks``: per note id, spans to
    highlight (stigmatizing language). Every note in one column, in the same font whether marked or not, each
    reachable from the summary's citation badges."""
    marks = marks or {}
    for n in notes:
        st.markdown(note_html(n, marks.get(n["note_id"], ())), unsafe_allow_html=True)


def render_summary(text: str, citations: Sequence[tuple[int, int, Sequence[str]]], note_ids: Sequence[str],
                   meta: dict, marks: Sequence[Mark] = (), flags: Sequence[tuple[int, str, str]] = ()) -> None:
    facts = " · ".join(f"{k}: {untrusted.md_inline(v)}" for k, v in meta.items() if v)
    if facts:
        st.caption(facts)
    st.markdown(summary_html(text, citations, note_ids, marks, flags), unsafe_allow_html=True)
    if flags:
        st.markdown(flag_legend(), unsafe_allow_html=True)


RATER_WIDTH = 150  # px of the rater column beside the eight 1-5 items: the table fits a 1,280 px window
RATER_WIDTH_YES_NO = 250  # beside the three yes/no items there is room for "Stigma detector (lexicon, no LLM)"


def render_score_table(rows: list[dict], scored: Sequence[str]) -> None:
    """The rater table in two parts that fit a 1,280 px window without scrolling sideways: the 1-5 items
    (``scored``: their column labels) and the yes/no items; a row with nothing in a part is left out of it."""
    if not rows:
        st.info("No human ratings for this summary.")
        return
    from components.frames import show

    group = st.column_config.TextColumn("group", width="small")
    head = ["rater", "group"]
    cols = list(dict.fromkeys(k for r in rows for k in r if k not in head))
    parts = [("1-5 items", [c for c in cols if c in scored]), ("yes/no items", [c for c in cols if c not in scored])]
    for title, part in parts:
        keep = [{k: r.get(k) for k in head + part} for r in rows if any(r.get(c) not in (None, "") for c in part)]
        if not part or not keep:
            continue
        st.caption(title)
        rater = st.column_config.TextColumn("rater", width=RATER_WIDTH if len(part) > 4 else RATER_WIDTH_YES_NO)
        show(keep, column_config={"rater": rater, "group": group})
    st.caption("Blank = not rated; NA = rated not applicable (Synthesized when no abstraction is needed). Yes/no "
               "items: yes or no per rater; a median row shows the share of yes (\"2 of 3 yes (67%)\"). The median "
               "row is the human reference: an adjudicated final score replaces it, marked (adjudicated).")


def render_used_table(rows: list[dict]) -> None:
    """Per 1-5 item, the judge's expected score beside the score used where decisions are made (engine rows)."""
    from components.frames import show

    show(rows, wrap=True)  # "made of" is a sentence a reader reads whole


def check_parts(job) -> None:
    """The finished parts of a running (or stopped) summary check, one line each as soon as it is stored: what it
    found, its seconds and the record tokens the model read for it (``job.latest``:
    :func:`engine.analysis.check.check_job`)."""
    for sid, part in job.latest or ():
        loaded = f", {part.head_loaded:,} loaded from disk" if part.head_loaded else ""
        st.markdown(f"✓ **{untrusted.md_inline(part.label)}** ({untrusted.md_inline(sid)}): "
                    f"{untrusted.md_inline(part.line, 300)} · {part.seconds:.1f} s · record/summary tokens read "
                    f"{part.head_tokens:,}{loaded} · {untrusted.md_inline(part.status)}")
