"""Copy a whole workspace between stores (SQLite file ⇄ PostgreSQL server), verified table by table.

:func:`copy_workspace` writes every table of the source into the target in one transaction of the target, in an
order that satisfies the foreign keys, then compares each table's row count and content hash (:func:`table_digest`)
on both sides. A target that holds anything is refused unless ``force`` (then its rows are replaced, in the same
transaction). Identity counters of a PostgreSQL target are moved past the copied ids, so new rows never collide.
Both stores are opened at the current schema version first, so the tables are the same on both sides.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from engine.data.schema import StoreError

# parents before children (foreign keys); a table not named here is copied after these
TABLE_ORDER = ("datasets", "cases", "notes", "summaries", "ratings", "imports", "judge_results", "model_hashes",
               "llm_steps", "evidence_results", "reviews", "embedding_cache", "stigma_entries", "calibrations", "assignments")
INTERNAL = ("sumcheck_schema",)


@dataclass(frozen=True)
class TableCheck:
    table: str
    rows_source: int
    rows_target: int
    digest_source: str
    digest_target: str

    @property
    def ok(self) -> bool:
        return self.rows_source == self.rows_target and self.digest_source == self.digest_target


@dataclass(frozen=True)
class CopyReport:
    source: str
    target: str
    tables: tuple[TableCheck, ...]
    replaced: bool  # the target held rows that were replaced (force)

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def rows(self) -> int:
        return sum(t.rows_target for t in self.tables)


def tables(store) -> list[str]:
    """The workspace's tables in copying order (parents first)."""
    if store.pg is not None:
        with store.connect() as con:
            names = set(store.pg.catalogue(con.raw).columns)
    else:
        with store.connect() as con:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                               "AND name NOT LIKE 'sqlite_%'").fetchall()}
    names -= set(INTERNAL)
    return [t for t in TABLE_ORDER if t in names] + sorted(names - set(TABLE_ORDER))


def columns(con, table: str) -> list[str]:
    return [r[1] for r in con.execute(f"PRAGMA table_info({table})").fetchall()]


def _norm(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"b": hashlib.sha256(bytes(v)).hexdigest()}
    if isinstance(v, float):
        return {"f": repr(v)}
    if isinstance(v, bool):
        return int(v)
    return v


def table_digest(con, table: str, cols: list[str]) -> tuple[int, str]:
    """(row count, sha256 of the rows) — the rows normalised (floats by repr, bytes by hash) and sorted in Python,
    so the two stores' collations and storage types do not matter."""
    rows = [json.dumps([_norm(v) for v in r], sort_keys=True, default=str)
            for r in con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()]
    rows.sort()
    h = hashlib.sha256()
    for r in rows:
        h.update(r.encode("utf-8"))
        h.update(b"\n")
    return len(rows), h.hexdigest()


def is_empty(store) -> bool:
    names = tables(store)
    with store.connect() as con:
        return all(con.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() is None for t in names)


def copy_workspace(src, dst, force: bool = False) -> CopyReport:
    """Copy every row of the workspace ``src`` (a Store) into ``dst`` (a Store) and verify it (see module doc)."""
    if src.location == dst.location and src.dialect == dst.dialect:
        raise StoreError(f"the source and the target are the same workspace ({src.location})")
    if dst.read_only:
        raise dst.read_only_error()
    if src.schema_version() != dst.schema_version():
        raise StoreError(f"the workspaces have different schema versions ({src.schema_version()} and "
                         f"{dst.schema_version()}); open both with this program first")
    names, old = tables(src), tables(dst)
    replaced = not is_empty(dst)
    if replaced and not force:
        raise StoreError(f"the target workspace {dst.location} is not empty; nothing was copied. Copy into an empty "
                         "workspace, or pass --force to replace everything in it")
    with src.connect() as s:
        data = {}
        for t in names:
            cols = columns(s, t)
            data[t] = (cols, [tuple(r) for r in s.execute(f"SELECT {', '.join(cols)} FROM {t}").fetchall()])
    with dst.transaction() as d:
        if replaced:
            for t in reversed(old):
                d.execute(f"DELETE FROM {t}")
        for t in names:
            cols, rows = data[t]
            if rows:
                d.executemany(f"INSERT INTO {t} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)
        if dst.pg is not None:
            for table, col in dst.pg.catalogue(d.raw).identity.items():
                d.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{col}'), "
                          f"COALESCE(MAX({col}), 0) + 1, false) FROM {table}")
    checks = []
    with src.connect() as s, dst.connect() as d:
        for t in names:
            cols = data[t][0]
            n1, h1 = table_digest(s, t, cols)
            n2, h2 = table_digest(d, t, cols)
            checks.append(TableCheck(t, n1, n2, h1, h2))
    report = CopyReport(src.location, dst.location, tuple(checks), replaced)
    if not report.ok:
        bad = ", ".join(f"{c.table} ({c.rows_source} → {c.rows_target} rows)" for c in checks if not c.ok)
        raise StoreError(f"the copy into {dst.location} does not match its source in: {bad}")
    return report
