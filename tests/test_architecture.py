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
        if imported and f"{mod}.{imported}" in dict(_engine_modules()):
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


def _own_private_module(path, mod: str, name: str) -> bool:
    """``from pkg import _module`` inside ``pkg``: a package's modules may read its private modules."""
    folder = ROOT / mod.replace(".", "/")
    return (folder / f"{name}.py").exists() and path.parent == folder


def test_no_module_imports_another_modules_private_names():
    bad = [f"{_rel(p)}: from {mod} import {name}" for p in PRODUCT for _, mod, name in _imports(p)
           if name and name.startswith("_") and not name.startswith("__")
           and (mod.startswith(".") or mod.split(".")[0] in ("engine", "components"))
           and not _own_private_module(p, mod, name)]
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
    assert "from engine.views import case as view" in src
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


# ------------------------------------------------------------------- the command line
def test_cli_command_modules_register_their_own_commands():
    """``build_parser`` builds only the top parser and hands its subparsers to the command modules: every
    engine/cli/*_commands.py defines ``register(subparsers)`` adding its own commands, and ``build_parser`` stays
    within 80 lines."""
    tree = ast.parse((ROOT / "engine" / "cli" / "__init__.py").read_text(encoding="utf-8"))
    (build,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build_parser"]
    assert build.end_lineno - build.lineno + 1 <= 80, f"build_parser is {build.end_lineno - build.lineno + 1} lines"
    modules = sorted((ROOT / "engine" / "cli").glob("*_commands.py"))
    assert modules
    without = [_rel(p) for p in modules
               if not any(isinstance(n, ast.FunctionDef) and n.name == "register" and len(n.args.args) == 1
                          for n in ast.parse(p.read_text(encoding="utf-8")).body)]
    assert without == []


# ------------------------------------------------------------------- statistics are computed in engine.statistics
STATISTICS_LIBRARIES = ("scipy", "sklearn", "statsmodels")
# The places outside engine/statistics that may still import a statistics library, each with why it is not a
# statistic the statistics package should own.
STATISTICS_LIBRARY_EXCEPTIONS = {
    ("engine/evidence/coverage/embedding_methods.py", "sklearn.feature_extraction.text"):
        "scikit-learn's English stop-word list, read as a word list",
    ("engine/evidence/coverage/embedding_methods.py", "sklearn.model_selection"):
        "coverage's embedding geometry: the kernel density's bandwidth search",
    ("engine/evidence/coverage/embedding_methods.py", "sklearn.neighbors"):
        "coverage's embedding geometry: the kernel density of sentence embeddings",
    ("engine/evidence/coverage/embedding_methods.py", "sklearn.decomposition"):
        "coverage's embedding geometry: PCA of sentence embeddings",
    ("engine/evidence/coverage/embedding_methods.py", "sklearn.preprocessing"):
        "coverage's embedding geometry: standardising embeddings before PCA",
    ("engine/evidence/coverage/embedding_methods.py", "sklearn.cluster"):
        "coverage's embedding geometry: clustering of sentence embeddings",
    ("engine/evidence/text/lexical.py", "sklearn.feature_extraction.text"):
        "scikit-learn's English stop-word list, read as a word list",
}


def _statistics_library_imports() -> set[tuple[str, str]]:
    files = [p for p in PRODUCT if (ROOT / "engine" / "statistics") not in p.parents]
    files += sorted((ROOT / "bench").rglob("*.py"))
    return {(_rel(p), mod) for p in files for _, mod, _ in _imports(p)
            if mod.split(".")[0] in STATISTICS_LIBRARIES}


def test_statistics_libraries_are_imported_only_by_engine_statistics():
    """scipy, scikit-learn and statsmodels are imported by engine/statistics alone (engine, components, pages,
    app.py and bench/ call its functions), except the named places that use them for something that is not a
    statistic."""
    found = _statistics_library_imports()
    outside = [f"{path}: {mod}" for path, mod in sorted(found - set(STATISTICS_LIBRARY_EXCEPTIONS))]
    assert outside == [], "a statistic computed outside engine/statistics:\n" + "\n".join(outside)
    stale = sorted(set(STATISTICS_LIBRARY_EXCEPTIONS) - found)
    assert stale == [], f"no longer imported: remove these exceptions {stale}"


# ------------------------------------------------------------------- a page reads one view and draws in functions
PAGES = sorted((ROOT / "pages").glob("*.py"))
# what a page may import from the engine besides its own view module, with the reason
PAGE_IMPORT_EXCEPTIONS = {"engine.core.untrusted": "the one escaping helper: a page writes data into Markdown"}


def _page_engine_imports(path) -> set[str]:
    out = set()
    for _, mod, name in _imports(path):
        if mod == "engine" or mod.startswith("engine."):
            out.add(f"{mod}.{name}" if name and mod in ("engine.views", "engine.core") else mod)
    return out


def _view_alias(path) -> str:
    for node, mod, name in _imports(path):
        if mod == "engine.views" and name == path.stem:
            return next(a.asname or a.name for a in node.names if a.name == name)
    return ""


def test_a_page_imports_only_its_own_view():
    """A page imports from the engine only engine.views.<page> (which hands it its view, actions, job starters,
    exceptions and constants) and the escaping helper."""
    bad = {_rel(p): sorted(_page_engine_imports(p) - {f"engine.views.{p.stem}", *PAGE_IMPORT_EXCEPTIONS})
           for p in PAGES}
    assert {k: v for k, v in bad.items() if v} == {}
    assert all(_view_alias(p) for p in PAGES), "every page reads its view module"


def _view_names_used(path) -> tuple[set[str], set[str]]:
    """(names of the page's view module it uses, those of them it calls)."""
    alias, tree = _view_alias(path), ast.parse(path.read_text(encoding="utf-8"))
    used, called = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == alias:
            used.add(node.attr)
        if not isinstance(node, ast.Call):
            continue
        fn = node.func
        if ast.unparse(fn).endswith("guarded") and node.args:  # state.guarded(view.x, ...) calls view.x
            fn = node.args[0]
        if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == alias:
            called.add(fn.attr)
    return used, called


def test_a_page_calls_one_entry_of_its_view():
    """Of its view module a page calls one entry (the function that returns what it shows), plus the module's
    named ACTIONS (what the reader asks it to do) and job starters; everything it uses is in the module's
    ``__all__`` (its front door); classes (option types, exceptions) are used freely."""
    import importlib
    import inspect

    problems = {}
    for p in PAGES:
        mod = importlib.import_module(f"engine.views.{p.stem}")
        used, called = _view_names_used(p)
        outside = sorted(used - set(getattr(mod, "__all__", ())))
        entries = sorted(n for n in called if not inspect.isclass(getattr(mod, n, None)) and not n.endswith("_job")
                         and n not in getattr(mod, "ACTIONS", ()))
        if outside or len(entries) != 1:
            problems[_rel(p)] = {"not in __all__": outside, "entries called": entries}
    assert problems == {}


def test_a_page_draws_in_functions():
    """A page file defines constants and functions and ends by calling ``main()``: no drawing at module level, so
    every part of a page is a function the function-length rule sees."""
    bad = {}
    for p in PAGES:
        body = ast.parse(p.read_text(encoding="utf-8")).body
        for i, node in enumerate(body):
            ok = (isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign))
                  or (i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
                  or (i == len(body) - 1 and isinstance(node, ast.Expr) and ast.unparse(node) == "main()"))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and ast.unparse(node.value.func).startswith("st."):
                ok = False  # a widget or element drawn at module level
            if not ok:
                bad.setdefault(_rel(p), []).append(f"line {node.lineno}: {ast.unparse(node)[:60]}")
        if not (body and ast.unparse(body[-1]) == "main()"):
            bad.setdefault(_rel(p), []).append("does not end by calling main()")
    assert bad == {}


