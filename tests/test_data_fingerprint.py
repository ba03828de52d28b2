"""The store's data fingerprint and the views' kept figures: any write by any window or command changes the key,
so a kept agreement report or stigma scan is computed again; nothing else does."""
from dataclasses import replace

from fakes import judge_result


def _sample(store):
    from engine.sample import SAMPLE_NAME, ensure_sample

    ensure_sample(store)
    return SAMPLE_NAME, store.load_dataset(SAMPLE_NAME)


def test_every_kind_of_write_changes_the_fingerprint_and_results_leave_the_content_key(store):
    from engine.data.reviews import save_review
    from engine.evidence.stigma.entries import add_clinician_entry

    name, ds = _sample(store)
    s = ds.summaries[0]
    seen = [store.data_fingerprint(name)]
    content = store.data_fingerprint(name, content_only=True)
    assert store.data_fingerprint(name) == seen[0]  # reading changes nothing
    store.put_judge_result(name, judge_result(s.summary_id, s.case_id, {"thorough": 3.0}))
    seen.append(store.data_fingerprint(name))
    store.put_evidence(name, "test-kind", "k1", s.summary_id, "complete", "{}")
    seen.append(store.data_fingerprint(name))
    save_review(store, name, s.summary_id, "dr-a", "spot_check", {"thorough": 4})
    seen.append(store.data_fingerprint(name))
    add_clinician_entry(store, "entitled", "disapproval")
    seen.append(store.data_fingerprint(name))
    assert len(set(seen)) == len(seen), seen
    assert store.data_fingerprint(name, content_only=True) == content
    gone = ds.summaries[-1].summary_id
    smaller = replace(ds, summaries=ds.summaries[:-1], ratings=[r for r in ds.ratings if r.summary_id != gone])
    store.import_dataset(smaller, name=name, replace=True, force=True)
    assert store.data_fingerprint(name, content_only=True) != content


def test_views_keep_a_figure_until_the_data_change(store):
    from engine.views.memo import forget, remembered

    name, ds = _sample(store)
    forget()
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert remembered(store, name, "count", "k", compute) == 1
    assert remembered(store, name, "count", "k", compute) == 1  # kept
    assert remembered(store, name, "count", "other key", compute) == 2
    s = ds.summaries[0]
    store.put_judge_result(name, judge_result(s.summary_id, s.case_id, {"thorough": 2.0}))
    assert remembered(store, name, "count", "k", compute) == 3  # a new result: computed again
    forget()


def test_a_figure_of_the_content_alone_outlives_new_results(store):
    """The stigma scan reads only the text and the lexicon: a judge result written meanwhile keeps it; a new
    import does not."""
    from engine.views.memo import forget, remembered

    name, ds = _sample(store)
    forget()
    calls = []
    compute = lambda: calls.append(1) or len(calls)  # noqa: E731
    assert remembered(store, name, "scan", "k", compute, content_only=True) == 1
    s = ds.summaries[0]
    store.put_judge_result(name, judge_result(s.summary_id, s.case_id, {"thorough": 2.0}))
    assert remembered(store, name, "scan", "k", compute, content_only=True) == 1
    gone = ds.summaries[-1].summary_id
    smaller = replace(ds, summaries=ds.summaries[:-1], ratings=[r for r in ds.ratings if r.summary_id != gone])
    store.import_dataset(smaller, name=name, replace=True, force=True)
    assert remembered(store, name, "scan", "k", compute, content_only=True) == 2
    forget()
