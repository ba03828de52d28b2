"""Case page: pick a case, read its notes, the summary with its citations, the rater scores and the evidence."""

import hashlib

import streamlit as st

from components import case_view, coverage_view, evidence_view, jobs_view, state
from engine.core import untrusted
from engine.views import case as view

NOTES_HEIGHT = 640
STORED_CHOICES = ["Use the stored result", "Run it again (replaces the stored result)"]



def _picked(where: str) -> None:
    """The reader has just picked a region / sentence in ``where``: this run brings its passage into the window."""
    st.session_state[f"_case_focus_picked_{where}"] = True


def _just_picked(where: str) -> bool:
    return bool(st.session_state.pop(f"_case_focus_picked_{where}", False))


def _colour(mark) -> tuple:
    return (mark.start, mark.end, case_view.STIGMA_COLOURS.get(mark.category, case_view.STIGMA_DEFAULT_COLOUR),
            mark.title)


def _check(page, name: str, sid) -> None:
    """*Check this summary* as one job, its panel, and the runs on the summary from other windows."""
    check_name = f"check_{name}_{sid}"
    if sid is not None and st.button(
            "Check this summary", disabled=jobs_view.running(check_name), type="primary",
            help="Every kind of evidence for this summary as one job, cheapest first: uncovered regions and "
                 "sentence support, the PDSQI-9 judge, claim verification and MED-OMIT. The model reads the case's "
                 "record once for all of them and keeps it, so the case's other summaries start at once; each "
                 "result is stored as soon as it is done, and Cancel keeps what is finished."):
        loaded = state.judge_backend()
        if loaded is not None:
            jobs_view.start(check_name, page.check_job(loaded, state.embedder, state.medomit_facts()),
                            label=f"Check of summary {sid}")
    jobs_view.panel(check_name, live=case_view.check_parts, on_finish=lambda job: state.bump_data_version())
    if sid is not None:
        jobs_view.other_runs(page.runs, page.cancel, key=f"runs_{name}_{sid}",
                             title="Running on this summary in other windows or commands")


def _notes(case, note_marks) -> None:
    st.markdown("#### Source notes")
    if any(note_marks.values()):
        st.markdown(case_view.stigma_legend({k: k.replace("_", " ") for k in case_view.STIGMA_COLOURS}),
                    unsafe_allow_html=True)
    with st.container(height=NOTES_HEIGHT):  # the notes scroll in their own box; citation badges scroll it
        case_view.render_notes([n.__dict__ for n in case.notes], note_marks)


def _summary(page, case, ds) -> None:
    s, sstig, verified = page.view.summary, page.view.stigma, page.view.verification
    summary_marks = [_colour(m) for m in page.view.summary_marks]
    case_view.render_summary(s.text, page.summary_spans(),
                             [n.note_id for n in case.notes],
                             {"generator": s.generator_model, "quality group": s.quality_group,
                              "prompt": s.prompt_variant}, evidence_view.cut_around(summary_marks, verified.marks),
                             [(f.end, f.kind, f.title) for f in page.view.sentence_flags])
    if verified.marks:
        st.caption(f"Orange: claims the record does not support; blue: uncertain, near the line — read them, they "
                   f"are not findings ({untrusted.md_inline(verified.headline)}). Hover a mark for what drove it "
                   "(a word or number the record never uses, the model's answer, a fact check) and the lines it was "
                   "checked against, or see the Claim verification tab.")
    if sstig is not None and sstig.summary_hits:
        st.caption(f"Stigmatizing language in the summary: {len(sstig.carried)} carried forward from the notes, "
                   f"{len(sstig.introduced)} introduced by the summary (see the Evidence tab).")
    if page.view.injection:
        st.warning("**Possible prompt injection.** "
                   + "; ".join(f"{untrusted.md(where)}: {untrusted.md_inline(excerpt, 80)}"
                               for where, excerpt in page.view.injection)
                   + ". This text addresses an AI grader rather than a clinician. It cannot change the judge prompt's "
                     "structure, but it may steer an LLM's grade: check this summary by hand.")


