"""Training data for a local judge, as JSON lines in TRL's dataset conventions.

* ``sft`` (TRL's conversational *language modeling* format): ``{"messages": [system, user, assistant, user,
  assistant]}`` where every turn but the last is exactly the judge's own fenced prompt (the instructions, the record,
  the acknowledgement and the GRADE task: :func:`engine.judge.prompt.build_messages`) and the last assistant turn is
  the reference answer as the judge's JSON: the adjudicated scores where a summary has them,
  else the raters' median (:func:`engine.judge.runner.example_answer`).
* ``dpo`` (TRL's conversational *preference* format): ``{"prompt": [the judge's prompt], "chosen": [assistant],
  "rejected": [assistant]}``. ``rejected`` differs from ``chosen`` by at least one level on some item: the stored
  judge answer when it disagrees with the reference (a real mistake of the model), else a deterministic
  perturbation (every 1-5 item moved two levels away from the reference, yes/no answers flipped).

Every row also carries ``summary_id``, ``case_id`` and ``split`` ("train" / "test", by case, from the same hash
split the judge uses for few-shot examples), so no case is in both. The file contains the source notes: it is as
sensitive as the notes themselves (PHI).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from engine.judge._planning import example_answer, in_train_split
from engine.judge.prompt import answer_json, build_messages
from engine.core import Dataset, ITEMS, Scale

FORMATS = ("sft", "dpo")
PHI_WARNING = ("this file contains the source notes and summaries verbatim (PHI): keep it where the notes may be "
               "kept, and never upload it to a service the notes may not go to")
SFT_FIELDS = ("messages",)
DPO_FIELDS = ("prompt", "chosen", "rejected")


@dataclass(frozen=True)
class ExportSummary:
    rows: int
    train: int
    test: int
    skipped: int  # summaries without a complete reference answer
    rejected_from_judge: int  # dpo: rejected answers taken from a disagreeing stored judge result
    train_cases: tuple[str, ...]
    test_cases: tuple[str, ...]


def perturbed(answer: dict) -> dict:
    """A rating set that differs from ``answer`` on every item (1-5 items by two levels, yes/no flipped)."""
    out = {}
    for item in ITEMS:
        v = answer[item.key]
        if item.scale is Scale.BINARY:
            out[item.key] = "no" if v == "yes" else "yes"
        elif v == "NA":
            out[item.key] = "NA"
        else:
            out[item.key] = v - 2 if v >= 3 else v + 2
    if out["abstraction"] == "no":
        out["synthesized"] = "NA"
    elif out["synthesized"] == "NA":
        out["synthesized"] = 3
    return out


def judge_answer(result) -> Optional[dict]:
    """A stored judge result's medians as an answer dict (None when it is not complete)."""
    if result is None or result.status != "scored":
        return None
    ans = {}
    for item in ITEMS:
        sc = result.items.get(item.key)
        if sc is None:
            return None
        if item.scale is Scale.BINARY:
            if sc.median is None:
                return None
            ans[item.key] = "yes" if sc.median >= 0.5 else "no"
        elif sc.is_na:
            ans[item.key] = "NA"
        elif sc.median is None:
            return None
        else:
            ans[item.key] = int(sc.median + 0.5)
    return ans


def differs_by_a_level(a: dict, b: dict) -> bool:
    return any(a[i.key] != b[i.key] for i in ITEMS)


def rows(ds: Dataset, fmt: str, train_fraction: float = 0.7, judge_results: Optional[dict] = None,
         citation_form: Optional[str] = None) -> tuple[list[dict], ExportSummary]:
    """The rows of one export and what went in. ``judge_results``: summary id -> stored JudgeResult (dpo)."""
    from engine.judge._planning import dataset_citation_form

    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is unknown; use one of {', '.join(FORMATS)}")
    form = citation_form or dataset_citation_form(ds)
    out, skipped, from_judge = [], 0, 0
    train_cases, test_cases = set(), set()
    for s in ds.summaries:
        ans = example_answer(ds, s.summary_id)
        if ans is None:
            skipped += 1
            continue
        case = ds.case(s.case_id)
        split = "train" if in_train_split(case.case_id, train_fraction) else "test"
        (train_cases if split == "train" else test_cases).add(case.case_id)
        msgs = build_messages(case, s, explain=False, citation_form=form)
        chosen = {"role": "assistant", "content": answer_json(ans, False)}
        meta = {"summary_id": s.summary_id, "case_id": s.case_id, "split": split}
        if fmt == "sft":
            out.append({"messages": [*msgs, chosen], **meta})
            continue
        other = judge_answer((judge_results or {}).get(s.summary_id))
        if other is not None and differs_by_a_level(other, ans):
            from_judge += 1
            rejected, source = other, "judge"
        else:
            rejected, source = perturbed(ans), "perturbed"
        out.append({"prompt": msgs, "chosen": [chosen],
                    "rejected": [{"role": "assistant", "content": answer_json(rejected, False)}],
                    "rejected_source": source, **meta})
    n_train = sum(1 for r in out if r["split"] == "train")
    return out, ExportSummary(len(out), n_train, len(out) - n_train, skipped, from_judge,
                              tuple(sorted(train_cases)), tuple(sorted(test_cases)))


def write(ds: Dataset, fmt: str, path: Path, train_fraction: float = 0.7,
          judge_results: Optional[dict] = None) -> ExportSummary:
    data, summary = rows(ds, fmt, train_fraction, judge_results)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for r in data:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return summary
