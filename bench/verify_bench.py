"""Claim verification measured on real conversations the team did not write.

Data: the fact-controlled set of ``bench/verify_set.py`` (MTS-Dialog and ACI-BENCH training data, CC BY 4.0),
split by conversation before anything was chosen. Every choice — claims or whole sentences, the record alone
or with the best-matching lines in the question, the cap a fact-level finding puts on a claim, the threshold —
is made on the development split (``--split dev``); the test split is only reported (``--split test``).

Scores (higher = more likely unsupported):
  lexical     the share of the sentence's content words absent from the conversation (a ten-line baseline)
  facts       1 when a fact-level check finds something the record contradicts or never gives, else 0
  model       1 - P(yes), the least supported claim of the sentence (the model alone)
  model+facts 1 - p_supported as verify-v1 shipped it: the model's P(yes), capped by a fact-level finding
  combined    1 - P(supported) of the monotone combination of every signal (engine.evidence.support.verification.
              combination): the model's answer, the claim's words and numbers the record never uses, an age the
              record never gives, a fact-level finding — the sentence's least supported claim. With ``--fit`` on the
              development split its weights and thresholds are fitted and written to the shipped file; the test
              split reads the shipped file.
The categories: ``removed``, ``edit:*`` (one fact of a note sentence changed), ``natural:*`` (what summarizers add:
a history, a finding, a pertinent negative, a second value, a dose) and the natural-like group (``natural:*`` with
``edit:age`` and ``edit:setting``), each against the same supported sentences.
Figures: sentence-level AUROC over supported vs unsupported (removed + edits), per category, and on the
reference sentences that state what the conversation never gave (labelled by rule, reported on their own);
precision and recall at the shipped threshold; summary-level AUROC (per conversation, its supported sentences
as one summary against the same sentences plus its edited ones); seconds per question after the record is read,
and the record's reading speed. Answers are cached on disk (``bench/out/verify_answers.jsonl``) by model,
prompt and messages, so a rerun costs only what is new.

Usage: python bench/verify_bench.py [--split dev|test] [--model default|smoke] [--configs sentence claims ...]
       [--mts 40] [--aci 5] [--threads 2]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import verify_set  # noqa: E402
from wrapped_backend import WrappedBackend  # noqa: E402
from engine.core import Case, Note, Summary  # noqa: E402
from engine.evidence.text import content_stems  # noqa: E402
from engine.evidence.support.verification import (COMBINATION_PATH, Combination, DEFAULT_PARAMS, FEATURES,
                                                  RecordWords, VerifyParams, claim_signals, fit_monotone,
                                                  shipped_combination, split_claims, verify_summary)  # noqa: E402
from engine.llm import NextToken  # noqa: E402
from engine.statistics import auroc  # noqa: E402

OUT = ROOT / "bench" / "out"
CONFIGS = {
    "sentence": VerifyParams(claims=False, excerpt=False, finding_cap=None, combine=False),
    "claims": VerifyParams(claims=True, excerpt=False, finding_cap=None, combine=False),
    "claims+excerpt": VerifyParams(claims=True, excerpt=True, finding_cap=None, combine=False),
}


class CachedAnswers(WrappedBackend):
    """A backend whose one-step answers are kept on disk by model and messages; records each call's cost."""

    def __init__(self, backend, model_id: str, path: Path):
        super().__init__(backend)
        self.model_id, self.path = model_id, path
        self.capabilities = backend.capabilities
        self.calls: list[tuple[float, int]] = []  # (seconds, new tokens) of the calls computed now
        self.memo: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                d = json.loads(line)
                self.memo[d["key"]] = d
        self.fh = path.open("a", encoding="utf-8")

    def next_token(self, messages, keep):
        key = hashlib.sha256(json.dumps([self.model_id, messages, keep]).encode()).hexdigest()
        d = self.memo.get(key)
        if d is None:
            nt = self.b.next_token(messages, keep)
            d = {"key": key, "logprobs": nt.logprobs, "prompt_tokens": nt.prompt_tokens,
                 "new_tokens": nt.new_tokens, "seconds": nt.seconds}
            self.memo[key] = d
            self.fh.write(json.dumps(d) + "\n")
            self.fh.flush()
            self.calls.append((nt.seconds, nt.new_tokens))
        return NextToken(d["logprobs"], d["prompt_tokens"], d["new_tokens"], d["seconds"])


def lexical_absent(sentence: str, record: str) -> float:
    stems = content_stems(sentence)
    have = set(content_stems(record))
    return sum(s not in have for s in stems) / len(stems) if stems else 0.0


def open_backend(which: str, threads: int):
    from engine.llm import DEFAULT_EMBEDDED, LlamaCppBackend, SMOKE_EMBEDDED, embedded_model_path, embedded_sha256

    key = DEFAULT_EMBEDDED if which == "default" else SMOKE_EMBEDDED
    path = embedded_model_path(key)
    return LlamaCppBackend(path, n_ctx=8192, n_threads=threads), (embedded_sha256(key) or path.name)


