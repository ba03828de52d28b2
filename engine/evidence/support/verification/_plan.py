"""How long a claim verification will take: each summary's work in tokens, and this model's measured speed.

The work of a summary the workspace has no current result for is the record's tokens (once per case in a run: the
record is evaluated once and kept for every question after it), plus each question's tokens (its sentence and the
question's wording; a cited sentence is asked again of its cited notes alone), plus one written token per
question weighted as :data:`engine.core.run_plan.DEFAULT_DECODE_WEIGHT` prompt tokens. Tokens are counted from
characters (:data:`CHARS_PER_TOKEN`) so that a plan never loads the model.

The speed is measured from the verifications this workspace stored for the same model (work planned this way over
the seconds each took, the median of the newest :data:`engine.core.run_plan.RECENT`); with none stored, the
estimate comes from this run's own speed once it has read its first tokens
(:meth:`engine.core.jobs.Job.plan`).
"""
from __future__ import annotations

import json
import statistics
from typing import Callable, Iterable, Optional, Sequence

from engine.core import DEFAULT_DECODE_WEIGHT, Dataset, RECENT

CHARS_PER_TOKEN = 4.0  # English clinical text through a BPE tokenizer, roughly
QUESTION_TOKENS = 60.0  # a question's wording around its sentence


def summary_work(record_chars: int, sentences: Sequence[str], cited: int, record_read: bool) -> float:
    """Work tokens of one summary: its record (unless ``record_read`` already in this run), one question per
    sentence and one more for each of the first ``cited`` sentences (the cited ones come first)."""
    questions = [len(s) / CHARS_PER_TOKEN + QUESTION_TOKENS for s in sentences]
    n = len(sentences) + cited
    asked = sum(questions) + (sum(questions[:cited]) if cited else 0.0)
    return (0.0 if record_read else record_chars / CHARS_PER_TOKEN) + asked + n * DEFAULT_DECODE_WEIGHT


def verification_work(ds: Dataset, order: Sequence[str], stored: set, citations: bool,
                      sentences: Callable[[str], Sequence]) -> list[float]:
    """Work per summary in run ``order`` (0 for one in ``stored``); ``sentences(summary id)`` gives the sentences
    a verification asks about (:class:`engine.evidence.text.sentences.Sentence`)."""
    out, read = [], set()
    for sid in order:
        if sid in stored:
            out.append(0.0)
            continue
        case = ds.case(ds.summary(sid).case_id)
        sents = list(sentences(sid))
        cited = [x.clean for x in sents if citations and x.citations]  # asked twice: of the record, of its notes
        rest = [x.clean for x in sents if not (citations and x.citations)]
        out.append(summary_work(len(case.source_text), cited + rest, len(cited), case.case_id in read))
        read.add(case.case_id)
    return out


def measured_rate(stored_json: Iterable[str], model_sha256: str) -> Optional[float]:
    """Work tokens per second over the newest stored verifications of this model (None when there is none):
    each result's record tokens and questions, planned as :func:`summary_work` plans them, over its seconds."""
    rates = []
    for raw in stored_json:
        d = json.loads(raw)
        if d.get("model_sha256") != model_sha256 or not d.get("seconds") or not d.get("record_tokens"):
            continue
        chars = sum(len(s.get("text", "")) for s in d.get("sentences", []))
        work = (d["record_tokens"] + chars / CHARS_PER_TOKEN + d.get("questions", 0)
                * (QUESTION_TOKENS + DEFAULT_DECODE_WEIGHT))
        rates.append(work / float(d["seconds"]))
    rates = rates[-RECENT:]
    return statistics.median(rates) if rates else None
