"""Every name a bench script imports from the engine exists: a bench that is not run in the suite still fails here
when the engine renames or removes what it reads."""
import ast
import importlib

import pytest

from conftest import ROOT

BENCHES = sorted((ROOT / "bench").glob("*.py"))


def _engine_names(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("engine"):
            for a in node.names:
                yield node.module, a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("engine"):
                    yield a.name, None


@pytest.mark.parametrize("path", BENCHES, ids=[p.stem for p in BENCHES])
def test_a_bench_imports_only_what_the_engine_has(path):
    missing = []
    for module, name in _engine_names(path):
        mod = importlib.import_module(module)
        if name is not None and not hasattr(mod, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{module}.{name}")
    assert missing == []
