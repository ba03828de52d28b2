"""What a judge prompt holds before it is sent: few-shot examples from other cases' human answers, the prompt
laid out to fit the context (oldest notes trimmed only when asked), its cache key, and injection findings.
"""
from __future__ import annotations

import hashlib
import math
import random
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

from engine.core import Case, Dataset, ITEMS, Scale, Summary, json_key
from engine.data import medians
from engine.judge.prompt import DEFAULT_CITATION_FORM, FewShotExample, PROMPT_VERSION, build_messages, kept_messages
from engine.judge.results import ContextTooLong, JudgeParams
from engine.llm import Backend, keep_messages


def in_train_split(case_id: str, fraction: float) -> bool:
    h = int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return h < fraction


def example_answer(ds: Dataset, summary_id: str) -> Optional[dict]:
    """Median human answer for a summary, or None when an item has no human rating."""
    med = medians(r for r in ds.ratings_for(summary_id) if r.rater_group != "llm")
    answer: dict = {}
    for item in ITEMS:
        if item.key not in med:
            return None
        v = med[item.key]
        if item.scale is Scale.BINARY:
            answer[item.key] = "yes" if v is not None and v >= 0.5 else "no"
        elif item.allows_na:
            continue
        else:
            if v is None:
                return None
            answer[item.key] = int(math.floor(v + 0.5))
    syn = med.get("synthesized")
    if answer["abstraction"] == "no":
        answer["synthesized"] = "NA"
    elif syn is None:
        return None
    else:
        answer["synthesized"] = int(math.floor(syn + 0.5))
    return {i.key: answer[i.key] for i in ITEMS}


def select_examples(ds: Dataset, summary: Summary, k: int, seed: int, train_fraction: float) -> list[FewShotExample]:
    """k rated examples from the training split, never from the case being judged."""
    if k == 0:
        return []
    pool = []
    for s in ds.summaries:
        if s.case_id == summary.case_id or not in_train_split(s.case_id, train_fraction):
            continue
        ans = example_answer(ds, s.summary_id)
        if ans is not None:
            pool.append(FewShotExample(ds.case(s.case_id), s, ans))
    if len(pool) < k:
        raise ValueError(f"only {len(pool)} rated summaries in the training split ({train_fraction:.0%} of cases) "
                         f"outside case {summary.case_id!r}; {k} examples were asked for. Use fewer shots, a larger "
                         "training fraction, or import human ratings.")
    rng = random.Random(f"{seed}:{summary.summary_id}")
    pool.sort(key=lambda e: e.summary.summary_id)
    return rng.sample(pool, k)


@dataclass
class PromptPlan:
    prompt: str
    messages: list[dict]
    prompt_tokens: int
    dropped_notes: list[str]


def plan_prompt(backend: Backend, case: Case, summary: Summary, params: JudgeParams,
                examples: Sequence[FewShotExample], citation_form: str = DEFAULT_CITATION_FORM) -> PromptPlan:
    """Build the prompt and check it against the context window (refuse, or drop the oldest notes).
    ``citation_form``: how the dataset's summaries cite notes (:func:`dataset_citation_form`)."""
    budget = backend.n_ctx - params.resolved_max_tokens
    order = case.notes_in_order()  # oldest first, by the parsed date
    kept = [n.note_id for n in case.notes]
    dropped: list[str] = []
    while True:
        msgs = build_messages(case, summary, params.explain, examples, note_ids=kept, citation_form=citation_form)
        prompt = keep_messages(backend.render(msgs), kept_messages(msgs))  # the record stays evaluated
        n = backend.count_tokens(prompt)
        if n <= budget:
            return PromptPlan(prompt, msgs, n, dropped)
        if not params.trim or len(kept) == 1:
            what = (f"even with only note {kept[0]} kept" if dropped else "with all notes")
            raise ContextTooLong(
                n + params.resolved_max_tokens, backend.n_ctx,
                f"the prompt needs {n} tokens {what} plus {params.resolved_max_tokens} for the reply = "
                f"{n + params.resolved_max_tokens}, but the context holds {backend.n_ctx}. Raise the context size "
                "in Settings, use fewer few-shot examples"
                + (", or allow trimming the oldest notes." if not params.trim else "."))
        oldest = next(x.note_id for x in order if x.note_id in kept)
        kept.remove(oldest)
        dropped.append(oldest)


def content_key(case: Case, summary: Summary, examples: Sequence[FewShotExample]) -> str:
    return json_key({"specialty": case.target_specialty, "notes": [asdict(n) for n in case.notes],
                     "summary": summary.text,
                     "examples": [[e.summary.summary_id, e.summary.text, e.answer] for e in examples]})


# Parameters that never change a result's medians (exact early stopping) stay out of the cache key, so results
# computed with and without them are the same work.
_KEY_EXCLUDED_PARAMS = ("early_stop",)


def cache_key(model_id: str, params: JudgeParams, n_ctx: int, case: Case, summary: Summary,
              examples: Sequence[FewShotExample], citation_form: str = DEFAULT_CITATION_FORM) -> str:
    key_params = {k: v for k, v in asdict(params).items() if k not in _KEY_EXCLUDED_PARAMS}
    payload = {"model": model_id, "prompt": PROMPT_VERSION, "params": key_params, "n_ctx": n_ctx,
               "max_tokens": params.resolved_max_tokens, "content": content_key(case, summary, examples)}
    if citation_form != DEFAULT_CITATION_FORM:  # the prompt names the dataset's citation form (default: unchanged)
        payload["citation_form"] = citation_form
    return json_key(payload)


def dataset_citation_form(ds: Dataset) -> str:
    """How ``ds``'s summaries cite notes, with n for the id (e.g. ``<Note ID:n>``), for the judge prompt."""
    from engine.core import citations

    return citations.detect_style([s.text for s in ds.summaries],
                                  [n.note_id for c in ds.cases for n in c.notes]).written


def injection_findings(case: Case, summary: Summary, note_ids: Optional[Sequence[str]] = None,
                       examples: Sequence[FewShotExample] = ()) -> Optional[str]:
    """One line naming where text addressed to an AI grader (:mod:`engine.llm.injection`) sits in what goes into the
    prompt — the target specialty, each kept note (text and metadata), the summary, a few-shot example — or None."""
    from engine.llm import injection

    def note_texts(c: Case, ids: Optional[Sequence[str]]) -> list[tuple[str, list[str]]]:
        keep = None if ids is None else set(ids)
        return [(f"note {n.note_id}", [n.text, n.date or "", n.note_type or "", n.author_specialty or ""])
                for n in c.notes if keep is None or n.note_id in keep]

    places = [("target specialty", [case.target_specialty]), *note_texts(case, note_ids), ("summary", [summary.text])]
    for ex in examples:  # an example's texts are in the prompt as well; name the example, not its parts
        places.append((f"few-shot example {ex.summary.summary_id}",
                       [ex.case.target_specialty, ex.summary.text]
                       + [t for _, texts in note_texts(ex.case, None) for t in texts]))
    found, where = [], []
    for label, texts in places:
        signals = [x for t in texts if t for x in injection.scan(t)]
        if signals:
            found.extend(signals)
            where.append(label)
    if not found:
        return None
    shown = ", ".join(where[:12]) + (f" and {len(where) - 12} more" if len(where) > 12 else "")
    return f"{injection.describe(found)} (in {shown[:600]})"
