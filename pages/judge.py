"""Judge page: grade one summary or a whole dataset with the PDSQI-9 LLM judge; compare with the raters."""
from dataclasses import asdict

import streamlit as st

from components import jobs_view, judge_view, state
from engine.core import untrusted
from engine.views import judge as view

md = untrusted.md
SCOPES, SHOTS = ["This summary", "Whole dataset"], [0, 1, 3, 5]


def _model_line(m) -> None:
    """The judge model a run would use (an embedded model's label is the registry's own text, not data)."""
    if m.kind == "embedded" and m.smoke_test:
        st.warning(f"Model: **{m.label}** — a quick check. It proves the pipeline runs; its grades are not "
                   "clinically meaningful. The default judge is chosen on the Settings page.")
    elif m.kind == "embedded":
        st.caption(f"Model: **{m.label}** (embedded default judge) · context {md(m.n_ctx)}. Its main "
                   "number is the expected score per item; see the Settings page for its measured validity.")
    elif m.kind == "server":
        st.caption(f"Model server: {md(m.endpoint)} · model {md(m.label)} · "
                   f"{md(m.concurrency)} requests in flight for a whole dataset")
    else:
        name_part = f"{md(m.label)} (found on this machine) · file " if m.found_here else ""
        st.caption(f"Model: {name_part}{md(m.model_path)} · context {md(m.n_ctx)} · GPU layers {md(m.n_gpu_layers)}")


def _form(opts: dict):
    """The run's options (kept for the session: widget state is dropped when a page is left) and whether Run was
    pressed."""
    with st.form("judge_params"):
        c1, c2, c3, c4 = st.columns(4)
        n_samples = c1.number_input("Samples", 1, 15, int(opts["n_samples"]),
                                    help="1 = one greedy pass, which gives the expected scores "
                                    "(the main number); more samples add a median over them and take longer")
        shots = c2.selectbox("Few-shot examples", SHOTS, index=SHOTS.index(opts["shots"]))
        temperature = c3.number_input("Temperature (samples 2…N)", 0.0, 1.5, float(opts["temperature"]), step=0.1)
        scope = c4.radio("Run on", SCOPES, index=SCOPES.index(opts["scope"]))
        explain = st.checkbox("One-sentence explanation per item (slower)", value=bool(opts["explain"]))
        trim = st.checkbox("If the notes do not fit the context, drop the oldest notes (else the case is refused)",
                           value=bool(opts["trim"]))
        early_stop = st.checkbox("Stop early when the medians are decided (same result, fewer samples)",
                                 value=bool(opts["early_stop"]))
        stored_choice = st.radio("A summary that already has a result with these settings",
                                 ["Use the stored result", "Run it again (replaces the stored result)"],
                                 index=1 if opts.get("rerun") else 0, horizontal=True)
        run = st.form_submit_button("Run judge", type="primary")
    if run:
        opts.update(n_samples=int(n_samples), shots=int(shots), temperature=float(temperature), scope=scope,
                    explain=bool(explain), trim=bool(trim), early_stop=bool(early_stop),
                    rerun=stored_choice.startswith("Run it again"))
    params = view.JudgeParams(n_samples=int(n_samples), shots=int(shots), temperature=float(temperature),
                              explain=explain, trim=trim, early_stop=bool(early_stop))
    return params, scope, run


def _confirmed(page, params, run: bool) -> bool:
    """Say when these settings make a new judge configuration; a change of this page's options needs a second
    press of Run."""
    note = state.guarded(page.configuration_note, params, default=None)
    if note is None or not note.text:
        return run
    confirmed = st.session_state.get("judge_new_config_seen") == note.text
    if run and note.options_changed and not confirmed:  # options on this page: the first press says so
        st.session_state["judge_new_config_seen"] = note.text
        st.warning(note.text + " Press **Run judge** again to go ahead.")
        return False
    st.warning(note.text)  # another model (chosen in Settings) or confirmed: said, and the run goes ahead
    return run