def _scores(v) -> None:
    st.markdown("#### Rater scores (PDSQI-9)")
    case_view.render_score_table(v.score_rows, v.likert_labels)
    judged = v.judged
    if judged is not None:
        st.caption(f"LLM judge row: {untrusted.md(judged.provenance.model_file or 'server model')} · prompt "
                   f"{untrusted.md(judged.provenance.prompt_version)} · configuration "
                   f"{untrusted.md(v.judge_configuration)} · judged {untrusted.md(judged.created_at[:16])} UTC. 1-5 "
                   "items show the expected score (the judge's main number), yes/no items its answers.")
    if v.judge_smoke_test:
        evidence_view.smoke_badge(judged.provenance.model_file or "embedded model", "LLM judge scores")
    if v.used_rows:
        st.markdown("##### Scores used for triage and the report")
        case_view.render_used_table(v.used_rows)
        st.caption("Beside the judge's expected score, the score triage and the committee report use for each 1-5 "
                   "item: calibrated to this dataset's raters where that keeps the judge's ranking, else the item's "
                   "combination with its own evidence (weights and standard scores shown), else the judge's. Validity "
                   "figures per item: Settings or the Agreement page's Calibration tab.")


def _region_labels(cv) -> list[str]:
    """The list's labels: note-level flags first, then the regions with their marks and rank numbers."""
    kinds = view.OMISSION_FLAG_KINDS
    return [f"⚑ {kinds[f.kind].label.capitalize()}: note {untrusted.md_inline(f.note_id)} — "
            f"{untrusted.md_inline(f.text or '(no scored content)', 80)}" for f in cv.flags] + \
        [f"{mark + ' ' if mark else ''}\\[{rank:.2f}\\]{' ◦' if r.salience < 1 else ''} "
         f"Note {untrusted.md_inline(r.note_id)}: {untrusted.md_inline(r.text, 80)}"
         + (f" — *not in the summary: {untrusted.md_inline(', '.join(r.missing), 60)}*" if r.missing else "")
         for r, mark, rank in zip(cv.regions, cv.marks, cv.rank_scores)]


def _region_list(cv, cov, thr: float):
    """The possibly omitted regions, in rank order, as a radio; the label picked (None when there is none)."""
    regions, flags = cv.regions, cv.flags
    st.markdown(f"**Possibly omitted**, in rank order — ★ names what the summary never writes, ➜ states a "
                f"change or next step; those come first, and each group by the number shown (omission score "
                f"× salience): {len(regions)}{'+' if len(regions) == view.MAX_REGIONS else ''} region(s) at or "
                f"above {thr:.2f}",
                help="A region naming a drug, condition or label the summary never writes comes first "
                     "(★, with the terms). Then by omission score × salience. Salience is 0 for headers, "
                     "sign-offs, template and attestation lines, 0.1 for greetings and small talk in "
                     "conversations, at most 0.2 for a line copied forward from an earlier note, and 1 for anything "
                     "with clinical content (see docs/evidence.md). ◦ marks a region ranked down by it.")
    if not regions:
        st.caption("No source region is below the summary's coverage at this threshold: lower the slider.")
    elif not cov.flagged:
        st.caption("This summary is not flagged as omitting (its global omission score is under the flag "
                   "threshold): these are the least covered parts of the notes, which a complete summary "
                   "may rightly leave out — read them as places to look, not as omissions.")
    if flags:
        kinds = dict.fromkeys(f.kind for f in flags)
        st.caption("⚑ Note-level flags come first: " + "; ".join(
            f"**{view.OMISSION_FLAG_KINDS[k].label}** — {view.OMISSION_FLAG_KINDS[k].meaning}" for k in kinds))
    rlabels = _region_labels(cv)
    pick = st.radio("Region", rlabels, label_visibility="collapsed", on_change=_picked,
                    args=("coverage",)) if rlabels else None
    return rlabels, pick


