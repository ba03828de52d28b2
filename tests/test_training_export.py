"""Training data export in TRL's conversational dataset conventions (SFT: language modeling; DPO: preference)."""
import json

import pytest

from conftest import BUNDLE
from engine.cli import main
from engine.judge._planning import example_answer
from engine.judge.prompt import build_messages, read_messages
from engine.data.loading import load_paths
from engine.core.rubric import ITEMS
from engine.judge.training_export import DPO_FIELDS, SFT_FIELDS, differs_by_a_level, perturbed, rows
from fakes import judge_result

# TRL's dataset formats: a conversational language-modeling row has "messages"; a conversational preference row has
# "prompt", "chosen" and "rejected"; every one of them is a list of {"role", "content"} messages.
TRL_LM_KEYS = {"messages"}
TRL_PREFERENCE_KEYS = {"prompt", "chosen", "rejected"}
ROLES = {"system", "user", "assistant"}


def _is_conversation(v):
    return isinstance(v, list) and v and all(isinstance(m, dict) and set(m) == {"role", "content"}
                                              and m["role"] in ROLES and isinstance(m["content"], str) for m in v)


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE], name="sample")[0]


def test_sft_rows_follow_trl_and_carry_the_judge_prompt_and_the_reference(ds):
    out, summ = rows(ds, "sft")
    assert set(SFT_FIELDS) == TRL_LM_KEYS
    assert summ.rows == len(out) == 36 - summ.skipped and summ.rows > 0
    for r in out:
        assert TRL_LM_KEYS <= set(r) and _is_conversation(r["messages"])
        assert [m["role"] for m in r["messages"]] == ["system", "user", "assistant", "user", "assistant"]
        s = ds.summary(r["summary_id"])
        expected = build_messages(ds.case(s.case_id), s, citation_form=r["messages"][3]["content"].split(
            "cites notes as ")[1].split(", where")[0])
        assert r["messages"][:4] == expected  # exactly the judge's own fenced prompt
        assert read_messages(r["messages"][:4]).summary == s.text
        assert json.loads(r["messages"][4]["content"]) == example_answer(ds, r["summary_id"])


def test_split_is_by_case(ds):
    out, summ = rows(ds, "sft", train_fraction=0.5)
    train = {r["case_id"] for r in out if r["split"] == "train"}
    test = {r["case_id"] for r in out if r["split"] == "test"}
    assert train and test and not train & test
    assert set(summ.train_cases) == train and set(summ.test_cases) == test


def test_dpo_rows_follow_trl_and_rejected_differs(ds):
    sid = ds.summaries[0].summary_id
    ref = example_answer(ds, sid)
    wrong = {k: (v - 1 if isinstance(v, int) and v > 1 else v) for k, v in ref.items()}
    judged = judge_result(sid, ds.summaries[0].case_id, {k: float(v) for k, v in wrong.items() if isinstance(v, int)})
    out, summ = rows(ds, "dpo", judge_results={sid: judged})
    assert set(DPO_FIELDS) == TRL_PREFERENCE_KEYS
    for r in out:
        assert TRL_PREFERENCE_KEYS <= set(r)
        assert all(_is_conversation(r[k]) for k in TRL_PREFERENCE_KEYS)
        assert [m["role"] for m in r["prompt"]] == ["system", "user", "assistant", "user"]
        assert r["chosen"][0]["role"] == r["rejected"][0]["role"] == "assistant"
        chosen, rejected = json.loads(r["chosen"][0]["content"]), json.loads(r["rejected"][0]["content"])
        assert differs_by_a_level(chosen, rejected)
    first = next(r for r in out if r["summary_id"] == sid)
    assert first["rejected_source"] == "judge" and summ.rejected_from_judge >= 1


def test_perturbed_differs_on_every_item_and_stays_valid():
    ref = {"cited": 5, "accurate": 1, "thorough": 3, "useful": 4, "organized": 2, "comprehensible": 5, "succinct": 4,
           "abstraction": "no", "synthesized": "NA", "stigmatizing_notes": "no", "stigmatizing_summary": "yes"}
    p = perturbed(ref)
    assert all(1 <= p[i.key] <= 5 for i in ITEMS if i.is_likert and i.key != "synthesized")
    assert p["abstraction"] == "yes" and p["synthesized"] == 3 and p["stigmatizing_summary"] == "no"


def test_cli_writes_both_formats_and_warns_about_phi(tmp_path, capsys):
    for fmt in ("sft", "dpo"):
        out = tmp_path / f"{fmt}.jsonl"
        assert main(["export-training", "sample", "--format", fmt, "--out", str(out)]) == 0
        cap = capsys.readouterr()
        assert "PHI" in cap.err and "rows written" in cap.out
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert lines and all((TRL_LM_KEYS if fmt == "sft" else TRL_PREFERENCE_KEYS) <= set(x) for x in lines)
