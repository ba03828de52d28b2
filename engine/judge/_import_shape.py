"""The shape of an imported judge result line: pydantic models of the result dataclasses (engine.judge.results) with
every key, type, range and length a line may have, and each problem turned into ``(field, message)`` with the field
named as the import report names it (``samples[0].values.cited``, ``provenance.params.seed``).

What needs the dataset or other fields of the line (the summary exists, the seeds follow the parameters, the medians
are the samples' medians, the cache key) is checked by engine.judge.import_check once the shape is right.
"""
import math
from datetime import datetime
from typing import Annotated, Any, Optional

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, StringConstraints, ValidationError,
                      WrapValidator, create_model, model_validator)
from pydantic_core import PydanticCustomError

from engine.core import ITEMS, Item, Scale
from engine.data import json_type
from engine.judge.prompt import DEFAULT_CITATION_FORM
from engine.judge.results import STATUS_REFUSED, STATUS_SCORED, STATUS_UNSCORED, JudgeParams

MAX_IMPORT_TEXT_CHARS = 4_000  # reason, a sample's error or warning
MAX_IMPORT_EXPLANATION_CHARS = 2_000  # one item's explanation (the prompt asks for 160)
MAX_IMPORT_RAW_CHARS = 100_000  # one sample's raw reply
_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_PROBLEM = "judge_import"  # the pydantic error type of the checks below; its message is the report's


def _problem(message: str) -> PydanticCustomError:
    return PydanticCustomError(_PROBLEM, "{message}", {"message": message})


# ------------------------------------------------------------------------------------------- field types
def Text(cap: int):
    return Annotated[str, StringConstraints(max_length=cap)]


def TextList(cap: int, entries: int):
    return Annotated[list[Text(cap)], Field(max_length=entries)]


def Whole(lo: int, hi: int):
    def in_range(v: int) -> int:
        if not lo <= v <= hi:
            raise _problem(f"{v if abs(v) < 10 ** 12 else 'the number'} is outside {lo}..{hi}")
        return v

    return Annotated[int, AfterValidator(in_range)]


def Number(lo: float, hi: float):
    def in_range(v: object, handler) -> float:
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 1e300:
            raise _problem(f"the number is outside {lo:g}..{hi:g}")
        handler(v)  # a number (an int or a float, never true/false)
        if not math.isfinite(v):
            raise _problem(f"{v!r} is not a finite number")
        if not lo <= v <= hi:
            raise _problem(f"{v!r} is outside {lo:g}..{hi:g}")
        return float(v)

    return Annotated[float, WrapValidator(in_range)]


def Score(item: Item, allow_na: bool, median: bool = False):
    """A value on the item's scale (None = NA where allowed); a median may fall half-way between levels."""
    lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
    step = 0.5 if median else 1.0

    def on_scale(v: object) -> Optional[float]:
        if v is None:
            if allow_na:
                return None
            raise _problem(f"{item.label}: NA (null) is not allowed here")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or isinstance(v, float) and not math.isfinite(v):
            raise _problem(f"{item.label}: {json_type(v) if not isinstance(v, float) else repr(v)} is not a score")
        if not lo <= v <= hi or (v / step) != int(v / step):
            shown = repr(v) if abs(v) < 1e300 else "the number"
            raise _problem(f"{item.label}: {shown} is outside the scale ({'0/1' if lo == 0 else '1-5'}"
                           + (", in steps of 0.5 for a median" if median else "") + ")")
        return float(v)

    return Annotated[Optional[float], PlainValidator(on_scale)]


def _hex64(what: str):
    def check(v: str) -> str:
        if len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
            raise _problem(f"{what} is not a 64-digit lowercase hex sha256")
        return v

    return Annotated[Text(64), AfterValidator(check)]


def _status(v: str) -> str:
    if v not in (STATUS_SCORED, STATUS_UNSCORED, STATUS_REFUSED):
        raise _problem(f"status {v!r} is not one of scored, unscored, refused")
    return v


def _iso_time(v: str) -> str:
    try:
        datetime.fromisoformat(v)
    except ValueError:
        raise _problem(f"{v!r} is not an ISO 8601 date and time") from None
    return v


# ------------------------------------------------------------------------------------------- the models
class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", protected_namespaces=())


class ParamsShape(_Shape):
    """:class:`~engine.judge.results.JudgeParams` (``early_stop`` may be absent: results written before it existed)."""

    n_samples: Whole(1, 50)
    temperature: Number(0.0, 2.0)
    shots: Whole(0, 5)
    explain: bool
    seed: Whole(*_INT64)
    trim: bool
    max_tokens: Whole(0, 1_000_000)
    train_fraction: Number(0.0, 1.0)
    early_stop: bool = True

    @model_validator(mode="after")
    def _valid(self) -> "ParamsShape":
        try:
            JudgeParams(**dict(self)).validate()
        except ValueError as exc:
            raise _problem(str(exc)) from None
        return self


