"""The Spot-check page: who is reviewing and in which order (the reviewer a team server already knows; the
summaries a reviewer walks through — their assigned ones when the team's review plan names them, else every summary
in case order), the triage and adjudication queues, the reviewer's own review for the form, saving it, and what the
page shows of a summary once the reviewer may see the others' scores (:func:`spot_check_view`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.core import Dataset, ITEMS
from engine.data import ADJUDICATION, KIND_LABELS, REVIEW_KINDS, StoreError, reviewer_queue

__all__ = ["ADJUDICATION", "ITEMS", "KIND_LABELS", "REVIEW_KINDS", "ReviewPage", "SpotCheckView", "StoreError",
           "review_page"]


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


def triage_queue(store, name: str, ds: Dataset):
    """The triage queue of the dataset (engine.judge.triage.for_dataset): (entries, what the scores are)."""
    from engine.judge import triage

    return triage.for_dataset(store, name, ds)


def assigned_queue(store, name: str, reviewer: str) -> list:
    """The reviewer's assigned summaries (queue entries with ``done``), empty when the plan names them not."""
    return reviewer_queue(store, name, reviewer) if reviewer else []


def adjudication_rows(store, name: str, margin: float) -> list[dict]:
    """One row per (summary, item) where the reviewers differ by more than ``margin``, with their values."""
    from engine.core import get_item
    from engine.data import disagreements

    return [{"summary": d.summary_id, "item": get_item(d.item).label, "spread": d.spread,
             "reviewers": ", ".join(f"{r}: {'NA' if v is None else f'{v:g}'}" for r, v in d.values.items())}
            for d in disagreements(store, name, float(margin))]


def my_review(store, name: str, summary_id: str, reviewer: str, kind: str) -> tuple[dict, dict]:
    """The reviewer's current review of ``kind`` of one summary: (item -> value, item -> comment), for the form."""
    from engine.data import current_reviews

    mine = [r for r in current_reviews(store, name, summary_id) if r.reviewer == reviewer and r.kind == kind]
    return {r.item: r.value for r in mine}, {r.item: r.comment for r in mine}


def submit_review(store, name: str, summary_id: str, reviewer: str, kind: str, values, comments) -> list:
    """Record a review (engine.data.reviews.save_review): the rows written, empty when nothing changed."""
    from engine.data import save_review

    return save_review(store, name, summary_id, reviewer, kind, values, comments)


@dataclass
class SpotCheckView:
    """What the Spot-check page shows of one summary once the reviewer may see it (``revealed``): the rater
    table (panel, spot checks, adjudication), the judge's latest result and the review history; and the CSV of
    every review of the dataset."""

    revealed: bool
    score_rows: list[dict] = field(default_factory=list)
    judge: Optional[object] = None  # engine.judge.results.JudgeResult
    judge_rows: list[dict] = field(default_factory=list)
    history_rows: list[dict] = field(default_factory=list)
    export_csv: str = ""


def spot_check_view(store, name: str, ds: Dataset, summary_id: str, reviewer: str, blinded: bool) -> SpotCheckView:
    """Blinded and not yet reviewed by ``reviewer``: nothing of the others is read. Otherwise everything."""
    from engine.core import ITEMS
    from engine.data import (display_table, export_reviews_csv, has_reviewed, history_rows, judge_cell,
                             review_history, reviews_as_ratings)
    from engine.judge import latest_result

    if blinded and not has_reviewed(store, name, summary_id, reviewer):
        return SpotCheckView(revealed=False)
    judged = latest_result(store, name, summary_id)
    return SpotCheckView(
        revealed=True,
        score_rows=display_table(ds.ratings_for(summary_id) + reviews_as_ratings(store, name, summary_id)),
        judge=judged,
        judge_rows=[{"item": i.label, "LLM score": _main_cell(i, judged.items.get(i.key)),
                     "LLM median": judge_cell(i, judged.items.get(i.key))} for i in ITEMS]
        if judged is not None else [],
        history_rows=history_rows(review_history(store, name, summary_id)),
        export_csv=export_reviews_csv(store, name))


def _main_cell(item, score) -> str:
    """The judge's main number for the item, as the Judge, Case and Agreement pages use it
    (engine.judge.results.primary_score: the expected score of a 1-5 item, else its median; yes/no items as their
    share of yes), shown beside the median."""
    from engine.analysis import format_score
    from engine.data import judge_cell
    from engine.judge import primary_score

    if score is None:
        return ""
    if not item.is_likert:
        return judge_cell(item, score)
    v = primary_score(item.key, score)
    return "NA" if score.is_na else ("" if v is None else format_score(v))


class ReviewPage:
    """Everything the Spot-check page reads and saves for one dataset, each part read when the page asks for it
    (the page draws its widgets between the reads): the reviewer's walk, the triage, assigned and adjudication
    queues, the reviewer's own review, saving it, and what the page shows once the reviewer may see the others."""

    def __init__(self, store, name: str, ds: Dataset):
        self.store, self.name, self.ds = store, name, ds
        self._triage: Optional[tuple] = None  # read once per page run

    def default_reviewer(self) -> str:
        return default_reviewer(self.store)

    def order(self, reviewer: str) -> tuple[list[tuple[str, str]], list]:
        return review_order(self.store, self.name, self.ds, reviewer)

    def triage(self, sample: int = 0):
        """(entries, what the scores are, the entries shown: a stratified sample of ``sample`` of them, or all)."""
        from engine.judge import triage

        if self._triage is None:
            self._triage = triage_queue(self.store, self.name, self.ds)
        entries, source = self._triage
        return entries, source, (triage.stratified_sample(entries, int(sample), seed=0) if sample else entries)

    def assigned(self, reviewer: str) -> list:
        return assigned_queue(self.store, self.name, reviewer)

    def adjudication(self, margin: float) -> list[dict]:
        return adjudication_rows(self.store, self.name, margin)

    def summary_spans(self, summary_id: str) -> list:
        """The citation spans of the summary's text, in the dataset's citation style."""
        from engine.core import citations

        return citations.spans(self.ds.summary(summary_id).text, self.ds.citation_style())

    def my_review(self, summary_id: str, reviewer: str, kind: str) -> tuple[dict, dict]:
        return my_review(self.store, self.name, summary_id, reviewer, kind)

    def submit(self, summary_id: str, reviewer: str, kind: str, values, comments) -> list:
        return submit_review(self.store, self.name, summary_id, reviewer, kind, values, comments)

    def after(self, summary_id: str, reviewer: str, blinded: bool) -> SpotCheckView:
        return spot_check_view(self.store, self.name, self.ds, summary_id, reviewer, blinded)


def review_page(store, name: str, ds: Dataset) -> ReviewPage:
    """The Spot-check page's one entry (:class:`ReviewPage`)."""
    return ReviewPage(store, name, ds)
