"""Importing judge results from a file: every line checked like any other input (types, ranges, medians that are
the samples' medians, raw replies that say what the values say, the summary's content and the prompt version),
all or nothing.
"""
from __future__ import annotations

import math
import re as _re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path as _Path
from typing import Optional, Sequence

from engine.core.models import Dataset
from engine.core.rubric import ITEMS, Scale, get_item
from engine.data.strict_json import json_type as _jtype
from engine.data.files import UNREADABLE, json_lines, read_text_file, split_lines
from engine.data.validation import DatasetInvalid, Issue, ValidationReport
from engine.judge.planning import cache_key, dataset_citation_form, example_answer
from engine.judge.prompt import DEFAULT_CITATION_FORM, FewShotExample, PROMPT_VERSION
from engine.judge.results import (ItemScore, JudgeParams, JudgeResult, Provenance, SampleReply, STATUS_REFUSED,
                                  STATUS_SCORED, STATUS_UNSCORED, Timing, aggregate, parse_reply)


MAX_IMPORT_TEXT_CHARS = 4_000  # reason, a sample's error or warning
MAX_IMPORT_EXPLANATION_CHARS = 2_000  # one item's explanation (the prompt asks for 160)
MAX_IMPORT_RAW_CHARS = 100_000  # one sample's raw reply
_HEX64 = _re.compile(r"[0-9a-f]{64}")
_BAD = object()  # a field that failed its check (the issue is in the report)
_ITEM_KEYS_SET = frozenset(i.key for i in ITEMS)


@dataclass(frozen=True)
class JudgeImportResult:
    imported: int  # results written (a result with a cache key already stored replaces it: same content)
    report: ValidationReport


def _dc_keys(cls) -> tuple[set[str], set[str]]:
    """(required, allowed) keys of a dataclass as written by ``asdict``."""
    from dataclasses import MISSING, fields

    allowed = {f.name for f in fields(cls)} - {"from_cache"}
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return required & allowed, allowed


class _LineCheck:
    """Type and range checks for one line; every failure is an issue naming the line and the field."""

    def __init__(self, report, source: str, row: int, line: int):
        self.report, self.source, self.row, self.line = report, source, row, line
        self.errors = 0

    def bad(self, fld: Optional[str], message: str, hint: str = "") -> object:
        self.report.add(Issue(self.source, message, row=self.row, line=self.line, field=fld,
                              hint=hint or "export the results again with 'judge-export'; do not edit them"))
        self.errors += 1
        return _BAD

    def obj(self, v: object, fld: Optional[str], cls, what: str) -> object:
        if not isinstance(v, dict):
            return self.bad(fld, f"{what} must be a JSON object, not {_jtype(v)}")
        required, allowed = _dc_keys(cls)
        missing = sorted(required - set(v))
        unknown = sorted(set(v) - allowed)
        if missing:
            return self.bad(fld, f"{what} lacks key(s) {', '.join(missing)}")
        if unknown:
            return self.bad(fld, f"{what} has unknown key(s) {', '.join(repr(k[:40]) for k in unknown[:5])}")
        return v

    def text(self, v: object, fld: str, cap: int, optional: bool = False) -> object:
        if v is None and optional:
            return None
        if not isinstance(v, str):
            return self.bad(fld, f"must be text, not {_jtype(v)}")
        if len(v) > cap:
            return self.bad(fld, f"is {len(v):,} characters long; at most {cap:,} are accepted")
        return v

    def integer(self, v: object, fld: str, lo: int, hi: int) -> object:
        if isinstance(v, bool) or not isinstance(v, int):
            return self.bad(fld, f"must be a whole number, not {_jtype(v)}")
        if not lo <= v <= hi:
            return self.bad(fld, f"{v if abs(v) < 10 ** 12 else 'the number'} is outside {lo}..{hi}")
        return v

    def number(self, v: object, fld: str, lo: float, hi: float, optional: bool = False) -> object:
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return self.bad(fld, f"must be a number, not {_jtype(v)}")
        if not (math.isfinite(v) and lo <= v <= hi):
            return self.bad(fld, f"{v!r} is outside {lo:g}..{hi:g}" if math.isfinite(v) else
                            f"{v!r} is not a finite number")
        return float(v)

    def boolean(self, v: object, fld: str) -> object:
        if not isinstance(v, bool):
            return self.bad(fld, f"must be true or false, not {_jtype(v)}")
        return v

    def text_list(self, v: object, fld: str, cap: int, max_len: int) -> object:
        if not isinstance(v, list):
            return self.bad(fld, f"must be a list of text, not {_jtype(v)}")
        if len(v) > max_len:
            return self.bad(fld, f"has {len(v):,} entries; at most {max_len} are accepted")
        out = [self.text(x, f"{fld}[{i}]", cap) for i, x in enumerate(v)]
        return _BAD if _BAD in out else out

    def score(self, item, v: object, fld: str, allow_na: bool, median: bool = False) -> object:
        """A value on the item's scale (None = NA where allowed); a median may fall half-way between levels."""
        if v is None:
            return None if allow_na else self.bad(fld, f"{item.label}: NA (null) is not allowed here")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return self.bad(fld, f"{item.label}: {_jtype(v) if not isinstance(v, float) else repr(v)} is not a "
                                 "score")
        lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
        step = 0.5 if median else 1.0
        if not lo <= v <= hi or (v / step) != int(v / step):
            return self.bad(fld, f"{item.label}: {v!r} is outside the scale ({'0/1' if lo == 0 else '1-5'}"
                                 + (", in steps of 0.5 for a median" if median else "") + ")")
        return float(v)


