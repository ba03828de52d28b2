"""Clinician spot checks and adjudication: schema migration, history-keeping edits, validation, statistics, CSV."""
import csv
import io

import pytest

from conftest import BUNDLE, FORMATS
from engine.data.loading import load_paths
from engine.data.reviews import (ADJUDICATED_GROUP, ADJUDICATED_RATER, ADJUDICATION, CSV_COLUMNS, SPOT_CHECK,
                                 current_reviews, dataset_with_reviews, export_reviews_csv, has_reviewed,
                                 history_rows, review_history, reviews_as_ratings, save_review)
from engine.data.store import SCHEMA_VERSION, Store, StoreError

FULL = {"cited": 4, "accurate": 5, "thorough": 3, "useful": 4, "organized": "4", "comprehensible": 5,
        "succinct": 4, "abstraction": "yes", "synthesized": 3, "stigmatizing_notes": "no",
        "stigmatizing_summary": 0}


@pytest.fixture
def sample(store):
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    return store, ds


def _sid(ds, i=0):
    return ds.summaries[i].summary_id


def test_migration_4_to_5_keeps_data(tmp_path):
    path = tmp_path / "v4.sqlite"
    old = Store(path, migrate_to=4)
    assert old.schema_version() == 4
    ds, _ = load_paths([BUNDLE], name="s")
    old.import_dataset(ds)
    old.put_evidence("s", "medomit", "k1", _sid(ds), "complete", "{}")
    with old.connect() as con:
        assert con.execute("SELECT name FROM sqlite_master WHERE name='reviews'").fetchone() is None
    new = Store(path)
    assert new.schema_version() == SCHEMA_VERSION >= 5
    assert new.load_dataset("s").content_hash() == ds.content_hash()
    assert new.evidence_results("s", "medomit") == {_sid(ds): "{}"}
    assert new.import_dataset(ds).unchanged
    assert current_reviews(new, "s") == []
    save_review(new, "s", _sid(ds), "Dr A", SPOT_CHECK, {"cited": 4})
    assert len(current_reviews(new, "s")) == 1


def test_save_full_review_and_read_back(sample):
    store, ds = sample
    sid = _sid(ds)
    written = save_review(store, "s", sid, " Dr A ", SPOT_CHECK, FULL, "looks fine")
    assert len(written) == len(FULL)
    cur = {r.item: r for r in current_reviews(store, "s", sid)}
    assert cur["cited"].value == 4.0 and cur["abstraction"].value == 1.0 and cur["stigmatizing_summary"].value == 0.0
    assert all(r.reviewer == "Dr A" and r.comment == "looks fine" and r.created_at for r in cur.values())
    assert [r.item for r in current_reviews(store, "s", sid)][:3] == ["cited", "accurate", "thorough"]
    assert has_reviewed(store, "s", sid, "Dr A") and has_reviewed(store, "s", sid, "Dr A", SPOT_CHECK)
    assert not has_reviewed(store, "s", sid, "Dr A", ADJUDICATION)
    assert not has_reviewed(store, "s", sid, "Dr B") and not has_reviewed(store, "s", sid, "")
    assert not has_reviewed(store, "s", _sid(ds, 1), "Dr A")


