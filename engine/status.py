"""Where a dataset stands: loaded, judged by which models, evidence computed, reviewed by whom — and the next step.

The start page and ``python -m engine status DATASET`` read this; nothing here computes evidence or judges.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from engine.core import RESERVED_RATER_GROUPS
from engine.data import Store


RUNS_SHOWN = 8  # the newest recorded runs a status lists


@dataclass(frozen=True)
class JudgeCoverage:
    label: str  # the configuration's label (model, prompt, parameters, date)
    summaries: int
    smoke_test: bool
    model: str = ""
    samples: str = ""  # samples per summary
    judged_at: str = ""  # the newest result (UTC)
    key: str = ""


@dataclass(frozen=True)
class NextStep:
    text: str
    page: str  # the page that does it ("pages/judge.py")
    command: str = ""  # the same step from the command line


@dataclass
class DatasetStatus:
    name: str
    cases: int
    summaries: int
    raters: int  # the imported rater panel
    judged: list[JudgeCoverage] = field(default_factory=list)
    coverage: int = 0  # summaries with the default omission evidence stored
    support: int = 0  # summaries with sentence support stored
    medomit: int = 0  # summaries with a MED-OMIT result stored
    reviewers: list[str] = field(default_factory=list)  # clinicians with a spot check
    spot_checked: int = 0  # summaries with at least one spot check
    adjudicated: int = 0  # summaries with at least one adjudicated item
    next_steps: list[NextStep] = field(default_factory=list)
    verified: int = 0  # summaries with a claim verification stored
    runs: list = field(default_factory=list)  # recorded runs, newest first (engine.data.job_log.JobRecord)


def dataset_status(store: Store, name: str) -> DatasetStatus:
    from engine.evidence.coverage import DEFAULT_METHOD
    from engine.judge import configurations, stored_judge_results
    from engine.data import ADJUDICATION, SPOT_CHECK, current_reviews, job_records

    ds = store.load_dataset(name)
    raters = {r.rater_id for r in ds.ratings if r.rater_group not in RESERVED_RATER_GROUPS}
    results = stored_judge_results(store, name)
    configs = configurations(results)
    ids = {s.summary_id for s in ds.summaries}

    def stored(method: str) -> int:
        return len(ids & set(store.evidence_results(name, method)))

    reviews = current_reviews(store, name)
    out = DatasetStatus(name, len(ds.cases), len(ds.summaries), len(raters),
                        [JudgeCoverage(c.label, c.n_results, c.smoke_test, c.model,
                                       str(c.params.get("n_samples", "?")), c.judged_at[:16].replace("T", " "),
                                       c.key) for c in configs],
                        stored(f"coverage:{DEFAULT_METHOD}"), stored("alignment"), stored("medomit"),
                        sorted({r.reviewer for r in reviews if r.kind == SPOT_CHECK}),
                        len({r.summary_id for r in reviews if r.kind == SPOT_CHECK}),
                        len({r.summary_id for r in reviews if r.kind == ADJUDICATION}))
    out.verified = stored("verification")
    out.runs = job_records(store, name, limit=RUNS_SHOWN)
    out.next_steps = next_steps(out)
    return out


def next_steps(s: DatasetStatus) -> list[NextStep]:
    """What to do next, most useful first (at most three)."""
    steps: list[NextStep] = []
    if not s.summaries:
        return [NextStep("Import source notes and summaries (CSV, JSON or a REDCap export).", "pages/data.py",
                         "python -m engine import FILES --name NAME")]
    real = [j for j in s.judged if not j.smoke_test]
    best = max((j.summaries for j in real), default=0)
    if best < s.summaries:
        steps.append(NextStep(f"Judge the summaries with the PDSQI-9 judge ({best} of {s.summaries} judged by a "
                              "real model so far).", "pages/judge.py", f"python -m engine judge {s.name}"))
    if min(s.coverage, s.support) < s.summaries:
        steps.append(NextStep(f"Compute the evidence: omissions and sentence support ({min(s.coverage, s.support)} "
                              f"of {s.summaries} done).", "pages/evidence.py", f"python -m engine evidence {s.name} --compute"))
    if s.raters >= 2:
        steps.append(NextStep(f"Read how the {s.raters} raters and the judge agree, and make the committee report.",
                              "pages/agreement.py", f"python -m engine report {s.name} --out report.html"))
    else:
        steps.append(NextStep("Import PDSQI-9 ratings from at least two raters to measure agreement.",
                              "pages/data.py"))
    if s.spot_checked < min(10, s.summaries):
        steps.append(NextStep(f"Spot-check summaries, starting with the triage queue ({s.spot_checked} checked so "
                              "far).", "pages/review.py"))
    return steps[:3]


def status_lines(s: DatasetStatus) -> list[str]:
    """The status in plain lines (CLI)."""
    lines = [f"dataset {s.name}: {s.cases} cases, {s.summaries} summaries, {s.raters} raters in the panel"]
    if s.judged:
        lines += [f"judge: {j.label}" + (" (smoke-test model)" if j.smoke_test else "") for j in s.judged]
    else:
        lines.append("judged: not yet")
    lines.append(f"evidence: omissions {s.coverage}, sentence support {s.support}, claim verification {s.verified}, "
                 f"MED-OMIT {s.medomit} of {s.summaries}")
    lines.append(f"reviews: {s.spot_checked} summaries spot-checked"
                 + (f" by {', '.join(s.reviewers)}" if s.reviewers else "") + f", {s.adjudicated} adjudicated")
    lines += [f"next: {n.text}" + (f"  ({n.command})" if n.command else "") for n in s.next_steps]
    running = [r for r in s.runs if r.running]
    lines += [f"running [{r.job_id}]: {r.describe()}" for r in running]
    lines += [f"ended [{r.job_id}]: {r.describe()}" for r in s.runs if not r.running]
    if running:
        lines.append(f"follow a run: python -m engine status {s.name} --follow ID; cancel it: "
                     f"python -m engine status {s.name} --cancel ID")
    return lines
