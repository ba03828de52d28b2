import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

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
# the sample's MED-OMIT rows of the model-fact pipeline (medomit-v5, the 1.5B's extracted facts plus passages), shipped
# until the one-step rows replaced them: the tests of that pipeline's behaviour read them here
MODEL_FACT_ROWS = ROOT / "tests" / "data" / "medomit_model_rows.jsonl.gz"


def model_fact_rows() -> list[str]:
    """The JSON lines of :data:`MODEL_FACT_ROWS`."""
    import gzip

    return [x for x in gzip.decompress(MODEL_FACT_ROWS.read_bytes()).decode("utf-8").splitlines() if x.strip()]


@pytest.fixture(scope="session")
def suite_embedder():
    """One bundled MiniLM for the modules that only read embeddings: its in-memory cache keeps the sample notes'
    vectors from one module to the next (tests of the embedder itself make their own)."""
    from engine.evidence.embeddings import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def suite_prefix_cache(tmp_path_factory):
    """One folder of saved rubric prefixes for the whole run (never the user's): the smoke-test model evaluates the
    rubric once and every later judge test loads it, as a user's second run does. Tests of the prefix cache itself
    point SUMCHECK_CACHE_DIR at a folder of their own."""
    return tmp_path_factory.mktemp("prefix-cache")


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch, suite_prefix_cache):
    """Every test gets its own workspace and settings file: the user's are never touched."""
    monkeypatch.setenv("SUMCHECK_WORKSPACE", str(tmp_path / "ws" / "workspace.sqlite"))
    monkeypatch.setenv("SUMCHECK_CONFIG", str(tmp_path / "cfg" / "settings.json"))
    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(suite_prefix_cache))  # saved rubric prefixes, never the user's
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # a PostgreSQL workspace's backups too
    yield


# Test modules whose `store` tests run against both stores: the embedded SQLite file and a PostgreSQL server that the
# suite starts itself (initdb + pg_ctl in a temporary folder, on a loopback port, password from a password file).
BOTH_STORES = {"test_store", "test_job_records", "test_reviews", "test_reviewer_work", "test_panel_and_spot_checks", "test_judge_batch",
               "test_config_sets", "test_calibration", "test_agreement", "test_team_workspace", "test_data_fingerprint"}


def chromium_gate(ci: bool, chromium: str | None) -> tuple[str, str]:
    """What a ``requires_chromium`` test does: ("run", ""), or ("skip" | "fail", why). Under CI (``CI`` set) a
    missing browser fails the test, so a machine without Chromium cannot pass the browser checks by skipping them."""
    if chromium:
        return "run", ""
    if ci:
        return "fail", "Debian's chromium is required in CI ('make test' installs it)"
    return "skip", "chromium not installed (run 'make test', which installs Debian's chromium)"


def pytest_configure(config):
    config.addinivalue_line("markers", "requires_chromium: a real-browser test; skipped without Chromium, failed "
                                       "without it under CI")


def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_chromium"):
        what, why = chromium_gate(bool(os.environ.get("CI")), CHROMIUM)
        if what == "fail":
            pytest.fail(why, pytrace=False)
        if what == "skip":
            pytest.skip(why)


def pytest_generate_tests(metafunc):
    if "store" in metafunc.fixturenames and metafunc.module.__name__.rsplit(".", 1)[-1] in BOTH_STORES:
        metafunc.parametrize("store", ["sqlite", "postgresql"], indirect=True)


def _pg_server():
    from engine.data.pg_server import PgServer, PgServerMissing

    try:
        return PgServer()
    except PgServerMissing as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def pg_server():
    server = _pg_server()
    os.environ["PGPASSFILE"] = str(server.passfile)
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server, monkeypatch):
    """A fresh, empty database on the suite's PostgreSQL server (its password comes from the password file)."""
    monkeypatch.setenv("PGPASSFILE", str(pg_server.passfile))
    return pg_server.new_database()


@pytest.fixture
def store(request, tmp_path):
    from engine.data.store import Store

    if getattr(request, "param", "sqlite") == "postgresql":
        s = Store(request.getfixturevalue("pg_url"))
        yield s
        s.close()
        return
    yield Store(tmp_path / "store.sqlite")


@pytest.fixture
def bundle_files():
    return sorted(str(p) for p in BUNDLE.glob("*.csv"))