def run(items, backend, configs) -> dict:
    """Per config, per item: (p_model of the least supported claim, findings?)."""
    out: dict[str, list] = {c: [None] * len(items) for c in configs}
    by_record = defaultdict(list)
    for k, it in enumerate(items):
        by_record[it.record].append(k)
    t0, done = time.time(), 0
    for record, ks in by_record.items():
        case = Case("c", "", (Note("record", record),))
        for c in configs:
            for k in ks:
                res = verify_summary(case, Summary(f"s{k}", "c", items[k].sentence), backend, "", CONFIGS[c])
                claims = [cl for s in res.sentences for cl in s.claims]
                ps = [cl.p_model for cl in claims if cl.p_model is not None]
                out[c][k] = (min(ps) if ps else None, any(cl.notes_say for cl in claims), len(claims))
        done += len(ks)
        print(f"  {done}/{len(items)} items, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def p_shipped(p_model, found, cap):
    if p_model is None:
        return None
    return min(p_model, cap) if (found and cap is not None) else p_model


NATURAL_LIKE = ("edit:age", "edit:setting")


def natural_like(category: str) -> bool:
    return category.startswith("natural:") or category in NATURAL_LIKE


def signal_rows(items, answers) -> list:
    """Per item, the sentence's signal vector: the model's answer and, over its claims, the largest of each other
    signal (a sentence is as unsupported as its least supported claim)."""
    records: dict[str, RecordWords] = {}
    out = []
    for k, it in enumerate(items):
        rw = records.get(it.record)
        if rw is None:
            rw = records[it.record] = RecordWords(Case("c", "", (Note("record", it.record),)))
        p = answers[k][0]
        vecs = [claim_signals(c.text, rw, p).vector() for c in split_claims(it.sentence)] or \
            [claim_signals(it.sentence, rw, p).vector()]
        out.append([max(v[j] for v in vecs) for j in range(len(FEATURES))])
    return out


def combined_scores(rows, comb: Combination) -> list:
    import math
    return [1.0 / (1.0 + math.exp(-(comb.intercept + sum(w * x for w, x in zip(comb.weights, r))))) for r in rows]


def fit_combination(items, rows) -> Combination:
    """Weights on the development split's main items, each category weighing the same in all (the supported
    sentences as much as all the others together), so no kind of error is traded for a commoner one; thresholds on
    P(supported) from its supported sentences: unsupported below the level that flags at most 5 % of them,
    uncertain up to the level that flags 15 %."""
    main = [k for k, it in enumerate(items) if it.category != "reference-unsupported"]
    count = defaultdict(int)
    for k in main:
        count[items[k].category] += 1
    kinds = len([c for c in count if c != "supported"])
    weight = [(kinds if items[k].category == "supported" else 1.0) / count[items[k].category] for k in main]
    b0, w = fit_monotone([rows[k] for k in main], [items[k].label for k in main], sample_weight=weight)
    comb = Combination("verify-combination-v1", FEATURES, round(b0, 4), tuple(round(x, 4) for x in w), 0.5, 0.5,
                       "bench/verify_bench.py development split (real conversations)")
    sup = sorted(1 - x for x in combined_scores([rows[k] for k in main if items[k].label == 0], comb))
    low = sup[int(0.05 * len(sup))]
    high = max(sup[int(0.15 * len(sup))], low)
    return Combination(comb.version, FEATURES, comb.intercept, comb.weights, round(low, 4), round(high, 4),
                       comb.chosen_on)


def figures(items, answers, cap, threshold, rows=None, comb=None):
    main = [k for k, it in enumerate(items) if it.category != "reference-unsupported"]
    y = [items[k].label for k in main]
    combined = combined_scores(rows, comb) if comb is not None else None
    scores = {
        "lexical": [lexical_absent(items[k].sentence, items[k].record) for k in main],
        "facts": [float(answers[k][1]) for k in main],
        "model": [None if answers[k][0] is None else 1 - answers[k][0] for k in main],
        "model+facts": [None if answers[k][0] is None else 1 - p_shipped(answers[k][0], answers[k][1], cap)
                        for k in main],
    }
    if combined is not None:
        scores["combined"] = [combined[k] for k in main]
    res = {name: {"AUROC": auroc(y, s)} for name, s in scores.items()}
    cats = sorted({it.category for it in items} - {"supported", "reference-unsupported"})
    sup = [k for k in main if items[k].category == "supported"]
    for name, s in scores.items():
        sk = dict(zip(main, s))
        for cat in cats:
            ck = [k for k in main if items[k].category == cat]
            res[name][cat] = auroc([0] * len(sup) + [1] * len(ck), [sk[k] for k in sup] + [sk[k] for k in ck])
        nk = [k for k in main if natural_like(items[k].category)]
        res[name]["natural-like"] = auroc([0] * len(sup) + [1] * len(nk), [sk[k] for k in sup] + [sk[k] for k in nk])
        ref = [k for k, it in enumerate(items) if it.category == "reference-unsupported"]
        if name == "lexical":
            rs = [lexical_absent(items[k].sentence, items[k].record) for k in ref]
        elif name == "facts":
            rs = [float(answers[k][1]) for k in ref]
        elif name == "combined":
            rs = [combined[k] for k in ref]
        else:
            rs = [None if answers[k][0] is None else 1 - (answers[k][0] if name == "model" else
                                                          p_shipped(answers[k][0], answers[k][1], cap)) for k in ref]
        res[name]["reference-unsupported"] = auroc([0] * len(sup) + [1] * len(ref), [sk[k] for k in sup] + rs)
    # precision / recall at the shipped threshold
    pred = [None if answers[k][0] is None else p_shipped(answers[k][0], answers[k][1], cap) < threshold for k in main]
    tp = sum(1 for p, l in zip(pred, y) if p and l)
    fp = sum(1 for p, l in zip(pred, y) if p and not l)
    fn = sum(1 for p, l in zip(pred, y) if p is False and l)
    res["at_threshold"] = {"threshold": threshold, "precision": tp / (tp + fp) if tp + fp else float("nan"),
                           "recall": tp / (tp + fn) if tp + fn else float("nan"),
                           "unscored": sum(p is None for p in pred)}
    if combined is not None:
        res["combined_at_thresholds"] = at_bands([1 - combined[k] for k in main], y, comb)
    # summary level: per conversation, supported sentences vs the same plus its edits (against the full record)
    conv = defaultdict(lambda: {"sup": [], "edit": []})
    for k, it in enumerate(items):
        if it.variant == "full" and it.category == "supported":
            conv[it.conv_id]["sup"].append(k)
        elif it.category.startswith("edit:"):
            conv[it.conv_id]["edit"].append(k)
    sl, ss = [], {n: [] for n in scores}
    for cid, g in conv.items():
        if not g["sup"] or not g["edit"]:
            continue
        for lab, ks in ((0, g["sup"]), (1, g["sup"] + g["edit"])):
            sl.append(lab)
            for name in scores:
                vals = []
                for k in ks:
                    if name == "lexical":
                        vals.append(lexical_absent(items[k].sentence, items[k].record))
                    elif name == "facts":
                        vals.append(float(answers[k][1]))
                    elif name == "combined":
                        vals.append(combined[k])
                    elif answers[k][0] is not None:
                        vals.append(1 - (answers[k][0] if name == "model" else
                                         p_shipped(answers[k][0], answers[k][1], cap)))
                ss[name].append(max(vals) if vals else None)
    for name in scores:
        res[name]["summary AUROC"] = auroc(sl, ss[name])
    res["n"] = {"sentences": len(main), "unsupported": sum(y), "summaries": len(sl),
                "reference-unsupported": sum(1 for it in items if it.category == "reference-unsupported")}
    return res


def at_bands(p_supported, y, comb: Combination) -> dict:
    """Precision and recall of *unsupported*, and how many of each class fall in the *uncertain* band; precision
    also at a prevalence of 5 % unsupported sentences (the bench's classes reweighted)."""
    verdict = [comb.verdict(p) for p in p_supported]
    tp = sum(v == "unsupported" and t for v, t in zip(verdict, y))
    fp = sum(v == "unsupported" and not t for v, t in zip(verdict, y))
    pos, neg = sum(y), len(y) - sum(y)
    rec, fpr = tp / pos if pos else float("nan"), fp / neg if neg else float("nan")
    prev = 0.05
    return {"unsupported_below": comb.unsupported_below, "supported_from": comb.supported_from,
            "precision": tp / (tp + fp) if tp + fp else float("nan"), "recall": rec,
            "supported_marked_unsupported": fp / neg if neg else float("nan"),
            "precision_at_5pct": (rec * prev) / (rec * prev + fpr * (1 - prev)) if rec + fpr else float("nan"),
            "uncertain": {"unsupported": sum(v == "uncertain" and t for v, t in zip(verdict, y)),
                          "supported": sum(v == "uncertain" and not t for v, t in zip(verdict, y))}}


def choose(items, answers):
    """On the development split: the cap (by AUROC) and the threshold (best F1) for model+facts."""
    main = [k for k, it in enumerate(items) if it.category != "reference-unsupported"]
    y = np.array([items[k].label for k in main])
    best = None
    for cap in (None, 0.05, 0.1, 0.2, 0.3, 0.4):
        s = [None if answers[k][0] is None else 1 - p_shipped(answers[k][0], answers[k][1], cap) for k in main]
        a = auroc(list(y), s)
        if best is None or a > best[0] + 1e-9:
            best = (a, cap)
    cap = best[1]
    p = np.array([np.nan if answers[k][0] is None else p_shipped(answers[k][0], answers[k][1], cap) for k in main])
    best_t = None
    for t in np.round(np.arange(0.05, 0.96, 0.01), 2):
        pred = p < t
        ok = ~np.isnan(p)
        tp = int(((pred) & (y == 1) & ok).sum())
        fp = int(((pred) & (y == 0) & ok).sum())
        fn = int(((~pred) & (y == 1) & ok).sum())
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if best_t is None or f1 > best_t[0] + 1e-9:
            best_t = (f1, float(t))
    return cap, best_t[1], best[0], best_t[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--model", default="default", choices=("default", "smoke"))
    ap.add_argument("--configs", nargs="+", default=["sentence"], choices=list(CONFIGS))
    ap.add_argument("--mts", type=int, default=40, help="MTS-Dialog conversations per split")
    ap.add_argument("--aci", type=int, default=5, help="ACI-BENCH encounters per split")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="", help="also write the figures here")
    ap.add_argument("--fit", action="store_true", help="(development split) fit the combination and write it to "
                                                        "the shipped file")
    a = ap.parse_args()
    if not verify_set.REALDEV.exists():
        sys.exit(f"no development data at {verify_set.REALDEV} (the bench reads the realdev folder of the shared "
                 "reference data)")
    items = [it for it in verify_set.build(a.mts, a.aci) if it.split == a.split]
    backend, model_id = open_backend(a.model, a.threads)
    OUT.mkdir(exist_ok=True)
    cached = CachedAnswers(backend, model_id, OUT / "verify_answers.jsonl")
    print(f"{a.split} split: {len(items)} items from {len({i.conv_id for i in items})} conversations; "
          f"model {a.model} ({backend.describe()['model_file']})")
    answers = run(items, cached, a.configs)
    report = {"split": a.split, "model": a.model, "configs": {}}
    for c in a.configs:
        if a.split == "dev":
            cap, thr, auc_d, f1 = choose(items, answers[c])
            print(f"\n[{c}] chosen on dev: finding cap {cap}, threshold {thr} (dev AUROC {auc_d:.3f}, F1 {f1:.3f})")
        else:
            cap, thr = DEFAULT_PARAMS.finding_cap, DEFAULT_PARAMS.threshold  # verify-v1 (combine=False)
        t_sig = time.perf_counter()
        rows = signal_rows(items, answers[c])
        report["signal_seconds_per_sentence"] = (time.perf_counter() - t_sig) / max(len(items), 1)
        print(f"signals without the model: {report['signal_seconds_per_sentence'] * 1000:.1f} ms per sentence "
              "(the records' words read once each included)")
        if a.fit and a.split == "dev" and c == "sentence":
            comb = fit_combination(items, rows)
            COMBINATION_PATH.write_text(json.dumps(comb.to_dict(), indent=1) + "\n", encoding="utf-8")
            shipped_combination.cache_clear()
            print(f"fitted on dev and written to {COMBINATION_PATH.name}: {json.dumps(comb.to_dict())}")
        comb = shipped_combination() if COMBINATION_PATH.exists() else None
        fig = figures(items, answers[c], cap, thr, rows, comb)
        report["configs"][c] = fig
        print(f"\n== {a.split} · {a.model} · {c} · n = {fig['n']}")
        cats = [k for k in fig["model"] if k not in ("AUROC",)]
        print(f"{'score':12} {'AUROC':>6} " + " ".join(f"{k:>14}" for k in cats))
        for name in [n for n in ("lexical", "facts", "model", "model+facts", "combined") if n in fig]:
            row = fig[name]
            print(f"{name:12} {row['AUROC']:6.3f} " + " ".join(f"{row[k]:14.3f}" for k in cats))
        t = fig["at_threshold"]
        print(f"model+facts at threshold {t['threshold']}: precision {t['precision']:.3f}, recall "
              f"{t['recall']:.3f}, unscored {t['unscored']}")
        if "combined_at_thresholds" in fig:
            print("combined: " + json.dumps(fig["combined_at_thresholds"]))
    q = [s for s, n in cached.calls if n < 400]
    r = [(s, n) for s, n in cached.calls if n >= 400]
    if q:
        print(f"\nseconds per question after the record is read: median {statistics.median(q):.2f} "
              f"(n = {len(q)}, {a.threads} threads)")
        report["seconds_per_question"] = statistics.median(q)
    if r:
        tps = sum(n for _, n in r) / sum(s for s, _ in r)
        print(f"record reading: {tps:.0f} tokens/s over {len(r)} records")
        report["record_tokens_per_second"] = tps
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
