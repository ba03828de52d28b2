"""Evidence rendering: highlighted note text, MED-OMIT omitted facts, per-summary evidence tables."""
from __future__ import annotations

import hashlib
import re
from typing import Callable, Sequence

import pandas as pd
import streamlit as st
from markupsafe import Markup

from components.html import fragment
from engine.core import untrusted


FOCUS_BACKGROUND = "rgba(31,111,235,0.35)"
FOCUS_OUTLINE = "outline:2px solid #1f6feb;outline-offset:1px"
_FOCUS_ID = re.compile(r"sc-focus-[0-9a-f]{16}")


def marks_html(text: str, spans: Sequence[tuple[int, int, str, str]], offset: int = 0,
               escape: Callable[[str], str] = untrusted.html,
               attrs: Callable[[int, int], dict] = lambda start, end: {}) -> str:
    """``text`` (starting at ``offset`` of the full text the spans refer to) with every (start, end, css background,
    title) span that lies inside it marked; overlapping spans after the first are skipped. Text goes through
    ``escape`` (:func:`engine.core.untrusted.html`, or a variant that keeps line breaks), titles through the
    ``mark`` fragment's autoescape; ``attrs(start, end)`` gives a mark's extra values for that fragment
    (``focus_id``, ``scroll``, ``outline``)."""
    out, pos = [], 0
    for start, end, colour, title in sorted(spans):
        a, b = start - offset, end - offset
        if a < pos or b > len(text) or b <= a:
            continue
        out.append(escape(text[pos:a]))
        out.append(fragment("mark", body=Markup(escape(text[a:b])), title=title, colour=colour, **attrs(start, end)))
        pos = b
    out.append(escape(text[pos:]))
    return "".join(out)


def highlight_html(text: str, spans: Sequence[tuple[int, int, str, str]], height: int = 0,
                   focus: tuple[int, int] | None = None, focus_id: str = "", scroll_page: bool = False) -> str:
    """``text`` with the given (start, end, css background, title) spans marked; spans may not overlap.

    ``focus`` (start, end): that passage is outlined (added as "selected passage" where it is not one of the
    spans; spans overlapping it are dropped) and its mark carries ``focus_id`` (see :func:`focus_id`) and
    ``data-scroll`` ("page" when ``scroll_page``, else "box") for :func:`focus_script`."""
    spans = list(spans)
    if focus is not None:
        if not any((s[0], s[1]) == tuple(focus) for s in spans):
            spans = [s for s in spans if s[1] <= focus[0] or s[0] >= focus[1]]
            spans.append((focus[0], focus[1], FOCUS_BACKGROUND, "selected passage"))
        if focus_id and not _FOCUS_ID.fullmatch(focus_id):
            raise ValueError("focus_id must come from focus_id()")
    def focus_attrs(start: int, end: int) -> dict:
        if focus is None or (start, end) != tuple(focus):
            return {}
        return {"focus_id": focus_id, "scroll": "page" if scroll_page else "box", "outline": FOCUS_OUTLINE}

    return fragment("highlight_box", body=Markup(marks_html(text, spans, attrs=focus_attrs)), height=height)


def focus_id(where: str, text: str, span: tuple[int, int]) -> str:
    """A document-unique id for the focused passage ``span`` of ``text`` in the box ``where`` (hex hash)."""
    key = f"{where}\x00{span[0]}:{span[1]}\x00{text}".encode("utf-8", "surrogatepass")
    return "sc-focus-" + hashlib.sha256(key).hexdigest()[:16]


def focus_script(fid: str) -> str:
    """The constant scroll script (the ``focus_script`` fragment) for the passage with id ``fid``: nothing but a
    :func:`focus_id` goes in. Once the box is laid out it centres the focused passage inside its scroll box; when
    the reader has just picked it (data-scroll="page") it also brings the passage into the window if it is not
    there. It checks again while the rest of the page settles, and centres the passage again when a hidden tab
    holding the box is shown."""
    if not _FOCUS_ID.fullmatch(fid):
        raise ValueError("focus_script takes only an id made by focus_id()")
    return fragment("focus_script", fid=fid)


def aligned_passages(sentence) -> tuple[list, object | None]:
    """A summary sentence's aligned source sentences (ROUGE-gain picks and the two best embedding matches, one
    entry per source sentence) and the best one to focus: the highest-scoring, in the note named as holding the
    sentence's best support where that note has one."""
    refs = list({(r.note_id, r.start): r for r in sentence.rouge_gain + sentence.embed_topk[:2]}.values())
    best = max((r for r in refs if r.note_id == sentence.best_note), default=None, key=lambda r: r.score) \
        or max(refs, default=None, key=lambda r: r.score)
    return refs, best