# ------------------------------------------------------------------ the app served for a real browser (shared)
# Chromium's flags for the browser tests: nothing of its own that reaches the network.
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--disable-domain-reliability",
               "--disable-client-side-phishing-detection", "--no-default-browser-check", "--no-pings",
               "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"]


def _start(tmp_path: Path, extra_env: dict | None = None):
    """The app as `make run` serves it (the repository's .streamlit/config.toml: 127.0.0.1, no usage
    statistics; both also given on the command line) on a free port; returns (process, url)."""
    from engine.data.pg_server import free_port

    port = free_port()
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


# ------------------------------------------------------------------ a page run with AppTest (shared)
TIMEOUT = 120


def _run(script: str, **session) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=TIMEOUT)
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# ------------------------------------------------- the browser tests' watch on requests and page text (shared)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Watch:
    """Records every request (and websocket) that leaves the app's origin, and every dialog."""

    def __init__(self, page, url: str):
        self.origin = url
        self.netloc = urllib.parse.urlsplit(url).netloc
        self.port = urllib.parse.urlsplit(url).port
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.dialogs: list[str] = []
        page.on("request", lambda r: self._seen(r.url))
        page.on("websocket", lambda ws: self._seen(ws.url))
        page.on("dialog", self._dialog)

    def _seen(self, url: str) -> None:
        self.requests.append(url)
        parts = urllib.parse.urlsplit(url)
        if parts.scheme in ("data", "blob"):
            return
        if parts.hostname not in ("127.0.0.1", "localhost") or parts.port != self.port:
            self.outside.append(url)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def _settle(page, timeout_s: float = 150) -> None:
    """Wait until the script run has finished (the app root says so and nothing is stale)."""
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout_s * 1000)
    page.wait_for_function("() => !document.querySelector('[data-stale=true]')", timeout=timeout_s * 1000)


# Runs in the page: every link, image and embedded resource that does not stay on the app's origin, and every
# element that payload markup could have produced (KaTeX, a script or image inside rendered Markdown).
AUDIT_JS = """([origin, marks]) => {
  const bad = [];
  const flag = s => marks.some(m => (s || '').toLowerCase().includes(m));
  for (const a of document.querySelectorAll('a')) {
    const href = a.getAttribute('href') || a.getAttribute('xlink:href') || '';
    if (href.startsWith('#') && !flag(a.textContent)) continue;       // in-page heading anchors
    let u = null;
    try { u = new URL(href, location.href); } catch (e) {}
    if (!u || u.origin !== origin || flag(href) || flag(a.textContent))
      bad.push(['a', href, (a.textContent || '').slice(0, 80)]);
  }
  const sel = 'img, image, iframe, frame, video, audio, source, track, embed, object, link[href], script[src], use';
  for (const el of document.querySelectorAll(sel)) {
    const src = el.getAttribute('src') || el.getAttribute('href') || el.getAttribute('xlink:href')
                || el.getAttribute('data') || el.getAttribute('srcset') || '';
    if (!src || src.startsWith('data:') || src.startsWith('blob:') || (el.tagName === 'use' && src.startsWith('#')))
      continue;
    let u = null;
    try { u = new URL(src, location.href); } catch (e) {}
    if (!u || u.origin !== origin) bad.push([el.tagName, src]);
  }
  for (const el of document.querySelectorAll('.katex, [data-testid=stMarkdownContainer] script, '
                                             + '[data-testid=stMarkdownContainer] img, '
                                             + '[data-testid=stMarkdownContainer] iframe'))
    bad.push(['markup', el.tagName, (el.outerHTML || '').slice(0, 120)]);
  for (const el of document.querySelectorAll('[data-testid=stException]'))
    bad.push(['traceback', (el.innerText || '').slice(0, 300)]);
  return bad;
}"""


PAYLOAD_MARKS = ("javascript:", "evil", "127.0.0.2", "alert(")


def _audit(page, watch: Watch, where: str) -> None:
    bad = page.evaluate(AUDIT_JS, [watch.origin, list(PAYLOAD_MARKS)])
    assert not bad, f"{where}: {bad}"
    assert not watch.outside, f"{where}: requests left the app's origin: {watch.outside}"
    assert not watch.dialogs, f"{where}: dialogs opened: {watch.dialogs}"