class _ImportContext:
    """The target dataset, indexed once (an import of N results stays linear in N)."""

    def __init__(self, ds: Dataset):
        self.ds = ds
        self.summaries = {s.summary_id: s for s in ds.summaries}
        self.cases = {c.case_id: c for c in ds.cases}
        self.ratings: dict[str, list] = {}
        for r in ds.ratings:
            self.ratings.setdefault(r.summary_id, []).append(r)
        self._answers: dict[str, Optional[dict]] = {}
        self._citation_form: Optional[str] = None

    @property
    def citation_form(self) -> str:
        """The dataset's citation form as the judge puts it in the prompt (part of a non-default cache key)."""
        if self._citation_form is None:
            self._citation_form = dataset_citation_form(self.ds)
        return self._citation_form

    def answer(self, summary_id: str) -> Optional[dict]:
        if summary_id not in self._answers:
            sub = Dataset(self.ds.name, ratings=self.ratings.get(summary_id, []))
            self._answers[summary_id] = example_answer(sub, summary_id)
        return self._answers[summary_id]


_OPTIONAL_PARAMS = ("early_stop",)  # JudgeParams fields newer than some exported results (never in the cache key)


def _check_params(chk: _LineCheck, v: object) -> object:
    if not isinstance(v, dict):
        return chk.bad("provenance.params", f"must be a JSON object, not {_jtype(v)}")
    from dataclasses import fields

    names = [f.name for f in fields(JudgeParams)]
    missing = [k for k in names if k not in v and k not in _OPTIONAL_PARAMS]  # results written before they existed
    unknown = [k for k in v if k not in names]
    if missing or unknown:
        return chk.bad("provenance.params", (f"lacks {', '.join(missing)}" if missing else "")
                       + ("; " if missing and unknown else "")
                       + (f"has unknown key(s) {', '.join(repr(k[:40]) for k in unknown[:5])}" if unknown else ""))
    f = "provenance.params."
    got = {
        "n_samples": chk.integer(v["n_samples"], f + "n_samples", 1, 50),
        "temperature": chk.number(v["temperature"], f + "temperature", 0.0, 2.0),
        "shots": chk.integer(v["shots"], f + "shots", 0, 5),
        "explain": chk.boolean(v["explain"], f + "explain"),
        "seed": chk.integer(v["seed"], f + "seed", -(2 ** 63), 2 ** 63 - 1),
        "trim": chk.boolean(v["trim"], f + "trim"),
        "max_tokens": chk.integer(v["max_tokens"], f + "max_tokens", 0, 1_000_000),
        "train_fraction": chk.number(v["train_fraction"], f + "train_fraction", 0.0, 1.0),
    }
    if "early_stop" in v:
        got["early_stop"] = chk.boolean(v["early_stop"], f + "early_stop")
    if _BAD in got.values():
        return _BAD
    # the cache key hashes the parameters exactly as written: keep the JSON numbers' own types
    params = JudgeParams(**{k: v[k] for k in names if k in v})
    try:
        params.validate()
    except ValueError as exc:
        return chk.bad("provenance.params", str(exc))
    return params


