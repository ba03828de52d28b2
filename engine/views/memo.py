"""Figures derived from a dataset kept while the data they come from stay the same: the views' one cache.

A view that computes something slow (the agreement statistics with their bootstrap, the stigmatizing-language scan
of every summary) asks :func:`remembered`; the value is kept under the workspace, the dataset, the store's
:meth:`engine.data._store_results.ResultStore.data_fingerprint` and the view's own key, so a result written by any
window or command makes the next read compute again, and nothing else does. Few entries are kept (the newest
:data:`MAX_ENTRIES`)."""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

MAX_ENTRIES = 16
_kept: "OrderedDict[tuple, Any]" = OrderedDict()
_lock = threading.Lock()


def remembered(store, name: str, what: str, key: Hashable, compute: Callable[[], Any],
               content_only: bool = False) -> Any:
    """``compute()`` for dataset ``name`` of ``store``, or the value kept from an earlier call with the same
    ``what`` and ``key`` while the dataset's data fingerprint is unchanged (``content_only``: a figure of the
    dataset's content alone, which results, reviews and calibrations do not change)."""
    k = (store.location, name, store.data_fingerprint(name, content_only=content_only), what, key)
    with _lock:
        if k in _kept:
            _kept.move_to_end(k)
            return _kept[k]
    value = compute()
    with _lock:
        _kept[k] = value
        while len(_kept) > MAX_ENTRIES:
            _kept.popitem(last=False)
    return value


def forget() -> None:
    """Drop every kept value (tests; a restored workspace)."""
    with _lock:
        _kept.clear()


def stigma_results(store, name: str, ds) -> list:
    """The stigmatizing-language detector's result for every summary of dataset ``name`` (the built-in lexicon
    plus the workspace's clinician entries), kept while the data and the entries are unchanged."""
    from engine.evidence.stigma import assess_dataset, workspace_entries

    entries = workspace_entries(store)
    return remembered(store, name, "stigma", repr(entries), lambda: assess_dataset(ds, extra_entries=entries),
                      content_only=True)  # the entries are in the key: a scan reads only the text and the lexicon
