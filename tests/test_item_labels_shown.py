"""Items are shown by their labels everywhere: no page writes an internal item key (``stigmatizing_summary``) in its
text or tables, and no table cell or column is a bare key (``comprehensible``) where the label differs. (Before, the
Agreement page's reliability table and the Settings validity table listed keys.)"""
import re

import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from engine.core.rubric import ITEMS

PAGES = ["start", "case", "evidence", "agreement", "judge", "review", "settings", "data", "lexicon", "models"]
SNAKE = [i.key for i in ITEMS if "_" in i.key]
BARE = {i.key for i in ITEMS if i.key != i.label}


@pytest.mark.parametrize("page", PAGES)
def test_no_page_shows_an_item_key(page):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=200).run()
    if page != "start":
        at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [str(getattr(el, "value", "")) for kind in ("markdown", "caption", "info", "warning", "error", "success",
                                                        "subheader", "metric") for el in getattr(at, kind)]
    cells = []
    for el in [*at.dataframe, *at.table]:
        df = el.value
        cells += [str(c) for c in df.columns] + [str(v) for v in df.astype(str).values.ravel()]
    found = {k for k in SNAKE for t in texts + cells if re.search(rf"(?<!\w){k}(?!\w)", t)}
    found |= {c for c in cells if c in BARE}
    assert found == set(), f"{page} shows item keys {sorted(found)}"