class TimingShape(_Shape):
    """:class:`~engine.judge.results.Timing`."""

    prompt_tokens: Whole(0, 10 ** 12) = 0
    decode_tokens: Whole(0, 10 ** 12) = 0
    prompt_seconds: Number(0.0, 1e9) = 0.0
    decode_seconds: Number(0.0, 1e9) = 0.0
    total_seconds: Number(0.0, 1e9) = 0.0
    prompt_new_tokens: Optional[Whole(0, 10 ** 12)] = None


class ProvenanceShape(_Shape):
    """:class:`~engine.judge.results.Provenance`."""

    backend: Text(100)
    model_file: Text(1000)
    model_sha256: Optional[_hex64("the model hash")]
    quantization: Text(100)
    backend_params: dict[str, Any]
    prompt_version: Text(200)
    params: ParamsShape
    llama_cpp_python: Optional[Text(100)]
    few_shot_examples: TextList(200, 5)
    dropped_notes: TextList(200, 100_000)
    n_ctx: Whole(1, 100_000_000)
    citation_form: Text(100) = DEFAULT_CITATION_FORM


# a sample's values and explanations: keys are PDSQI-9 items, each value on its item's scale
SampleValuesShape = create_model("SampleValuesShape", __base__=_Shape,
                                 **{i.key: (Score(i, i.allows_na), None) for i in ITEMS})
SampleExplanationsShape = create_model("SampleExplanationsShape", __base__=_Shape,
                                       **{i.key: (Text(MAX_IMPORT_EXPLANATION_CHARS), "") for i in ITEMS})


class SampleShape(_Shape):
    """:class:`~engine.judge.results.SampleReply` (its index, temperature and seed against the parameters:
    engine.judge.import_check)."""

    index: int
    temperature: Number(0.0, 2.0)
    seed: Whole(*_INT64)
    raw: Text(MAX_IMPORT_RAW_CHARS)
    values: SampleValuesShape = Field(default_factory=SampleValuesShape)
    explanations: SampleExplanationsShape = Field(default_factory=SampleExplanationsShape)
    error: Optional[Text(MAX_IMPORT_TEXT_CHARS)] = None
    warnings: TextList(MAX_IMPORT_TEXT_CHARS, 20) = []
    completion_tokens: Whole(0, 10 ** 9) = 0
    decode_seconds: Number(0.0, 1e7) = 0.0


def _item_score_shape(item: Item) -> type[_Shape]:
    """:class:`~engine.judge.results.ItemScore` of one item: ``item``, ``is_na``, ``values`` and ``spread`` are
    compared with the samples (engine.judge.import_check), whatever their type."""
    lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
    return create_model(f"ItemScoreShape_{item.key}", __base__=_Shape,
                        item=(Any, ...), median=(Score(item, True, median=True), ...), is_na=(Any, ...),
                        values=(Any, ...), spread=(Any, ...), expected=(Optional[Number(lo, hi)], None),
                        expected_mass=(Optional[Number(0.0, 1.0 + 1e-6)], None),
                        explanation=(Text(MAX_IMPORT_EXPLANATION_CHARS), ""))


ItemScoresShape = create_model("ItemScoresShape", __base__=_Shape,
                               **{i.key: (_item_score_shape(i), None) for i in ITEMS})


class JudgeResultShape(_Shape):
    """:class:`~engine.judge.results.JudgeResult` as ``judge-export`` writes it (``asdict`` without ``from_cache``)."""

    summary_id: Text(200)
    case_id: Text(200)
    status: Annotated[Text(20), AfterValidator(_status)]
    reason: Text(MAX_IMPORT_TEXT_CHARS)
    items: ItemScoresShape
    samples: list[SampleShape]
    provenance: ProvenanceShape
    timing: TimingShape
    cache_key: _hex64("the cache key")
    created_at: Annotated[Text(64), AfterValidator(_iso_time)]


# ------------------------------------------------------------------------------------------- the report's words
_ITEM_KEYS = ", ".join(i.key for i in ITEMS)
_TYPE_WORDS = {"string_type": "must be text", "int_type": "must be a whole number", "float_type": "must be a number",
               "bool_type": "must be true or false"}
_MAPS = {"values": "{item: value}", "explanations": "{item: text}"}  # a sample's maps keyed by item


def _field(loc: tuple) -> Optional[str]:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


