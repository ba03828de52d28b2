"""The MED-OMIT replay bench writes down the model calls of a run from scratch, served from a step store (logic test
with the scripted backend; the replay itself needs a llama.cpp build and runs on the lent machine)."""
import json
import sys

import pytest

from conftest import ROOT
from engine.core.models import Case, Dataset, Note, Summary
from engine.evidence.medomit.decision import DecisionParams
from engine.evidence.medomit.pipeline import MedOmit, run_medomit
from engine.llm.backends import BackendError
from fakes import ScriptedBackend

sys.path.insert(0, str(ROOT / "bench"))
from medomit_replay import Recorder, replay_prompt  # noqa: E402

CASE = Case("r1", "Cardiology", (
    Note("1", "New atrial fibrillation. Started apixaban 5 mg twice daily.", "2024-01-01"),
    Note("2", "Echo: LVEF 35%. Nephrology referral placed for CKD stage 3.", "2024-02-01")))
SUMMARIES = [Summary("r1-s1", "r1", "Atrial fibrillation on apixaban. <NoteID:1> LVEF 35%. <NoteID:2>"),
             Summary("r1-s2", "r1", "AF. <NoteID:1>")]
ASK_ALL = DecisionParams(model_weight=1.0, threshold=0.5)  # every fact is a closed question


def test_recorder_writes_down_what_a_run_from_scratch_asks(store):
    ds = Dataset("d", [CASE], SUMMARIES, [])
    store.import_dataset(ds)
    live = ScriptedBackend()
    list(run_medomit(MedOmit(live, "m", cache=store, decision=ASK_ALL), ds, ["r1-s1", "r1-s2"], store=None))
    generated = [c for c in live.calls if c != "omission-question"]

    rec = Recorder(store, ScriptedBackend())
    mo = MedOmit(rec, "m", cache=rec, decision=ASK_ALL)
    results = [mo.run(CASE, s) for s in SUMMARIES]
    assert all(r.status == "complete" for r in results) and not rec.misses
    steps = [c for c in rec.calls if c["kind"] == "step"]
    questions = [c for c in rec.calls if c["kind"] == "question"]
    # each step once (the second summary reads the case's steps from the cache, as a real run does) ...
    assert len(steps) == len(generated)
    assert len({json.dumps(c["prompt"]) for c in steps}) == len(steps)
    # ... every closed question, with the messages and the kept prefix a replay sends to the backend
    assert len(questions) == live.calls.count("omission-question")
    assert all(q["keep"] == 3 and q["messages"][-1]["role"] == "user" for q in questions)
    assert all(c["max_tokens"] > 0 and c["schema"] for c in steps)


def test_recorder_names_a_step_the_store_does_not_hold(store):
    rec = Recorder(store, ScriptedBackend())
    assert rec.get_llm_step("not-there") is None
    with pytest.raises(BackendError, match="not in the step store"):
        rec.generate("prompt", {"type": "object"}, 10, 0.0, 0)
    assert rec.misses == ["not-there"] and rec.calls == []


class ChatScripted(ScriptedBackend):
    """The scripted answers with a real chat template's rendering (template text and data kept apart)."""

    def render(self, messages):
        from engine.llm.backends import render_segments
        from engine.llm.llama import _chatml_render

        return render_segments(messages, _chatml_render)


def test_a_recorded_step_replays_the_rendered_prompt_with_its_segments(store):
    """A replayed prompt is the rendered one, template text and data apart: written down as a plain string, the
    template's control strings would be tokenised as text on the other machine."""
    ds = Dataset("d", [CASE], SUMMARIES[:1], [])
    store.import_dataset(ds)
    list(run_medomit(MedOmit(ChatScripted(), "m", cache=store), ds, ["r1-s1"], store=None))
    seen = []

    class Watch(ChatScripted):
        def render(self, messages):
            seen.append(super().render(messages))
            return seen[-1]

    rec = Recorder(store, Watch())
    MedOmit(rec, "m", cache=rec).run(CASE, SUMMARIES[0])
    steps = [json.loads(json.dumps(c)) for c in rec.calls if c["kind"] == "step"]  # as the file holds them
    assert steps
    for c in steps:
        again = replay_prompt(c["prompt"])
        original = next(p for p in seen if p == again)
        assert again.segments == original.segments
        assert any(tpl and "<|im_start|>" in t for t, tpl in again.segments)
        assert not any(not tpl and "<|im_start|>" in t for t, tpl in again.segments)
    assert replay_prompt("an older recording") == "an older recording"
