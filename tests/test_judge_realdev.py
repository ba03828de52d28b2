"""The realdev judge set of bench/judge_realdev.py, built from the real MTS-Dialog rows copied into tests/data
(CC BY 4.0): only test-split conversations of the chosen length are taken, each becomes a bundle case with its
conversation as the note and four summaries that every loader reads, and the printed figures come from the stored
timings (tokens reused = prompt tokens − tokens read)."""
import json
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import judge_realdev  # noqa: E402
import verify_set  # noqa: E402
from engine.data.loading import load_paths  # noqa: E402

ROWS = json.loads((Path(__file__).parent / "data" / "mts_dialog_excerpt.json").read_text())["rows"]


def test_the_set_takes_test_split_conversations_of_the_chosen_length_and_loads(tmp_path, monkeypatch):
    monkeypatch.setattr(verify_set, "read_rows", lambda name: ROWS)
    cases, summaries = judge_realdev.write_bundle(tmp_path / "bundle", n_cases=15)
    fits = [r for r in ROWS if verify_set.split_of(f"mts:{r['ID']}") == "test"
            and judge_realdev.MIN_WORDS <= len(r["dialogue"].split()) <= judge_realdev.MAX_WORDS]
    assert [r["ID"] for r in fits] == ["1"] and (cases, summaries) == (1, 4)
    ds, _ = load_paths([tmp_path / "bundle"])
    (case,) = ds.cases
    assert case.case_id == "mts-1" and case.notes[0].text.strip() == fits[0]["dialogue"].strip()
    texts = [s.text for s in ds.summaries_for("mts-1")]
    assert texts[0] == fits[0]["section_text"].strip()
    full = judge_realdev.sentences(fits[0]["section_text"])
    assert texts[1] == " ".join(full[:len(full) - len(full) // 3]) and texts[2] == full[0]
    assert texts[3] == " ".join(reversed(full))


def test_the_figures_read_the_stored_timings():
    def result(sid, prompt, new, seconds, expected):
        return {"summary_id": sid, "timing": {"prompt_tokens": prompt, "prompt_new_tokens": new,
                                             "total_seconds": seconds, "decode_tokens": 60},
                "items": {"accurate": {"expected": expected}}}

    run = judge_realdev.TreeRun("x", 30.0, {"a": result("a", 2500, 1000, 20.0, 4.2),
                                            "b": result("b", 2400, 400, 10.0, 3.9)})
    assert run.reused() == [1500, 2000]
    assert run.timing("total_seconds") == [20.0, 10.0]
    assert run.expected() == {("a", "accurate"): 4.2, ("b", "accurate"): 3.9}