def _check_sample(chk: _LineCheck, v: object, i: int, params: JudgeParams) -> object:
    fld = f"samples[{i}]"
    d = chk.obj(v, fld, SampleReply, f"sample {i}")
    if d is _BAD:
        return _BAD
    errors = chk.errors
    chk.integer(d["index"], fld + ".index", i, i)
    temp = chk.number(d["temperature"], fld + ".temperature", 0.0, 2.0)
    expected_temp = 0.0 if i == 0 else params.temperature
    if temp is not _BAD and temp != expected_temp:
        chk.bad(fld + ".temperature", f"sample {i} ran at temperature {temp:g}, but the parameters say "
                                      f"{expected_temp:g}")
    seed = chk.integer(d["seed"], fld + ".seed", -(2 ** 63), 2 ** 63 - 1)
    if seed is not _BAD and seed != params.seed + i:
        chk.bad(fld + ".seed", f"sample {i} has seed {seed}, but the parameters give {params.seed + i}")
    raw = chk.text(d["raw"], fld + ".raw", MAX_IMPORT_RAW_CHARS)
    error = chk.text(d.get("error"), fld + ".error", MAX_IMPORT_TEXT_CHARS, optional=True)
    warnings = chk.text_list(d.get("warnings", []), fld + ".warnings", MAX_IMPORT_TEXT_CHARS, 20)
    chk.integer(d.get("completion_tokens", 0), fld + ".completion_tokens", 0, 10 ** 9)
    chk.number(d.get("decode_seconds", 0.0), fld + ".decode_seconds", 0.0, 1e7)
    values_in = d.get("values", {})
    values: dict[str, Optional[float]] = {}
    if not isinstance(values_in, dict):
        chk.bad(fld + ".values", f"must be an object {{item: value}}, not {_jtype(values_in)}")
    else:
        for k, x in values_in.items():
            try:
                item = get_item(k)
            except KeyError:
                chk.bad(fld + ".values", f"unknown PDSQI-9 item {k[:40]!r}")
                continue
            val = chk.score(item, x, f"{fld}.values.{k}", item.allows_na)
            if val is not _BAD:
                values[k] = val
    expl_in = d.get("explanations", {})
    explanations: dict[str, str] = {}
    if not isinstance(expl_in, dict):
        chk.bad(fld + ".explanations", f"must be an object {{item: text}}, not {_jtype(expl_in)}")
    else:
        for k, x in expl_in.items():
            if k not in _ITEM_KEYS_SET:
                chk.bad(fld + ".explanations", f"unknown PDSQI-9 item {k[:40]!r}")
                continue
            t = chk.text(x, f"{fld}.explanations.{k}", MAX_IMPORT_EXPLANATION_CHARS)
            if t is not _BAD:
                explanations[k] = t
    if chk.errors > errors:
        return _BAD
    sample = SampleReply(i, temp, seed, raw, values, explanations, error, warnings,
                         d.get("completion_tokens", 0), float(d.get("decode_seconds", 0.0)))
    if error is None:
        # a scored sample's values are exactly what its raw reply says (parse_reply is the judge's own parser)
        try:
            parsed, notes, warns = parse_reply(raw, params.explain)
        except ValueError as exc:
            return chk.bad(fld + ".raw", f"sample {i} is marked scored but its raw reply does not parse: {exc}")
        if parsed != values or notes != explanations or warns != warnings:
            which = ("values" if parsed != values else "explanations" if notes != explanations else "warnings")
            return chk.bad(fld + "." + which, f"sample {i}'s {which} are not what its raw reply says")
    elif values or explanations:
        return chk.bad(fld + ".values", f"sample {i} is unscored ({error[:80]}) but carries values")
    return sample