def render_focus_note(text: str, spans: Sequence[tuple[int, int, str, str]], height: int,
                      focus: tuple[int, int] | None, where: str, scroll_page: bool = False) -> None:
    """The highlighted note in a scroll box; with ``focus`` the passage is outlined and scrolled into view in the
    box (and, with ``scroll_page``, in the window): ``st.html`` in the page itself, running our constant script
    (all data text is escaped by ``highlight_html``). Without ``focus``, the plain box (Markdown HTML)."""
    if focus is None:
        st.markdown(highlight_html(text, spans, height=height), unsafe_allow_html=True)
        return
    fid = focus_id(where, text, focus)
    st.html(highlight_html(text, spans, height=height, focus=focus, focus_id=fid, scroll_page=scroll_page)
            + focus_script(fid), unsafe_allow_javascript=True)


def weight_badge(weight: float) -> str:
    colour = "#cf222e" if weight >= 1 else "#bf8700" if weight >= 0.5 else "#6e7781"
    return fragment("weight_badge", weight=weight, colour=colour)


def render_medomit_summary(weight, count, ddx_difference, n_facts: int) -> None:
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("MED-OMIT weight", "—" if weight is None else f"{weight:.2f}")
    c2.metric("Omitted facts", "—" if count is None else count)
    c3.metric("Facts in the notes", n_facts)
    c4.metric("DDx difference", "—" if ddx_difference is None else f"{ddx_difference:.2f}")


def render_fact_detail(fact: dict, note_text: str | None) -> None:
    """fact: text, weight, importance, uniqueness, clusters, explanation, note_id, start, end, link."""
    st.markdown(f"{weight_badge(fact['weight'])} **{untrusted.md_inline(fact['text'])}**", unsafe_allow_html=True)
    probs = fact.get("importance P")
    read = (" (read in one step: " + ", ".join(f"P({untrusted.md_inline(k)}) {v:.2f}" for k, v in probs.items())
            + f" → weight {fact['importance weight']:.2f})" if probs else "")
    st.caption(f"importance: {untrusted.md_inline(fact['importance'] or 'uncategorised')}{read} · uniqueness: "
               f"{', '.join(f'{u:.2g}' for u in fact['uniqueness']) or 'in no cluster'} · link to source: "
               f"{untrusted.md_inline(fact['link'])}")
    if fact.get("P(omitted)") is not None:
        p = fact.get("P(stated) by the model")
        st.caption(f"decision: P(omitted) {fact['P(omitted)']:.2f} from the summary's coverage of this fact "
                   f"({fact['coverage']:.2f})" + (f" and the model's P(the summary states it) {p:.2f}" if p is not None
                                                  else "; the model was not asked (the coverage decides)"))
    elif fact["explanation"]:
        st.markdown(f"*Model's explanation:* {untrusted.md(fact['explanation'])}")
    if fact.get("left out"):
        st.markdown("The summary states this fact only in part. **Left out:** "
                    + " · ".join(f"“{untrusted.md_inline(t)}”" for t in fact["left out"])
                    + ("  \n**Written:** " + " · ".join(f"“{untrusted.md_inline(t)}”" for t in fact["written"])
                       + " *(the parts read from the summary's words; the fact was decided whole)*"
                       if fact.get("written") else ""))
    if fact["clusters"]:
        st.markdown("Clusters: " + "; ".join(untrusted.md_inline(c) for c in fact["clusters"]))
    if note_text is not None and fact["start"] is not None:
        st.markdown(f"Source: **Note {untrusted.md_inline(fact['note_id'])}**")
        spans = ([(a, b, "#ffd33d", "left out") for a, b in fact["regions"]] if fact.get("left out") else
                 [(fact["start"], fact["end"], "#ffd33d", "omitted fact")])
        st.markdown(highlight_html(note_text, spans, height=320), unsafe_allow_html=True)
    elif fact["start"] is None:
        st.info("This fact could not be linked to a place in the notes (the model paraphrased it beyond matching).")


