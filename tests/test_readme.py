"""The README is the first screen a new user reads: the two commands first, short, pointing to docs/ for the
reference material, and nothing stale about which model judges."""
import re

from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_opens_with_the_two_commands_and_stays_short():
    """Before: 1,117 lines, the commands far down among reference material."""
    first = [ln for ln in README.splitlines()[:5] if ln.strip() and not ln.startswith("```")]
    assert [ln.split()[:2] for ln in first] == [["make", "run"], ["make", "test"]], first
    assert len(README.splitlines()) <= 150


def test_the_readme_links_docs_pages_that_exist():
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert links and all((ROOT / link).is_file() for link in links), links


def test_nothing_says_the_smoke_test_model_is_the_judge():
    """Before: the injection section spoke of the 270M as the judge; the default judge is the 1.5B, the 270M the
    smoke-test model."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            low = line.lower()
            assert not re.search(r"(default|the) judge(,| is| model is)? (the )?(gemma|270m)", low), (path.name, line)
