"""JSON read strictly: no duplicate keys, no lone surrogates, bounded nesting; problems named for the report.
"""
from __future__ import annotations

import json
import re
from typing import Optional


MAX_JSON_DEPTH = 32  # no input format nests deeper than a few levels
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonProblem(ValueError):
    """JSON that must not be trusted: malformed, a key twice in one object, too deep, or a lone surrogate."""

    def __init__(self, message: str, line: Optional[int] = None, hint: str = ""):
        super().__init__(message)
        self.line, self.hint = line, hint


class _DuplicateKey(Exception):
    def __init__(self, key: str):
        self.key = key


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def json_type(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(type(v), "a value")


def loads_strict(text: str) -> object:
    """``json.loads`` that refuses what a lenient reader would silently accept or crash on.

    Raises :class:`JsonProblem` (a ValueError) for malformed JSON, a key that appears twice in one object (JSON
    readers disagree on which one wins), nesting deeper than :data:`MAX_JSON_DEPTH` (or deep enough to exhaust
    the parser's recursion), over-long integer literals, and ``\\ud800``-style escapes that decode to lone
    surrogates (text no file or database can hold)."""
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise JsonProblem(f"key {short_text(exc.key)!r} appears twice in one JSON object",
                          hint="keep one of them: JSON readers disagree on which value wins") from None
    except json.JSONDecodeError as exc:
        msg = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg  # "Unterminated string starting at"
        raise JsonProblem(f"invalid JSON ({msg} at line {exc.lineno} column {exc.colno})", line=exc.lineno,
                          hint="the file is cut off or malformed; export it again") from None
    except RecursionError:
        raise JsonProblem(f"JSON nested far too deeply (more than {MAX_JSON_DEPTH} levels)",
                          hint="no SumCheck format nests deeper than a few levels; export the data again") from None
    except ValueError as exc:  # e.g. an integer literal with more than 4300 digits
        raise JsonProblem(f"invalid JSON ({short_text(str(exc), 120)})",
                          hint="the file holds a number or value no export writes; export it again") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH or _SURROGATE_ESCAPE.search(text):
        _check_tree(obj)
    return obj


def _check_tree(obj: object) -> None:
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if _LONE_SURROGATE.search(v):
                raise JsonProblem("text holds an invalid \\u escape (a lone UTF-16 surrogate such as \\ud800)",
                                  hint="the exporting program wrote broken text; export the data again as UTF-8")
            continue
        if not isinstance(v, (dict, list)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise JsonProblem(f"JSON nested more than {MAX_JSON_DEPTH} levels deep",
                              hint="no SumCheck format nests deeper than a few levels; export the data again")
        if isinstance(v, dict):
            stack.extend((k, depth) for k in v)
            stack.extend((x, depth + 1) for x in v.values())
        else:
            stack.extend((x, depth + 1) for x in v)


def short_text(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."
