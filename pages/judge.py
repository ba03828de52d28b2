"""Judge page: grade one summary or a whole dataset with the PDSQI-9 LLM judge; compare with the raters."""
from dataclasses import asdict

import streamlit as st

from components import jobs_view, judge_view, state
from engine.core import untrusted
from engine.llm.backends import BackendError
from engine.judge.results import JudgeParams
from engine.judge.runner import Judge, judge_job
from engine.judge.source import describe_source
from engine.llm.modelfiles import embedded, embedded_sha256
from engine.views.judge import configuration_note, judge_page_view
from engine.data.settings import SOURCE_EMBEDDED, SOURCE_LOCAL, SOURCE_SERVER

st.title("Judge")
name, ds = state.require_dataset()
cfg = state.settings()
source = describe_source(cfg)
if cfg.source == SOURCE_EMBEDDED:
    emb = embedded(cfg.embedded_model)
    if emb.smoke_test:
        st.warning(f"Model: **{emb.short_label}** — a quick check. It proves the pipeline runs; its grades are not "
                   "clinically meaningful. The default judge is chosen on the Settings page.")
    else:
        st.caption(f"Model: **{emb.label}** (embedded default judge) · context {untrusted.md(cfg.n_ctx)}. Its main "
                   "number is the expected score per item; see the Settings page for its measured validity.")
elif cfg.source == SOURCE_SERVER:
    st.caption(f"Model server: {untrusted.md(source['endpoint'])} · model {untrusted.md(source['model'])} · "
               f"{untrusted.md(source['concurrency'])} requests in flight for a whole dataset")
else:
    name_part = (f"{untrusted.md(source['model'])} (found on this machine) · file "
                 if cfg.source == SOURCE_LOCAL and source.get("model") else "")
    st.caption(f"Model: {name_part}{untrusted.md(cfg.model_path)} · context {untrusted.md(cfg.n_ctx)} · GPU layers "
               f"{untrusted.md(cfg.n_gpu_layers)}")

case = state.case_picker(ds)
case_id = case.case_id
sids = [s.summary_id for s in ds.summaries_for(case_id)]
if not sids:
    st.info("This case has no summary.")
    st.stop()
sid = state.summary_picker(ds, case, key="judge_summary")

# the run settings stay as the user left them for the whole session (widget state is dropped when a page is left)
opts = st.session_state.setdefault("judge_opts", {"n_samples": 1, "shots": 0, "temperature": 0.7,
                                                  "scope": "This summary", "explain": False, "trim": False,
                                                  "early_stop": True})
SCOPES, SHOTS = ["This summary", "Whole dataset"], [0, 1, 3, 5]
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

params = JudgeParams(n_samples=int(n_samples), shots=int(shots), temperature=float(temperature), explain=explain,
                     trim=trim, early_stop=bool(early_stop))
store = state.store()
model_sha = embedded_sha256(cfg.embedded_model) if cfg.source == SOURCE_EMBEDDED else None
new_config = state.guarded(configuration_note, store, name, params, model_sha, default=None)
if new_config is not None and new_config.text:
    confirmed = st.session_state.get("judge_new_config_seen") == new_config.text
    if run and new_config.options_changed and not confirmed:  # options on this page: the first press says so
        st.session_state["judge_new_config_seen"] = new_config.text
        run = False
        st.warning(new_config.text + " Press **Run judge** again to go ahead.")
    else:  # another model (chosen in Settings) or confirmed: said, and the run goes ahead
        st.warning(new_config.text)

if run and jobs_view.running("judge"):
    st.warning("A judge run is still going: cancel it or wait for it before starting another.")
elif run:
    # the previous run's outcome and "judged now" marks belong to that run: gone before the next one starts
    jobs_view.forget("judge")
    st.session_state.pop("judged_now", None)
    loaded = state.judge_backend()
    if loaded is None:
        st.stop()
    try:
        judge = Judge(*loaded, params)
    except (BackendError, ValueError) as exc:
        st.error(untrusted.md(exc))
        st.stop()
    ids = [sid] if scope == "This summary" else [s.summary_id for s in ds.summaries]
    concurrency = int(cfg.concurrency) if cfg.source == SOURCE_SERVER else 1  # one llama.cpp context in process
    model = source.get("model") or (embedded(cfg.embedded_model).short_label if cfg.source == SOURCE_EMBEDDED
                                     else cfg.model_path)
    what = f"summary {sid}" if scope == "This summary" else f"all {len(ids)} summaries of '{name}'"
    jobs_view.start("judge", judge_job(judge, ds, ids, store=store, dataset_name=name, concurrency=concurrency,
                                       rerun=bool(opts.get("rerun"))),
                    label=f"Judge run on {what} · {model} · {int(n_samples)} sample(s)")


def _live(job) -> None:
    """The greedy sample's scores of the summary being judged, as soon as the engine hands them over."""
    partial = job.latest
    rows = judge_view.partial_rows(partial) if partial is not None else []
    if rows:
        judge_view.render_partial(partial, rows)


def _finished(job) -> None:
    # which summaries this run judged (the page re-reads results from the store, which cannot tell)
    st.session_state["judged_now"] = {(name, r.summary_id) for r in job.results if not r.from_cache}
    state.bump_data_version()


done = jobs_view.panel("judge", live=_live, on_finish=_finished)
if done is not None and done.finished and done.state != "failed":
    stopped = sum(r.stopped_early for r in jobs_view.get("judge").results
                  if not r.from_cache)
    if stopped:
        st.caption(f"{stopped} summaries stopped sampling early: every median was decided (same result, fewer "
                   "samples).")

# ---- the selected summary's latest result
view = state.guarded(judge_page_view, store, name, ds, sid, stop=True)
st.markdown(f"#### {untrusted.md_inline(sid)}")
res = view.result
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
                             (res.provenance.model_file or "embedded model") if view.smoke_test else "")
    rows, cal = view.item_rows, view.calibration
    if rows:
        judge_view.render_item_table(rows)
        if cal is not None:
            st.caption(f"Calibrated: {untrusted.md(cal.label)} (version {cal.version} of this judge configuration, "
                       "fitted on the Agreement page); blank where the item could not be calibrated.")
    judge_view.render_conflicts(view.conflicts)
    judge_view.render_explanations([(e.item, e.text, e.contradicts) for e in view.explanations])
    judge_view.render_samples([asdict(s) for s in res.samples])
    judge_view.render_provenance(asdict(res.provenance), {**asdict(res.timing),
                                                         "prompt_tokens_per_s": res.timing.prompt_tps,
                                                         "decode_tokens_per_s": res.timing.decode_tps})

st.markdown("#### All judged summaries in this dataset")
judge_view.render_dataset_results(view.dataset_rows)