# ------------------------------------------------------------------- HTML and SVG only in templates
MARKUP_TAG = re.compile(r"<(?:a|b|br|circle|code|div|em|g|h[1-6]|i|iframe|img|input|label|li|line|mark|ol|p|path|"
                        r"polygon|polyline|pre|rect|script|small|span|strong|style|sub|sup|svg|table|tbody|td|text|"
                        r"th|thead|tr|ul)(?=[\s/>])", re.I)
# Modules of the engine or the components that may still write a tag in a string literal, each with its reason.
# (None: every fragment is a template macro.)
MARKUP_EXCEPTIONS: dict[str, str] = {}


def _markup_literals(path) -> list[str]:
    """``file:line`` of each string literal in ``path`` (f-string parts included, docstrings not) holding a tag."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [f"{_rel(path)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            and MARKUP_TAG.search(node.value)]


def test_html_and_svg_are_written_only_in_templates():
    """No module of the engine, the components, the pages or app.py writes an HTML or SVG tag in a string literal:
    markup lives in
    Jinja2 templates with autoescape (components/templates/fragments.html.j2 through ``components.html.fragment``;
    the report's engine/analysis/report.html.j2 and engine/analysis/charts.svg.j2), where every data value is
    escaped by ``engine.core.untrusted.html``. A module that must keep one is named in MARKUP_EXCEPTIONS with why."""
    files = [*(ROOT / "engine").rglob("*.py"), *(ROOT / "components").glob("*.py"), *(ROOT / "pages").glob("*.py"),
             ROOT / "app.py"]
    found = [hit for p in sorted(files) for hit in _markup_literals(p)]
    assert [hit for hit in found if hit.split(":")[0] not in MARKUP_EXCEPTIONS] == []
    assert set(MARKUP_EXCEPTIONS) <= {hit.split(":")[0] for hit in found}, "an exception no longer needed"


# ------------------------------------------------------------------- words are cut in one place
WORD_REGEX_CALLS = ("compile", "findall", "finditer", "split", "sub", "subn")
WORD_PROBE = "Qzvk, wxjy; ZQXV-kvzq. jxwq (VVQZ) xq"  # made-up words, no phrase pattern names them
# (module, pattern) -> why the pattern is no word tokenizer although it cuts the probe like one; empty, and a new
# entry says why the shared tokenizer (engine.evidence.text.tokenizer.tokenize) cannot read it
NOT_WORD_TOKENIZERS: dict[tuple[str, str], str] = {}


def _cuts_words(pattern: str) -> bool:
    """A pattern cuts words when, run over :data:`WORD_PROBE`, it finds two or more of the probe's made-up words (or
    parts of them: matches of two or more letters only) and never glues a comma or semicolon to letters (which
    chunks at white space, ``\\S+``, rather than cutting words); or when removing its matches leaves only the
    probe's letters (a keep-the-letters normaliser, ``[^a-z]``, ``\\W+``)."""
    try:
        rx = re.compile(pattern)
    except re.error:
        return False
    found = [m.group() for m in rx.finditer(WORD_PROBE)]
    words = [w for w in found if len(w) >= 2 and w.isalpha()]
    if len(words) >= 2 and not any(("," in w or ";" in w) and any(c.isalpha() for c in w) for w in found):
        return True
    return rx.sub("", WORD_PROBE.lower()) == "".join(c for c in WORD_PROBE.lower() if c.isalpha())


