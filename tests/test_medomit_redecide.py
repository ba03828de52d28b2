"""A MED-OMIT result stored under the previous decision version is decided again from its stored answers when it
is read: "elective DCCV in March" is no longer omitted from a summary that writes "electrical cardioversion in
March", and no question is asked."""
from __future__ import annotations

import json
from dataclasses import replace

from engine.data.loading import load_paths
from engine.data.store import Store
from engine.evidence.medomit.keys import earlier_result_keys, result_key
from engine.evidence.medomit._redecide import redecided, stored_or_redecided
from engine.evidence.medomit.result import MedOmitResult
from engine.sample import SAMPLE_BUNDLE, SAMPLE_MEDOMIT


def _shipped(sid: str):
    ds, _ = load_paths(sorted(str(p) for p in SAMPLE_BUNDLE.iterdir() if p.suffix in (".csv", ".jsonl")))
    row = next(json.loads(x) for x in SAMPLE_MEDOMIT.read_text().splitlines() if x.strip()
               and json.loads(x)["summary_id"] == sid)
    s = ds.summary(sid)
    return ds, s, MedOmitResult._from_json(row["result"])


def _as_v4_stored_it(res: MedOmitResult, fact_id: str) -> MedOmitResult:
    """The result as decision v4 stored it: the fact omitted at coverage 0.30 (the key term DCCV unwritten)."""
    scores = [replace(s, omitted=True, coverage=0.3, p_omitted=0.44) if s.fact_id == fact_id else s
              for s in res.scores]
    return replace(res, scores=scores, omission_count=res.omission_count + 1)


def test_a_v4_result_is_decided_again_when_read_and_stored_under_the_current_key(tmp_path, suite_embedder):
    ds, s, res = _shipped("card-01-s2")
    s114 = next(x for x in res.scores if x.fact_id == "S114")
    assert not s114.omitted and "DCCV" in res.fact("S114").text  # shipped as decided again
    old = _as_v4_stored_it(res, "S114")
    store = Store(tmp_path / "ws.sqlite")
    store.import_dataset(ds, name="d")
    case = ds.case(s.case_id)
    model, facts = res.provenance["model"], res.provenance["facts"]
    key, earlier = result_key(model, case, s, facts=facts), earlier_result_keys(model, case, s, facts=facts)
    assert key not in earlier
    store.put_evidence("d", "medomit", earlier[0], s.summary_id, "complete", old.to_json())
    got = stored_or_redecided(store, "d", s.summary_id, key, s.text, lambda: suite_embedder, earlier)
    again = next(x for x in got.scores if x.fact_id == "S114")
    assert not again.omitted and again.coverage > 0.3 and again.p_stated == s114.p_stated  # the stored answer
    assert got.omission_count == old.omission_count - 1 and "from the stored answers" in \
        got.provenance["decision"]["decided again"]
    assert store.get_evidence("d", "medomit", key, s.summary_id) is not None


def test_a_fact_the_model_would_now_decide_keeps_its_stored_decision(suite_embedder):
    _ds, s, res = _shipped("card-01-s2")
    old = _as_v4_stored_it(res, "S114")
    no_answer = replace(old, scores=[replace(x, p_stated=None) if x.fact_id == "S114" else x for x in old.scores])
    got = redecided(no_answer, s.text, suite_embedder)
    assert next(x for x in got.scores if x.fact_id == "S114").omitted  # not asked here: stands as stored
    assert "1 fact(s) kept as stored" in got.provenance["decision"]["decided again"]
