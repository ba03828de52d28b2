"""Importing judge results from a file, all or nothing: every line's shape (keys, types, ranges, lengths) checked by
the pydantic models of engine.judge._import_shape, then what needs the dataset and the line as a whole: the summary
and case exist, the samples ran with the parameters' temperatures and seeds, the raw replies say what the values
say, the medians are the samples' medians, the prompt version is current and the cache key is the summary's content.
Every problem is an issue naming the file, the line and the field.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path as _Path
from typing import Optional, Sequence

from engine.core import Dataset, ITEMS
from engine.data import DatasetInvalid, Issue, UNREADABLE, ValidationReport, json_lines, read_text_file, split_lines
from engine.judge._planning import cache_key, dataset_citation_form, example_answer
from engine.judge.prompt import DEFAULT_CITATION_FORM, FewShotExample, PROMPT_VERSION
from engine.judge.results import (ItemScore, JudgeParams, JudgeResult, Provenance, SampleReply, STATUS_REFUSED,
                                  STATUS_SCORED, Timing, aggregate, parse_reply)


_BAD = object()  # a line (or a sample) that failed a check (the issue is in the report)
_ITEM_KEYS_SET = frozenset(i.key for i in ITEMS)
_PARAM_NAMES = tuple(f.name for f in fields(JudgeParams))


@dataclass(frozen=True)
class JudgeImportResult:
    imported: int  # results written (a result with a cache key already stored replaces it: same content)
    report: ValidationReport


class _LineCheck:
    """The issues of one line; each names the line and the field."""

    def __init__(self, report, source: str, row: int, line: int):
        self.report, self.source, self.row, self.line = report, source, row, line
        self.errors = 0

    def bad(self, fld: Optional[str], message: str, hint: str = "") -> object:
        self.report.add(Issue(self.source, message, row=self.row, line=self.line, field=fld,
                              hint=hint or "export the results again with 'judge-export'; do not edit them"))
        self.errors += 1
        return _BAD


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


def _check_sample(chk: _LineCheck, d: dict, i: int, params: JudgeParams) -> object:
    """Sample ``i`` (its shape already checked) against the parameters and its own raw reply."""
    fld = f"samples[{i}]"
    errors = chk.errors
    if d["index"] != i:
        chk.bad(fld + ".index", f"{d['index'] if abs(d['index']) < 10 ** 12 else 'the number'} is outside {i}..{i}")
    temp = float(d["temperature"])
    expected_temp = 0.0 if i == 0 else params.temperature
    if temp != expected_temp:
        chk.bad(fld + ".temperature", f"sample {i} ran at temperature {temp:g}, but the parameters say "
                                      f"{expected_temp:g}")
    seed = d["seed"]
    if seed != params.seed + i:
        chk.bad(fld + ".seed", f"sample {i} has seed {seed}, but the parameters give {params.seed + i}")
    if chk.errors > errors:
        return _BAD
    values = {k: (None if x is None else float(x)) for k, x in d.get("values", {}).items()}
    explanations = dict(d.get("explanations", {}))
    raw, error, warnings = d["raw"], d.get("error"), list(d.get("warnings", []))
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


def _check_place(chk: _LineCheck, d: dict, ctx: _ImportContext, dataset: str):
    """(summary, case) of the dataset the result is for, each None when it is not there (an issue then)."""
    sid, cid = d["summary_id"], d["case_id"]
    summary = ctx.summaries.get(sid)
    if summary is None:
        chk.bad("summary_id", f"summary {sid[:80]!r} is not in dataset {dataset!r}",
                hint="import the results into the dataset they were made for")
        return None, None
    if cid != summary.case_id:
        chk.bad("case_id", f"summary {sid!r} belongs to case {summary.case_id!r}, not {cid[:80]!r}")
        return summary, None
    return summary, ctx.cases.get(summary.case_id)


def _check_provenance(chk: _LineCheck, p: dict, params: JudgeParams, ctx: _ImportContext, dataset: str, summary,
                      case) -> None:
    """The prompt version and citation form, the few-shot examples and the dropped notes, against the dataset."""
    pv = p["prompt_version"]
    if pv != PROMPT_VERSION:
        chk.bad("provenance.prompt_version", f"prompt version {pv[:80]} is not the current {PROMPT_VERSION}",
                hint="re-run the judge with this program (results of another prompt are not comparable)")
    form = p.get("citation_form", DEFAULT_CITATION_FORM)
    if form != ctx.citation_form:
        chk.bad("provenance.citation_form", f"the prompt said summaries cite notes as {form!r}, but this dataset's "
                                            f"summaries cite them as {ctx.citation_form!r}")
    shots = p["few_shot_examples"]
    for i, x in enumerate(shots):
        if x not in ctx.summaries:
            chk.bad(f"provenance.few_shot_examples[{i}]", f"few-shot example {x[:80]!r} is not a summary of "
                                                          f"dataset {dataset!r}")
        elif summary is not None and ctx.summaries[x].case_id == summary.case_id:
            chk.bad(f"provenance.few_shot_examples[{i}]", f"few-shot example {x!r} is from the judged case")
    if len(shots) != params.shots:
        chk.bad("provenance.few_shot_examples", f"{len(shots)} few-shot examples, but shots = {params.shots}")
    if case is not None:
        ids = {n.note_id for n in case.notes}
        for i, x in enumerate(p["dropped_notes"]):
            if x not in ids:
                chk.bad(f"provenance.dropped_notes[{i}]", f"note {x[:80]!r} is not a note of case {case.case_id!r}")


def _check_samples(chk: _LineCheck, samples_in: list, params: JudgeParams) -> list[SampleReply]:
    if len(samples_in) > params.n_samples:
        chk.bad("samples", f"{len(samples_in)} samples, but n_samples = {params.n_samples}")
        return []
    samples = [_check_sample(chk, x, i, params) for i, x in enumerate(samples_in)]
    return [x for x in samples if x is not _BAD]


def _check_scores(chk: _LineCheck, d: dict, samples: list[SampleReply], params: JudgeParams) -> bool:
    """The status, the number of samples and every item's score against the samples; False after an issue."""
    status, items_in = d["status"], d["items"]
    good = [x for x in samples if x.ok]
    if status == STATUS_REFUSED:
        if samples or items_in:
            chk.bad("status", "a refused result has no samples and no item scores")
        return not chk.errors
    if len(samples) != params.n_samples and not _stopped_early(samples, params.n_samples):
        chk.bad("samples", f"{len(samples)} samples, but n_samples = {params.n_samples} (a run may stop early only "
                           "once no further sample could change any median)")
    elif len(samples) != params.n_samples and not params.early_stop:
        chk.bad("samples", f"{len(samples)} samples, but n_samples = {params.n_samples} and early stopping was off")
    elif (status == STATUS_SCORED) != bool(good):
        chk.bad("status", f"status {status!r} but {len(good)} of {len(samples)} samples were scored")
    elif set(items_in) != _ITEM_KEYS_SET:
        chk.bad("items", f"items must hold exactly the PDSQI-9 items ({', '.join(i.key for i in ITEMS)})")
    if chk.errors:
        return False
    expected = aggregate(samples)
    for item in ITEMS:
        fld, v, exp = f"items.{item.key}", items_in[item.key], expected[item.key]
        if v["item"] != item.key:
            chk.bad(fld + ".item", f"names item {str(v['item'])[:40]!r}")
        med = None if v["median"] is None else float(v["median"])
        if med != exp.median:
            chk.bad(fld + ".median", f"median {med!r} is not the median of the samples ({exp.median!r})",
                    hint="the medians must come from the samples; export the results again")
        if v["is_na"] is not exp.is_na:
            chk.bad(fld + ".is_na", f"is_na {v['is_na']!r} does not match the samples ({exp.is_na!r})")
        if v["values"] != exp.values:
            chk.bad(fld + ".values", "the item's values are not the samples' values")
        if v["spread"] != exp.spread:
            chk.bad(fld + ".spread", f"spread {str(v['spread'])[:20]} does not match the samples ({exp.spread!r})")
        if v.get("explanation", "") != exp.explanation:
            chk.bad(fld + ".explanation", "the explanation is not the samples' explanation")
    return not chk.errors


