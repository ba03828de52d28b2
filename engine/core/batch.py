"""The one cached batch loop: every long run (the judge, MED-OMIT, the embedding evidence) goes through it.

For each item, in order: stop if asked (between items; a run cancelled inside an item raises
:class:`engine.core.jobs.Cancelled`, which ends the loop with what was finished kept); otherwise look the item's
result up (``lookup``: the stored result under its cache key, or None), else compute it (``compute``) and keep
it (``keep``: store it at once, so a cancelled or crashed run resumes where it stopped). Progress is reported
before and after each item, with whether it came from the cache; results are yielded in the order of the items.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Iterator, Optional, Sequence, TypeVar

from engine.core.jobs import Cancelled

T = TypeVar("T")


@dataclass(frozen=True)
class BatchItem(Generic[T]):
    item_id: str
    result: T
    from_cache: bool


def run_cached(item_ids: Sequence[str], *, lookup: Callable[[str], Optional[T]], compute: Callable[[int, str], T],
               keep: Callable[[str, T], None] = lambda item_id, result: None,
               should_stop: Callable[[], bool] = lambda: False,
               on_start: Callable[[int, str], None] = lambda done, item_id: None,
               on_done: Callable[[int, str, T, bool], None] = lambda done, item_id, result, cached: None,
               ) -> Iterator[BatchItem[T]]:
    """Yield one :class:`BatchItem` per item id (see the module's docstring). ``compute(index, item_id)``;
    ``on_start(done, item_id)`` before computing; ``on_done(done, item_id, result, from_cache)`` after, with
    ``done`` counting this item."""
    for done, item_id in enumerate(item_ids):
        if should_stop():
            return
        hit = lookup(item_id)
        if hit is not None:
            on_done(done + 1, item_id, hit, True)
            yield BatchItem(item_id, hit, True)
            continue
        on_start(done, item_id)
        try:
            result = compute(done, item_id)
        except Cancelled:
            return
        keep(item_id, result)
        on_done(done + 1, item_id, result, False)
        yield BatchItem(item_id, result, False)