def test_edit_keeps_history(sample):
    store, ds = sample
    sid = _sid(ds)
    first = save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 2, "accurate": 4}, {"cited": "two wrong"})
    # identical resubmission writes nothing
    assert save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 2, "accurate": 4}, {"cited": "two wrong"}) == []
    second = save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 3, "accurate": 4}, {"cited": "on reflection"})
    assert [r.item for r in second] == ["cited"]  # accurate unchanged: no new row
    hist = review_history(store, "s", sid)
    assert len(hist) == 3
    old_cited = next(r for r in hist if r.review_id == first[0].review_id)
    assert old_cited.value == 2.0 and old_cited.comment == "two wrong"
    assert old_cited.superseded_by == second[0].review_id and not old_cited.is_current
    cur = {r.item: r for r in current_reviews(store, "s", sid)}
    assert cur["cited"].value == 3.0 and cur["cited"].comment == "on reflection" and cur["accurate"].value == 4.0
    # a third edit chains: 2 -> 3 -> 5
    third = save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 5})
    hist = {r.review_id: r for r in review_history(store, "s", sid)}
    assert hist[second[0].review_id].superseded_by == third[0].review_id
    assert sum(r.is_current for r in hist.values() if r.item == "cited") == 1
    # the database itself refuses a second current row for the same reviewer x kind x item
    with store.connect() as con, pytest.raises(Exception, match="UNIQUE|reviews_one_current"):
        con.execute("INSERT INTO reviews (review_id, dataset_id, summary_id, reviewer, kind, item, value, comment, "
                    "created_at) SELECT (SELECT MAX(review_id) + 1 FROM reviews), dataset_id, summary_id, reviewer, "
                    "kind, item, 1, '', 'now' FROM reviews WHERE superseded_by IS NULL LIMIT 1")
    rows = history_rows(list(hist.values()))
    assert rows[0]["status"] == "current" and any(r["status"].startswith("replaced by #") for r in rows)


def test_spot_check_and_adjudication_are_separate(sample):
    store, ds = sample
    sid = _sid(ds)
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 2})
    save_review(store, "s", sid, "Dr A", ADJUDICATION, {"cited": 4})
    cur = current_reviews(store, "s", sid)
    assert {(r.kind, r.value) for r in cur} == {(SPOT_CHECK, 2.0), (ADJUDICATION, 4.0)}


@pytest.mark.parametrize("values, message", [
    ({"cited": 7}, r"summary 'S'.*'cited'.*outside the scale"),
    ({"cited": "NA"}, r"'cited'.*NA is not allowed"),
    ({"cited": None}, r"'cited'.*a value is required"),
    ({"abstraction": "maybe"}, r"'abstraction'.*not a yes/no value"),
    ({"bogus": 3}, r"unknown PDSQI-9 item 'bogus'"),
    ({"abstraction": "no", "synthesized": 3}, r"Synthesized must be NA when Abstraction needed is 'no'"),
    ({"abstraction": "yes", "synthesized": "NA"}, r"Synthesized needs a score 1-5"),
    ({}, r"no item was scored"),
])
def test_invalid_values_rejected_with_clear_message(sample, values, message):
    store, ds = sample
    sid = _sid(ds)
    with pytest.raises(ValueError, match=message.replace("'S'", f"'{sid}'")):
        save_review(store, "s", sid, "Dr A", SPOT_CHECK, {**{"accurate": 5}, **values} if values else values)
    assert review_history(store, "s", sid) == []  # all-or-nothing: the valid 'accurate' was not written either


def test_consistency_checked_against_current_review(sample):
    store, ds = sample
    sid = _sid(ds)
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"abstraction": "no", "synthesized": "NA"})
    with pytest.raises(ValueError, match="must be NA"):
        save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"synthesized": 4})
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"abstraction": "yes", "synthesized": 4})
    assert {r.item: r.value for r in current_reviews(store, "s", sid)} == {"abstraction": 1.0, "synthesized": 4.0}