def test_no_evidence_module_cuts_words_with_a_regex_of_its_own():
    """Every module of engine.evidence but engine.evidence.text.tokenizer cuts words with
    :func:`engine.evidence.text.tokenizer.tokenize` (its parameters say where a check reads words its own way). Checked:
    each string literal given as the pattern of ``re.compile``, ``re.findall``, ``re.finditer``, ``re.split``,
    ``re.sub`` or ``re.subn``, by what it does (:func:`_cuts_words`), whatever its syntax. Phrase patterns (literal
    words, "no|denies"), number and date patterns and patterns composed at run time (from word lists) do not cut
    the probe's words and pass; ``re.search``/``re.match``/``re.fullmatch`` find one match and are not looked at."""
    assert _cuts_words(r"[a-z0-9]+") and _cuts_words(r"\w+") and _cuts_words(r"[^a-z]") and _cuts_words(r"\W+")
    assert not any(_cuts_words(p) for p in (r"\S+", r"\s+", r"[-/]", r"\b(?:no|denies)\b", r"\d+(?:\.\d+)?", "[A-Z]"))
    found = []
    for path in sorted((ROOT / "engine" / "evidence").rglob("*.py")):
        if path == ROOT / "engine" / "evidence" / "text" / "tokenizer.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in WORD_REGEX_CALLS and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "re" and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str) and _cuts_words(node.args[0].value)):
                found.append((_rel(path), node.args[0].value, node.lineno))
    assert [hit for hit in found if hit[:2] not in NOT_WORD_TOKENIZERS] == []
    assert set(NOT_WORD_TOKENIZERS) <= {hit[:2] for hit in found}, "an exception no longer needed"


# ------------------------------------------------------------------- components draw; state only opens things once
COMPONENTS = sorted((ROOT / "components").glob("*.py"))
AGGREGATIONS = {"groupby", "agg", "aggregate", "mean", "sum", "median", "std", "var", "value_counts", "pivot",
                "pivot_table", "apply", "merge", "cumsum", "diff", "corr", "quantile", "describe", "crosstab"}


