"""SQLite workspace: round trip, idempotent re-import, all-or-nothing, migrations, WAL."""
import sqlite3

import pytest

from conftest import BUNDLE, FORMATS
from engine.loading import load_paths
from engine.models import Rating
from engine.store import MIGRATIONS, SCHEMA_VERSION, Store, StoreError


def test_round_trip_preserves_everything(store):
    ds, _ = load_paths([BUNDLE], name="s")
    res = store.import_dataset(ds)
    assert res.created and not res.unchanged
    back = store.load_dataset("s")
    assert back.content_hash() == ds.content_hash()
    # NA survives as None (not 0, not missing)
    assert any(r.item == "synthesized" and r.value is None for r in back.ratings)
    info = store.list_datasets()[0]
    assert (info.n_cases, info.n_summaries, info.n_ratings, info.n_raters) == (
        len(ds.cases), len(ds.summaries), len(ds.ratings), 7)


def test_reimport_does_not_duplicate(store):
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    again, _ = load_paths([BUNDLE], name="s")
    res = store.import_dataset(again)
    assert res.unchanged
    assert len(store.list_datasets()) == 1
    assert store.list_datasets()[0].n_ratings == len(ds.ratings)


def test_same_name_other_content_needs_replace(store):
    a, _ = load_paths([FORMATS / "dialogue.csv"], name="x")
    b, _ = load_paths([FORMATS / "case_json"], name="x")
    store.import_dataset(a)
    with pytest.raises(StoreError, match="already exists with different content"):
        store.import_dataset(b)
    assert store.load_dataset("x").content_hash() == a.content_hash()
    store.import_dataset(b, replace=True)
    assert store.load_dataset("x").content_hash() == b.content_hash()


def test_add_ratings_into_existing_dataset_idempotent(store):
    cases, _ = load_paths([FORMATS / "case_json"], name="cj")
    store.import_dataset(cases)
    ctx = store.load_dataset("cj")
    ratings, _ = load_paths([FORMATS / "redcap_ratings.csv"], context=ctx)
    assert ratings.ratings and not ratings.cases
    store.import_dataset(ratings, into="cj")
    n = store.list_datasets()[0].n_ratings
    assert n == len(ratings.ratings)
    assert store.import_dataset(ratings, into="cj").unchanged
    assert store.list_datasets()[0].n_ratings == n


def test_failed_import_writes_nothing(store):
    """A write that fails half-way (here: a duplicate primary key slipped past validation) rolls back whole."""
    ds, _ = load_paths([BUNDLE], name="s")
    ds.ratings.append(Rating(ds.ratings[0].summary_id, ds.ratings[0].rater_id, ds.ratings[0].item, 3.0, "junior"))
    with pytest.raises(sqlite3.IntegrityError):
        store.import_dataset(ds)
    assert store.list_datasets() == []
    with store.connect() as con:
        for table in ("cases", "notes", "summaries", "ratings", "imports"):
            assert con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0


def test_delete_cascades(store):
    ds, _ = load_paths([BUNDLE], name="s")
    store.import_dataset(ds)
    store.delete_dataset("s")
    with store.connect() as con:
        for table in ("cases", "notes", "summaries", "ratings", "imports"):
            assert con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0
    with pytest.raises(StoreError, match="no dataset named"):
        store.load_dataset("s")


def test_wal_and_version(store):
    assert store.journal_mode() == "wal"
    assert store.schema_version() == SCHEMA_VERSION == MIGRATIONS[-1].version


def test_migration_from_v1_keeps_data(tmp_path):
    """A workspace created by the first schema is upgraded in place; its data and import history survive."""
    path = tmp_path / "old.sqlite"
    old = Store(path, migrate_to=1)
    assert old.schema_version() == 1
    ds, _ = load_paths([FORMATS / "dialogue.csv"], name="d")
    with old.connect() as con:  # what version 1 of the program wrote
        con.execute("INSERT INTO datasets (name, content_hash, source, created_at) VALUES (?,?,?,?)",
                    ("d", ds.content_hash(), "dialogue.csv", "2026-01-01T00:00:00+00:00"))
        did = con.execute("SELECT dataset_id FROM datasets").fetchone()[0]
        Store._insert(con, did, ds)
    new = Store(path)  # opening with the current program migrates
    assert new.schema_version() == SCHEMA_VERSION
    assert new.load_dataset("d").content_hash() == ds.content_hash()
    with new.connect() as con:
        assert con.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 1
    # and the migrated import log makes the re-import a no-op
    assert new.import_dataset(ds).unchanged


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.sqlite"
    Store(path)
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    con.close()
    with pytest.raises(StoreError, match="newer than this program"):
        Store(path)


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_text("this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a workspace database"):
        Store(path)
