"""The Judge page's view: the selected summary's newest judge result with its per-item table (expected score,
calibrated score, the LLM's median, the raters' median and their difference), and every judged summary of the
dataset as one row each."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.analysis import format_score
from engine.core import Dataset, ITEMS, format_value, get_item
from engine.data import judge_cell, medians, reference_cell
from engine.judge import (JudgeParams, JudgeResult, calibration, config_key_of, is_smoke_test, primary_score,
                          stored_judge_results)
from engine.llm import BackendError

__all__ = ["BackendError", "ConfigurationNote", "JudgePage", "JudgePageView", "JudgeParams", "ModelLine",
           "judge_page"]


@dataclass
class JudgePageView:
    result: Optional[JudgeResult] = None  # the selected summary's newest result (any configuration)
    smoke_test: bool = False
    item_rows: list[dict] = field(default_factory=list)
    calibration: object = None  # the Calibration whose scores fill the "calibrated" column, when one is stored
    dataset_rows: list[dict] = field(default_factory=list)
    explanations: list["Explanation"] = field(default_factory=list)
    conflicts: dict[str, str] = field(default_factory=dict)  # item label -> how the verdict contradicts the evidence


@dataclass(frozen=True)
class Explanation:
    """One item's explanation by the judge, by the item's label, with where it contradicts the product's own
    evidence about the same summary ("" when it does not)."""

    item: str
    text: str
    contradicts: str = ""


def _validity_cells(res: JudgeResult) -> dict[str, str]:
    """Item key -> the model's measured validity for it (one greedy sample, our own validity set's test split)."""
    from engine.llm import embedded_key_of, validity_figures

    key = embedded_key_of(res.provenance.model_sha256 or res.provenance.model_file)
    rows = [r for r in validity_figures(key) if r.get("samples") == 1] if key else []
    return {r["item"]: f"ρ {r['spearman_raw']:.2f} (n {r.get('n_test', '?')})" for r in rows
            if r.get("spearman_raw") is not None}


_ASSESSED: dict[tuple, object] = {}


def assessed_once(case, summary, lexicon):
    """The stigma detector's answer (engine.evidence.stigma.detector.assess) remembered per lexicon version, case
    and summary (all immutable): the Judge page shows it on every rerun and scans the notes once."""
    from engine.evidence import stigma

    key = (lexicon.version, case, summary)
    hit = _ASSESSED.get(key)
    if hit is None:
        if len(_ASSESSED) >= 256:
            _ASSESSED.clear()
        hit = _ASSESSED[key] = stigma.assess(case, summary, lexicon=lexicon)
    return hit


def evidence_conflicts(store, name: str, ds: Dataset, res: JudgeResult) -> dict[str, str]:
    """Item key -> how the judge's verdict on that item contradicts the stored evidence about the same summary:
    no stigmatizing language while the detector finds some; a top Accurate / Cited score while claim verification
    finds unsupported claims or the sentence support finds citation issues. Only evidence already stored is read.
    (Thorough has no such rule: neither unit coverage's flag nor MED-OMIT's count separates the sample's complete
    summaries from the others well enough — 9 of its 12 complete summaries would be marked.)"""
    from engine.evidence import stigma, stored_result
    from engine.evidence.stigma import workspace_entries

    s, out = ds.summary(res.summary_id), {}

    def value(key: str) -> Optional[float]:
        sc = res.items.get(key)
        return None if sc is None or sc.is_na else primary_score(key, sc)

    try:
        assessed = assessed_once(ds.case(s.case_id), s, stigma.load_lexicon(workspace_entries(store)))
    except (ValueError, OSError):
        assessed = None
    if assessed is not None:
        terms = sorted({h.hit.text.lower() for h in assessed.summary_hits})
        for key, found in assessed.item_answers.items():
            v = value(key)
            if found and v is not None and v < 0.5:
                what = f" ({', '.join(terms[:4])})" if key == "stigmatizing_summary" and terms else ""
                out[key] = f"the stigmatizing-language detector finds it{what}"
    ver = stored_result(store, name, "verification", s.summary_id)
    unsupported = len(ver.unsupported_claims) if ver is not None else 0
    if unsupported and (value("accurate") or 0) >= 4:
        out["accurate"] = f"claim verification finds {unsupported} unsupported claim(s)"
    al = stored_result(store, name, "alignment", s.summary_id)
    issues = len(al.citation_issues) if al is not None else 0
    if issues and (value("cited") or 0) >= 4:
        out["cited"] = f"the sentence support finds {issues} citation issue(s)"
    return out


def _item_rows(ds: Dataset, res: JudgeResult, calibrated: dict, with_calibration: bool) -> list[dict]:
    ratings = list(ds.ratings_for(res.summary_id))
    human = medians(r for r in ratings if r.rater_group != "llm")
    rows = []
    for item in ITEMS:
        sc = res.items.get(item.key)
        if sc is None:
            continue
        hm = human.get(item.key, "")
        diff = (sc.median - hm) if (item.is_likert and sc.median is not None and isinstance(hm, float)) else None
        cal_v = calibrated.get(item.key)
        rows.append({"item": item.label,
                     "expected score": "" if sc.expected is None else f"{sc.expected:.2f}",
                     **({"calibrated": "" if cal_v is None else f"{cal_v:.2f}"} if with_calibration else {}),
                     "LLM median": judge_cell(item, sc),  # yes/no items: the share of yes over the samples
                     "spread": "" if sc.spread is None else format_score(sc.spread),
                     "human median": reference_cell(item, ratings) if item.key in human else "",
                     "LLM − human": "" if diff is None else ("+" if diff > 0 else "") + format_score(diff)})
    return rows


def _shown(item, score) -> object:
    """One cell of the dataset table: the expected score (2 decimals) for 1-5 items, yes / no, or NA."""
    if score.is_na:
        return "NA"
    value = primary_score(item.key, score)
    if value is None:
        return ""
    return format_value(item, value) if not item.is_likert else round(float(value), 2)


def judge_page_view(store, name: str, ds: Dataset, summary_id: Optional[str]) -> JudgePageView:
    """What the Judge page shows below its controls for dataset ``name`` and the selected ``summary_id``."""
    stored = {r.summary_id: r for r in stored_judge_results(store, name, latest_only=True)}
    view = JudgePageView(dataset_rows=[
        {"summary": r.summary_id, "status": r.status,
         **{i.label: _shown(i, r.items[i.key]) for i in ITEMS if i.key in r.items},
         "model": r.provenance.model_file, "smoke-test model": "yes" if is_smoke_test(r) else "",
         "judged": r.created_at} for r in stored.values()])
    res = stored.get(summary_id) if summary_id else None
    if res is None:
        return view
    view.result, view.smoke_test = res, is_smoke_test(res)
    cal, calibrated = calibration.calibrated_scores(store, name, config_key_of(res), [res])
    view.calibration = cal
    view.item_rows = _item_rows(ds, res, calibrated.get(res.summary_id, {}), cal is not None)
    validity = _validity_cells(res)
    for row, item in zip(view.item_rows, [i for i in ITEMS if i.key in res.items]):
        row["validity (ρ, own set)"] = validity.get(item.key, "not measured")
    conflicts = evidence_conflicts(store, name, ds, res)
    view.explanations = [Explanation(i.label, res.items[i.key].explanation, conflicts.get(i.key, ""))
                         for i in ITEMS if i.key in res.items and res.items[i.key].explanation]
    view.conflicts = {get_item(k).label: v for k, v in conflicts.items()}
    return view


@dataclass(frozen=True)
class ConfigurationNote:
    """What a run's settings mean for the dataset's judge configurations: ``text`` "" when they match a stored one;
    ``options_changed``: the same model is stored but these options differ (the page asks before running)."""

    text: str = ""
    options_changed: bool = False


def configuration_note(store, name: str, params, model_sha256: Optional[str]) -> ConfigurationNote:
    """Before a run: whether these settings (and, when known, this model) make a judge configuration the dataset
    does not have yet, said in a sentence. ``params``: the run's :class:`engine.judge.results.JudgeParams`."""
    from dataclasses import asdict

    from engine.judge import IGNORED_PARAMS, configurations

    want = {k: v for k, v in asdict(params).items() if k not in IGNORED_PARAMS}
    stored = configurations(stored_judge_results(store, name))
    if not stored:
        return ConfigurationNote()
    same_model = [c for c in stored if c.model_sha256 == model_sha256]  # None: the stored server configurations
    if any({k: c.params.get(k) for k in want} == want for c in same_model):
        return ConfigurationNote()
    differs = sorted({k for c in same_model for k in want if c.params.get(k) != want[k]})
    return ConfigurationNote(
        "These settings make a new judge configuration"
        + (f" (they differ in {', '.join(differs)})" if same_model else " (another model)")
        + f": its results are analysed apart from the {len(stored)} configuration(s) stored for this dataset, "
          "never pooled with them.", bool(same_model))


