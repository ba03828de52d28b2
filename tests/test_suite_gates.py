"""The suite's own gates: a real-browser test cannot pass by skipping under CI, every test that needs Chromium
carries the marker that says so, and the shared helpers are loaded once."""
import ast

from conftest import ROOT, chromium_gate

TESTS = ROOT / "tests"

# What needs a Chromium, told by what a test, or a fixture or helper it uses, calls or reads:
#   <playwright>.chromium.launch(...)               a real browser
#   print_pdf(...)                                  the report's PDF printer (engine.analysis.report)
#   write(..., out_pdf) / committee_report(..., out_pdf)   the report writers given a PDF path
#   "--pdf"                                         the CLI's `report --pdf`
#   chromium_path(), pdf_printer_available(), CHROMIUM    whether a Chromium is installed: a test that asks
#                                                   checks the browser's part only where there is one
PDF_PRINTERS = {"print_pdf"}
PDF_WRITERS = {"write": 3, "committee_report": 3}  # the position of the PDF path among the arguments
CHROMIUM_LOOKUPS = {"chromium_path", "pdf_printer_available"}
CHROMIUM_NAMES = {"CHROMIUM"}
PDF_FLAGS = {"--pdf"}
SHARED_MODULES = ("conftest.py", "fakes.py", "payload.py")  # helpers and fixtures the test modules share


def _callee(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _has_pdf_path(call: ast.Call, position: int) -> bool:
    args = [a for a in call.args if not isinstance(a, ast.Starred)]
    given = args[position] if len(args) > position else next(
        (k.value for k in call.keywords if k.arg in ("out_pdf", "pdf")), None)
    return given is not None and not (isinstance(given, ast.Constant) and given.value is None)


def _own_needs(fn: ast.AST, chromium_names: set[str]) -> list[str]:
    """What in ``fn``'s own body (nested functions included) needs a Chromium."""
    out = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = _callee(node.func)
            if name == "launch" and isinstance(node.func, ast.Attribute) and _callee(node.func.value) == "chromium":
                out.append("launches Chromium")
            elif name in PDF_PRINTERS:
                out.append(f"calls {name}()")
            elif name in PDF_WRITERS and _has_pdf_path(node, PDF_WRITERS[name]):
                out.append(f"calls {name}() with a PDF path")
            elif name in CHROMIUM_LOOKUPS:
                out.append(f"asks {name}()")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in chromium_names:
            out.append(f"reads {node.id}")
        elif isinstance(node, ast.Constant) and node.value in PDF_FLAGS:
            out.append(f"passes {node.value}")
    return sorted(set(out))


def _is_fixture(fn: ast.AST) -> bool:
    return any(_callee(d.func if isinstance(d, ast.Call) else d) == "fixture" for d in fn.decorator_list)


def _marked(decorators) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "requires_chromium" for d in decorators for n in ast.walk(d))


def _fixtures_used(fn: ast.AST) -> list[str]:
    """The fixtures ``fn`` asks for: its parameters and the names in a ``usefixtures`` mark."""
    used = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and _callee(d.func) == "usefixtures":
            used += [a.value for a in d.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return used


class _Module:
    def __init__(self, name: str, src: str):
        self.name, self.tree = name, ast.parse(src)
        self.functions: dict[str, ast.AST] = {}  # module-level functions and fixtures by name
        self.fixtures: dict[str, ast.AST] = {}
        self.tests: list[tuple[str, ast.AST, bool]] = []  # (id, function, marked by itself or its class)
        self.chromium_names = set(CHROMIUM_NAMES)
        self.module_marked = False
        for node in ast.walk(self.tree):  # `from conftest import CHROMIUM as chromium`, anywhere
            if isinstance(node, ast.ImportFrom):
                self.chromium_names |= {a.asname for a in node.names if a.name in CHROMIUM_NAMES and a.asname}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
                if _is_fixture(node):
                    self.fixtures[node.name] = node
                elif node.name.startswith("test"):
                    self.tests.append((f"{name}::{node.name}", node, _marked(node.decorator_list)))
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                for m in node.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                        self.tests.append((f"{name}::{node.name}::{m.name}", m,
                                           _marked(node.decorator_list) or _marked(m.decorator_list)))
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                      for t in node.targets):
                self.module_marked |= _marked([node.value])


def _needed_through(names, kind: str, says: str, mod: _Module, shared: list[_Module], known: dict[int, str],
                    stack: tuple) -> str:
    """Why one of ``names`` (the module's or the shared modules' ``kind``: functions or fixtures) needs a Chromium,
    for the first that does; a name is looked up in the module first."""
    for name in names:
        for owner in [mod] + shared:
            if name in getattr(owner, kind):
                inner = _needs(getattr(owner, kind)[name], owner, shared, known, stack)
                if inner:
                    return says.format(name, inner)
                break
    return ""


def _needs(fn: ast.AST, mod: _Module, shared: list[_Module], known: dict[int, str], stack: tuple = ()) -> str:
    """Why ``fn`` needs a Chromium ("" when it does not): by its own calls, the module's or the shared modules'
    helpers it calls, or the fixtures it asks for (followed to any depth)."""
    if id(fn) in known:
        return known[id(fn)]
    if id(fn) in stack:
        return ""
    stack += (id(fn),)
    why = "; ".join(_own_needs(fn, mod.chromium_names))
    called = sorted({_callee(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)} - {fn.name})
    why = why or _needed_through(called, "functions", "calls {}(), which {}", mod, shared, known, stack)
    why = why or _needed_through(_fixtures_used(fn), "fixtures", "uses the fixture {}, which {}", mod, shared, known,
                                 stack)
    known[id(fn)] = why
    return why