def test_unknown_summary_reviewer_kind_dataset_rejected(sample):
    store, ds = sample
    with pytest.raises(ValueError, match="summary 'no-such-summary' is not in dataset 's'"):
        save_review(store, "s", "no-such-summary", "Dr A", SPOT_CHECK, {"cited": 3})
    with pytest.raises(ValueError, match="summary 'no-such-summary' is not in dataset 's'"):
        review_history(store, "s", "no-such-summary")
    with pytest.raises(ValueError, match="reviewer name is required"):
        save_review(store, "s", _sid(ds), "  ", SPOT_CHECK, {"cited": 3})
    with pytest.raises(ValueError, match="unknown review kind 'final'"):
        save_review(store, "s", _sid(ds), "Dr A", "final", {"cited": 3})
    rater = ds.ratings[0].rater_id
    with pytest.raises(ValueError, match=f"'{rater}' is already a rater id"):
        save_review(store, "s", _sid(ds), rater, SPOT_CHECK, {"cited": 3})
    with pytest.raises(ValueError, match="reserved"):
        save_review(store, "s", _sid(ds), ADJUDICATED_RATER, SPOT_CHECK, {"cited": 3})
    with pytest.raises(ValueError, match="comment.*without a value: accurate"):
        save_review(store, "s", _sid(ds), "Dr A", SPOT_CHECK, {"cited": 3}, {"accurate": "x"})
    with pytest.raises(StoreError, match="no dataset named 'nope'"):
        save_review(store, "nope", _sid(ds), "Dr A", SPOT_CHECK, {"cited": 3})
    assert current_reviews(store, "s") == []


def test_reviews_as_ratings_only_current(sample):
    store, ds = sample
    s0, s1 = _sid(ds, 0), _sid(ds, 1)
    save_review(store, "s", s0, "Dr A", SPOT_CHECK, {"cited": 2, "synthesized": 3, "abstraction": "yes"})
    save_review(store, "s", s0, "Dr A", SPOT_CHECK, {"cited": 5})
    save_review(store, "s", s1, "Dr B", SPOT_CHECK, {"cited": 1})
    save_review(store, "s", s0, "Dr C", ADJUDICATION, {"cited": 3})
    save_review(store, "s", s0, "Dr D", ADJUDICATION, {"cited": 4, "accurate": 5})  # later adjudicator wins
    got = {(r.summary_id, r.rater_id, r.item): (r.value, r.rater_group) for r in reviews_as_ratings(store, "s")}
    assert got == {
        (s0, "Dr A", "abstraction"): (1.0, "spot-check"),
        (s0, "Dr A", "cited"): (5.0, "spot-check"),
        (s0, "Dr A", "synthesized"): (3.0, "spot-check"),
        (s1, "Dr B", "cited"): (1.0, "spot-check"),
        (s0, ADJUDICATED_RATER, "cited"): (4.0, ADJUDICATED_GROUP),
        (s0, ADJUDICATED_RATER, "accurate"): (5.0, ADJUDICATED_GROUP),
    }
    assert {r.summary_id for r in reviews_as_ratings(store, "s", s1)} == {s1}


def test_dataset_with_reviews(sample):
    store, ds = sample
    sid = _sid(ds)
    plain = store.load_dataset("s")
    assert dataset_with_reviews(store, "s").ratings == plain.ratings  # no review yet: same ratings
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 2})
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 3})
    save_review(store, "s", sid, "Dr C", ADJUDICATION, {"cited": 4, "abstraction": "no", "synthesized": "NA"})
    merged = dataset_with_reviews(store, "s")
    assert len(merged.ratings) == len(plain.ratings) + 4
    extra = [r for r in merged.ratings if r.rater_group in ("spot-check", "adjudicated")]
    assert {(r.rater_id, r.item, r.value) for r in extra} == {
        ("Dr A", "cited", 3.0), ("adjudicated", "cited", 4.0), ("adjudicated", "abstraction", 0.0),
        ("adjudicated", "synthesized", None)}
    assert len({(r.summary_id, r.rater_id, r.item) for r in merged.ratings}) == len(merged.ratings)
    assert merged.cases == plain.cases and merged.summaries == plain.summaries
    assert store.load_dataset("s").ratings == plain.ratings  # the stored dataset itself is unchanged