@dataclass(frozen=True)
class ModelLine:
    """The judge model a run would use, for the line above the controls: ``kind`` ("embedded", "server" or "file":
    a GGUF file, or one Ollama or LM Studio keeps here, ``found_here``),
    ``label`` (an embedded model's name, a found model's name, a server's model, else the GGUF path),
    ``smoke_test`` (the quick-check model), and the details each source shows."""

    kind: str
    label: str
    smoke_test: bool = False
    endpoint: str = ""
    concurrency: int = 1
    model_path: str = ""
    n_ctx: int = 0
    n_gpu_layers: int = 0
    found_here: bool = False  # a model Ollama or LM Studio keeps on this machine


class JudgePage:
    """Everything the Judge page shows and starts for one dataset and the saved settings: the model line, what a
    run's options mean for the stored configurations, the run as a background job, and the selected summary's
    result (read when asked, after a run has stored its results)."""

    def __init__(self, store, name: str, ds: Dataset, settings):
        from engine.data import SOURCE_EMBEDDED, SOURCE_LOCAL, SOURCE_SERVER
        from engine.judge import describe_source
        from engine.llm import embedded, embedded_sha256

        self.store, self.name, self.ds, self.settings = store, name, ds, settings
        src, cfg = describe_source(settings), settings
        if cfg.source == SOURCE_EMBEDDED:
            emb = embedded(cfg.embedded_model)
            self.model = ModelLine("embedded", emb.label if not emb.smoke_test else emb.short_label, emb.smoke_test,
                                   n_ctx=int(cfg.n_ctx))
            self.run_label, self.model_sha256 = emb.short_label, embedded_sha256(cfg.embedded_model)
        else:
            server = cfg.source == SOURCE_SERVER
            self.model = ModelLine("server" if server else "file", str(src.get("model") or ""), endpoint=str(src.get("endpoint", "")),
                                   concurrency=int(cfg.concurrency) if server else 1, model_path=cfg.model_path,
                                   n_ctx=int(cfg.n_ctx), n_gpu_layers=int(cfg.n_gpu_layers),
                                   found_here=cfg.source == SOURCE_LOCAL and bool(src.get("model")))
            self.run_label, self.model_sha256 = str(src.get("model") or cfg.model_path), None
        self.concurrency = self.model.concurrency  # one llama.cpp context in process

    def summary_ids(self, case_id: str) -> list[str]:
        return [s.summary_id for s in self.ds.summaries_for(case_id)]

    def configuration_note(self, params) -> ConfigurationNote:
        return configuration_note(self.store, self.name, params, self.model_sha256)

    def job(self, loaded, params, summary_id: Optional[str], rerun: bool):
        """(job, label): the judge run over ``summary_id`` (None: the whole dataset) with the ``loaded`` backend
        (backend, model sha256), not started. Raises BackendError or ValueError when the judge cannot be made."""
        from engine.judge import Judge, judge_job

        judge = Judge(*loaded, params)
        ids = [summary_id] if summary_id else [s.summary_id for s in self.ds.summaries]
        what = f"summary {summary_id}" if summary_id else f"all {len(ids)} summaries of '{self.name}'"
        job = judge_job(judge, self.ds, ids, store=self.store, dataset_name=self.name, concurrency=self.concurrency,
                        rerun=rerun)
        return job, f"Judge run on {what} · {self.run_label} · {int(params.n_samples)} sample(s)"

    def result(self, summary_id: Optional[str]) -> JudgePageView:
        return judge_page_view(self.store, self.name, self.ds, summary_id)


def judge_page(store, name: str, ds: Dataset, settings) -> JudgePage:
    """The Judge page's one entry (:class:`JudgePage`)."""
    return JudgePage(store, name, ds, settings)