def _record(loc: tuple) -> Optional[str]:
    """What the report calls the object at ``loc`` when it is one of the result's records (else None)."""
    if loc == ():
        return "a judge result"
    if loc in (("timing",), ("provenance",)):
        return loc[0]
    if len(loc) == 2 and loc[0] == "samples":
        return f"sample {loc[1]}"
    if len(loc) == 2 and loc[0] == "items":
        return f"item {loc[1]}"
    return None


def _keyed(loc: tuple) -> bool:
    """Whether missing and unknown keys of the object at ``loc`` are one issue for it: the result's records."""
    return _record(loc) is not None or loc == ("provenance", "params")


def _keys_problem(loc: tuple, missing: list[str], unknown: list[str]) -> tuple[Optional[str], str]:
    """One issue for a record with missing or unknown keys (its fields are not checked further)."""
    if loc == ("provenance", "params"):  # missing ones in the parameters' order, unknown ones as written
        listed = ", ".join(repr(k[:40]) for k in unknown[:5])
        return _field(loc), "; ".join(([f"lacks {', '.join(missing)}"] if missing else [])
                                      + ([f"has unknown key(s) {listed}"] if unknown else []))
    if missing:
        return _field(loc), f"{_record(loc)} lacks key(s) {', '.join(sorted(missing))}"
    listed = ", ".join(repr(k[:40]) for k in sorted(unknown)[:5])
    return _field(loc), f"{_record(loc)} has unknown key(s) {listed}"


def _not_an_object(loc: tuple, v: object) -> str:
    if _record(loc) is not None:
        return f"{_record(loc)} must be a JSON object, not {json_type(v)}"
    if loc == ("items",):
        return f"must be an object {{item: score}}, not {json_type(v)}"
    if len(loc) == 3 and loc[0] == "samples" and loc[2] in _MAPS:
        return f"must be an object {_MAPS[loc[2]]}, not {json_type(v)}"
    return f"must be a JSON object, not {json_type(v)}"


def _message(e: dict) -> str:
    kind, v, loc = e["type"], e["input"], e["loc"]
    if kind == _PROBLEM:
        return e["ctx"]["message"]
    if kind in _TYPE_WORDS:
        return f"{_TYPE_WORDS[kind]}, not {json_type(v)}"
    if kind == "string_too_long":
        return f"is {len(v):,} characters long; at most {e['ctx']['max_length']:,} are accepted"
    if kind == "too_long":
        return f"has {len(v):,} entries; at most {e['ctx']['max_length']} are accepted"
    if kind == "list_type":
        return f"must be a list{'' if loc == ('samples',) else ' of text'}, not {json_type(v)}"
    if kind in ("model_type", "dict_type"):
        return _not_an_object(loc, v)
    return e["msg"]


def _issues(errors: list[dict]) -> list[tuple[Optional[str], str]]:
    """The report's issues for pydantic's errors: a record with missing or unknown keys is one issue (nothing
    inside it is reported), an unknown item in a sample's map one issue per key, in ``items`` one issue."""
    keys: dict[tuple, Optional[tuple[list[str], list[str]]]] = {}  # record -> (missing, unknown) until reported
    for e in errors:
        if e["type"] in ("missing", "extra_forbidden") and _keyed(e["loc"][:-1]):
            keys.setdefault(e["loc"][:-1], ([], []))[e["type"] == "extra_forbidden"].append(str(e["loc"][-1]))
    out: list[tuple[Optional[str], str]] = []
    for e in errors:
        loc = e["loc"]
        closed = min((r for r in keys if loc[:len(r)] == r and len(loc) > len(r)), key=len, default=None)
        if closed is not None:  # the outermost record with a key problem holds this error
            if keys[closed] is not None:
                out.append(_keys_problem(closed, *keys[closed]))
                keys[closed] = None
        elif e["type"] == "extra_forbidden" and loc[:-1] == ("items",):
            issue = ("items", f"items must hold exactly the PDSQI-9 items ({_ITEM_KEYS})")
            if issue not in out:
                out.append(issue)
        elif e["type"] == "extra_forbidden":  # a sample's values or explanations
            out.append((_field(loc[:-1]), f"unknown PDSQI-9 item {str(loc[-1])[:40]!r}"))
        else:
            out.append((_field(loc), _message(e)))
    return out


def shape_problems(obj: object) -> list[tuple[Optional[str], str]]:
    """``(field, message)`` for every problem of the line's shape (field None: the line as a whole); [] when the
    line has the shape of a judge result."""
    try:
        JudgeResultShape.model_validate(obj)
    except ValidationError as exc:
        return _issues(exc.errors(include_url=False))
    return []