def test_components_hold_no_frame_arithmetic():
    """A component draws rows an engine view computed: no grouping, aggregation or statistic on a frame (a
    chart's axis range is drawing, not a figure)."""
    bad = [f"{_rel(p)}:{n.lineno} .{n.func.attr}()" for p in COMPONENTS for n in ast.walk(ast.parse(p.read_text("utf-8")))
           if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in AGGREGATIONS]
    assert bad == []


STATE_STORE_CALLS = {"load_dataset", "list_datasets", "data_fingerprint"}


def test_state_opens_things_once_and_reads_only_datasets_and_the_fingerprint():
    """components/state.py opens the workspace, the models and the tokenizer once (``st.cache_resource``), reads
    datasets (``st.cache_data`` keyed by the store's data fingerprint) and nothing else of the workspace: no
    result lists, no statistics, no evidence."""
    import inspect

    from engine.data import store as store_mod

    src = (ROOT / "components" / "state.py").read_text("utf-8")
    methods = {m for m, _ in inspect.getmembers(store_mod.Store, callable) if not m.startswith("_")}
    called = {n.func.attr for n in ast.walk(ast.parse(src))
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in methods}
    assert called <= STATE_STORE_CALLS, called - STATE_STORE_CALLS
    engine_uses = {mod for _, mod, _ in _imports(ROOT / "components" / "state.py") if mod.startswith("engine.")}
    assert not {m for m in engine_uses if m.split(".")[1] in ("analysis", "statistics", "views")}, engine_uses


# ------------------------------------------------------------------- short functions and modules over the product
MAX_FUNCTION_LINES = 80
# "path:qualified name" of a function allowed over MAX_FUNCTION_LINES -> why (empty: every function fits)
LONG_FUNCTION_EXCEPTIONS: dict[str, str] = {}
# a module of pages/, components/, bench/ or app.py allowed over MAX_MODULE_LINES -> why (empty: every module fits)
LONG_MODULE_EXCEPTIONS: dict[str, str] = {}


def _outside_engine():
    return [ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "components").glob("*.py"),
            *(ROOT / "bench").rglob("*.py")]


def _function_lengths(path):
    """("path:qualified name", lines) of every function and method in ``path``, its lines counted from the first
    statement after its docstring to its last line (a nested function counts in its parent and on its own)."""
    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = child.body[1:] if ast.get_docstring(child) is not None else child.body
                yield f"{_rel(path)}:{prefix}{child.name}", child.end_lineno - body[0].lineno + 1 if body else 0
            inner = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            yield from walk(child, f"{prefix}{child.name}." if inner else prefix)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), "")


def test_no_function_is_over_80_lines():
    """Every function and method of engine/, pages/, components/, bench/ and app.py is at most 80 lines, its
    docstring not counted: a longer one is split into named helpers. One that must stay longer is named in
    LONG_FUNCTION_EXCEPTIONS with why."""
    long = {name: n for p in [*(ROOT / "engine").rglob("*.py"), *_outside_engine()]
            for name, n in _function_lengths(p) if n > MAX_FUNCTION_LINES}
    assert {k: v for k, v in long.items() if k not in LONG_FUNCTION_EXCEPTIONS} == {}
    assert set(LONG_FUNCTION_EXCEPTIONS) <= set(long), "an exception no longer needed"


def _long_modules(paths) -> dict[str, int]:
    """path -> lines of each module in ``paths`` over MAX_MODULE_LINES."""
    return {_rel(p): n for p in paths if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}


def test_no_page_component_or_bench_module_is_over_500_lines():
    """Every module of pages/, components/, bench/ and app.py is at most 500 lines, as every engine module is. One
    that must stay longer is named in LONG_MODULE_EXCEPTIONS with why."""
    long = _long_modules(_outside_engine())
    assert {k: v for k, v in long.items() if k not in LONG_MODULE_EXCEPTIONS} == {}
    assert set(LONG_MODULE_EXCEPTIONS) <= set(long), "an exception no longer needed"


