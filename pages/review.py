"""Spot-check & adjudicate: a clinician re-rates a summary (or records the adjudicated final score), blinded to
the other raters and the LLM judge until they have submitted; every edit is kept as history.

One screen: the notes and the summary scroll on the left, the anchored rating form stays on the right; keyboard
shortcuts (``components.review_form.render_shortcuts``) set levels, move between summaries and save."""
import streamlit as st

from components import case_view, frames, state, triage_view
from components.review_form import (FORM_COLUMN_MARKER, NEXT_LABEL, PREV_LABEL, STICKY_FORM_STYLE,
                                    render_review_form, render_shortcuts)
from engine.core import untrusted
from engine.views import review as view

NOTES_HEIGHT = 460  # px: the notes and the summary scroll inside these, the form beside them stays in view
SUMMARY_HEIGHT = 260
FORM_HEIGHT = 820
md, inline = untrusted.md, untrusted.md_inline


def _step(order: list, delta: int) -> None:
    """Button callback (runs before the widgets are drawn): move to the next / previous summary, across cases."""
    here = (st.session_state.get("case_id"), st.session_state.get("summary_id"))
    i = order.index(here) if here in order else 0
    j = max(0, min(len(order) - 1, i + delta))
    st.session_state["case_id"], st.session_state["summary_id"] = order[j]


def _open(order: list, sid_key: str) -> None:
    """Callback: open the summary picked in a queue."""
    picked = st.session_state.get(sid_key)
    for c, s in order:
        if s == picked:
            st.session_state["case_id"], st.session_state["summary_id"] = c, s


def _triage(page, order) -> None:
    with st.expander("Review these first — triage queue", expanded=False):
        entries, score_source, _ = state.guarded(page.triage, default=([], "", []))
        blind_queue = st.session_state.get("review_blinded", True)
        if not entries:
            st.info("Nothing to rank yet.")
            return
        st.caption(f"Ranked by the judge's scores ({md(score_source)}) and the evidence: coverage, "
                   "sentence support, citations, stigmatizing language. "
                   + ("Blinded: reasons name the judge's lowest items without their scores." if blind_queue else ""))
        sample_n = st.number_input("Stratified spot-check sample (0 = the whole queue)", 0, len(entries), 0,
                                   key="triage_sample_n",
                                   help="Draws across the thirds of the queue in turn (review first, middle, lowest "
                                        "risk), so a sample also checks summaries the judge liked.")
        _, _, shown = state.guarded(page.triage, int(sample_n), default=([], "", entries))
        triage_view.render(shown, blind_queue)
        st.selectbox("Open", [e.summary_id for e in shown], key="triage_open", on_change=_open,
                     args=(order, "triage_open"), index=None, placeholder="Pick a summary to review it",
                     format_func=inline)


def _queues(page, order, queue, me: str, reviewer: str, kind: str) -> None:
    if reviewer:
        if reviewer != me:  # the name was typed after the queue above was read
            queue = state.guarded(page.assigned, reviewer, default=[])
        if queue:
            todo = [e for e in queue if not e.done]
            with st.expander(f"Your assigned summaries: {len(todo)} to do of {len(queue)}", expanded=bool(todo)):
                st.caption("Assigned by the team's review plan (python -m engine assign): every summary goes to at "
                           "least two reviewers, blinded to each other and to the judge until each has saved.")
                st.selectbox("Open", [e.summary_id for e in queue], key="assigned_open", on_change=_open,
                             args=(order, "assigned_open"), index=None, placeholder="Pick one of your summaries",
                             format_func=lambda s: ("✓ " if any(e.done for e in queue if e.summary_id == s)
                                                    else "") + inline(s))
    if kind == view.ADJUDICATION:
        with st.expander("Adjudication queue — where reviewers disagree (shows their scores)", expanded=False):
            margin = st.number_input("Margin (1–5 items: a larger difference is a disagreement)", 0.0, 4.0, 1.0, 0.5,
                                     key="adjudication_margin")
            pending = state.guarded(page.adjudication, float(margin), default=[])
            if pending:
                frames.show(pending)
                st.selectbox("Open", sorted({d["summary"] for d in pending}), key="adjudicate_open", on_change=_open,
                             args=(order, "adjudicate_open"), index=None, placeholder="Pick a summary to adjudicate")
            else:
                st.info("No disagreement beyond the margin is waiting for an adjudicated score.")


def _form(page, name: str, sid: str, reviewer: str, kind: str) -> None:
    st.markdown(FORM_COLUMN_MARKER, unsafe_allow_html=True)
    st.markdown(f"#### Your review — {view.KIND_LABELS[kind].lower()}")
    if not reviewer:
        st.info("Enter your name as reviewer to score this summary.")
    else:
        values, comments = state.guarded(page.my_review, sid, reviewer, kind, default=({}, {}))
        with st.container(height=FORM_HEIGHT):
            submitted = render_review_form(f"review:{name}:{sid}:{reviewer}:{kind}", view.ITEMS, values, comments)
        if submitted is not None:
            try:
                written = page.submit(sid, reviewer, kind, submitted["values"], submitted["comments"])
            except view.StoreError as exc:
                st.error(f"Not saved: the workspace is busy or unavailable, retry in a moment: {md(exc)}")
            except ValueError as exc:
                st.error(f"Not saved: {md(exc)}")
            else:
                if written:
                    state.bump_data_version()  # the statistics (Agreement page) include reviews: refresh them
                    st.success(f"Saved {len(written)} item(s) for {md(sid)} as {md(reviewer)} "
                               f"({view.KIND_LABELS[kind].lower()}); earlier values are kept in the history.")
                else:
                    st.info("Nothing changed: your current review already has these values.")
    render_shortcuts(view.ITEMS)


