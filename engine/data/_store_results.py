"""The workspace's results and caches, part of :class:`engine.data.store.Store`: judge results (one per summary
and configuration, newest first), calibrations, model file hashes, the LLM step cache, evidence results and the
embedding cache. The methods use the host store's connections (``connect``, ``transaction``) and dataset ids.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from engine.core import now_iso


class ResultStore:
    """Judge and evidence results, calibrations and caches (mixed into the workspace store)."""

    # -- judge results -----------------------------------------------------------------------------
    def get_judge_result(self, dataset: str, cache_key: str, summary_id: Optional[str] = None,
                         case_id: Optional[str] = None) -> Optional[str]:
        """The stored result with this cache key. With ``summary_id``: that summary's own row, else the row of a
        summary with identical content, relabelled with ``summary_id`` (and ``case_id``) and stored under it, so every
        summary keeps its own result (computed once)."""
        with self.connect() as con:
            did = self.dataset_id(con, dataset)
            row = con.execute("SELECT summary_id, result FROM judge_results WHERE dataset_id=? AND cache_key=? "
                              "ORDER BY summary_id = ? DESC, created_at DESC LIMIT 1",
                              (did, cache_key, summary_id)).fetchone()
        if row is None:
            return None
        if summary_id is None or row[0] == summary_id:
            return row[1]
        d = json.loads(row[1])
        d["summary_id"] = summary_id
        if case_id is not None:
            d["case_id"] = case_id
        text = json.dumps(d)
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO judge_results SELECT dataset_id, cache_key, ?, status, prompt_version, "
                        "model_file, created_at, ? FROM judge_results WHERE dataset_id=? AND cache_key=? AND "
                        "summary_id=?", (summary_id, text, did, cache_key, row[0]))
        return text

    def put_judge_result(self, dataset: str, result) -> None:
        """Store a :class:`engine.judge.runner.JudgeResult` (replacing one with the same cache key and summary id: summaries
        with identical content keep a row each)."""
        self.put_judge_results(dataset, [result])

    def put_judge_results(self, dataset: str, results) -> int:
        """Store several judge results in one transaction (all or nothing); returns how many."""
        rows = [(r.cache_key, r.summary_id, r.status, r.provenance.prompt_version, r.provenance.model_file,
                 r.created_at, r.to_json()) for r in results]
        with self.transaction() as con:
            did = self.dataset_id(con, dataset)
            con.executemany("INSERT OR REPLACE INTO judge_results VALUES (?,?,?,?,?,?,?,?)",
                            [(did, *row) for row in rows])
        return len(rows)

    def judge_results(self, dataset: str, latest_only: bool = True) -> list[str]:
        """Stored results (JSON), newest first; with ``latest_only`` one per summary."""
        with self.connect() as con:
            did = self.dataset_id(con, dataset)
            rows = con.execute("SELECT summary_id, result FROM judge_results WHERE dataset_id=? "
                               "ORDER BY created_at DESC, rowid DESC", (did,)).fetchall()
        out, seen = [], set()
        for sid, res in rows:
            if latest_only and sid in seen:
                continue
            seen.add(sid)
            out.append(res)
        return out

    # -- calibrations ---------------------------------------------------------------------------------
    def put_calibration(self, cal) -> int:
        """Store an :class:`engine.judge.calibration.Calibration` as the next version for its dataset and judge
        configuration; returns that version (1, 2, …)."""
        with self.transaction() as con:
            did = self.dataset_id(con, cal.dataset)
            row = con.execute("SELECT COALESCE(MAX(version), 0) FROM calibrations WHERE dataset_id=? AND "
                              "config_key=?", (did, cal.config_key)).fetchone()
            cal.version = int(row[0]) + 1
            con.execute("INSERT INTO calibrations VALUES (?,?,?,?,?,?)",
                        (did, cal.config_key, cal.version, cal.kind, cal.created_at, cal.to_json()))
        return cal.version

    def calibrations(self, dataset: str, config_key: Optional[str] = None) -> list[str]:
        """Stored calibrations (JSON) of a dataset, newest version first; only ``config_key``'s when given."""
        with self.connect() as con:
            did = self.dataset_id(con, dataset)
            sql = "SELECT payload FROM calibrations WHERE dataset_id=?"
            args: tuple = (did,)
            if config_key is not None:
                sql, args = sql + " AND config_key=?", (did, config_key)
            return [r[0] for r in con.execute(sql + " ORDER BY config_key, version DESC", args).fetchall()]

    def cached_model_hash(self, path: Path, compute) -> str:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime)
        with self.connect() as con:
            row = con.execute("SELECT sha256 FROM model_hashes WHERE path=? AND size=? AND mtime=?", key).fetchone()
        if row:
            return row[0]
        digest = compute(path)
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO model_hashes VALUES (?,?,?,?)", (*key, digest))
        return digest

    # -- LLM step cache and evidence results -------------------------------------------------------
    def get_llm_step(self, key: str) -> Optional[str]:
        with self.connect() as con:
            row = con.execute("SELECT value FROM llm_steps WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def put_llm_step(self, key: str, step: str, model_id: str, value: str) -> None:
        with self.transaction() as con:
            con.execute("INSERT OR REPLACE INTO llm_steps VALUES (?,?,?,?,?)", (key, step, model_id, now_iso(), value))

    def put_evidence(self, dataset: str, method: str, cache_key: str, summary_id: str, status: str,
                     result_json: str) -> None:
        with self.transaction() as con:
            did = self.dataset_id(con, dataset)
            con.execute("INSERT OR REPLACE INTO evidence_results VALUES (?,?,?,?,?,?,?)",
                        (did, method, cache_key, summary_id, status, now_iso(), result_json))

    def get_evidence(self, dataset: str, method: str, cache_key: str, summary_id: Optional[str] = None
                     ) -> Optional[str]:
        """The stored evidence with this cache key. With ``summary_id``: that summary's own row, else the row of a
        summary with identical content, relabelled and stored under ``summary_id`` (computed once, kept for each)."""
        with self.connect() as con:
            did = self.dataset_id(con, dataset)
            row = con.execute("SELECT summary_id, result FROM evidence_results WHERE dataset_id=? AND method=? AND "
                              "cache_key=? ORDER BY summary_id = ? DESC, created_at DESC LIMIT 1",
                              (did, method, cache_key, summary_id)).fetchone()
        if row is None:
            return None
        if summary_id is None or row[0] == summary_id:
            return row[1]
        try:
            d = json.loads(row[1])
        except ValueError:
            return row[1]
        if isinstance(d, dict) and "summary_id" in d:
            d["summary_id"] = summary_id
        text = json.dumps(d)
        with self.transaction() as con:
            con.execute("INSERT OR IGNORE INTO evidence_results SELECT dataset_id, method, cache_key, ?, status, "
                        "created_at, ? FROM evidence_results WHERE dataset_id=? AND method=? AND cache_key=? AND "
                        "summary_id=?", (summary_id, text, did, method, cache_key, row[0]))
        return text

    def evidence_results(self, dataset: str, method: str) -> dict[str, str]:
        """Latest stored result per summary for a method: summary id -> JSON."""
        with self.connect() as con:
            did = self.dataset_id(con, dataset)
            rows = con.execute("SELECT summary_id, result FROM evidence_results WHERE dataset_id=? AND method=? "
                               "ORDER BY created_at, rowid", (did, method)).fetchall()
        return {sid: res for sid, res in rows}

    # -- embedding cache -------------------------------------------------------------------------------
    # Vectors are little-endian float32 bytes (``dim`` per row; a token entry holds n x dim); ``meta`` is JSON
    # (token entries: spans, tokens, n_windows). ``model`` names the embedding model (and its cache format),
    # so another model never reads these vectors.
    def get_embeddings(self, model: str, kind: str, sha256s) -> dict[str, tuple[int, bytes, Optional[str]]]:
        """Stored entries among ``sha256s``: sha256 -> (dim, data, meta). Absent hashes are left out."""
        keys = list(dict.fromkeys(sha256s))
        out: dict[str, tuple[int, bytes, Optional[str]]] = {}
        if not keys:
            return out
        with self.connect() as con:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                rows = con.execute(f"SELECT sha256, dim, data, meta FROM embedding_cache WHERE model=? AND kind=? "
                                   f"AND sha256 IN ({','.join('?' * len(chunk))})", (model, kind, *chunk))
                for sha, dim, data, meta in rows:
                    out[sha] = (int(dim), bytes(data), meta)
        return out

    def get_embedding(self, model: str, kind: str, sha256: str) -> Optional[tuple[int, bytes, Optional[str]]]:
        return self.get_embeddings(model, kind, [sha256]).get(sha256)

    def put_embeddings(self, model: str, kind: str, rows) -> int:
        """Store (sha256, dim, data, meta) rows in one transaction (replacing equal keys); returns how many."""
        now = now_iso()
        rows = [(model, kind, sha, int(dim), data, meta, now) for sha, dim, data, meta in rows]
        if rows:
            with self.transaction() as con:
                con.executemany("INSERT OR REPLACE INTO embedding_cache VALUES (?,?,?,?,?,?,?)", rows)
        return len(rows)

    def put_embedding(self, model: str, kind: str, sha256: str, dim: int, data: bytes,
                      meta: Optional[str] = None) -> None:
        self.put_embeddings(model, kind, [(sha256, dim, data, meta)])

    def delete_embeddings(self, model: Optional[str] = None) -> int:
        """Drop cached embeddings (of one model, or all); returns how many entries."""
        with self.transaction() as con:
            cur = con.execute("DELETE FROM embedding_cache" + (" WHERE model=?" if model is not None else ""),
                              () if model is None else (model,))
        return cur.rowcount

    # -- what a cache of derived figures is keyed by ------------------------------------------------------------
    FINGERPRINT_TABLES = ("imports", "judge_results", "evidence_results", "reviews", "calibrations")

    def data_fingerprint(self, dataset: str, content_only: bool = False) -> str:
        """A short key that changes whenever the dataset's content, its judge or evidence results, reviews or
        calibrations, or the workspace's stigmatizing-language entries change, whichever window or command wrote
        them: one aggregate query per table (counts and newest times), never the rows themselves.
        ``content_only``: the key of the dataset's content alone (its imports)."""
        import hashlib

        parts: list = []
        with self.connect() as con:
            did = self.dataset_id(con, dataset)
            parts.append(tuple(con.execute("SELECT content_hash, created_at FROM datasets WHERE dataset_id = ?",
                                           (did,)).fetchone()))
            for table in self.FINGERPRINT_TABLES[:1] if content_only else self.FINGERPRINT_TABLES:
                when = "imported_at" if table == "imports" else "created_at"
                parts.append(tuple(con.execute(f"SELECT COUNT(*), MAX({when}) FROM {table} WHERE dataset_id = ?",
                                               (did,)).fetchone()))
            if not content_only:
                parts.append(tuple(con.execute("SELECT COUNT(*), MAX(created_at), MAX(deactivated_at), SUM(active) "
                                               "FROM stigma_entries").fetchone()))
        return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:16]