def _stopped_early(samples: Sequence[SampleReply], n_samples: int) -> bool:
    """Fewer samples than asked for is genuine only when the medians were already decided (exact early stop)."""
    from engine.judge.consistency import all_fixed

    return 0 < len(samples) < n_samples and all_fixed([x.values for x in samples if x.ok], len(samples), n_samples)


def _check_result(chk: _LineCheck, obj: object, ctx: _ImportContext, dataset: str) -> object:
    d = chk.obj(obj, None, JudgeResult, "a judge result")
    if d is _BAD:
        return _BAD
    sid = chk.text(d["summary_id"], "summary_id", 200)
    cid = chk.text(d["case_id"], "case_id", 200)
    status = chk.text(d["status"], "status", 20)
    if status is not _BAD and status not in (STATUS_SCORED, STATUS_UNSCORED, STATUS_REFUSED):
        status = chk.bad("status", f"status {status!r} is not one of scored, unscored, refused")
    reason = chk.text(d["reason"], "reason", MAX_IMPORT_TEXT_CHARS)
    cache = chk.text(d["cache_key"], "cache_key", 64)
    if cache is not _BAD and not _HEX64.fullmatch(cache):
        cache = chk.bad("cache_key", "the cache key is not a 64-digit lowercase hex sha256")
    created = chk.text(d["created_at"], "created_at", 64)
    if created is not _BAD:
        try:
            datetime.fromisoformat(created)
        except ValueError:
            created = chk.bad("created_at", f"{created!r} is not an ISO 8601 date and time")
    summary = case = None
    if sid is not _BAD:
        summary = ctx.summaries.get(sid)
        if summary is None:
            chk.bad("summary_id", f"summary {sid[:80]!r} is not in dataset {dataset!r}",
                    hint="import the results into the dataset they were made for")
        elif cid is not _BAD and cid != summary.case_id:
            chk.bad("case_id", f"summary {sid!r} belongs to case {summary.case_id!r}, not {cid[:80]!r}")
        else:
            case = ctx.cases.get(summary.case_id)
    t = chk.obj(d["timing"], "timing", Timing, "timing")
    if t is not _BAD:
        for k in ("prompt_tokens", "decode_tokens"):
            if k in t:
                chk.integer(t[k], f"timing.{k}", 0, 10 ** 12)
        if t.get("prompt_new_tokens") is not None:
            chk.integer(t["prompt_new_tokens"], "timing.prompt_new_tokens", 0, 10 ** 12)
        for k in ("prompt_seconds", "decode_seconds", "total_seconds"):
            if k in t:
                chk.number(t[k], f"timing.{k}", 0.0, 1e9)
    p = chk.obj(d["provenance"], "provenance", Provenance, "provenance")
    params = _BAD
    if p is not _BAD:
        pv = chk.text(p["prompt_version"], "provenance.prompt_version", 200)
        if pv is not _BAD and pv != PROMPT_VERSION:
            chk.bad("provenance.prompt_version", f"prompt version {pv[:80]} is not the current {PROMPT_VERSION}",
                    hint="re-run the judge with this program (results of another prompt are not comparable)")
        chk.text(p["backend"], "provenance.backend", 100)
        chk.text(p["model_file"], "provenance.model_file", 1000)
        sha = chk.text(p["model_sha256"], "provenance.model_sha256", 64, optional=True)
        if sha not in (None, _BAD) and not _HEX64.fullmatch(sha):
            chk.bad("provenance.model_sha256", "the model hash is not a 64-digit lowercase hex sha256")
        chk.text(p["quantization"], "provenance.quantization", 100)
        if not isinstance(p["backend_params"], dict):
            chk.bad("provenance.backend_params", f"must be a JSON object, not {_jtype(p['backend_params'])}")
        chk.text(p["llama_cpp_python"], "provenance.llama_cpp_python", 100, optional=True)
        chk.integer(p["n_ctx"], "provenance.n_ctx", 1, 100_000_000)
        form = chk.text(p.get("citation_form", DEFAULT_CITATION_FORM), "provenance.citation_form", 100)
        if form not in (_BAD, ctx.citation_form):
            chk.bad("provenance.citation_form", f"the prompt said summaries cite notes as {form!r}, but this dataset's "
                                                f"summaries cite them as {ctx.citation_form!r}")
        params = _check_params(chk, p["params"])
        shots = chk.text_list(p["few_shot_examples"], "provenance.few_shot_examples", 200, 5)
        if shots is not _BAD:
            for i, x in enumerate(shots):
                if x not in ctx.summaries:
                    chk.bad(f"provenance.few_shot_examples[{i}]", f"few-shot example {x[:80]!r} is not a summary of "
                                                                  f"dataset {dataset!r}")
                elif summary is not None and ctx.summaries[x].case_id == summary.case_id:
                    chk.bad(f"provenance.few_shot_examples[{i}]", f"few-shot example {x!r} is from the judged case")
            if params is not _BAD and len(shots) != params.shots:
                chk.bad("provenance.few_shot_examples", f"{len(shots)} few-shot examples, but shots = {params.shots}")
        dropped = chk.text_list(p["dropped_notes"], "provenance.dropped_notes", 200, 100_000)
        if dropped is not _BAD and case is not None:
            ids = {n.note_id for n in case.notes}
            for i, x in enumerate(dropped):
                if x not in ids:
                    chk.bad(f"provenance.dropped_notes[{i}]", f"note {x[:80]!r} is not a note of case {case.case_id!r}")
    samples: list[SampleReply] = []
    if not isinstance(d["samples"], list):
        chk.bad("samples", f"must be a list, not {_jtype(d['samples'])}")
    elif params is not _BAD:
        if len(d["samples"]) > params.n_samples:
            chk.bad("samples", f"{len(d['samples'])} samples, but n_samples = {params.n_samples}")
        else:
            for i, x in enumerate(d["samples"]):
                smp = _check_sample(chk, x, i, params)
                if smp is not _BAD:
                    samples.append(smp)
    items_in = d["items"]
    if not isinstance(items_in, dict):
        chk.bad("items", f"must be an object {{item: score}}, not {_jtype(items_in)}")
    if chk.errors:
        return _BAD
    # consistency: status, samples, medians
    good = [x for x in samples if x.ok]
    if status == STATUS_REFUSED:
        if samples or items_in:
            return chk.bad("status", "a refused result has no samples and no item scores")
    else:
        if len(samples) != params.n_samples and not _stopped_early(samples, params.n_samples):
            return chk.bad("samples", f"{len(samples)} samples, but n_samples = {params.n_samples} (a run may stop "
                                      "early only once no further sample could change any median)")
        if len(samples) != params.n_samples and not params.early_stop:
            return chk.bad("samples", f"{len(samples)} samples, but n_samples = {params.n_samples} and early "
                                      "stopping was off")
        if (status == STATUS_SCORED) != bool(good):
            return chk.bad("status", f"status {status!r} but {len(good)} of {len(samples)} samples were scored")
        expected = aggregate(samples)
        if set(items_in) != _ITEM_KEYS_SET:
            return chk.bad("items", "items must hold exactly the PDSQI-9 items "
                                    f"({', '.join(i.key for i in ITEMS)})")
        for item in ITEMS:
            fld = f"items.{item.key}"
            v = chk.obj(items_in[item.key], fld, ItemScore, f"item {item.key}")
            if v is _BAD:
                continue
            exp = expected[item.key]
            if v["item"] != item.key:
                chk.bad(fld + ".item", f"names item {str(v['item'])[:40]!r}")
            med = chk.score(item, v["median"], fld + ".median", True, median=True)
            if med is not _BAD and med != exp.median:
                chk.bad(fld + ".median", f"median {med!r} is not the median of the samples ({exp.median!r})",
                        hint="the medians must come from the samples; export the results again")
            if v["is_na"] is not exp.is_na:
                chk.bad(fld + ".is_na", f"is_na {v['is_na']!r} does not match the samples ({exp.is_na!r})")
            if v["values"] != exp.values:
                chk.bad(fld + ".values", "the item's values are not the samples' values")
            if v["spread"] != exp.spread:
                chk.bad(fld + ".spread", f"spread {str(v['spread'])[:20]} does not match the samples ({exp.spread!r})")
            lo, hi = (0.0, 1.0) if item.scale is Scale.BINARY else (1.0, 5.0)
            chk.number(v.get("expected"), fld + ".expected", lo, hi, optional=True)
            chk.number(v.get("expected_mass"), fld + ".expected_mass", 0.0, 1.0 + 1e-6, optional=True)
            expl = chk.text(v.get("explanation", ""), fld + ".explanation", MAX_IMPORT_EXPLANATION_CHARS)
            if expl is not _BAD and expl != exp.explanation:
                chk.bad(fld + ".explanation", "the explanation is not the samples' explanation")
        if chk.errors:
            return _BAD
    # content: the cache key recomputed from the result's own provenance and the dataset's content
    backend_params = p["backend_params"]
    model_id = p["model_sha256"] or f"{p['backend']}:{backend_params.get('endpoint', '')}:{p['model_file']}"
    examples = []
    for x in p["few_shot_examples"]:
        ans = ctx.answer(x)
        if ans is None:
            return chk.bad("provenance.few_shot_examples", f"few-shot example {x!r} has no complete human median "
                           f"in dataset {dataset!r}, so the result's content cannot be checked",
                           hint="import the results into the dataset (with its ratings) they were made with")
        ex_summary = ctx.summaries[x]
        examples.append(FewShotExample(ctx.cases[ex_summary.case_id], ex_summary, ans))
    if cache_key(model_id, params, p["n_ctx"], case, summary, examples, ctx.citation_form) != cache:
        return chk.bad("cache_key", f"the result does not belong to summary {sid!r} of dataset {dataset!r} as it "
                       "is now: its notes, summary text, specialty or few-shot examples differ from what was judged, "
                       "or the provenance was altered",
                       hint="re-run the judge on this dataset")
    return JudgeResult(sid, cid, status, reason, {k: ItemScore(**{**v, "median": (None if v["median"] is None
                                                                              else float(v["median"]))})
                                                  for k, v in items_in.items()},
                       samples, Provenance(**p), Timing(**d["timing"]), cache, created, from_cache=True)


