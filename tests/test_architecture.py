"""Rules of the code's layout, checked on the source: the engine never imports Streamlit; no private API of another
library is used or patched; no module reaches for another module's private names; tests share helpers through
conftest, fakes and payload, never by importing another test module."""
import ast
import re

import pytest

from conftest import ROOT

PRODUCT = [ROOT / "app.py", *(ROOT / "engine").rglob("*.py"), *(ROOT / "components").glob("*.py"),
           *(ROOT / "pages").glob("*.py")]


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name, None
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                yield node, ("." * node.level) + (node.module or ""), a.name


def _rel(path):
    return str(path.relative_to(ROOT))


def test_the_engine_never_imports_streamlit():
    bad = [f"{_rel(p)}: {mod}" for p in (ROOT / "engine").rglob("*.py") for _, mod, _ in _imports(p)
           if mod.split(".")[0] == "streamlit"]
    assert bad == []


@pytest.mark.parametrize("pattern,why", [
    (r"\bPagesManager\b", "Streamlit's private pages manager"),
    (r"streamlit\.runtime\b", "Streamlit's runtime internals"),
    (r"pingouin\.options\s*(\[|\.update|\.clear|=)", "pingouin's global options"),
])
def test_no_private_api_of_another_library(pattern, why):
    bad = [_rel(p) for p in PRODUCT if re.search(pattern, p.read_text(encoding="utf-8"))]
    assert bad == [], f"{why} used in {bad}"


def test_no_module_imports_another_modules_private_names():
    bad = [f"{_rel(p)}: from {mod} import {name}" for p in PRODUCT for _, mod, name in _imports(p)
           if name and name.startswith("_") and not name.startswith("__")
           and (mod.startswith(".") or mod.split(".")[0] in ("engine", "components"))]
    assert bad == []


def test_no_test_module_imports_another_test_module():
    tests = {p.stem for p in (ROOT / "tests").glob("test_*.py")}
    bad = [f"{_rel(p)}: {mod}" for p in (ROOT / "tests").glob("*.py") for _, mod, _ in _imports(p)
           if mod in tests]
    assert bad == []


def test_docstrings_and_comments_name_no_issue_numbers_or_outside_paths():
    pattern = re.compile(r"\bissues? #?\d+|shared/seeds|\.\./shared|METHODS\.md", re.I)
    files = PRODUCT + [*(ROOT / "tests").glob("*.py"), *(ROOT / "bench").glob("*.py")]
    bad = [f"{_rel(p)}:{i}" for p in files for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if pattern.search(line) and p.name != "test_architecture.py"]
    assert bad == []
