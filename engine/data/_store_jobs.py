"""Long work recorded in the workspace while it runs, part of :class:`engine.data.store.Store`.

One row per run: what (kind, dataset, summaries, the work's key), who runs it (a browser session or a command, on
which host and process), since when, its last heartbeat (seconds since the epoch, written about once a second by
the running process), its state and progress (a JSON object), why it stopped, and whether someone asked it to
cancel. What the rows mean — when a running row is really running — belongs to :mod:`engine.data.job_log`.
"""
from __future__ import annotations

import json
from typing import Optional, Sequence

from engine.core import now_iso

JOB_COLUMNS = ("job_id", "dataset", "kind", "work_key", "summary_ids", "label", "owner", "host", "pid", "started_at",
               "heartbeat", "state", "progress", "reason", "cancel_requested", "ended_at")


class JobStore:
    """Job rows (mixed into the workspace store); rows come back as dicts of :data:`JOB_COLUMNS`."""

    def add_job(self, row: dict) -> None:
        values = [row[c] if c not in ("summary_ids", "progress") else json.dumps(row[c]) for c in JOB_COLUMNS]
        with self.transaction() as con:
            con.execute(f"INSERT INTO jobs ({', '.join(JOB_COLUMNS)}) VALUES ({', '.join('?' * len(JOB_COLUMNS))})",
                        values)

    def beat_job(self, job_id: str, heartbeat: float, progress: dict, state: Optional[str] = None,
                 reason: str = "") -> bool:
        """Write a heartbeat and the progress (and, when given, the final state and why); returns whether a
        cancel was asked for."""
        with self.transaction() as con:
            if state is None:
                con.execute("UPDATE jobs SET heartbeat=?, progress=? WHERE job_id=?",
                            (heartbeat, json.dumps(progress), job_id))
            else:
                con.execute("UPDATE jobs SET heartbeat=?, progress=?, state=?, reason=?, ended_at=? WHERE job_id=?",
                            (heartbeat, json.dumps(progress), state, reason, now_iso(), job_id))
            row = con.execute("SELECT cancel_requested FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return bool(row and row[0])

    def end_job(self, job_id: str, state: str, reason: str) -> None:
        """Mark a row ended without its process (it was found dead)."""
        with self.transaction() as con:
            con.execute("UPDATE jobs SET state=?, reason=?, ended_at=? WHERE job_id=? AND state='running'",
                        (state, reason, now_iso(), job_id))

    def ask_job_cancel(self, job_id: str) -> None:
        with self.transaction() as con:
            con.execute("UPDATE jobs SET cancel_requested=1 WHERE job_id=?", (job_id,))

    def job_rows(self, dataset: Optional[str] = None, states: Sequence[str] = (), limit: int = 50) -> list[dict]:
        """Rows newest first, of one dataset (None: every dataset) and of these states (empty: every state)."""
        where, args = [], []
        if dataset is not None:
            where.append("dataset=?")
            args.append(dataset)
        if states:
            where.append(f"state IN ({', '.join('?' * len(states))})")
            args += list(states)
        sql = (f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs" + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY started_at DESC, job_id LIMIT ?")
        with self.connect() as con:
            rows = con.execute(sql, [*args, int(limit)]).fetchall()
        out = []
        for r in rows:
            d = {c: r[i] for i, c in enumerate(JOB_COLUMNS)}
            d["summary_ids"], d["progress"] = json.loads(d["summary_ids"]), json.loads(d["progress"])
            out.append(d)
        return out