# plain explanations of the Evidence tables' columns (column help on hover, and the page's captions)
COLUMN_HELP = {
    "summary": "The summary's id.",
    "case": "The case (patient) the summary belongs to.",
    "generator": "The model that wrote the summary.",
    "quality group": "The dataset's quality label for the summary (e.g. high / low).",
    "status": "MED-OMIT run: complete, incomplete (a step failed; see the Case page) or not run.",
    "MED-OMIT weight": "How much pertinent information the summary left out: the sum of the omitted facts' "
                       "scores (critical 1, important 0.5, other 0.1; up to 1 for a fact that is the only evidence "
                       "for a diagnosis). 0 = nothing pertinent missing. Blank = not run or incomplete.",
    "omitted facts": "How many facts from the notes the summary left out. Facts not found in the notes are never "
                     "counted.",
    "left out, all other summaries state": "Omitted facts that every other summary of the same case states (the "
                                           "same facts decided by the same model and decision): the gaps the "
                                           "other summarizers did not leave. Blank = no other summary of the case "
                                           "to compare with.",
    "not found in the notes": "Facts the model stated that could not be located in the notes (e.g. invented or "
                              "paraphrased beyond matching): listed apart on the Case page, never counted or "
                              "weighted.",
    "facts from": "Where MED-OMIT's facts came from (Settings → MED-OMIT): extracted by the model (with the "
                  "passages its facts leave uncovered), the notes' statements word for word, or the notes' atomic "
                  "statements with one-step questions (the default on a CPU: importance is read as probabilities, "
                  "and only for the facts the summary leaves out, the only ones its weight counts). Without "
                  "clusters a fact's score is its importance weight. Weights of different sources are not "
                  "comparable.",
    "smoke-test model": "yes = computed with the embedded 270M smoke-test model: it proves the pipeline runs; "
                        "its figures are not clinically meaningful.",
    "summaries": "Summaries in the group with a MED-OMIT weight.",
    "mean weight": "Mean MED-OMIT weight of the group (higher = more pertinent facts left out).",
    "mean omitted facts": "Mean number of omitted facts in the group.",
    "mean left out, all others state": "Mean number of omitted facts that every other summary of the case states, "
                                       "over the group's summaries that could be compared.",
    "omission score": "How much of the notes the summary leaves uncovered (unit coverage: the estimated share of "
                      "the notes' facts left out, 0 to 1, comparable across cases): higher = more left out.",
    "flagged": "yes = the omission score is above the flag threshold: a likely omission worth reading.",
    "note flags": "What the record may have lost whole: a note the summary never cites while citing others, and "
                  "results the latest note says are still pending that no summary sentence says are pending. The "
                  "Case page lists each flag above the uncovered regions, with its passage.",
    "mean support": "How well the notes back the summary's sentences: mean over its sentences of the best "
                    "source-sentence similarity (0 to 1). Low = content the notes may not support.",
    "notes stigmatizing": "The detector's answer to PDSQI-9 'Do the notes contain stigmatizing language?'.",
    "summary stigmatizing": "The detector's answer to PDSQI-9 'Does the summary contain stigmatizing language?'.",
    "carried forward": "Stigmatizing terms in the summary that a source note already used (same term or stem).",
    "introduced": "Stigmatizing terms in the summary that no source note used: the summary added them.",
    "terms": "The stigmatizing words or phrases the detector found in the summary.",
    "with stigmatizing language": "Summaries of the group in which the detector found stigmatizing language.",
    "introducing it": "Summaries of the group that introduce stigmatizing language the notes did not use.",
    "carrying it forward": "Summaries of the group that copy stigmatizing language from the notes.",
    "weak sentences": "Summary sentences the notes back weakly: the mean of word evidence (share of the "
                      "sentence's content words found in the notes, rare words counting more) and embedding "
                      "similarity is below the threshold, or the sentence states a number or name the notes "
                      "never state.",
    "coverage": "Extractive coverage: the share of the summary's words that sit in fragments copied from the notes "
                "(0 to 1).",
    "density": "Extractive density: mean squared length of the copied fragments; high = the summary copies long "
               "stretches of the notes.",
    "combined g": "½ (z(mean support) + z(coverage)), z over the summaries computed so far: above 0 = better "
                  "grounded than the average summary here.",
    "citation issues": "Citations that name a note that does not exist or that does not support the sentence.",
    "unsupported claims": "Claims of the summary that the judge model, asked one yes/no question per claim, does "
                          "not find in the record (P(supported) below the threshold chosen on real conversations; "
                          "a number, side, age or drug the record contradicts or never gives caps it). Marked in "
                          "orange on the Case page.",
    "lowest P(supported)": "The least supported claim's probability that the record states it (0 to 1): low = "
                           "the summary says something the record does not.",
}


def smoke_badge(model: str, what: str = "scores") -> None:
    """The smoke-test mark: names the model and says its figures are not clinically meaningful."""
    st.warning(f"**Smoke-test model:** {untrusted.md_inline(model)} — the embedded 270M model. These {what} prove "
               "the pipeline runs; they are **not clinically meaningful**.", icon="⚠️")


