"""CLI: validate and import over the same engine functions; failures leave the workspace unchanged."""
import shutil
import subprocess
import sys

from conftest import BUNDLE, FORMATS, ROOT
from engine.cli import main
from engine.data.settings import workspace_path
from engine.data.store import Store


def test_validate_ok_and_bad(tmp_path, capsys):
    assert main(["validate", str(BUNDLE)]) == 0
    out = capsys.readouterr().out
    assert "result: OK" in out and "bundle table 'ratings'" in out
    bad = tmp_path / "d.csv"
    bad.write_text("encounter_id,dialogue\n1,hello\n")
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and str(bad) in out


def test_import_is_idempotent_and_all_or_nothing(tmp_path, capsys):
    assert main(["import", str(BUNDLE), "--name", "s"]) == 0
    assert "created" in capsys.readouterr().out
    assert main(["import", str(BUNDLE), "--name", "s"]) == 0
    assert "nothing changed" in capsys.readouterr().out
    store = Store(workspace_path())
    before = store.list_datasets()
    # a broken bundle: one bad score among thousands of good rows -> nothing imported
    b = tmp_path / "b"
    shutil.copytree(BUNDLE, b)
    text = (b / "ratings.csv").read_text().splitlines()
    text[-1] = text[-1].rsplit(",", 1)[0] + ",9"
    (b / "ratings.csv").write_text("\n".join(text) + "\n")
    assert main(["import", str(b), "--name", "broken"]) == 1
    assert "nothing was imported" in capsys.readouterr().out
    assert store.list_datasets() == before


def test_import_ratings_into_dataset(capsys):
    assert main(["import", str(FORMATS / "case_json"), "--name", "cj"]) == 0
    assert main(["import", str(FORMATS / "redcap_ratings.csv"), "--into", "cj"]) == 0
    assert main(["datasets"]) == 0
    out = capsys.readouterr().out
    assert "cj\t2 cases\t2 summaries" in out


def test_delete_needs_confirmation(capsys):
    main(["import", str(FORMATS / "dialogue.csv"), "--name", "d"])
    assert main(["delete", "d"]) == 2
    assert main(["delete", "d", "--yes"]) == 0
    assert Store(workspace_path()).list_datasets() == []


