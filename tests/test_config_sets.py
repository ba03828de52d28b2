"""Judge configurations are immutable sets: judging one summary again with other settings never removes it from the
configuration it was judged in before (the committee's figures do not change without notice)."""
from conftest import BUNDLE
from engine.cli import main
from engine.judge.results import JudgeResult
from engine.judge.configs import configurations
from engine.data.loading import load_paths
from fakes import judge_result


def test_rejudging_one_summary_leaves_the_main_configuration_whole(store, monkeypatch, capsys):
    ds, _ = load_paths([BUNDLE], name="sample")
    store.import_dataset(ds, name="sample")
    store.put_judge_results("sample", [judge_result(s.summary_id, s.case_id, {}, model="main.gguf")
                                       for s in ds.summaries])
    again = ds.summaries[4]
    store.put_judge_result("sample", judge_result(again.summary_id, again.case_id, {}, model="main.gguf",
                                                  n_samples=3, created_at="2030-01-01T00:00:00+00:00"))
    every = [JudgeResult.from_json(x) for x in store.judge_results("sample", latest_only=False)]
    got = {c.params["n_samples"]: (c.n_scored, c.n_results) for c in configurations(every)}
    assert got == {1: (36, 36), 3: (1, 1)}
    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(store.path))
    assert main(["stats", "sample", "--boot", "20", "--words", "--out", str(store.path.parent / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "36 of 36 summaries scored" in err and "1 of 1 summaries scored" in err
