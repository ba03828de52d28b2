"""The Spot-check page's view of who is reviewing and in which order: the reviewer a team server already knows,
and the summaries a reviewer walks through (their assigned ones when the team's review plan names them, else
every summary in case order)."""
from __future__ import annotations

from engine.core.models import Dataset
from engine.data.assignments import reviewer_queue


def default_reviewer(store) -> str:
    """On a team's PostgreSQL workspace, the role the server authenticated (the reviewer may type another name);
    "" on an embedded SQLite workspace, which has no notion of a user."""
    return store.database_user() if store.dialect == "postgresql" else ""


def review_order(store, name: str, ds: Dataset, reviewer: str) -> tuple[list[tuple[str, str]], list]:
    """((case id, summary id) in the order Next / Previous walk, the reviewer's queue entries). A reviewer with
    assigned summaries walks through those only."""
    order = [(c.case_id, s.summary_id) for c in ds.cases for s in ds.summaries_for(c.case_id)]
    queue = reviewer_queue(store, name, reviewer) if reviewer else []
    assigned = {e.summary_id for e in queue}
    return ([(c, s) for c, s in order if s in assigned] if assigned else order), queue
