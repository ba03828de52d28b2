"""Settings → judge model source (embedded, GGUF file, found on this machine, OpenAI-compatible server), "Get a judge
model", and the Judge page using what was chosen: a stand-in Ollama server on loopback, a fake Ollama store and a
stand-in model hub. No network, no file edited by hand."""
import dataclasses
import json
import os

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.core import untrusted
from engine.data.settings import (SOURCE_EMBEDDED, SOURCE_GGUF, SOURCE_LOCAL, SOURCE_SERVER, AppSettings,
                                  SettingsError, config_path, load_settings, save_settings)
from fakes import DIALECTS, make_server

TIMEOUT = 60
SECRET = "sk-test-3f9a1c7e-never-shown"


@pytest.fixture(autouse=True)
def no_real_model_stores(tmp_path, monkeypatch):
    """Discovery looks only where the test says (OLLAMA_MODELS / LMSTUDIO_MODELS, not this machine's own stores);
    downloads go to a temporary folder."""
    from pathlib import Path

    import engine.llm
    import engine.llm.local_models as lm

    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-ollama"))
    monkeypatch.setenv("LMSTUDIO_MODELS", str(tmp_path / "no-lmstudio"))
    for where in (lm, engine.llm):  # the module's own discovery, and the app reading the package's names
        monkeypatch.setattr(where, "ollama_dirs", lambda: [Path(os.environ["OLLAMA_MODELS"])])
        monkeypatch.setattr(where, "lmstudio_dirs", lambda: [Path(os.environ["LMSTUDIO_MODELS"])])
    monkeypatch.setenv("SUMCHECK_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("SUMCHECK_HUB_ENDPOINT", raising=False)


@pytest.fixture
def ollama_stub():
    srv, seen = make_server(DIALECTS["ollama"])
    yield f"http://127.0.0.1:{srv.server_port}/v1", seen
    srv.shutdown()


def _settings_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "settings.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _models_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "models.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _save(settings: AppSettings) -> None:
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps(dataclasses.asdict(settings)))


def _all_text(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "success", "info", "warning", "error")
             for e in getattr(at, kind)]
    parts += [str(w.value) for w in at.text_input]
    return "\n".join(str(p) for p in parts)


def fake_ollama_store(root):
    """An Ollama model store as `ollama pull gemma3:270m` leaves it: a manifest naming a sha256 blob (here a
    symlink to the embedded GGUF)."""
    from engine.llm.modelfiles import embedded_model_path

    blob = root / "blobs" / "sha256-0123abcd"
    blob.parent.mkdir(parents=True)
    blob.symlink_to(embedded_model_path())
    man = root / "manifests" / "registry.ollama.ai" / "library" / "gemma3" / "270m"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                           "digest": "sha256:0123abcd"}]}))
    return blob


# ------------------------------------------------------------------------------------------------ settings file


def test_old_settings_files_still_load_and_new_fields_validate(tmp_path):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps({"model_path": "", "n_ctx": 4096, "n_threads": 0, "n_gpu_layers": 0,
                                         "workspace_path": ""}))
    old = load_settings()
    assert old.source == SOURCE_EMBEDDED and old.concurrency == 4 and old.n_ctx == 4096
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 16)
    config_path().write_text(json.dumps({"model_path": str(gguf)}))
    assert load_settings().source == SOURCE_GGUF and load_settings().llama_model_path == str(gguf)
    config_path().write_text(json.dumps({"concurrency": "many"}))
    with pytest.raises(SettingsError, match="concurrency"):
        load_settings()
    config_path().write_text(json.dumps({"judge_source": "sever"}))
    with pytest.raises(SettingsError, match="unknown"):
        load_settings()
    with pytest.raises(SettingsError, match="not an http"):
        save_settings(AppSettings(judge_source=SOURCE_SERVER, server_url="127.0.0.1:11434"))
    with pytest.raises(SettingsError, match="requests in flight"):
        save_settings(AppSettings(judge_source=SOURCE_SERVER, server_url="http://h:1/v1", concurrency=99))
    path = save_settings(AppSettings(judge_source=SOURCE_SERVER, server_url="http://h:1/v1", server_api_key=SECRET))
    assert os.stat(path).st_mode & 0o077 == 0  # the key is readable by its owner only
    cfg = load_settings()
    assert cfg.source == SOURCE_SERVER and cfg.llama_model_path == ""


