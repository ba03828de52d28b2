"""Check a summary: every kind of evidence as one job with the smoke-test model (Gemma 3 270M, in process) — a
case's record read once for its summaries, each part
stored as soon as it is done, a cancelled check keeping what is finished — and MED-OMIT's one-step pipeline
(the notes' claims, the importance read as probabilities) with its scripted logic."""
import json

import pytest

from fakes import ScriptedBackend
from engine.core.models import Case, Note, Summary
from engine.evidence.medomit.pipeline import MedOmit

NOTES = (
    ("1", "2024-01-09", "Progress note",
     "67 y/o man with new atrial fibrillation, HR 112. Started metoprolol 25 mg daily and apixaban 5 mg twice daily. "
     "Echo ordered. Denies chest pain; reports palpitations for two weeks."),
    ("2", "2024-01-20", "Imaging follow-up",
     "Echo: LVEF 35%, moderate mitral regurgitation. Start sacubitril/valsartan 24/26 mg b.i.d. Nephrology referral "
     "placed for CKD stage 3. Follow-up in 4 weeks with a BMP."),
)
SUMMARIES = (("c1-s1", "New atrial fibrillation on metoprolol and apixaban. Echo showed LVEF 35%; sacubitril/valsartan "
                       "started."),
             ("c1-s2", "Atrial fibrillation. Follow-up in 4 weeks."))


def _bundle(folder):
    import csv

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "cases.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["case_id", "target_specialty"], ["c1", "Cardiology"]])
    with open(folder / "notes.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["case_id", "note_id", "date", "note_type", "author_specialty", "text"]]
                                 + [["c1", nid, d, t, "Cardiology", text] for nid, d, t, text in NOTES])
    with open(folder / "summaries.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["summary_id", "case_id", "text"]] + [[sid, "c1", t] for sid, t in SUMMARIES])
    return folder


@pytest.fixture(scope="module")
def smoke_args():
    from engine.llm.modelfiles import SMOKE_EMBEDDED, embedded_model_path

    return ["--model", str(embedded_model_path(SMOKE_EMBEDDED)), "--ctx", "4096", "--threads", "2"]


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_check_runs_every_part_reading_the_record_once_per_case(tmp_path, smoke_args, capsys,
                                                                                    monkeypatch):
    from engine.cli import main

    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(tmp_path / "cache"))
    bundle = _bundle(tmp_path / "bundle")
    assert main(["import", str(bundle), "--name", "d"]) == 0
    out = tmp_path / "a.jsonl"
    assert main(["check", "d", "--out", str(out), "--quiet", *smoke_args]) == 0
    lines = _lines(out)
    assert [(x["summary_id"], x["part"]) for x in lines] == [
        (s, p) for s, _ in SUMMARIES for p in ("coverage", "judge", "verification", "medomit")]
    assert all(x["status"] == "done" and x["seconds"] >= 0 and x["result"] for x in lines)
    printed = capsys.readouterr().out
    assert "c1-s1 · MED-OMIT omitted facts:" in printed and "checked in" in printed
    # the record is read once for the judge and MED-OMIT (claim verification keeps its own record); the second
    # summary's judge reads no record token (one context holds one head at a time: verification's own record,
    # kept in process only by this model, is read again from its last batch boundary)
    head = {(x["summary_id"], x["part"]): x["head_tokens_read"] for x in lines}
    assert head[("c1-s1", "judge")] > 300 and head[("c1-s1", "verification")] > 300
    assert head[("c1-s2", "judge")] == 0 and head[("c1-s2", "verification")] == head[("c1-s1", "verification")]
    # the smoke-test model cannot write a differential (it copies the instruction): MED-OMIT says so, guesses nothing
    assert lines[3]["result"].startswith("incomplete at ddx[source]") and "echoed instruction" in lines[3]["result"]
    # a new process: everything is stored; asked again with its parts recomputed, the record is loaded from disk
    again = tmp_path / "b.jsonl"
    assert main(["check", "d", "--summary", "c1-s2", "--out", str(again), "--quiet", *smoke_args]) == 0
    # (an incomplete MED-OMIT result is never taken as stored: it is run again, its steps from the step cache)
    assert {x["part"]: x["status"] for x in _lines(again)} == {
        "coverage": "stored before", "judge": "stored before", "verification": "stored before", "medomit": "done"}
    from engine.data.settings import workspace_path
    from engine.data.store import Store

    store = Store(workspace_path())
    with store.transaction() as con:
        con.execute("DELETE FROM evidence_results WHERE summary_id = 'c1-s2' AND method = 'verification'")
    third = tmp_path / "c.jsonl"
    assert main(["check", "d", "--summary", "c1-s2", "--only", "verification", "--out", str(third), "--quiet",
                 *smoke_args]) == 0
    (v,) = _lines(third)
    # the smoke-test model has sliding-window attention: its records are kept in process only, so a new process
    # reads the record again (with the default 1.5B it is loaded: bench/check_bench.py)
    assert v["status"] == "done" and v["head_tokens_read"] > 300 and v["head_tokens_loaded"] == 0