def chromium_tests(modules: dict[str, str], shared: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """Each test of ``modules`` (name -> source) that needs a Chromium: its id -> (why, whether it carries the
    ``requires_chromium`` marker, on itself, its class or its module)."""
    helpers = [_Module(n, s) for n, s in shared.items()]
    mods = [_Module(n, s) for n, s in modules.items()]  # all kept alive: ``known`` is keyed by the nodes' ids
    out, known = {}, {}
    for mod in mods:
        for test_id, fn, marked in mod.tests:
            why = _needs(fn, mod, helpers, known)
            if why:
                out[test_id] = (why, marked or mod.module_marked)
    return out


def _suite() -> tuple[dict[str, str], dict[str, str]]:
    modules = {p.name: p.read_text(encoding="utf-8") for p in sorted(TESTS.glob("test_*.py"))}
    shared = {n: (TESTS / n).read_text(encoding="utf-8") for n in SHARED_MODULES if (TESTS / n).is_file()}
    return modules, shared


def test_missing_chromium_fails_under_ci_and_skips_elsewhere():
    assert chromium_gate(ci=True, chromium=None)[0] == "fail"
    assert chromium_gate(ci=False, chromium=None)[0] == "skip"
    assert chromium_gate(ci=True, chromium="/usr/bin/chromium") == ("run", "")


def test_every_test_that_needs_chromium_carries_the_marker():
    """A test that launches Chromium, prints the report's PDF or asks whether a Chromium is installed (itself or
    through a fixture or helper) is marked ``requires_chromium``, on itself, its class or its module."""
    found = chromium_tests(*_suite())
    unmarked = {t: why for t, (why, marked) in found.items() if not marked}
    assert not unmarked, "not marked requires_chromium:\n" + "\n".join(f"{t}: {why}" for t, why in unmarked.items())
    assert len(found) >= 10  # the browser tests and the PDF checks are all seen


def test_the_gate_sees_each_way_a_test_needs_chromium():
    src = '''
import pytest
from engine.analysis import report
CHROMIUM = report.chromium_path()

@pytest.fixture(scope="module")
def html(tmp_path_factory):
    return report.write(store, "s", tmp_path_factory.mktemp("r") / "r.html", n_boot=50)

@pytest.fixture(scope="module")
def pdf(html):
    return report.print_pdf(html, html.with_suffix(".pdf"))

@pytest.fixture
def pdf_later(pdf):
    return pdf

def _print(store):
    committee_report(store, "s", "r.html", "r.pdf", None)

def test_launches():
    with sync_playwright() as p:
        p.chromium.launch(headless=True)

def test_via_fixture(pdf_later):
    pass

@pytest.mark.usefixtures("pdf")
def test_via_usefixtures():
    pass

def test_via_helper(store):
    _print(store)

def test_writes_a_pdf(store, tmp_path):
    report.write(store, "s", tmp_path / "r.html", tmp_path / "r.pdf")

def test_cli(tmp_path):
    subprocess.run([sys.executable, "-m", "engine", "report", "s", "--out", "r.html", "--pdf", "r.pdf"])

def test_only_where_installed(html):
    if CHROMIUM:
        assert html

def test_aliased():
    from conftest import CHROMIUM as chromium
    assert chromium

@pytest.mark.requires_chromium
def test_marked(pdf):
    pass

class TestGroup:
    def test_in_a_class(self, pdf):
        pass

def test_html_only(html, tmp_path):
    report.write(store, "s", tmp_path / "r.html", None)
    report.write(store, "s", tmp_path / "r.html", out_pdf=None)

def test_shared_helper():
    start_browser()
'''
    shared = {"conftest.py": "def start_browser():\n    p.chromium.launch(executable_path=x)\n"}
    found = chromium_tests({"test_x.py": src}, shared)
    need = {"launches", "via_fixture", "via_usefixtures", "via_helper", "writes_a_pdf", "cli", "only_where_installed",
            "aliased", "marked", "shared_helper"}
    assert set(found) == {f"test_x.py::test_{n}" for n in need} | {"test_x.py::TestGroup::test_in_a_class"}
    assert [t for t, (_, marked) in found.items() if marked] == ["test_x.py::test_marked"]
    assert "uses the fixture pdf_later, which uses the fixture pdf, which calls print_pdf()" in \
        found["test_x.py::test_via_fixture"][0]
    module_marked = chromium_tests({"test_y.py": "import pytest\npytestmark = [pytest.mark.requires_chromium]\n"
                                                 + src}, shared)
    assert all(marked for _, marked in module_marked.values())


def test_the_test_modules_import_the_shared_helpers_as_conftest():
    """``from conftest import ...`` as pytest loads it: importing ``tests.conftest`` would run a second copy of the
    module, with its own state (the PostgreSQL server, caches)."""
    wrong = []
    for path in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module == "tests.conftest" or (
                    node.module == "tests" and any(a.name == "conftest" for a in node.names))):
                wrong.append(f"{path.name}:{node.lineno}")
            elif isinstance(node, ast.Import) and any(a.name == "tests.conftest" for a in node.names):
                wrong.append(f"{path.name}:{node.lineno}")
    assert not wrong, wrong
