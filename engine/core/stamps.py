"""Time stamps and content keys, written one way everywhere.

* :func:`now_iso`: the current UTC time as ISO 8601 to the second ("2026-01-01T00:00:00+00:00"), the form every
  stored row and result carries;
* :func:`json_key`: the sha256 (hex) of a JSON-serialisable payload dumped with sorted keys — the key under which
  results are stored and reused. Keys written by earlier versions stay valid: the bytes hashed are the same.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def json_key(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()
