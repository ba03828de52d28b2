"""The Start page: what the current dataset holds, how far it is checked, and the next steps."""
from __future__ import annotations

from dataclasses import dataclass, field

from engine.data import StoreError
from engine.sample import SAMPLE_ABOUT, SAMPLE_NAME
from engine.status import dataset_status

__all__ = ["StartView", "StoreError", "start_view"]


@dataclass
class StartView:
    """``tiles``: rows of (label, value) metrics; ``judged``: one row per judge configuration; ``about``: the
    dataset's description when it is the bundled sample; ``reviewers``: a line on the spot checks ("" when none);
    ``next_steps``: rows of text, page and command."""

    name: str
    tiles: list[list[tuple[str, str]]]
    judged: list[dict] = field(default_factory=list)
    about: str = ""
    reviewers: str = ""
    next_steps: list[dict] = field(default_factory=list)


def start_view(store, name: str) -> StartView:
    s = dataset_status(store, name)
    tiles = [[("cases", str(s.cases)), ("summaries", str(s.summaries)), ("raters", str(s.raters))],
             [("evidence", f"{min(s.coverage, s.support)} of {s.summaries}"),
              ("claims verified", f"{s.verified} of {s.summaries}"), ("MED-OMIT", f"{s.medomit} of {s.summaries}"),
              ("spot-checked", f"{s.spot_checked} of {s.summaries}")]]
    judged = [{"judge model": j.model + (" (smoke-test model)" if j.smoke_test else ""), "samples": j.samples,
               "summaries judged": f"{j.summaries} of {s.summaries}", "last judged (UTC)": j.judged_at,
               "configuration": j.key} for j in s.judged]
    reviewers = (f"Spot checks by {', '.join(s.reviewers)} · {s.adjudicated} summaries adjudicated"
                 if s.reviewers else "")
    return StartView(name, tiles, judged, SAMPLE_ABOUT if name == SAMPLE_NAME else "", reviewers,
                     [{"text": n.text, "page": n.page, "command": n.command} for n in s.next_steps])