# ------------------------------------------------------------------------------------------------ settings page


def test_each_source_renders():
    at = _settings_page()
    assert at.radio[0].value == "Embedded default"
    assert any("smoke-test" in w.value for w in at.warning)
    at.radio[0].set_value("GGUF file").run()
    _ok(at)
    assert [t.label for t in at.text_input][0] == "Path to a .gguf file"
    at.radio[0].set_value("Found on this machine").run()
    _ok(at)
    assert any("No Ollama or LM Studio model was found" in i.value for i in at.info)
    at.radio[0].set_value("OpenAI-compatible server").run()
    _ok(at)
    labels = {t.label for t in at.text_input}
    assert {"Server address", "API key (optional)", "Model name"} <= labels
    assert {"List models", "Check server", "Save settings"} <= {b.label for b in at.button}
    assert any(n.label == "Requests in flight" and n.value == 4 for n in at.number_input)


def test_medomit_fact_source_is_chosen_and_saved():
    from engine.evidence.medomit.facts import AUTO, AUTO_LABEL, FACT_SOURCE_NOTE, FACT_SOURCES

    at = _settings_page()
    radio = at.radio(key="set_medomit_facts")
    assert radio.value == AUTO and radio.options == [AUTO_LABEL] + [FACT_SOURCES[k].label for k in FACT_SOURCES]
    radio.set_value("statements").run()
    _ok(at)
    assert any(FACT_SOURCES["statements"].description in c.value and FACT_SOURCE_NOTE[:40] in c.value
               for c in at.caption)
    _button(at, "Save settings").click().run()
    _ok(at)
    assert load_settings().medomit_facts == "statements"
    assert _settings_page().radio(key="set_medomit_facts").value == "statements"


def test_get_a_model_page_lists_the_catalogue_with_its_explicit_download():
    at = _models_page()
    from engine.llm.model_download import CATALOG

    assert at.title[0].value == "Get a judge model"
    assert sum(b.label == "Download" for b in at.button) == len(CATALOG) >= 4
    assert any("only network action" in c.value for c in at.caption)


def test_server_list_models_check_and_save(ollama_stub):
    url, seen = ollama_stub
    at = _settings_page()
    at.radio[0].set_value("OpenAI-compatible server").run()
    at.text_input(key="set_server_url").input(url).run()
    _button(at, "List models").click().run()
    _ok(at)
    assert at.selectbox(key="set_server_pick").options == ["llama3.1:8b"]
    assert at.text_input(key="set_server_model").value == "llama3.1:8b"  # the first listed model is filled in
    _button(at, "Check server").click().run()
    _ok(at)
    report = " ".join(m.value for m in at.markdown)
    assert untrusted.md("ollama") in report and "16,384 tokens" in report
    assert untrusted.md("Ollama /api/show num_ctx") in report and "estimate" in report
    at.text_input(key="set_api_key").input(SECRET).run()
    at.number_input(key="set_concurrency").set_value(8).run()
    _button(at, "Save settings").click().run()
    _ok(at)
    assert any("Saved" in s.value for s in at.success)
    cfg = load_settings()
    assert (cfg.source, cfg.server_url, cfg.server_model, cfg.server_api_key, cfg.concurrency) == (
        SOURCE_SERVER, url, "llama3.1:8b", SECRET, 8)
    # the saved key is never sent back to the page
    again = _settings_page()
    assert again.radio[0].value == "OpenAI-compatible server"
    assert again.text_input(key="set_api_key").value == "" and SECRET not in _all_text(again)
    assert any(c.label == "Forget the saved API key" for c in again.checkbox)