def _coverage_tab(page, case, sid) -> None:
    c1, c2 = st.columns([1, 2])
    method = c1.selectbox("Method", list(view.METHODS), format_func=lambda k: view.METHODS[k].label,
                          index=list(view.METHODS).index(view.DEFAULT_METHOD),
                          help="Registered coverage methods; the same keys work with `python -m engine omissions "
                               "--method KEY` and in bench/omission_benchmark.py.")
    cv = state.guarded(page.coverage, state.embedder, method, default=None)
    if cv is not None and cv.error:
        st.error(untrusted.md(cv.error))
    cov = cv.coverage if cv is not None else None
    if cov is None:
        return
    hi = cv.high
    thr = c2.slider("Highlight source text with an omission score of at least", float(cv.low), float(hi),
                    float(cv.default_threshold), help="Higher = less covered by the summary.")
    if thr != cv.threshold:  # regions and flags follow the slider
        cv = state.guarded(page.coverage, state.embedder, method, thr, stop=True)
    st.caption(f"Global omission score {cov.global_score:.3f} "
               f"({'flagged: likely omission' if cov.flagged else 'not flagged'}; flag threshold "
               f"{cov.flag_threshold}) · computed in {cov.seconds:.2f} s")
    coverage_view.legend(thr, hi, "omission score")
    left_c, right_c = st.columns([2, 3])
    with left_c:
        rlabels, pick = _region_list(cv, cov, thr)
    with right_c:
        focus = [*cv.flags, *cv.regions][rlabels.index(pick)] if pick else None
        shown = focus.note_id if focus else case.notes[0].note_id
        shown = st.selectbox("Note", [n.note_id for n in case.notes],
                             index=[n.note_id for n in case.notes].index(shown),
                             key=f"heat_note_{sid}_{hashlib.sha1(str(pick).encode()).hexdigest()[:12]}")
        coverage_view.render_heat_note(shown, case.note(shown).text,
                                       [u.__dict__ for u in cov.units if u.note_id == shown], thr, hi,
                                       (focus.start, focus.end) if focus and focus.note_id == shown else None,
                                       scroll_page=_just_picked("coverage"))
    if cov.unsupported:
        with st.expander(f"Summary words in low source density ({len(cov.unsupported)}) — content the source "
                         "may not support"):
            st.markdown(untrusted.md(", ".join(sorted({u.text for u in cov.unsupported}))))