def _check_content(chk: _LineCheck, d: dict, params: JudgeParams, ctx: _ImportContext, dataset: str, summary,
                   case) -> bool:
    """The cache key recomputed from the result's own provenance and the dataset's content; False after an issue."""
    p = d["provenance"]
    model_id = p["model_sha256"] or f"{p['backend']}:{p['backend_params'].get('endpoint', '')}:{p['model_file']}"
    examples = []
    for x in p["few_shot_examples"]:
        ans = ctx.answer(x)
        if ans is None:
            chk.bad("provenance.few_shot_examples", f"few-shot example {x!r} has no complete human median "
                    f"in dataset {dataset!r}, so the result's content cannot be checked",
                    hint="import the results into the dataset (with its ratings) they were made with")
            return False
        ex_summary = ctx.summaries[x]
        examples.append(FewShotExample(ctx.cases[ex_summary.case_id], ex_summary, ans))
    if cache_key(model_id, params, p["n_ctx"], case, summary, examples, ctx.citation_form) != d["cache_key"]:
        chk.bad("cache_key", f"the result does not belong to summary {d['summary_id']!r} of dataset {dataset!r} as "
                "it is now: its notes, summary text, specialty or few-shot examples differ from what was judged, or "
                "the provenance was altered", hint="re-run the judge on this dataset")
        return False
    return True


def _check_result(chk: _LineCheck, obj: object, ctx: _ImportContext, dataset: str) -> object:
    """The line's :class:`JudgeResult`, or _BAD after reporting every problem found: its shape first, then (once
    the shape is right) the rest."""
    from engine.judge._import_shape import shape_problems  # pydantic's models: built when a file is read

    problems = shape_problems(obj)
    for fld, message in problems:
        chk.bad(fld, message)
    if problems:
        return _BAD
    d, p = obj, obj["provenance"]
    # the cache key hashes the parameters exactly as written: keep the JSON numbers' own types
    params = JudgeParams(**{k: p["params"][k] for k in _PARAM_NAMES if k in p["params"]})
    summary, case = _check_place(chk, d, ctx, dataset)
    _check_provenance(chk, p, params, ctx, dataset, summary, case)
    samples = _check_samples(chk, d["samples"], params)
    if chk.errors or not _check_scores(chk, d, samples, params) or \
            not _check_content(chk, d, params, ctx, dataset, summary, case):
        return _BAD
    items = {k: ItemScore(**{**v, "median": None if v["median"] is None else float(v["median"])})
             for k, v in d["items"].items()}
    return JudgeResult(d["summary_id"], d["case_id"], d["status"], d["reason"], items, samples, Provenance(**p),
                       Timing(**d["timing"]), d["cache_key"], d["created_at"], from_cache=True)


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