def test_unreachable_server_is_an_error_not_a_crash():
    at = _settings_page()
    at.radio[0].set_value("OpenAI-compatible server").run()
    at.text_input(key="set_server_url").input("http://127.0.0.1:9/v1").run()
    _button(at, "List models").click().run()
    _ok(at)
    assert any("Could not list the models" in e.value and "cannot reach" in e.value for e in at.error)
    _button(at, "Check server").click().run()
    _ok(at)
    assert any("The server check failed" in e.value for e in at.error)
    at.text_input(key="set_server_url").input("not a url").run()
    _button(at, "Save settings").click().run()
    _ok(at)
    assert any("Not saved" in e.value and "not an http" in e.value for e in at.error)


def _finish_job(at: AppTest, timeout: float = 300) -> None:
    """Wait for the Judge page's background run to end, then show the page as the next refresh would."""
    job = at.session_state["job:judge"]
    assert job.wait(timeout), job.status()
    at.run(timeout=120)


def test_saved_server_judges_a_sample_summary_with_no_model_file(ollama_stub):
    url, seen = ollama_stub
    _save(AppSettings(judge_source=SOURCE_SERVER, server_url=url, server_model="llama3.1:8b",
                      server_api_key=SECRET, concurrency=2, model_path="/nonexistent/never-loaded.gguf"))
    at = AppTest.from_file(str(ROOT / "pages" / "judge.py"), default_timeout=TIMEOUT)
    at.run()
    _ok(at)
    assert not any("smoke-test" in w.value for w in at.warning)
    assert any("Model server" in c.value and untrusted.md(url) in c.value for c in at.caption)
    assert SECRET not in _all_text(at)
    at.number_input[0].set_value(1)
    at.button[0].click().run()  # the form's "Run judge": the work runs in the background
    _finish_job(at)
    _ok(at)
    assert any("Scored" in s.value for s in at.success), [e.value for e in at.error]
    assert sum(e.label.startswith("Sample ") for e in at.expander) == 1
    chat = [b for m, p, b in seen if p == "/v1/chat/completions"]
    assert len(chat) == 1 and chat[0]["model"] == "llama3.1:8b" and chat[0]["options"] == {"num_ctx": 16384}
    table = at.dataframe[0].value
    assert list(table["item"])[:2] == ["Cited", "Accurate"] and list(table["LLM median"])[:2] == ["4", "5"]


def test_saved_server_that_is_down_keeps_the_judge_page_running():
    _save(AppSettings(judge_source=SOURCE_SERVER, server_url="http://127.0.0.1:9/v1", server_model="m"))
    at = AppTest.from_file(str(ROOT / "pages" / "judge.py"), default_timeout=TIMEOUT)
    at.run()
    at.button[0].click().run()
    _ok(at)
    assert any("The model server could not be used" in e.value and "cannot reach" in e.value for e in at.error)


def test_model_found_in_ollama_store_is_selectable_and_judges(tmp_path, monkeypatch):
    root = tmp_path / "ollama"
    blob = fake_ollama_store(root)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    at = _settings_page()
    at.radio[0].set_value("Found on this machine").run()
    _ok(at)
    pick = at.selectbox(key="set_local_path")
    assert pick.options and "gemma3:270m" in pick.options[0] and "Ollama" in pick.options[0] \
        and "Q4_K_M" in pick.options[0] and "GB" in pick.options[0]
    assert pick.value == str(blob)
    _button(at, "Save settings").click().run()
    _ok(at)
    assert any("Saved" in s.value for s in at.success), [e.value for e in at.error]
    cfg = load_settings()
    assert (cfg.source, cfg.model_path, cfg.local_model_name) == (SOURCE_LOCAL, str(blob), "gemma3:270m")
    # the Judge page loads that blob in process and judges one summary with it
    judge = AppTest.from_file(str(ROOT / "pages" / "judge.py"), default_timeout=TIMEOUT)
    judge.run()
    _ok(judge)
    assert any(untrusted.md("gemma3:270m") in c.value and "found on this machine" in c.value for c in judge.caption)
    judge.number_input[0].set_value(1)
    judge.button[0].click().run(timeout=300)
    _finish_job(judge)
    _ok(judge)
    assert any("Scored" in s.value or "Unscored" in s.value for s in [*judge.success, *judge.warning]), \
        [e.value for e in judge.error]
    assert sum(e.label.startswith("Sample ") for e in judge.expander) == 1


