import os
import sys
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
