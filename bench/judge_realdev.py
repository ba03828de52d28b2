"""A judge speed set of real short conversations: MTS-Dialog conversations of the test split with four summaries each.

Source: the ``realdev`` folder beside the repository — the MTS-Dialog training set (Ben Abacha et al., EACL 2023;
CC BY 4.0), split by conversation id as :mod:`verify_set` does (sha256 of ``mts:<ID>``, even → development,
odd → test). The set takes test-split conversations whose dialogue has 230-650 words (about 300-900 note tokens)
and whose note section has at least three sentences, in file order, and writes them as a bundle folder
(``cases.csv``, ``notes.csv``, ``summaries.csv``) that every SumCheck commit since the bundle format reads:

- the case's one note is the conversation (``[doctor]``/``[patient]`` turns as written);
- its four summaries are the clinician's note section as written (``-s1``), the section without its last third of
  sentences (``-s2``), the section's first sentence alone (``-s3``) and the section with its sentences in reverse
  order (``-s4``).

The set measures speed (seconds and tokens per summary); its summaries are not labelled for quality.

:func:`judge_tree` judges the set through a checkout's own command line (``python -m engine judge BUNDLE --samples
1``), in a fresh workspace and a fresh prefix-cache folder, and reads each summary's stored timing back with
``judge-export``, so the same figures come from any commit that has those two commands (a git worktree of an older
commit is judged with this environment's Python). :func:`report` prints seconds, prompt tokens, tokens read and
tokens reused per summary, and the ratio and score differences between two checkouts.
Usage: python bench/judge_realdev.py [--cases 15] [--threads 2] [--against COMMIT] [--keep FOLDER]
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import verify_set  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

MIN_WORDS, MAX_WORDS, MIN_SENTENCES = 230, 650, 3
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def variants(section: str) -> list[str]:
    """The four summaries of one note section (see the module docstring)."""
    sents = sentences(section)
    keep = max(1, len(sents) - len(sents) // 3)
    return [section.strip(), " ".join(sents[:keep]), sents[0], " ".join(reversed(sents))]


def conversations(n_cases: int) -> list[dict]:
    """The first ``n_cases`` test-split MTS-Dialog rows that fit the set (see the module docstring)."""
    out = []
    for row in verify_set.read_rows("mts_dialog_train.csv"):
        if verify_set.split_of(f"mts:{row['ID']}") != "test":
            continue
        words = len(row["dialogue"].split())
        if MIN_WORDS <= words <= MAX_WORDS and len(sentences(row["section_text"])) >= MIN_SENTENCES:
            out.append(row)
        if len(out) == n_cases:
            break
    return out


def write_bundle(folder: Path, n_cases: int = 15) -> tuple[int, int]:
    """Write the set as bundle tables into ``folder``; returns (cases, summaries)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = conversations(n_cases)
    with open(folder / "cases.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["case_id", "target_specialty"])
        w.writerows([f"mts-{r['ID']}", "Primary Care"] for r in rows)
    with open(folder / "notes.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["case_id", "note_id", "date", "note_type", "author_specialty", "text"])
        w.writerows([f"mts-{r['ID']}", "1", "2024-01-05", "Conversation transcript", "Primary Care", r["dialogue"]]
                    for r in rows)
    n = 0
    with open(folder / "summaries.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["summary_id", "case_id", "text", "generator_model", "quality_group", "prompt_variant"])
        for r in rows:
            for i, text in enumerate(variants(r["section_text"]), start=1):
                w.writerow([f"mts-{r['ID']}-s{i}", f"mts-{r['ID']}", text, "clinician note section", "real",
                            f"variant {i}"])
                n += 1
    return len(rows), n


@dataclass
class TreeRun:
    """One checkout's judge run over the set: the command's wall seconds and each summary's stored result."""

    label: str
    seconds: float
    results: dict[str, dict]  # summary id -> the stored judge result (judge-export's JSON)

    def timing(self, key: str) -> list[float]:
        return [float(r["timing"].get(key) or 0) for r in self.results.values()]

    def reused(self) -> list[int]:
        return [int(r["timing"]["prompt_tokens"]) - int(r["timing"]["prompt_new_tokens"])
                for r in self.results.values() if r["timing"].get("prompt_new_tokens") is not None]

    def expected(self) -> dict[tuple[str, str], float]:
        return {(sid, item): v["expected"] for sid, r in self.results.items()
                for item, v in (r.get("items") or {}).items() if v.get("expected") is not None}


def judge_tree(tree: Path, bundle: Path, work: Path, label: str, threads: int) -> TreeRun:
    """Judge the bundle with the command line of the checkout at ``tree`` (see the module docstring)."""
    ws, cache, out = work / f"{label}.sqlite", work / f"cache-{label}", work / f"{label}.jsonl"
    env = {**os.environ, "SUMCHECK_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree)}
    base = [sys.executable, "-m", "engine", "--workspace", str(ws)]
    t0 = time.perf_counter()
    subprocess.run(base + ["judge", str(bundle), "--samples", "1", "--threads", str(threads),
                           "--quiet"], cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    subprocess.run(base + ["judge-export", bundle.name, "--out", str(out)], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    return TreeRun(label, seconds, {r["summary_id"]: r for r in rows})


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def report(runs: list[TreeRun]) -> None:
    """Print each run's figures and, for two runs, the ratio of their times and their score differences."""
    for r in runs:
        n = len(r.results)
        secs, prompt, new = r.timing("total_seconds"), r.timing("prompt_tokens"), r.timing("prompt_new_tokens")
        reused = r.reused()
        print(f"    {r.label}: {n} summaries in {r.seconds:.0f} s of command time ({r.seconds / max(n, 1):.1f} s a "
              f"summary); judge time per summary median {_median(secs):.1f} s, total {sum(secs):.0f} s; prompt "
              f"tokens per summary {_median(prompt):.0f} (median); tokens read per summary {_median(new):.0f}; "
              f"tokens reused per summary {_median(reused):.0f}; decode tokens per summary "
              f"{_median(r.timing('decode_tokens')):.0f}")
    if len(runs) == 2:
        a, b = runs
        ea, eb = a.expected(), b.expected()
        common = sorted(set(ea) & set(eb))
        diff = max((abs(ea[k] - eb[k]) for k in common), default=float("nan"))
        print(f"    ratio {b.label} / {a.label}: command time {b.seconds / a.seconds:.2f}, judge time "
              f"{sum(b.timing('total_seconds')) / max(1e-9, sum(a.timing('total_seconds'))):.2f}; expected scores "
              f"compared on {len(common)} (summary, item) pairs: largest difference {diff:.4f}")


def run_part(n_cases: int, threads: int, against: str = "", keep: str = "") -> list[TreeRun]:
    """The benchmark part: this checkout (and ``against``, a commit judged from a temporary worktree) on the set."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(keep) if keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        bundle = work / "bundle"
        cases, summaries = write_bundle(bundle, n_cases)
        print(f"(i) realdev judge set: {cases} MTS-Dialog test-split conversations, {summaries} summaries, one greedy "
              f"pass each, {threads} threads, load average at start {os.getloadavg()[0]:.2f}")
        runs = []
        if against:
            tree = work / "against"
            subprocess.run(["git", "worktree", "add", "--detach", "-f", str(tree), against], cwd=ROOT, check=True,
                           capture_output=True)
            try:
                runs.append(judge_tree(tree, bundle, work, against[:10], threads))
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        runs.append(judge_tree(ROOT, bundle, work, "this checkout", threads))
        report(runs)
        return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--against", default="", help="also judge the set with this commit (a temporary worktree)")
    ap.add_argument("--keep", default="", help="keep the bundle, workspaces and exports in this folder")
    a = ap.parse_args()
    run_part(a.cases, a.threads, a.against, a.keep)


if __name__ == "__main__":
    main()
