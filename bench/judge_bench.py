"""Judge benchmark on the embedded model (Gemma 3 270M Q4_K_M) with a ~3,000-token case.

Prints, from one run:
 (a) one judged sample (prompt build + token count + grammar-constrained decoding + parsing + expected scores)
     vs a bare llama-cpp-python completion of the same prompt tokens and the same number of output tokens,
     both from a cold cache (target <= 1.10);
 (b) 7-sample self-consistency vs one sample, both cold (target <= 2.0): the prompt is evaluated once;
 (c) prompt and decode tokens per second.
Usage: python bench/judge_bench.py [--threads 2] [--case-tokens 3000]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.judge import Judge, JudgeParams, open_llama_backend  # noqa: E402
from engine.judge_prompt import build_messages  # noqa: E402
from engine.loading import load_paths  # noqa: E402
from engine.models import Case, Dataset, Note  # noqa: E402
from engine.sample import SAMPLE_BUNDLE  # noqa: E402


def make_case(be, target_tokens: int) -> tuple[Dataset, str]:
    """The first sample case, its notes extended with the next cases' notes until the notes reach ~target tokens."""
    ds, _ = load_paths([SAMPLE_BUNDLE])
    base = ds.cases[0]
    summary = ds.summaries_for(base.case_id)[0]
    notes, i = list(base.notes), 1
    while be.count_tokens("\n".join(n.text for n in notes)) < target_tokens and i < len(ds.cases):
        for n in ds.cases[i].notes:
            notes.append(Note(str(len(notes) + 1), n.text, n.date, n.note_type, n.author_specialty))
            if be.count_tokens("\n".join(x.text for x in notes)) >= target_tokens:
                break
        i += 1
    case = Case(base.case_id, base.target_specialty, tuple(notes))
    return Dataset("bench", [case], [summary], []), summary.summary_id


def cold(be):
    be._cached_prompt, be._cached_logits = None, None
    be.llm.reset()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--case-tokens", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    be, sha = open_llama_backend("", n_ctx=8192, n_threads=args.threads)
    ds, sid = make_case(be, args.case_tokens)
    case = ds.cases[0]
    note_tokens = be.count_tokens("\n".join(n.text for n in case.notes))
    prompt = be.render(build_messages(case, ds.summary(sid)))
    tokens = be.tokenize(prompt)
    print(f"model: {be.path.name} ({be.quantization}), threads {args.threads}")
    print(f"case: {len(case.notes)} notes, {note_tokens} note tokens; whole prompt {len(tokens)} tokens")

    one_judge, bare, n_out = [], [], 0
    for _ in range(args.repeats):
        cold(be)
        t0 = time.perf_counter()
        r = Judge(be, sha, JudgeParams(n_samples=1)).judge(ds, sid)
        one_judge.append(time.perf_counter() - t0)
        n_out = r.timing.decode_tokens
        cold(be)
        t0 = time.perf_counter()
        t_first, n_bare = None, 0
        for _chunk in be.llm.create_completion(tokens, max_tokens=n_out, temperature=0.0, stream=True):
            t_first = t_first or time.perf_counter()
            n_bare += 1
        t1 = time.perf_counter()
        # if the bare completion stopped early (end of sequence), scale its decode time to the same length
        bare.append((t_first - t0) + (t1 - t_first) * n_out / max(n_bare, 1))
    a = min(one_judge) / min(bare)
    print(f"(a) one judged sample {min(one_judge):.2f} s vs bare completion {min(bare):.2f} s "
          f"({n_out} output tokens): ratio {a:.3f} (target <= 1.10) -> {'MET' if a <= 1.10 else 'MISSED'}")

    cold(be)
    t0 = time.perf_counter()
    r1 = Judge(be, sha, JudgeParams(n_samples=1, seed=99)).judge(ds, sid)
    t_one = time.perf_counter() - t0
    cold(be)
    t0 = time.perf_counter()
    r7 = Judge(be, sha, JudgeParams(n_samples=7, seed=99)).judge(ds, sid)
    t_seven = time.perf_counter() - t0
    b = t_seven / t_one
    print(f"(b) 7-sample self-consistency {t_seven:.2f} s vs one sample {t_one:.2f} s: ratio {b:.3f} "
          f"(target <= 2.0) -> {'MET' if b <= 2.0 else 'MISSED'}")
    tm = r7.timing
    print(f"(c) prompt {tm.prompt_tokens} tokens at {tm.prompt_tps:.1f} tokens/s; decode {tm.decode_tokens} tokens "
          f"at {tm.decode_tps:.1f} tokens/s (7 samples); statuses: {r1.status}, {r7.status}")


if __name__ == "__main__":
    main()