def import_results(store, dataset: str, lines: Sequence[str], source: str = "judge results") -> JudgeImportResult:
    """Validate exported judge results (one JSON object per line) against ``dataset`` and store them, all or
    nothing. Raises :class:`~engine.data.validation.DatasetInvalid` with a report naming line and field of every
    problem (nothing is written then); :class:`~engine.data.store.StoreError` when the dataset does not exist."""
    ds = store.load_dataset(dataset)
    ctx = _ImportContext(ds)
    report = ValidationReport(files=[source], formats={source: "judge results (JSONL)"})
    results: list[JudgeResult] = []
    seen: dict[str, int] = {}
    number = 0
    for number, lineno, obj in json_lines(source, lines, report, again="export the results again"):
        if obj is UNREADABLE:
            continue
        chk = _LineCheck(report, source, number, lineno)
        r = _check_result(chk, obj, ctx, dataset)
        if r is _BAD:
            continue
        if r.cache_key in seen:
            chk.bad("cache_key", f"the same result (cache key) is also on line {seen[r.cache_key]}",
                    hint="keep one of them")
            continue
        seen[r.cache_key] = lineno
        results.append(r)
    if number == 0:
        report.add(Issue(source, "holds no judge results", hint="export them with 'python -m engine judge-export'"))
    report.counts = {"judge results": number}
    if not report.ok:
        raise DatasetInvalid(report)
    store.put_judge_results(dataset, results)
    return JudgeImportResult(len(results), report)


def import_results_file(store, dataset: str, path, max_file_mb: Optional[float] = None) -> JudgeImportResult:
    """:func:`import_results` for a file: only a regular file within the size limit is read."""
    path = _Path(path)
    report = ValidationReport(files=[str(path)])
    text = read_text_file(path, report, max_file_mb)
    if text is None:
        raise DatasetInvalid(report)
    return import_results(store, dataset, split_lines(text), source=str(path))
