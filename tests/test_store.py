"""SQLite workspace: round trip, idempotent re-import, all-or-nothing, migrations, WAL."""
import sqlite3

import pytest

from conftest import BUNDLE, FORMATS
from engine.data.loading import load_paths
from engine.core.models import Rating
from engine.data.store import MIGRATIONS, SCHEMA_VERSION, Store, StoreError


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
    assert store.journal_mode() == ("wal" if store.dialect == "sqlite" else "postgresql")
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


# ------------------------------------------------------------------------------------- busy and racing workspaces


def _hold_write_lock(path):
    """Another program holding the workspace's write lock (an open write transaction)."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    return con


def test_busy_workspace_raises_store_busy_after_the_timeout(tmp_path):
    from engine.data.store import StoreBusy

    path = tmp_path / "ws.sqlite"
    store = Store(path, busy_timeout=0.5)
    ds, _ = load_paths([FORMATS / "dialogue.csv"], name="d")
    other = _hold_write_lock(path)
    try:
        import time

        t0 = time.perf_counter()
        with pytest.raises(StoreBusy) as ei:
            store.import_dataset(ds)
        assert 0.4 < time.perf_counter() - t0 < 10
        msg = str(ei.value)
        assert f"the workspace {path} is busy" in msg and "another SumCheck process or program" in msg
        assert "Wait a moment and retry" in msg
        assert isinstance(ei.value, StoreError)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.import_dataset(ds).created  # and once the other program is done, it works


def test_busy_timeout_from_the_environment(tmp_path, monkeypatch):
    from engine.data.store import StoreBusy

    monkeypatch.setenv("SUMCHECK_BUSY_TIMEOUT", "0.3")
    path = tmp_path / "ws.sqlite"
    store = Store(path)
    assert store.busy_timeout == 0.3
    other = _hold_write_lock(path)
    try:
        with pytest.raises(StoreBusy):
            store.put_llm_step("k0", "s", "m", "v")
        with pytest.raises(StoreBusy):  # a fresh Store migrating an existing, locked file: nothing to migrate
            Store(path).put_llm_step("k", "s", "m", "v")
    finally:
        other.execute("ROLLBACK")
        other.close()
    monkeypatch.setenv("SUMCHECK_BUSY_TIMEOUT", "soon")
    with pytest.raises(StoreError, match="SUMCHECK_BUSY_TIMEOUT"):
        Store(path)


def test_busy_during_a_migration_is_store_busy(tmp_path):
    from engine.data.store import StoreBusy

    path = tmp_path / "old.sqlite"
    Store(path, migrate_to=1)
    other = _hold_write_lock(path)
    try:
        with pytest.raises(StoreBusy):
            Store(path, busy_timeout=0.3)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert Store(path).schema_version() == SCHEMA_VERSION


def _open_many(folder, n, barrier, errors):
    from pathlib import Path

    from engine.data.store import Store as S

    for i in range(n):
        barrier.wait()
        try:
            S(Path(folder) / f"ws{i}.sqlite")
        except Exception as exc:  # noqa: BLE001 - reported by the test
            errors.append(f"{type(exc).__name__}: {exc}")


def test_first_opens_racing_on_a_fresh_workspace(tmp_path):
    """Several processes create the same fresh workspace at the same instant, 25 times over: no "table datasets
    already exists", no "database is locked" from the WAL switch; every file ends fully migrated, in WAL."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    n, procs = 25, 3
    barrier = ctx.Barrier(procs)
    with ctx.Manager() as manager:
        errors = manager.list()
        ps = [ctx.Process(target=_open_many, args=(str(tmp_path), n, barrier, errors)) for _ in range(procs)]
        for p in ps:
            p.start()
        for p in ps:
            p.join(120)
        assert all(p.exitcode == 0 for p in ps)
        assert list(errors) == []
    for i in range(n):
        s = Store(tmp_path / f"ws{i}.sqlite")
        assert s.schema_version() == SCHEMA_VERSION and s.journal_mode() == "wal"
        with s.connect() as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_first_opens_racing_in_threads(tmp_path):
    import threading

    n, workers = 15, 4
    barrier = threading.Barrier(workers)
    errors: list = []
    ts = [threading.Thread(target=_open_many, args=(str(tmp_path), n, barrier, errors)) for _ in range(workers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert errors == []
    assert all(Store(tmp_path / f"ws{i}.sqlite").schema_version() == SCHEMA_VERSION for i in range(n))


def test_judge_results_are_written_all_or_nothing(store):
    """put_judge_results writes several results in one transaction."""
    ds, _ = load_paths([FORMATS / "dialogue.csv"], name="d")
    store.import_dataset(ds)

    class Bad:
        cache_key, summary_id, status, created_at = "k", "s", "scored", "now"

        class provenance:
            prompt_version, model_file = "v", "m"

        def to_json(self):
            return "{}"

    class Worse(Bad):
        cache_key = None  # NOT NULL violation on the second row

    with pytest.raises(sqlite3.IntegrityError):
        store.put_judge_results("d", [Bad(), Worse()])
    assert store.judge_results("d") == []


def test_content_hash_is_the_documented_formula():
    """The faster content hash gives exactly the bytes of the original asdict/json.dumps formula, so hashes stored
    by earlier versions still make re-imports no-ops."""
    import hashlib
    import json
    from dataclasses import asdict

    from engine.core.models import Case, Note, Summary, content_hash

    def original(cases, summaries, ratings):
        payload = {"cases": sorted(json.dumps(asdict(c), sort_keys=True) for c in cases),
                   "summaries": sorted(json.dumps(asdict(s), sort_keys=True) for s in summaries),
                   "ratings": sorted(json.dumps(asdict(r), sort_keys=True) for r in ratings)}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()

    ds, _ = load_paths([BUNDLE])
    assert content_hash(ds.cases, ds.summaries, ds.ratings) == original(ds.cases, ds.summaries, ds.ratings)
    odd = ("é\u2028\"\\\x00😀", "", "a" * 300)
    cases = [Case(o or "c", o, (Note("1", o, None, o, None), Note("2", "t", "2024", None, o))) for o in odd]
    summaries = [Summary("s" + o, "c", o, None, o, None) for o in odd]
    ratings = [Rating("s", o, "cited", v, o) for o in odd for v in (None, 1.0, 4, 0.5, float("nan"), float("inf"), True)]
    assert content_hash(cases, summaries, ratings) == original(cases, summaries, ratings)


def test_embedding_cache_round_trip_per_model_and_kind(store):
    import numpy as np

    vecs = {f"{i:064x}": np.arange(4, dtype="<f4") + i for i in range(1200)}  # more than one IN (...) chunk
    assert store.put_embeddings("m1#1", "sentence", [(k, 4, v.tobytes(), None) for k, v in vecs.items()]) == 1200
    got = store.get_embeddings("m1#1", "sentence", list(vecs) + ["f" * 64])
    assert len(got) == 1200 and "f" * 64 not in got
    assert all(np.array_equal(np.frombuffer(got[k][1], "<f4"), v) and got[k][0] == 4 for k, v in vecs.items())
    k0 = next(iter(vecs))
    assert store.get_embeddings("m2#1", "sentence", [k0]) == {}  # another model: another key
    assert store.get_embedding("m1#1", "token", k0) is None  # another kind too
    store.put_embedding("m1#1", "token", k0, 4, vecs[k0].tobytes(), '{"spans": [], "tokens": [], "n_windows": 1}')
    assert store.get_embedding("m1#1", "token", k0)[2].startswith('{"spans"')
    assert store.delete_embeddings("m2#1") == 0 and store.delete_embeddings("m1#1") == 1201


def test_embedding_cache_writes_are_all_or_nothing(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.put_embeddings("m", "sentence", [("a" * 64, 4, b"\0" * 16, None), ("b" * 64, 4, None, None)])
    assert store.get_embeddings("m", "sentence", ["a" * 64]) == {}


def test_migration_to_the_embedding_cache_keeps_data(tmp_path):
    path = tmp_path / "v5.sqlite"
    old = Store(path, migrate_to=5)
    ds, _ = load_paths([FORMATS / "dialogue.csv"], name="d")
    old.import_dataset(ds)
    new = Store(path)
    assert new.schema_version() == SCHEMA_VERSION >= 6
    assert new.load_dataset("d").content_hash() == ds.content_hash()
    new.put_embedding("m", "sentence", "c" * 64, 1, b"\0\0\0\0")
    assert new.get_embedding("m", "sentence", "c" * 64) == (1, b"\0\0\0\0", None)