def test_adjudicated_score_is_the_reference_not_one_more_rater(sample):
    """The human median of an adjudicated item is the adjudicated score; the adjudication is never averaged in."""
    from engine.data.ratings import display_table, medians

    store, ds = sample
    sid = _sid(ds)
    plain = medians(store.load_dataset("s").ratings_for(sid))
    save_review(store, "s", sid, "Dr C", ADJUDICATION, {"cited": 1, "abstraction": "no", "synthesized": "NA"})
    merged = dataset_with_reviews(store, "s")
    got = medians(merged.ratings_for(sid))
    assert got["cited"] == 1.0 and got["abstraction"] == 0.0 and got["synthesized"] is None
    assert {k: v for k, v in got.items() if k not in ("cited", "abstraction", "synthesized")} == \
        {k: v for k, v in plain.items() if k not in ("cited", "abstraction", "synthesized")}
    # a spot check is a rater: it moves the median of an item that is not adjudicated
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 5, "accurate": 1})
    again = medians(dataset_with_reviews(store, "s").ratings_for(sid))
    assert again["cited"] == 1.0  # still the adjudicated score
    rows = display_table(dataset_with_reviews(store, "s").ratings_for(sid))
    assert rows[-1]["Cited"] == "1 (adjudicated)" and rows[-1]["Abstraction needed"] == "no (adjudicated)"
    assert rows[-1]["Synthesized"] == "NA (adjudicated)"


def test_dataset_with_reviews_renames_clash_with_later_import(tmp_path):
    store = Store(tmp_path / "w.sqlite")
    cases, _ = load_paths([FORMATS / "case_json"], name="cj")
    store.import_dataset(cases)
    ctx = store.load_dataset("cj")
    ratings, _ = load_paths([FORMATS / "redcap_ratings.csv"], context=ctx)
    rater = ratings.ratings[0].rater_id
    save_review(store, "cj", ratings.ratings[0].summary_id, rater, SPOT_CHECK, {"cited": 3})  # no clash yet
    store.import_dataset(ratings, into="cj")
    merged = dataset_with_reviews(store, "cj")
    assert any(r.rater_id == f"{rater} (review)" and r.rater_group == "spot-check" for r in merged.ratings)
    assert len({(r.summary_id, r.rater_id, r.item) for r in merged.ratings}) == len(merged.ratings)


def test_export_csv_has_who_when_and_history(sample):
    store, ds = sample
    sid = _sid(ds)
    assert export_reviews_csv(store, "s").strip().split(",") == list(CSV_COLUMNS)
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 2, "abstraction": "no", "synthesized": "NA"},
                "first, with a comma")
    save_review(store, "s", sid, "Dr A", SPOT_CHECK, {"cited": 4}, {"cited": "second look"})
    save_review(store, "s", sid, "Dr Z", ADJUDICATION, {"cited": 3})
    rows = list(csv.DictReader(io.StringIO(export_reviews_csv(store, "s"))))
    assert len(rows) == 5
    assert {r["reviewer"] for r in rows} == {"Dr A", "Dr Z"}
    assert all(r["created_at"] and r["dataset"] == "s" and r["case_id"] == ds.summaries[0].case_id for r in rows)
    cited = [r for r in rows if r["item"] == "cited" and r["reviewer"] == "Dr A"]
    assert [(r["value"], r["status"], r["comment"]) for r in cited] == [
        ("2", "superseded", "first, with a comma"), ("4", "current", "second look")]
    assert cited[0]["superseded_by"] == cited[1]["review_id"]
    by_item = {r["item"]: r for r in rows if r["reviewer"] == "Dr A"}
    assert by_item["synthesized"]["value"] == "NA" and by_item["abstraction"]["value_label"] == "no"
    assert by_item["abstraction"]["value"] == "no"  # yes/no items are exported as yes/no text, never 0/1
    assert next(r for r in rows if r["reviewer"] == "Dr Z")["kind"] == ADJUDICATION


def test_delete_dataset_cascades_to_reviews(sample):
    store, ds = sample
    save_review(store, "s", _sid(ds), "Dr A", SPOT_CHECK, {"cited": 2})
    save_review(store, "s", _sid(ds), "Dr A", SPOT_CHECK, {"cited": 3})
    store.delete_dataset("s")
    with store.connect() as con:
        assert con.execute("SELECT COUNT(*) FROM reviews").fetchone()[0] == 0
