"""Rules of the code's layout, checked on the source: engine packages import only downward (core < llm < data <
evidence < judge < stats < the command line) and no engine module imports itself back through a cycle; the engine
never imports Streamlit; no private API of another library is used or patched; no module reaches for another
module's private names; tests share helpers through conftest, fakes and payload, never by importing another test
module."""
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


LAYERS = ("core", "statistics", "llm", "data", "evidence", "judge", "analysis", "top")  # lowest first


def _layer(module: str) -> str:
    """engine.<package>[.<module>] -> package; engine.<module> (cli, sample, status, views) -> "top"."""
    parts = module.split(".")
    return parts[1] if len(parts) >= 2 and parts[1] in LAYERS else "top"


def _engine_modules():
    for path in sorted((ROOT / "engine").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        yield name, path


def _engine_imports(path, name):
    """The engine modules ``name`` imports (absolute, any depth, function-level imports included)."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node, mod, imported in _imports(path):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
            mod = base + (("." + node.module) if node.module else "")
        if not (mod == "engine" or mod.startswith("engine.")):
            continue
        if imported and mod.count(".") < 2 and f"{mod}.{imported}" in dict(_engine_modules()):
            yield f"{mod}.{imported}"  # from engine.evidence.stigma import detector as stigma
        else:
            yield mod


def test_engine_packages_import_only_downward():
    bad = []
    for name, path in _engine_modules():
        here = LAYERS.index(_layer(name))
        for dep in _engine_imports(path, name):
            if dep != "engine" and LAYERS.index(_layer(dep)) > here:
                bad.append(f"{name} imports {dep}")
    assert bad == []


def test_no_import_cycle_between_engine_modules():
    graph = {name: {d for d in _engine_imports(path, name) if d != name} for name, path in _engine_modules()}
    graph = {k: {d for d in v if d in graph} for k, v in graph.items()}
    seen, stack, cycles = set(), [], []

    def visit(node):
        if node in stack:
            cycles.append(stack[stack.index(node):] + [node])
            return
        if node in seen:
            return
        seen.add(node)
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            visit(dep)
        stack.pop()

    for node in sorted(graph):
        visit(node)
    assert cycles == []


MAX_MODULE_LINES = 500


def test_no_engine_module_is_over_500_lines():
    long = {_rel(p): n for p in (ROOT / "engine").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def test_every_engine_package_says_what_it_owns_and_may_import():
    for pkg in LAYERS[:-1]:
        doc = ast.get_docstring(ast.parse((ROOT / "engine" / pkg / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "Imports:" in doc, pkg


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


# ------------------------------------------------------------------- pages and components only draw
UI = sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "components").glob("*.py")])
NUMERIC = ("numpy", "scipy", "pingouin", "statsmodels", "sklearn", "krippendorff")
# Where a page or component still computes or reads the workspace itself: each entry names what remains, so a
# converted page leaves this list and no new place can join it. (Every page is converted: the set is empty and stays so.)
UI_DEBT: set[tuple[str, str]] = set()


def _ui_violations(path) -> set[tuple[str, str]]:
    rel, out = _rel(path), set()
    for _, mod, _name in _imports(path):
        top = mod.split(".")[0]
        if top in NUMERIC:
            out.add((rel, f"imports {top}"))
        if mod.split(".")[:2] in (["engine", "analysis"], ["engine", "statistics"]):
            out.add((rel, f"imports {mod}"))
    if rel != "components/state.py":  # state opens the workspace and hands it on; nobody else calls it
        for m in re.finditer(r"(?<![\w.])store\.([a-z_]+)", path.read_text(encoding="utf-8")):
            out.add((rel, f"calls store.{m.group(1)}"))
    return out


def test_pages_and_components_hold_no_statistics_or_store_calls():
    found = set().union(*(_ui_violations(p) for p in UI))
    assert found - UI_DEBT == set(), "new statistics or store calls in the UI: move them into an engine view"
    assert UI_DEBT - found == set(), "converted: remove these from UI_DEBT"


def test_the_case_page_draws_one_engine_view():
    src = (ROOT / "pages" / "case.py").read_text(encoding="utf-8")
    assert "engine.views.case" in src
    assert not any(_ui_violations(ROOT / "pages" / "case.py"))


def test_every_table_goes_through_the_display_rule():
    """Only components/frames.py calls st.dataframe; every other table is drawn by frames.show."""
    calls = [f"{_rel(p)}:{i + 1}" for p in UI if _rel(p) != "components/frames.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines()) if "st.dataframe(" in line]
    assert calls == []


# Inside engine/evidence: its concept sub-packages (and the embedding model) in order, lowest first; a module imports
# only from its own sub-package and those below it. The package's top-level modules that gather every kind (the
# kinds registry, the batch runner, the defect checks) stand above them all.
EVIDENCE_ORDER = ("text", "stigma", "embeddings", "coverage", "support", "medomit")


def _evidence_part(name: str):
    parts = name.split(".")
    if parts[:2] != ["engine", "evidence"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in EVIDENCE_ORDER else "(top)"


def test_evidence_reads_as_concept_subpackages_importing_downward():
    subs = {p.name for p in (ROOT / "engine" / "evidence").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subs == {"text", "coverage", "support", "medomit", "stigma"}
    for sub in subs:
        doc = ast.get_docstring(ast.parse((ROOT / "engine" / "evidence" / sub / "__init__.py").read_text("utf-8")))
        assert doc and "Imports:" in doc, sub
    rank = {k: i for i, k in enumerate(EVIDENCE_ORDER)} | {"(top)": len(EVIDENCE_ORDER)}
    bad = []
    for name, path in _engine_modules():
        here = _evidence_part(name)
        if here is None:
            continue
        for dep in _engine_imports(path, name):
            there = _evidence_part(dep)
            if there is not None and there != here and rank[there] > rank[here]:
                bad.append(f"{name} imports {dep}")
    assert bad == []


def _store_readers(path) -> set[str]:
    """Calls in a page or component that hand the workspace store (a name ``store``) to an engine function other
    than an engine view (directly, or through ``state.guarded(fn, store, ...)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    origin = {}
    for node, mod, name in _imports(path):
        for a in node.names:
            origin[a.asname or a.name.split(".")[0]] = mod if name is None else f"{mod}.{name}"
    out = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        fn, args = node.func, list(node.args)
        if isinstance(fn, ast.Attribute) and fn.attr == "guarded" or isinstance(fn, ast.Name) and fn.id == "guarded":
            fn, args = (args[0], args[1:]) if args else (fn, [])
        if not (args and isinstance(args[0], ast.Name) and args[0].id == "store"):
            continue
        base = fn
        while isinstance(base, ast.Attribute):
            base = base.value
        where = origin.get(base.id, "") if isinstance(base, ast.Name) else ""
        named = ast.unparse(fn)
        if where.startswith("engine.") and not where.startswith("engine.views") and not named.endswith("_job"):
            out.add(f"{_rel(path)}: {named}")
    return out


def test_pages_hand_the_store_only_to_engine_views():
    """Besides the views, a page may start a background job (``*_job``: progress and cancel) with the store;
    components/state.py opens the store and imports the sample into a new workspace."""
    found = set().union(*(_store_readers(p) for p in UI if _rel(p) != "components/state.py"))
    assert found == set()


def test_no_page_or_component_calls_a_store_method_by_any_name():
    """Whatever the variable is called: no method of the workspace store is called outside components/state.py."""
    import inspect

    from engine.data import pg, store

    classes = [c for mod in (store, pg) for _, c in inspect.getmembers(mod, inspect.isclass)
               if c.__module__ == mod.__name__ and hasattr(c, "load_dataset")]
    assert classes
    names = {m for c in classes for m in dir(c) if not m.startswith("_") and callable(getattr(c, m))}
    calls = [f"{_rel(p)}: .{n}(" for p in UI if _rel(p) != "components/state.py"
             for n in names if re.search(rf"\.{n}\(", p.read_text(encoding="utf-8"))]
    assert calls == []
