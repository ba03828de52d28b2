"""Judge results as PDSQI-9 QuestionnaireResponse records: author = the judge configuration, with the result's
provenance (model hash, prompt version, parameters) kept as JSON. Unscored results have no answers and are left
out (the caller counts them); a judge's score that is not a whole level (the median of an even number of samples)
is written as a decimal answer, never rounded to an answer option.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Iterable

from engine.data.fhir import ResponseRecord
from engine.judge.configs import config_key_of


def judge_records(results: Iterable) -> list[ResponseRecord]:
    out = []
    for r in results:
        if r.status != "scored":
            continue
        values = tuple((k, v) for k, v in r.medians().items() if v is not None or k == "synthesized")
        prov = asdict(r.provenance)
        out.append(ResponseRecord(r.summary_id, config_key_of(r), "judge", values, None,
                                  f"{r.provenance.model_file} · {r.provenance.prompt_version}",
                                  json.dumps(prov, sort_keys=True, default=str), r.created_at))
    return out