def _start(page, params, sid: str, scope: str, rerun: bool) -> None:
    if jobs_view.running("judge"):
        st.warning("A judge run is still going: cancel it or wait for it before starting another.")
        return
    # the previous run's outcome and "judged now" marks belong to that run: gone before the next one starts
    jobs_view.forget("judge")
    st.session_state.pop("judged_now", None)
    loaded = state.judge_backend()
    if loaded is None:
        st.stop()
    try:
        job, label = page.job(loaded, params, sid if scope == "This summary" else None, rerun)
    except (view.BackendError, ValueError) as exc:
        st.error(md(exc))
        st.stop()
    jobs_view.start("judge", job, label=label)


def _panel(name: str) -> None:
    def live(job) -> None:
        """The greedy sample's scores of the summary being judged, as soon as the engine hands them over."""
        partial = job.latest
        rows = judge_view.partial_rows(partial) if partial is not None else []
        if rows:
            judge_view.render_partial(partial, rows)

    def finished(job) -> None:
        # which summaries this run judged (the page re-reads results from the store, which cannot tell)
        st.session_state["judged_now"] = {(name, r.summary_id) for r in job.results if not r.from_cache}
        state.bump_data_version()

    done = jobs_view.panel("judge", live=live, on_finish=finished)
    if done is not None and done.finished and done.state != "failed":
        stopped = sum(r.stopped_early for r in jobs_view.get("judge").results if not r.from_cache)
        if stopped:
            st.caption(f"{stopped} summaries stopped sampling early: every median was decided (same result, fewer "
                       "samples).")


def _result(page, name: str, sid: str) -> None:
    v = state.guarded(page.result, sid, stop=True)
    st.markdown(f"#### {untrusted.md_inline(sid)}")
    res = v.result
    if res is None:
        st.info("Not judged yet: press **Run judge**." if not jobs_view.running("judge") else
                "Not judged yet: the run above is going.")
    else:
        if jobs_view.running("judge"):  # the stored result stays readable, marked, while a new run is going
            st.warning("**Previous result**, stored before the run that is going now: it is replaced when the run "
                       "finishes.")
        judge_view.render_status(res.status, res.reason,
                                 judge_view.when_text((name, sid) in st.session_state.get("judged_now", set()),
                                                      res.created_at),
                                 (res.provenance.model_file or "embedded model") if v.smoke_test else "")
        if v.item_rows:
            judge_view.render_item_table(v.item_rows)
            if v.calibration is not None:
                st.caption(f"Calibrated: {md(v.calibration.label)} (version {v.calibration.version} of this judge "
                           "configuration, fitted on the Agreement page); blank where the item could not be "
                           "calibrated.")
        judge_view.render_conflicts(v.conflicts)
        judge_view.render_explanations([(e.item, e.text, e.contradicts) for e in v.explanations])
        judge_view.render_samples([asdict(s) for s in res.samples])
        judge_view.render_provenance(asdict(res.provenance), {**asdict(res.timing),
                                                             "prompt_tokens_per_s": res.timing.prompt_tps,
                                                             "decode_tokens_per_s": res.timing.decode_tps})
    st.markdown("#### All judged summaries in this dataset")
    judge_view.render_dataset_results(v.dataset_rows)


def main() -> None:
    st.title("Judge")
    name, ds = state.require_dataset()
    page = view.judge_page(state.store(), name, ds, state.settings())
    _model_line(page.model)
    case = state.case_picker(ds)
    if not page.summary_ids(case.case_id):
        st.info("This case has no summary.")
        st.stop()
    sid = state.summary_picker(ds, case, key="judge_summary")
    opts = st.session_state.setdefault("judge_opts", {"n_samples": 1, "shots": 0, "temperature": 0.7,
                                                      "scope": "This summary", "explain": False, "trim": False,
                                                      "early_stop": True})
    params, scope, run = _form(opts)
    if _confirmed(page, params, run):
        _start(page, params, sid, scope, bool(opts.get("rerun")))
    _panel(name)
    _result(page, name, sid)


main()