def _support_tab(page, case) -> None:
    sv = state.guarded(page.support, state.embedder, default=None)
    if sv is not None and sv.error:
        st.error(untrusted.md(sv.error))
    al = sv.alignment if sv is not None else None
    if al is not None:
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Mean support", f"{al.mean_support:.2f}")
        m2.metric("Coverage (extractive)", f"{al.coverage:.2f}")
        m3.metric("Density", f"{al.density:.2f}")
        cites = sv.citations
        m4.metric("Citation issues", sv.citation_issues,
                  help="Wrong, missing or unknown citations by the word rule; where the summary was verified, the "
                       "judge model's own citation check is shown beside each verdict as a second opinion.")
        if sv.citation_issues:
            st.caption("Citation issues in " + untrusted.md_inline(sv.citation_issue_sentences)
                       + " (numbered as in the list below).")
        slabels = [("⚠ " if a.weak else "") + ("↻ " if a.restates is not None else "") + f"{a.index + 1}\\. "
                   + untrusted.md_inline(page.compact(a.text), 110)
                   for a in al.sentences]
        pick = st.radio("Summary sentences (⚠ = weak support, ↻ = says again what an earlier sentence said); "
                        "select one to see its support", slabels,
                        on_change=_picked, args=("support",))
        a = al.sentences[slabels.index(pick)]
        c_verdict, c_detail, c_by = cites[slabels.index(pick)]
        st.markdown(coverage_view.verdict_badge(c_verdict) + f" support {a.support:.2f}"
                    + (f" — {untrusted.md(c_detail)}" if c_detail else "") + f" · citation: {c_by}",
                    unsafe_allow_html=True)
        if a.weak:
            st.caption("⚠ Weak support: " + untrusted.md_inline(a.weak_reason or
                                                                 "the notes back this sentence poorly")
                       + " (rule: the mean of word evidence and embedding similarity below the threshold chosen on "
                         "the development split, or a number or name the notes never state).")
        if a.restates is not None:
            st.caption("↻ Restatement: this sentence " + untrusted.md_inline(a.restates_detail)
                       + " — it adds no value the summary has not given already (rule: close in meaning with rare "
                         "words in common, or most rare words shared, and no new number; see docs/evidence.md).")
        refs, best = evidence_view.aligned_passages(a)  # best: outlined and scrolled into view
        scroll_page = _just_picked("support")
        for nid in sorted({r.note_id for r in refs}, key=lambda x: [n.note_id for n in case.notes].index(x)):
            spans = [(r.start, r.end, "rgba(26,127,55,0.30)", f"aligned, score {r.score:.2f}")
                     for r in refs if r.note_id == nid]
            st.markdown(f"**Note {untrusted.md(nid)}** — aligned sentences highlighted"
                        + (" (outlined: the best aligned one)" if best is not None and best.note_id == nid else ""))
            evidence_view.render_focus_note(case.note(nid).text, spans, 260,
                                            (best.start, best.end) if best is not None and best.note_id == nid
                                            else None, "support", scroll_page)


def _verify_tab(page, case, name: str, sid) -> None:
    job_name = f"verify_{name}_{sid}"
    again_verify = st.radio("A stored verification of this summary", STORED_CHOICES, horizontal=True,
                            key=f"again_verify_{sid}") == STORED_CHOICES[1]
    if st.button("Verify this summary's claims", disabled=jobs_view.running(job_name),
                 help="Each sentence is asked of the judge model as one yes/no question (and, when it cites "
                      "notes, whether those notes alone support it); its claims are checked for numbers, sides, "
                      "ages and drugs the record does not give. The record is read once per case: minutes on a "
                      "CPU for a long record."):
        loaded = state.judge_backend()
        if loaded is not None:
            jobs_view.start(job_name, page.verification_job(loaded, again_verify),
                            label=f"Claim verification of summary {sid}")
    jobs_view.panel(job_name, on_finish=lambda job: state.bump_data_version())
    evidence_view.render_verification(page.view.verification, case)


def _medomit_run(page, name: str, sid) -> None:
    """MED-OMIT on this summary as a job (the stored result used, or worked out again) and its panel."""
    job_name = f"medomit_{name}_{sid}"
    again_medomit = st.radio("A stored MED-OMIT result of this summary", STORED_CHOICES, horizontal=True,
                             key=f"again_medomit_{sid}",
                             help="Run again: the result is worked out again and replaces the stored one; the "
                                  "model's steps come from the step cache (its greedy replies are the same).") \
        == STORED_CHOICES[1]
    if st.button("Run MED-OMIT on this summary", disabled=jobs_view.running(job_name),
                 help="Facts, DDx, importance and clusters are shared by the case's summaries and cached (importance "
                      "read in one step is read once per fact, for the facts a summary leaves out); with the "
                      "embedded smoke-test model the output is not meaningful."):
        loaded = state.judge_backend()
        if loaded is not None:
            jobs_view.start(job_name, page.medomit_job(loaded, state.embedder(), state.medomit_facts(),
                                                       again_medomit))
    jobs_view.panel(job_name, on_finish=lambda job: state.bump_data_version())


