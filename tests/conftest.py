import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite runs its LLM tests on the quick smoke-test model (Gemma 3 270M); the 1.5B default judge is measured by
# the bench/ scripts. Tests of the default itself set this variable back.
os.environ.setdefault("SUMCHECK_EMBEDDED_MODEL", "gemma3-270m")

SAMPLE = ROOT / "sample_data"
BUNDLE = SAMPLE / "pdsqi_sample"
FORMATS = SAMPLE / "formats"


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    """Every test gets its own workspace and settings file: the user's are never touched."""
    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(tmp_path / "ws" / "workspace.sqlite"))
    monkeypatch.setenv("SUMCHECK_CONFIG", str(tmp_path / "cfg" / "settings.json"))
    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(tmp_path / "cache"))  # saved rubric prefixes stay in the test
    yield


@pytest.fixture
def store(tmp_path):
    from engine.store import Store

    return Store(tmp_path / "store.sqlite")


@pytest.fixture
def bundle_files():
    return sorted(str(p) for p in BUNDLE.glob("*.csv"))


# ------------------------------------------------------------------ the app served for a real browser (shared)
# Chromium's flags for the browser tests: nothing of its own that reaches the network.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--disable-domain-reliability",
               "--disable-client-side-phishing-detection", "--no-default-browser-check", "--no-pings",
               "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(tmp_path: Path, extra_env: dict | None = None):
    """The app as `make run` serves it (the repository's .streamlit/config.toml: 127.0.0.1, no usage
    statistics; both also given on the command line) on a free port; returns (process, url)."""
    port = _free_port()
    env = {**os.environ, "SUMCHECK_WORKSPACE": str(tmp_path / "ws.sqlite"),
           "SUMCHECK_CONFIG": str(tmp_path / "settings.json"), **(extra_env or {})}
    log = tmp_path / "server.log"  # a file, not a pipe: a full pipe would block the server mid-test
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                 "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + log.read_text(errors="replace")[-2000:])
    return proc, url


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


