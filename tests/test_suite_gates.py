"""The suite's own gates: a real-browser test cannot pass by skipping under CI, and every test that launches
Chromium carries the marker that says so."""
import re

from conftest import ROOT, chromium_gate


def test_missing_chromium_fails_under_ci_and_skips_elsewhere():
    assert chromium_gate(ci=True, chromium=None)[0] == "fail"
    assert chromium_gate(ci=False, chromium=None)[0] == "skip"
    assert chromium_gate(ci=True, chromium="/usr/bin/chromium") == ("run", "")


def test_every_browser_test_carries_the_marker():
    """A module that launches Chromium marks the whole module or the launching test ``requires_chromium``."""
    unmarked = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        src = path.read_text(encoding="utf-8")
        if "chromium.launch(" not in src:
            continue
        if "pytestmark = pytest.mark.requires_chromium" in src:
            continue
        # each test function that launches it must be marked
        for m in re.finditer(r"(?ms)^((?:@[^\n]*\n)*)def (test_\w+)\(.*?(?=^def |^@|\Z)", src):
            if "chromium.launch(" in m.group(0) and "requires_chromium" not in m.group(1):
                unmarked.append(f"{path.name}::{m.group(2)}")
    assert not unmarked, unmarked