def test_no_bench_or_test_module_reaches_for_a_bench_modules_private_names():
    """Benchmarks share helpers by public names (bench/validity_common.py, bench/verify_set.py): no ``from bench_mod
    import _x`` and no ``bench_mod._x`` from another bench module or a test."""
    benches = {p.stem for p in (ROOT / "bench").glob("*.py")}
    files = [*(ROOT / "bench").glob("*.py"), *(ROOT / "tests").glob("*.py")]
    bad = []
    for p in files:
        tree = ast.parse(p.read_text(encoding="utf-8"))
        aliases = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                   if a.name in benches and a.name != p.stem}  # bench modules imported by their top-level name
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in benches and node.module != p.stem:
                bad += [f"{_rel(p)}: from {node.module} import {a.name}" for a in node.names
                        if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                bad.append(f"{_rel(p)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert bad == []


# ------------------------------------------------------------------- a package with a front door is entered by it
# Packages made of entry modules, each entered by name: the engine's root (``sample``, ``status``, ``__main__``),
# one view module per page (a page imports its own) and the command modules of the CLI.
ENTRY_PACKAGES = {"engine": "the root: the sample, the status summary and python -m engine",
                  "engine.views": "one module per page, each imported by its page",
                  "engine.cli": "one module per group of commands, reached through python -m engine"}


def _packages() -> list[str]:
    return sorted(".".join(i.parent.relative_to(ROOT).parts) for i in (ROOT / "engine").rglob("__init__.py"))


def _front_doors() -> dict[str, set[str]]:
    """Engine packages whose ``__init__`` declares ``__all__``: package name -> its public names."""
    out = {}
    for init in (ROOT / "engine").rglob("__init__.py"):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                name = ".".join(init.parent.relative_to(ROOT).parts)
                out[name] = set(ast.literal_eval(node.value))
    return out


def _door_of(module: str, doors) -> str | None:
    """The deepest front-door package ``module`` lies in or is."""
    found = [d for d in doors if module == d or module.startswith(d + ".")]
    return max(found, key=len) if found else None


def test_every_engine_package_but_the_entry_packages_has_a_front_door():
    doors = _front_doors()
    assert [p for p in _packages() if p not in doors and p not in ENTRY_PACKAGES] == []
    assert not set(ENTRY_PACKAGES) & set(doors)


def test_a_package_with_a_front_door_is_entered_only_by_it():
    """Outside a package that lists its public names in ``__init__.__all__``, the product and the benches import
    from the package itself (its deepest door: a sub-package with its own is entered by that one), never from its
    modules; every name in ``__all__`` exists."""
    import importlib

    doors = _front_doors()
    for pkg, names in doors.items():
        mod = importlib.import_module(pkg)
        assert not [n for n in names if not hasattr(mod, n)], pkg
    files = [*PRODUCT, *(ROOT / "bench").glob("*.py")]
    bad = []
    for p in files:
        rel = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for node, mod, name in _imports(p):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            door = _door_of(mod, doors)
            if door is None or mod == door or rel.startswith(door + "."):
                continue
            bad.append(f"{_rel(p)}: {mod}")
    assert bad == []


def _door_sources(pkg: str) -> tuple[dict[str, set[str]], set[str]]:
    """What a package's ``__init__`` takes from its own modules: module -> names it re-exports, and the modules it
    exports as namespaces (``from pkg import module``)."""
    init = ROOT / pkg.replace(".", "/") / "__init__.py"
    here = {p.stem for p in init.parent.glob("*.py")}
    taken, spaces = {}, set()
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module == pkg:
            spaces |= {a.name for a in node.names if a.name in here}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(pkg + "."):
            taken.setdefault(node.module[len(pkg) + 1:], set()).update(a.asname or a.name for a in node.names)
    return taken, spaces


def test_a_module_is_private_exactly_when_its_package_exports_nothing_of_it():
    """In a package with a front door, a module whose names the door exports (or that it exports as a namespace)
    is public and named plainly; a module nobody outside the package has business with is ``_``-prefixed, and the
    door exports nothing of it (inspect_ai's layout)."""
    bad = []
    for pkg, public in _front_doors().items():
        taken, spaces = _door_sources(pkg)
        for path in sorted((ROOT / pkg.replace(".", "/")).glob("*.py")):
            stem = path.stem
            if stem == "__init__":
                continue
            exported = bool(taken.get(stem, set()) & public) or stem in spaces
            if stem.startswith("_") and exported:
                bad.append(f"{pkg}.{stem}: private, yet the door exports it")
            if not stem.startswith("_") and not exported:
                bad.append(f"{pkg}.{stem}: the door exports nothing of it; name it _{stem}")
    assert bad == []


def test_every_name_an_engine_module_exports_exists():
    """What a module's ``__all__`` lists (a package's door, a view's names for its page) is there to import."""
    import importlib

    bad = []
    for name, path in _engine_modules():
        if path.name == "__main__.py" or "__all__" not in path.read_text(encoding="utf-8"):
            continue
        mod = importlib.import_module(name)
        bad += [f"{name}.{n}" for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
    assert bad == []