def _omitted_facts(page, case, res) -> None:
    """The omitted facts as a list to pick from, the picked one in its note."""
    rows = page.view.omitted_rows
    if rows:
        cons = page.view.medomit_consensus
        labels = [f"\\[{r['weight']:.2g}\\] {untrusted.md_inline(r['fact_id'])} · "
                  + (f"others {r['stated by others'][0]}/{r['stated by others'][1]} · "
                     if r["stated by others"] else "")
                  + untrusted.md_inline(r['headline'], 90) for r in rows]
        if cons:
            st.caption(f"{cons.explain()} Other summaries: {untrusted.md_inline(', '.join(cons.others))}.")
        if page.view.medomit_same_weight:
            st.caption(untrusted.md(page.view.medomit_same_weight))
        pick = st.radio("Omitted facts, " + ("those the other summaries state first, then heaviest first"
                                             if cons else "heaviest first")
                        + " (select one to see it in its note)", labels)
        row = rows[labels.index(pick)]
        note_text = case.note(row["note_id"]).text if row["note_id"] else None
        evidence_view.render_fact_detail(row, note_text)
        st.caption(f"Document weight {res.document_weight or 0:.2f} = sum of the {len(rows)} listed weights"
                   + (f"; the {len(res.not_found)} fact(s) not found in the notes are not counted."
                      if res.not_found else "."))
    elif res.status == "complete":
        st.success("No omitted fact found.")


def _medomit_details(page, res) -> None:
    """Facts not found in the notes, the differential and clusters, the cost and every extracted fact."""
    nf = page.view.not_found_rows
    if nf:
        st.markdown(f"**Not found in the notes ({len(nf)})** — stated by the model but located in no note "
                    "(invented, or paraphrased beyond matching). Never counted as omitted and never weighted.")
        st.markdown("\n".join(f"- **{untrusted.md_inline(r['fact_id'])}** {untrusted.md_inline(r['text'])} "
                               f"(closest sentence similarity {r['best match']:.2f})" for r in nf))
    with st.expander(f"Differential diagnosis ({len(res.ddx)}) and clusters ({len(res.clusters)})"):
        evidence_view.render_table([{"rank": d.rank, "diagnosis": d.name, "likelihood": d.likelihood,
                                     "reason": d.reason} for d in res.ddx])
        evidence_view.render_table([{"diagnosis": c.diagnosis, "polarity": c.polarity, "mechanism": c.mechanism,
                                     "facts": ", ".join(c.fact_ids)} for c in res.clusters])
        if res.ddx_comparison:
            st.caption("Missing from the summary's DDx: "
                       + (untrusted.md(", ".join(res.ddx_comparison.missing_from_summary)) or "none"))
    if page.view.medomit_cost:
        st.caption(page.view.medomit_cost)
    with st.expander(f"All extracted facts ({len(res.facts)})"):
        st.caption("link: exact / fuzzy = where the model's fact was found in the notes; passage = a sentence of "
                   "the notes no extracted fact covers, taken as a fact word for word (P1, P2, …); unlinked = "
                   "found in no note.")
        evidence_view.render_table([{"fact": f.fact_id, "text": f.text, "note": f.note_id, "link": f.link}
                                    for f in res.facts])




def _medomit_tab(page, case, name: str, sid) -> None:
    _medomit_run(page, name, sid)
    res = page.view.medomit
    if res is None:
        st.info("MED-OMIT has not been run on this summary yet.")
    else:
        by = res.provenance.get("model_file") or res.provenance.get("model") or "the configured model"
        st.caption(f"MED-OMIT by {untrusted.md(by)}"
                   + (f" · {untrusted.md(res.provenance['method'])}" if res.provenance.get("method") else "")
                   + f" · facts: {untrusted.md(res.fact_source_label)}")
        if res.smoke_test:
            evidence_view.smoke_badge(res.provenance.get("model_file") or res.provenance.get("model") or
                                      "embedded model", "MED-OMIT figures")
        if res.status != "complete":
            st.warning(f"Incomplete: step **{untrusted.md_inline(res.failed_step)}** failed — "
                       f"{untrusted.md(res.reason)}. "
                       "Nothing was invented for the missing steps; what was found before the failure is shown "
                       "below.")
            raw = next((x.raw for x in res.steps if not x.ok and x.raw), "")
            if raw:
                with st.expander("Raw reply of the failed step"):
                    st.code(raw)
        evidence_view.render_medomit_summary(res.document_weight, res.omission_count,
                                             res.ddx_comparison.difference if res.ddx_comparison else None,
                                             res.facts_in_notes)
        _omitted_facts(page, case, res)
        _medomit_details(page, res)