def render_table(rows: list[dict], caption: str = "", key: str = "", empty: str = "Nothing to show yet.") -> None:
    """A sortable table whose columns carry their plain explanation (hover a header), empty cells blank, and —
    with ``key`` — a CSV download of the same table."""
    if not rows:
        st.info(empty)
        return
    df = pd.DataFrame(rows)
    config = {c: st.column_config.Column(help=COLUMN_HELP[c]) for c in df.columns if c in COLUMN_HELP}
    from components.frames import show

    show(df, column_config=config)
    if caption:
        st.caption(caption)
    if key:
        st.download_button("Download table (CSV)", untrusted.dataframe_csv(df), untrusted.filename(key, ".csv"),
                           "text/csv", key=f"dl_{key}")


def explain_columns(columns: Sequence[str]) -> str:
    """One Markdown bullet list explaining ``columns`` (for a caption / expander)."""
    return "\n".join(f"- **{c}**: {COLUMN_HELP[c]}" for c in columns if c in COLUMN_HELP)


def group_chart(data: list[dict], by: str, metrics: Sequence[str]):
    """Bars of the group means ``data`` (rows of ``by``, metric, mean, summaries: engine.views.evidence.
    group_chart_rows), one panel per metric (the scales differ), and the rows as a frame for the CSV; the figure is
    None when there is no row. Group names reach the figure only through ``untrusted.plot``."""
    import plotly.express as px

    frame = pd.DataFrame(data, columns=[by, "metric", "mean", "summaries"])
    if not data:
        return None, frame
    shown = frame.assign(**{by: frame[by].map(untrusted.plot)})
    present = {r["metric"] for r in data}
    fig = px.bar(shown, x=by, y="mean", facet_col="metric", color="metric", text="summaries",
                 category_orders={"metric": [m for m in metrics if m in present]},
                 labels={by: untrusted.plot(by), "mean": "mean"}, height=380,
                 title=untrusted.plot(f"Mean per {by} (bar label: summaries with a value)"))
    fig.update_yaxes(matches=None, showticklabels=True)
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    fig.update_layout(showlegend=False)
    return fig, frame


def cut_around(primary: Sequence[tuple[int, int, str, str]], secondary: Sequence[tuple[int, int, str, str]]
               ) -> list[tuple[int, int, str, str]]:
    """``primary`` marks plus ``secondary`` ones cut into the pieces that do not overlap a primary mark (marks
    never overlap on the page: a stigmatizing word inside an unsupported claim keeps its own colour)."""
    out = list(primary)
    for start, end, colour, title in secondary:
        pieces = [(start, end)]
        for a, b, _, _ in primary:
            pieces = [q for (x, y) in pieces for q in ((x, min(y, a)), (max(x, b), y)) if q[1] > q[0]] \
                if a < end and b > start else pieces
        out += [(x, y, colour, title) for x, y in pieces]
    return out


VERDICT_SIGNS = {"unsupported": "✗", "uncertain": "~", "unscored": "?"}


def render_verification(view, case) -> None:
    """A summary's claim verification (an ``engine.views.verification.VerificationView``): headline,
    smoke-test mark, one row per claim (unsupported first) and the picked claim's passage in its note."""
    st.caption(untrusted.md_inline(view.headline, 400))
    res = view.result
    if res is None or not view.rows:
        return
    if res.smoke_test:
        smoke_badge(res.model, "verification probabilities")
    render_table([{"sentence": r.sentence, "claim": r.claim, "verdict": r.verdict, "P(supported)": r.p_supported,
                   "why": r.why, "fact check": r.notes_say, "checked against": r.checked_against,
                   "reason": r.reason} for r in view.rows], key="verification_claims")
    labels = [f"{VERDICT_SIGNS.get(r.verdict, '✓')} "
              f"{r.sentence}\\. {untrusted.md_inline(r.claim, 100)}" for r in view.rows]
    pick = st.selectbox("Show a claim's passage in its note", labels, key="verification_pick")
    k = labels.index(pick)
    where = view.focus[k]
    if where is not None:
        nid, a, b = where
        try:
            text = case.note(nid).text
        except KeyError:
            return
        st.markdown(f"**Note {untrusted.md(nid)}** — the lines the claim was checked against, outlined")
        render_focus_note(text, [], 260, (a, b), "verification")
    st.caption("P(supported) joins the judge model's probability of answering *yes* to “does the record state "
               "this?” with what the claim says that the record never does (words, numbers, an age) and the "
               "fact-level checks, in a combination fitted on real conversations; each marked claim says what drove "
               "it. Orange: unsupported; blue: uncertain, near the line — read it, it is not a finding "
               "(docs/evidence.md, *Claim verification*).")