def test_module_entry_point(tmp_path):
    r = subprocess.run([sys.executable, "-m", "engine", "validate", str(FORMATS / "dialogue.csv")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 and "dialogue CSV" in r.stdout


def test_judge_export_import_round_trip(tmp_path, capsys):
    """Results move between workspaces with their provenance; results of another prompt version are refused."""
    import json
    from engine.sample import SAMPLE_JUDGE

    assert main(["sample"]) == 0
    out = tmp_path / "j.jsonl"
    assert main(["judge-export", "sample", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 36 and lines == sorted(lines, key=lines.index)
    assert main(["import", str(BUNDLE), "--name", "copy"]) == 0
    assert main(["judge-import", "copy", str(out)]) == 0
    assert "36 judge results imported" in capsys.readouterr().out
    old = json.loads(SAMPLE_JUDGE.read_text().splitlines()[0])
    old["provenance"]["prompt_version"] = "pdsqi9-judge-v0+old"
    bad = tmp_path / "old.jsonl"
    bad.write_text(json.dumps(old) + "\n")
    assert main(["judge-import", "copy", str(bad)]) == 1
    assert "re-run the judge" in capsys.readouterr().err


# ------------------------------------------------------------------------------------- hostile input, busy workspace


def test_mapping_file_of_the_wrong_shape_is_reported_without_traceback(tmp_path, capsys):
    bad = tmp_path / "mapping.json"
    bad.write_text('{"items": ["accurate"], "ignore": "x"}')
    assert main(["validate", str(FORMATS / "redcap_ratings.csv"), "--mapping", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"error: mapping file {bad}: key 'items' must be an object" in err and "Traceback" not in err
    bad.write_text('[1, 2]')
    r = subprocess.run([sys.executable, "-m", "engine", "validate", str(FORMATS / "redcap_ratings.csv"),
                        "--mapping", str(bad)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1 and "must hold one JSON object" in r.stderr and "Traceback" not in r.stderr


def test_validate_a_fifo_does_not_hang(tmp_path, capsys):
    import os

    fifo = tmp_path / "cases.csv"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "engine", "validate", str(fifo)], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and "named pipe (FIFO), not a regular file" in r.stdout


def test_busy_workspace_exits_2_with_a_message(tmp_path, monkeypatch, capsys):
    import sqlite3

    Store(workspace_path())  # create it
    monkeypatch.setenv("SUMCHECK_BUSY_TIMEOUT", "0.3")
    other = sqlite3.connect(workspace_path(), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        assert main(["import", str(FORMATS / "dialogue.csv"), "--name", "d"]) == 2
        err = capsys.readouterr().err
        assert f"error: the workspace {workspace_path()} is busy: another SumCheck process or program is writing " \
               "to it. Wait a moment and retry." in err
        r = subprocess.run([sys.executable, "-m", "engine", "import", str(FORMATS / "dialogue.csv"), "--name", "d"],
                           cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "is busy" in r.stderr and "Traceback" not in r.stderr
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert main(["import", str(FORMATS / "dialogue.csv"), "--name", "d"]) == 0


def test_judge_import_reports_every_bad_line_and_writes_nothing(tmp_path, capsys):
    import json

    from fakes import judge_lines

    assert main(["import", str(BUNDLE), "--name", "s"]) == 0
    store = Store(workspace_path())
    sids = [s.summary_id for s in store.load_dataset("s").summaries[:2]]
    lines = judge_lines(store, "s", sids)
    bad = json.loads(lines[1])
    bad["items"]["accurate"]["median"] = 99
    f = tmp_path / "r.jsonl"
    f.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    capsys.readouterr()
    assert main(["judge-import", "s", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"{f}, row 2, field 'items.accurate.median'" in err and "nothing was imported" in err
    assert store.judge_results("s") == []
    f.write_text("\n".join(lines) + "\n")
    assert main(["judge-import", "s", str(f)]) == 0
    assert "2 judge results imported" in capsys.readouterr().out


# ------------------------------------------------------------------------------------- models already here, downloads


def test_models_lists_ollama_and_lmstudio_ggufs(tmp_path, monkeypatch, capsys):
    import json

    from fakes import tiny_gguf

    ollama = tmp_path / "ollama"
    tiny_gguf(ollama / "blobs" / "sha256-feed01", arch="llama", file_type=15)
    man = ollama / "manifests" / "registry.ollama.ai" / "library" / "llama3.1" / "8b"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                           "digest": "sha256:feed01"}]}))
    lms = tmp_path / "lms"
    tiny_gguf(lms / "lmstudio-community" / "Qwen2.5-7B-GGUF" / "Qwen2.5-7B-Instruct-Q8_0.gguf", arch="qwen2",
              file_type=7)
    monkeypatch.setenv("OLLAMA_MODELS", str(ollama))
    monkeypatch.setenv("LMSTUDIO_MODELS", str(lms))
    assert main(["models", "--json"]) == 0
    found = {m["name"]: m for m in json.loads(capsys.readouterr().out)}
    assert found["llama3.1:8b"]["source"] == "Ollama" and found["llama3.1:8b"]["quantization"] == "Q4_K_M"
    assert found["llama3.1:8b"]["path"] == str(ollama / "blobs" / "sha256-feed01")
    q = found["lmstudio-community/Qwen2.5-7B-GGUF/Qwen2.5-7B-Instruct-Q8_0.gguf"]
    assert q["source"] == "LM Studio" and q["quantization"] == "Q8_0" and q["size_bytes"] > 0 and "label" in q
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("llama3.1:8b\tOllama\t") and line.endswith("sha256-feed01") for line in lines)


def test_get_model_lists_downloads_and_verifies(tmp_path, monkeypatch, capsys):
    from engine.llm.model_download import CATALOG
    from fakes import BODY, SHA, hub

    assert main(["get-model", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(e.key in out and e.licence in out for e in CATALOG)
    assert main(["get-model", "no-such-model", "--dir", str(tmp_path)]) == 1
    assert "choose one of" in capsys.readouterr().err
    srv, state = hub()
    try:
        url = f"http://127.0.0.1:{srv.server_port}"
        assert main(["get-model", CATALOG[0].key, "--dir", str(tmp_path / "a"), "--endpoint", url]) == 0
        out, err = capsys.readouterr()
        path = tmp_path / "a" / CATALOG[0].filename
        assert out.splitlines() == [str(path), f"sha256 {SHA}"] and path.read_bytes() == BODY
        assert " MB" in err and "Traceback" not in err  # the progress line
        # the mirror and the folder from the environment (as the Settings page uses them)
        monkeypatch.setenv("SUMCHECK_HUB_ENDPOINT", url)
        monkeypatch.setenv("SUMCHECK_MODELS_DIR", str(tmp_path / "b"))
        assert main(["get-model", CATALOG[1].key, "--quiet"]) == 0
        assert capsys.readouterr().out.splitlines()[0] == str(tmp_path / "b" / CATALOG[1].filename)
    finally:
        srv.shutdown()
    assert state["gets"] == 2
    monkeypatch.setenv("SUMCHECK_HUB_ENDPOINT", "http://127.0.0.1:9")
    assert main(["get-model", CATALOG[2].key, "--quiet"]) == 1
    assert "cannot reach the model hub" in capsys.readouterr().err


def test_judge_over_an_endpoint_with_api_key_and_concurrency(monkeypatch, capsys):
    """--endpoint/--api-key/--concurrency reach the HTTP backend and run_batch (when it takes concurrency)."""
    import json

    import engine.judge as judge_mod  # the command reads run_batch from the package
    from engine.llm.http_backend import OpenAIHTTPBackend
    from fakes import DIALECTS, make_server

    keys, batch = [], []
    real_init, real_batch = OpenAIHTTPBackend.__init__, judge_mod.run_batch

    def init(self, *a, **kw):
        keys.append(kw.get("api_key"))
        real_init(self, *a, **kw)

    def run_batch(judge, ds, ids, store=None, dataset_name=None, progress=lambda p: None,
                  should_stop=lambda: False, concurrency=1):
        batch.append(concurrency)
        return real_batch(judge, ds, ids, store=store, dataset_name=dataset_name, progress=progress)

    monkeypatch.setattr(OpenAIHTTPBackend, "__init__", init)
    monkeypatch.setattr(judge_mod, "run_batch", run_batch)
    srv, seen = make_server(DIALECTS["ollama"])
    try:
        url = f"http://127.0.0.1:{srv.server_port}/v1"
        assert main(["sample"]) == 0
        sid = Store(workspace_path()).load_dataset("sample").summaries[0].summary_id
        capsys.readouterr()
        assert main(["judge", "sample", "--endpoint", url, "--endpoint-model", "llama3.1:8b", "--api-key", "k-123",
                     "--concurrency", "3", "--samples", "1", "--summary", sid, "--quiet"]) == 0
    finally:
        srv.shutdown()
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[0]["summary_id"] == sid and lines[0]["status"] == "scored" and lines[-1]["n"] == 1
    assert len(lines[-1]["load_average"]) == 2 and lines[-1]["cores"] >= 1  # at the start and at the end
    assert keys == ["k-123"] and batch == [3]
    assert [b["model"] for m, p, b in seen if p == "/v1/chat/completions"] == ["llama3.1:8b"]


def test_concurrency_out_of_range_is_a_usage_error(capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        main(["judge", "sample", "--endpoint", "http://127.0.0.1:9/v1", "--concurrency", "0"])
    assert exc.value.code == 2 and "from 1 to 32" in capsys.readouterr().err


def test_judge_uses_the_configured_server_without_flags(capsys):
    """The CLI judges with the source chosen on the Settings page (here a server that is down: a clear error)."""
    from engine.data.settings import SOURCE_SERVER, AppSettings, save_settings

    save_settings(AppSettings(judge_source=SOURCE_SERVER, server_url="http://127.0.0.1:9/v1", server_model="m"))
    assert main(["sample"]) == 0
    capsys.readouterr()
    assert main(["judge", "sample", "--samples", "1", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "cannot reach http://127.0.0.1:9" in err and "Traceback" not in err


def test_every_command_status_suggests_exists_and_the_evidence_one_changes_status(capsys):
    """Each ``python -m engine ...`` that status names is a real command; running the evidence one stores the
    dataset's coverage and sentence support, after which status counts them and no longer suggests it."""
    import shlex

    from engine.cli import build_parser
    from engine.status import dataset_status

    assert main(["import", str(FORMATS / "case_json" / "card-01.json"), "--name", "one"]) == 0
    store = Store(workspace_path())
    before = dataset_status(store, "one")
    commands = [s.command for s in before.next_steps if s.command]
    assert any(" evidence one --compute" in c for c in commands), commands
    parser = build_parser()
    for c in commands:
        argv = shlex.split(c)
        assert argv[:3] == ["python", "-m", "engine"]
        parser.parse_args([a if a != "FILES" else "x.csv" for a in argv[3:]])  # exits (SystemExit) if unknown
    assert before.coverage == before.support == 0 < before.summaries
    capsys.readouterr()
    evidence = next(c for c in commands if " evidence " in c)
    assert main(shlex.split(evidence)[3:]) == 0
    assert "computed" in capsys.readouterr().err
    after = dataset_status(store, "one")
    assert after.coverage == after.support == after.summaries
    assert not any(" evidence " in (s.command or "") for s in after.next_steps)


def test_scores_prints_the_score_used_beside_the_judges(capsys):
    """`scores` reads what the Case page and triage read (engine.judge.used_scores.for_dataset)."""
    import json

    from engine.judge.used_scores import for_dataset

    assert main(["scores", "sample", "--summary", "gi-01-s2"]) == 0
    out = capsys.readouterr().out
    thorough = next(ln for ln in out.splitlines() if ln.strip().startswith("Thorough"))
    assert "(combination)" in thorough and "standard scores over 36 summaries" in thorough and ", z " in thorough
    row = next(r for r in for_dataset(Store(workspace_path()), "sample").breakdown("gi-01-s2")
               if r["item"] == "Thorough")
    judge = row["judge's expected score"]
    assert f"judge {judge:.2f}" in thorough
    assert f"used {row['score used']:.2f}" in thorough
    assert main(["scores", "sample", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 36 and {r["item"] for r in lines[0]["items"]} >= {"Thorough", "Accurate", "Organized"}
    assert main(["scores", "sample", "--summary", "nope"]) == 1