def test_download_section_fetches_verifies_and_uses_the_model(tmp_path, monkeypatch):
    from engine.llm.model_download import CATALOG
    from fakes import BODY, SHA, hub

    srv, state = hub()
    monkeypatch.setenv("SUMCHECK_HUB_ENDPOINT", f"http://127.0.0.1:{srv.server_port}")
    try:
        at = _models_page()
        captions = " ".join(c.value for c in at.caption)
        assert untrusted.md(str(tmp_path / "models")) in captions and "only network action" in captions
        assert not any(b.label == "Use this model" for b in at.button)
        at.button(key=f"dl_{CATALOG[0].key}").click().run()
        _ok(at)
    finally:
        srv.shutdown()
    target = tmp_path / "models" / CATALOG[0].filename
    assert target.read_bytes() == BODY and state["gets"] == 1
    assert any("Downloaded" in s.value and untrusted.md(SHA) in s.value for s in at.success)
    at.button(key=f"use_{CATALOG[0].key}").click().run()
    _ok(at)
    assert any("The judge model is now" in s.value for s in at.success)
    cfg = load_settings()
    assert cfg.source == SOURCE_GGUF and cfg.model_path == str(target)
    assert at.button(key=f"use_{CATALOG[0].key}").disabled  # in use
    settings = _settings_page()  # the Settings page shows the new judge model
    assert settings.radio[0].value == "GGUF file" and settings.text_input(key="set_gguf_path").value == str(target)


def test_download_failure_is_shown_and_nothing_is_kept(tmp_path, monkeypatch):
    from engine.llm.model_download import CATALOG
    from fakes import hub

    srv, _ = hub(sha="0" * 64)
    monkeypatch.setenv("SUMCHECK_HUB_ENDPOINT", f"http://127.0.0.1:{srv.server_port}")
    try:
        at = _models_page()
        at.button(key=f"dl_{CATALOG[1].key}").click().run()
        _ok(at)
    finally:
        srv.shutdown()
    assert any("does not match" in e.value for e in at.error)
    assert not (tmp_path / "models" / CATALOG[1].filename).exists()
    assert not any(b.label == "Use this model" for b in at.button)


def test_hostile_server_replies_and_names_render_inert():
    """Model names come from the server (and the settings file): every one reaches the page as plain text."""
    import payload
    from payload import markdown_problems, markdown_sinks

    routes = {("GET", "/v1/models"): {"data": [{"id": payload.ALL}, {"id": "llama3.1:8b"}]},
              ("POST", "/api/show"): {"parameters": "num_ctx 4096"}}
    srv, _ = make_server(routes)
    url = f"http://127.0.0.1:{srv.server_port}/v1"
    try:
        at = _settings_page()
        for label in ("GGUF file", "Found on this machine", "OpenAI-compatible server"):
            at.radio[0].set_value(label).run()
            _ok(at)
        at.text_input(key="set_server_url").input(url).run()
        _button(at, "List models").click().run()
        at.text_input(key="set_server_model").input(payload.ALL).run()
        _button(at, "Check server").click().run()
        _ok(at)
        sinks = markdown_sinks(at)
        assert untrusted.md(payload.ALL) in " ".join(sinks)  # shown, as text
        assert not {s[:80]: p for s in sinks if (p := markdown_problems(s))}
        _save(AppSettings(judge_source=SOURCE_SERVER, server_url=url + "/" + payload.AUTO, server_model=payload.ALL))
        judge = AppTest.from_file(str(ROOT / "pages" / "judge.py"), default_timeout=TIMEOUT)
        judge.run()
        _ok(judge)
        sinks = markdown_sinks(judge)
        assert untrusted.md(payload.ALL) in " ".join(sinks)
        assert not {s[:80]: p for s in sinks if (p := markdown_problems(s))}
    finally:
        srv.shutdown()