def _revealed(after) -> None:
    st.markdown("#### Rater scores (PDSQI-9)")
    st.caption("Imported raters (the panel), clinician spot checks (group 'spot-check') and the adjudicated final "
               "score. The median row is the reference: the panel's median (yes/no items: the share of yes), "
               "replaced by the adjudicated score where there is one — spot checks and adjudications are never "
               "averaged in as more raters.")
    case_view.render_score_table(after.score_rows, [it.label for it in view.ITEMS if it.is_likert])
    st.markdown("#### LLM judge")
    stored = after.judge
    if stored is None:
        st.info("No LLM judge result is stored for this summary (run it on the Judge page).")
    else:
        st.caption(f"Status: {md(stored.status)} · model {md(stored.provenance.model_file)} · "
                   f"{md(stored.created_at)}" + (f" · {md(stored.reason)}" if stored.reason else ""))
        frames.show(after.judge_rows)
        st.caption("Median over the judge's samples (yes/no items: the share of yes); blank = not scored; "
                   "NA = not applicable.")
    st.markdown("#### Review history of this summary")
    if after.history_rows:
        frames.show(after.history_rows)
        st.caption("Newest first. Edits never overwrite: a replaced value stays, marked 'replaced by #n'.")
    else:
        st.info("No review of this summary yet.")


def _reviewer(page) -> tuple[str, list, list]:
    """(the reviewer named so far, the order Next / Previous walk, their assigned queue): every summary of the
    dataset in case order, or the reviewer's assigned summaries when the team's review plan names them."""
    if "reviewer_name" not in st.session_state:
        # on a team server the reviewer is the role the server authenticated, unless they type another name
        who = state.guarded(page.default_reviewer, default="")
        if who:
            st.session_state["reviewer_name"] = who
    me = str(st.session_state.get("reviewer_name") or "").strip()
    order, queue = state.guarded(page.order, me, stop=True)
    return me, order, queue


def main() -> None:
    st.title("Spot-check & adjudicate")
    name, ds = state.require_dataset()
    if not ds.cases:
        st.info("This dataset has no cases.")
        st.stop()
    page = view.review_page(state.store(), name, ds)
    me, order, queue = _reviewer(page)
    _triage(page, order)
    case = state.case_picker(ds)
    if not ds.summaries_for(case.case_id):
        st.info("This case has no summary.")
        st.stop()
    sid = state.summary_picker(ds, case, key="review_summary")
    summary = ds.summary(sid)
    pos = order.index((case.case_id, sid)) if (case.case_id, sid) in order else 0
    c1, c2, c3 = st.columns([2, 2, 1])
    reviewer = c1.text_input("Reviewer", key="reviewer_name", placeholder="Your name or initials").strip()
    kind = c2.radio("Kind", view.REVIEW_KINDS, format_func=view.KIND_LABELS.get, horizontal=True, key="review_kind",
                    help="A spot check adds you as a clinician rater; the adjudicated final score is the agreed "
                         "reference: it replaces the raters' median of the item, it is not one more rater.")
    blinded = c3.checkbox("Blinded", value=True, key="review_blinded",
                          help="Hide the LLM judge results and the other raters' scores until you have submitted a "
                               "review for this summary.")
    _queues(page, order, queue, me, reviewer, kind)
    n1, n2, n3 = st.columns([1, 1, 3])
    n1.button(f"◀ {PREV_LABEL}", on_click=_step, args=(order, -1), disabled=pos == 0, width="stretch",
              help="Key: [")
    n2.button(f"{NEXT_LABEL} ▶", on_click=_step, args=(order, 1), disabled=pos >= len(order) - 1, width="stretch",
              help="Key: ]")
    n3.caption(f"Summary {pos + 1} of {len(order)}" + (" assigned to you" if queue else "") + " · "
               f"{inline(case.case_id)} · {inline(sid)} — for {inline(case.target_specialty)}")
    # the form column stays in view while the page scrolls (the notes and the form also scroll in their own boxes)
    st.markdown(STICKY_FORM_STYLE, unsafe_allow_html=True)
    left, right = st.columns([3, 2], gap="large")
    with left:  # the summary under review first, so it is in view at 1,280 × 800 and up; the notes scroll below it
        st.markdown("#### Summary")
        with st.container(height=SUMMARY_HEIGHT):
            case_view.render_summary(summary.text, page.summary_spans(sid), [n.note_id for n in case.notes],
                                     {"generator": summary.generator_model, "quality group": summary.quality_group,
                                      "prompt": summary.prompt_variant})
        st.markdown("#### Source notes")
        with st.container(height=NOTES_HEIGHT):
            case_view.render_notes([n.__dict__ for n in case.notes])
    with right:
        _form(page, name, sid, reviewer, kind)
    after = state.guarded(page.after, sid, reviewer, blinded, default=None)
    revealed = after is not None and after.revealed
    if not revealed:
        st.info("Blinded: the other raters' scores, the LLM judge results and the review history of this summary "
                "are hidden until you submit your review (or untick **Blinded**).")
    else:
        _revealed(after)
    st.markdown("#### Export")
    st.download_button("Download all reviews of this dataset (CSV, with history)",
                       after.export_csv if revealed else "",
                       file_name=untrusted.filename(name, "-reviews.csv"), mime="text/csv", disabled=not revealed,
                       help="Every review row with reviewer and time, superseded rows included."
                            + ("" if revealed else " Available once you have submitted (or with Blinded off)."))


main()