def test_a_cancelled_check_keeps_every_finished_part_and_writes_nothing_half(tmp_path, monkeypatch):
    from engine.analysis.check import CheckSetup, check_job
    from engine.data.loading import load_paths
    from engine.data.store import Store
    from engine.evidence.embeddings import default_embedder
    from engine.evidence.kinds import stored_result
    from engine.judge.runner import open_llama_backend

    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(tmp_path / "cache"))
    ds, _ = load_paths([str(_bundle(tmp_path / "bundle"))], name="d")
    store = Store(tmp_path / "ws.sqlite")
    store.import_dataset(ds, name="d")
    be, sha = open_llama_backend(n_ctx=4096, n_threads=2)
    holder = {}

    def on_part(sid, i, part):
        if part.key == "judge":
            holder["job"].cancel()  # the next part stops within its first model call

    setup = CheckSetup(default_embedder, lambda: be, sha)
    job = check_job(store, "d", ds, ["c1-s1"], setup, on_part)
    holder["job"] = job
    job.start()
    assert job.wait(300)
    assert job.status().state == "cancelled"
    assert [p.key for _, p in job.latest] == ["coverage", "judge"]
    assert store.judge_results("d") and len(store.judge_results("d")) == 1
    assert stored_result(store, "d", "verification", "c1-s1") is None
    assert stored_result(store, "d", "medomit", "c1-s1") is None


# ------------------------------------------------------------------ MED-OMIT's one-step pipeline (logic)


def test_the_one_step_pipeline_takes_the_notes_claims_and_reads_importance():
    case = Case("c1", "Cardiology", tuple(Note(nid, text, d, t) for nid, d, t, text in NOTES))
    summary = Summary("c1-s1", "c1", SUMMARIES[0][1])
    be = ScriptedBackend()
    r = MedOmit(be, "m", facts="claims").run(case, summary)
    assert r.status == "complete", r.reason
    assert r.provenance["facts"] == "claims" and r.clusters == [] and r.summary_ddx == [] and r.reason == ""
    notes = {n.note_id: n.text for n in case.notes}
    assert all(notes[f.note_id][f.start:f.end] == f.text for f in r.facts)
    texts = [f.text for f in r.facts]
    assert "Denies chest pain" in texts and "reports palpitations for two weeks." in texts  # cut at the semicolon
    # the model wrote one differential and decided every fact in one step; importance was read, one step per fact,
    # for the facts the summary leaves out (the only facts the document score counts), after the omission decision
    assert [c for c in be.calls if c not in ("importance-question", "omission-question")] == ["ddx"]
    omitted = [s for s in r.scores if s.omitted]
    assert 0 < len(omitted) < len(r.scores)
    assert be.calls.count("importance-question") == len(omitted)
    assert max(i for i, c in enumerate(be.calls) if c == "omission-question") < be.calls.index("importance-question")
    assert all(s.importance_p is not None for s in omitted)
    assert all(s.importance is None and s.importance_p is None and s.score == 0.0 for s in r.scores if not s.omitted)
    assert r.document_weight == round(sum(s.score for s in omitted), 6)
    by = {r.fact(s.fact_id).text: s for s in r.scores}
    referral = next(s for t, s in by.items() if "Nephrology referral" in t)
    assert referral.omitted and referral.importance_p == {"critical": 0.0, "important": 1.0, "other": 0.0}
    # a second summary of the case reuses the case's differential and the readings of the facts the first left out:
    # only a fact it alone leaves out is read
    from engine.evidence.medomit.result import MedOmitResult

    class Cache(dict):
        def get_llm_step(self, key):
            return self.get(key)

        def put_llm_step(self, key, step, model_id, value):
            self[key] = value

    cache, be2 = Cache(), ScriptedBackend()
    r1 = MedOmit(be2, "m", cache=cache, facts="claims").run(case, summary)
    n = len(be2.calls)
    r2 = MedOmit(be2, "m", cache=cache, facts="claims").run(case, Summary("c1-s2", "c1", SUMMARIES[1][1]))
    assert r2.status == "complete" and "ddx" not in be2.calls[n:]
    new_omitted = {s.fact_id for s in r2.omitted} - {s.fact_id for s in r1.omitted}
    assert be2.calls[n:].count("importance-question") == len(new_omitted)
    assert all(s.importance_p is not None for s in r2.omitted)
    assert MedOmitResult.from_json(r2.to_json()).scores == r2.scores


def test_auto_takes_the_claims_on_a_cpu_and_the_model_facts_where_writing_is_fast():
    from engine.evidence.medomit.facts import fact_source_for
    from engine.llm.backends import Capabilities

    class Cpu:
        capabilities = Capabilities(next_token=True)

    class Fast:
        capabilities = Capabilities(next_token=True, fast_decode=True)

    assert fact_source_for(Cpu()) == "claims" and fact_source_for(Fast()) == "model"
    assert fact_source_for(Cpu(), "statements") == "statements"
    with pytest.raises(ValueError, match="unknown fact source"):
        fact_source_for(Cpu(), "sentences")


def test_the_case_page_offers_check_this_summary():
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "pages/case.py"), default_timeout=120)
    at.query_params["dataset"] = "sample"
    at.query_params["case"] = "rheum-01"
    at.query_params["summary"] = "rheum-01-s3"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    button = next(b for b in at.button if b.label == "Check this summary")
    assert "cheapest first" in button.help and not button.disabled
