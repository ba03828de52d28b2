"""Judge configurations are immutable sets: judging one summary again with other settings never removes it from the
configuration it was judged in before (the committee's figures do not change without notice)."""
from conftest import BUNDLE
from engine.cli import main
from engine.judge.results import JudgeResult
from engine.judge.configs import configurations
from engine.data.loading import load_paths
from fakes import judge_result


def test_rejudging_one_summary_leaves_the_main_configuration_whole(store, monkeypatch, capsys, tmp_path):
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
    monkeypatch.setenv("SUMCHECK_WORKSPACE", store.location)
    assert main(["stats", "sample", "--boot", "20", "--words", "--out", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "36 of 36 summaries scored" in err and "1 of 1 summaries scored" in err


def test_gpu_offloaded_results_form_their_own_configuration():
    """Offloading to a GPU changes the expected scores' arithmetic: the same model's GPU results are not pooled with
    its CPU results, while a CPU build asked for GPU layers (nothing offloaded) keeps the CPU configuration and the
    CPU key is the one computed before GPU runs were told apart."""
    from dataclasses import replace

    from engine.core.stamps import json_key
    from engine.judge.configs import IGNORED_PARAMS, config_key_of, ran_on_gpu

    def with_backend(r, **bp):
        return replace(r, provenance=replace(r.provenance, backend_params=bp))

    cpu = judge_result("s1", "c1", {}, model="m.gguf")
    cpu_build = with_backend(judge_result("s2", "c1", {}, model="m.gguf"), gpu_offload=False, n_gpu_layers=-1)
    gpu = with_backend(judge_result("s3", "c1", {}, model="m.gguf"), gpu_offload=True, n_gpu_layers=-1)
    no_layers = with_backend(judge_result("s4", "c1", {}, model="m.gguf"), gpu_offload=True, n_gpu_layers=0)
    assert [ran_on_gpu(r) for r in (cpu, cpu_build, gpu, no_layers)] == [False, False, True, False]
    prov = cpu.provenance
    before = json_key({"model": prov.model_sha256, "prompt": prov.prompt_version,
                       "params": {k: v for k, v in sorted(prov.params.items()) if k not in IGNORED_PARAMS}})[:12]
    assert config_key_of(cpu) == config_key_of(cpu_build) == config_key_of(no_layers) == before
    assert config_key_of(gpu) != before
    configs = configurations([cpu, cpu_build, gpu, no_layers])
    assert sorted((c.n_results, c.gpu) for c in configs) == [(1, True), (3, False)]
    assert "GPU" in next(c for c in configs if c.gpu).label
