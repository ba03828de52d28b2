"""Spot-check & adjudicate: a clinician re-rates a summary (or records the adjudicated final score), blinded to
the other raters and the LLM judge until they have submitted; every edit is kept as history."""
import pandas as pd
import streamlit as st

from components import case_view, state
from components.review_form import render_review_form
from engine import citations, untrusted
from engine.judge import JudgeResult
from engine.ratings import display_table
from engine.reviews import (KIND_LABELS, KINDS, current_reviews, export_reviews_csv, has_reviewed, history_rows,
                            review_history, reviews_as_ratings, save_review)
from engine.rubric import ITEMS, format_value
from engine.store import StoreError

st.title("Spot-check & adjudicate")
name, ds = state.require_dataset()
if not ds.cases:
    st.info("This dataset has no cases.")
    st.stop()
store = state.store()

case = state.case_picker(ds)
case_id = case.case_id
summaries = ds.summaries_for(case_id)
if not summaries:
    st.info("This case has no summary.")
    st.stop()
_pick = st.session_state.pop("summary_pick", None)  # set by the disagreement explorer
if _pick in [s.summary_id for s in summaries]:
    st.session_state["review_summary"] = _pick
sid = st.sidebar.radio("Summary", [s.summary_id for s in summaries], key="review_summary",
                       format_func=untrusted.md_inline)
summary = ds.summary(sid)

c1, c2, c3 = st.columns([2, 2, 1])
reviewer = c1.text_input("Reviewer", key="reviewer_name", placeholder="Your name or initials").strip()
kind = c2.radio("Kind", KINDS, format_func=KIND_LABELS.get, horizontal=True, key="review_kind",
                help="A spot check adds you as a clinician rater; the adjudicated final score is the single agreed "
                     "score the statistics report as rater 'adjudicated'.")
blinded = c3.checkbox("Blinded", value=True, key="review_blinded",
                      help="Hide the LLM judge results and the other raters' scores until you have submitted a "
                           "review for this summary.")

st.subheader(f"{untrusted.md_inline(case.case_id)} · {untrusted.md_inline(sid)} — for "
             f"{untrusted.md_inline(case.target_specialty)}")
left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown("#### Source notes")
    case_view.render_notes([n.__dict__ for n in case.notes])
with right:
    st.markdown("#### Summary")
    case_view.render_summary(summary.text, citations.spans(summary.text, ds.citation_style()),
                             [n.note_id for n in case.notes],
                             {"generator": summary.generator_model, "quality group": summary.quality_group,
                              "prompt": summary.prompt_variant})

st.markdown(f"#### Your review — {KIND_LABELS[kind].lower()}")
if not reviewer:
    st.info("Enter your name as reviewer to score this summary.")
else:
    mine = [r for r in state.guarded(current_reviews, store, name, sid, default=[])
            if r.reviewer == reviewer and r.kind == kind]
    submitted = render_review_form(f"review:{name}:{sid}:{reviewer}:{kind}", ITEMS,
                                   {r.item: r.value for r in mine}, {r.item: r.comment for r in mine})
    if submitted is not None:
        try:
            written = save_review(store, name, sid, reviewer, kind, submitted["values"], submitted["comments"])
        except StoreError as exc:
            st.error(f"Not saved: the workspace is busy or unavailable, retry in a moment: {untrusted.md(exc)}")
        except ValueError as exc:
            st.error(f"Not saved: {untrusted.md(exc)}")
        else:
            if written:
                state.bump_data_version()  # the statistics (Agreement page) include reviews: refresh them
                st.success(f"Saved {len(written)} item(s) for {untrusted.md(sid)} as {untrusted.md(reviewer)} "
                           f"({KIND_LABELS[kind].lower()}); earlier values are kept in the history.")
            else:
                st.info("Nothing changed: your current review already has these values.")

revealed = not blinded or state.guarded(has_reviewed, store, name, sid, reviewer, default=False)
if not revealed:
    st.info("Blinded: the other raters' scores, the LLM judge results and the review history of this summary are "
            "hidden until you submit your review (or untick **Blinded**).")
else:
    st.markdown("#### Rater scores (PDSQI-9)")
    st.caption("Imported raters, clinician spot checks (group 'clinician') and the adjudicated final score.")
    case_view.render_score_table(display_table(ds.ratings_for(sid)
                                               + state.guarded(reviews_as_ratings, store, name, sid, default=[])))

    st.markdown("#### LLM judge")
    stored = next((r for r in map(JudgeResult.from_json, state.guarded(store.judge_results, name, default=[]))
                   if r.summary_id == sid), None)
    if stored is None:
        st.info("No LLM judge result is stored for this summary (run it on the Judge page).")
    else:
        st.caption(f"Status: {untrusted.md(stored.status)} · model {untrusted.md(stored.provenance.model_file)} · "
                   f"{untrusted.md(stored.created_at)}"
                   + (f" · {untrusted.md(stored.reason)}" if stored.reason else ""))

        def llm_cell(item):
            score = stored.items.get(item.key)
            if score is None or (score.median is None and not score.is_na):
                return ""  # not scored
            return format_value(item, score.median)

        st.dataframe(pd.DataFrame([{"item": i.label, "LLM median": llm_cell(i)} for i in ITEMS]),
                     hide_index=True, width="stretch")
        st.caption("Median over the judge's samples; blank = not scored; NA = not applicable.")

    st.markdown("#### Review history of this summary")
    history = state.guarded(review_history, store, name, sid, default=[])
    if history:
        st.dataframe(pd.DataFrame(history_rows(history)), hide_index=True, width="stretch")
        st.caption("Newest first. Edits never overwrite: a replaced value stays, marked 'replaced by #n'.")
    else:
        st.info("No review of this summary yet.")

st.markdown("#### Export")
st.download_button("Download all reviews of this dataset (CSV, with history)",
                   state.guarded(export_reviews_csv, store, name, default="") if revealed else "",
                   file_name=untrusted.filename(name, "-reviews.csv"), mime="text/csv", disabled=not revealed,
                   help="Every review row with reviewer and time, superseded rows included."
                        + ("" if revealed else " Available once you have submitted (or with Blinded off)."))
