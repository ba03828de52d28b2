"""ARCHITECTURE.md names only what is in the tree: every repository path it names (``engine/...``, ``pages/...``,
``components/...``, ``tests/...``, ``bench/...``, ``sample_data/...``, with or without ``.py``) exists, and every
dotted engine name (``engine.core.batch.run_cached``) is a module, or a module and a name it defines."""
import ast
import re

from conftest import ROOT

DOC = ROOT / "ARCHITECTURE.md"
PATH = re.compile(r"(?<![\w./-])(?:engine|pages|components|tests|bench|sample_data)/[\w./-]*")
DOTTED = re.compile(r"(?<![\w./-])engine(?:\.[A-Za-z_]\w*)+")


def _paths(text: str) -> list[str]:
    return sorted({m.group(0).rstrip(".-") for m in PATH.finditer(text)})


def _exists(path: str) -> bool:
    p = ROOT / path.rstrip("/")
    return p.exists() or (not p.suffix and p.with_suffix(".py").is_file())


def _top_level_names(module_file) -> set[str]:
    names = set()
    for node in ast.parse(module_file.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _module_file(parts: list[str]):
    """The file of the repository module ``parts`` (a package's ``__init__.py``), or None."""
    base = ROOT.joinpath(*parts)
    for f in (base.with_suffix(".py"), base / "__init__.py"):
        if f.is_file():
            return f
    return None


def _dotted_problem(name: str) -> str:
    """"" when ``name`` is a module of the repository, or a module and one name defined at its top level."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        f = _module_file(parts[:n])
        if f is None:
            continue
        rest = parts[n:]
        if not rest:
            return ""
        if len(rest) > 1:
            return f"no module {'.'.join(parts[:n + 1])}"
        return "" if rest[0] in _top_level_names(f) else f"{'.'.join(parts[:n])} defines no {rest[0]}"
    return "not found"


def test_the_path_pattern_finds_what_the_doc_writes():
    text = ("`engine/cli.py` · engine/sample.py · engine/views/ (one view)\n engine/data/loading ──► "
            "engine/analysis/configured (one) and `tests/conftest.py`, `sample_data/formats/`. See bench/x.py.")
    assert _paths(text) == ["bench/x.py", "engine/analysis/configured", "engine/cli.py", "engine/data/loading",
                            "engine/sample.py", "engine/views/", "sample_data/formats/", "tests/conftest.py"]
    assert not _exists("engine/cli.py") and not _exists("engine/analysis/analysis")
    assert _exists("engine/analysis/configured") and _exists("engine/cli/") and _exists("sample_data/formats/")
    assert _dotted_problem("engine.core.batch.run_cached") == "" and _dotted_problem("engine.judge.runner") == ""
    assert _dotted_problem("engine.evidence.kinds.NO_SUCH_NAME") != ""
    assert _dotted_problem("engine.analysis.analysis") != "" and _dotted_problem("engine.core.batch.x.y") != ""


def test_every_path_the_architecture_doc_names_exists():
    text = DOC.read_text(encoding="utf-8")
    paths = _paths(text)
    assert len(paths) >= 30
    assert [p for p in paths if not _exists(p)] == []


def test_every_dotted_engine_name_the_architecture_doc_names_exists():
    names = sorted({m.group(0) for m in DOTTED.finditer(DOC.read_text(encoding="utf-8"))})
    assert len(names) >= 10
    assert {n: why for n in names if (why := _dotted_problem(n))} == {}