def _stigma_tab(sstig) -> None:
    if sstig is None:
        st.info("The stigmatizing-language lexicon could not be loaded; see the error above.")
    else:
        st.caption(f"Detector: a curated lexicon with context rules (negation, the patient's own words, clinical "
                   f"uses), no LLM · lexicon version {untrusted.md_inline(sstig.lexicon_version)} · clinicians add "
                   "entries on the Lexicon page · sources in docs/evidence.md.")
        evidence_view.render_table(
            [{"where": "summary", "text": h.hit.text, "category": h.hit.category,
              "carried / introduced": (f"carried forward from note {h.source.note_id}" if h.source is not None
                                       else "introduced by the summary"),
              "suggested wording": h.hit.suggest or ""} for h in sstig.summary_hits]
            + [{"where": f"note {n.note_id}", "text": n.hit.text, "category": n.hit.category,
                "carried / introduced": "", "suggested wording": n.hit.suggest or ""} for n in sstig.note_hits],
            key="stigma_hits", empty="No stigmatizing language found in this summary or its notes.")
        cleared = [{"where": "summary", "text": h.text, "not counted because": h.cleared_by}
                   for h in sstig.summary_cleared] + \
                  [{"where": f"note {n.note_id}", "text": n.hit.text, "not counted because": n.hit.cleared_by}
                   for n in sstig.note_cleared]
        if cleared:
            with st.expander(f"Near-misses the context rules cleared ({len(cleared)})"):
                evidence_view.render_table(cleared, key="stigma_cleared")


def main() -> None:
    st.title("Case")
    name, ds = state.require_dataset()
    case = state.case_picker(ds)
    summaries = ds.summaries_for(case.case_id)
    st.subheader(f"{untrusted.md_inline(case.case_id)} — for {untrusted.md_inline(case.target_specialty)}")
    st.caption(f"{len(case.notes)} notes, {case.word_count} words · {len(summaries)} summaries")
    lexicon_error = st.empty()
    left, right = st.columns([3, 2], gap="large")
    with right:  # the summary is picked first, so the page builds its one view for it and then draws both columns
        st.markdown("#### Summary")
        sid = state.summary_picker(ds, case, st, key="case_summary", horizontal=True,
                                   label_visibility="collapsed") if summaries else None
    page = state.guarded(view.case_page, state.store(), name, ds, case.case_id, sid, stop=True)
    with right:
        _check(page, name, sid)
    if page.view.stigma_error:
        lexicon_error.error("The stigmatizing-language lexicon could not be loaded: "
                            + untrusted.md(page.view.stigma_error))
    with left:
        _notes(case, {nid: [_colour(m) for m in marks] for nid, marks in page.view.note_marks.items()})
    with right:
        if not summaries:
            st.info("No summary for this case.")
            st.stop()
        _summary(page, case, ds)
    _scores(page.view)
    st.markdown("#### Evidence")
    tab_cov, tab_align, tab_verify, tab_medomit, tab_stigma = st.tabs(
        ["Uncovered source regions", "Sentence support", "Claim verification", "Omitted facts (MED-OMIT)",
         "Stigmatizing language"])
    with tab_cov:
        _coverage_tab(page, case, sid)
    with tab_align:
        _support_tab(page, case)
    with tab_verify:
        _verify_tab(page, case, name, sid)
    with tab_medomit:
        _medomit_tab(page, case, name, sid)
    with tab_stigma:
        _stigma_tab(page.view.stigma)


main()
