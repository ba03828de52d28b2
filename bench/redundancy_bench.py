"""Restatements inside a summary (engine.evidence.support.redundancy): found where documented, and how often raised elsewhere.

Three sets, all written by the team:
  * sample floor — the bundled sample's 36 summaries; 7 carry a documented restatement (the manifest). The rule's
    thresholds were chosen on this set, so its figures are a floor, not a result;
  * validity set — the judge-validity variants (bench/validity_set.py), split by case as there. The ``succinct``
    variants add "To reiterate, …" copies of earlier sentences (finding those is nearly true by construction: a
    pipeline check); every other variant (clean, dropped, falsified, uncited, reordered, shorthand, stigmatizing)
    adds no restatement, so any flag there is a false alarm. Reported per split; the test split was not looked at
    while choosing the rule;
  * written summaries — the omission benchmark's summaries of the 14 conversations and 12 note cases, written
    without restatements: every flag is printed for reading.
Usage: python bench/redundancy_bench.py
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine.evidence.support import is_heading  # noqa: E402
from engine.evidence import Embedder  # noqa: E402
from engine.evidence.support import restatements  # noqa: E402
from engine.evidence.text import split_sentences  # noqa: E402


def flags(emb, text):
    sents = [s.clean for s in split_sentences(text)]
    return sents, restatements(sents, emb.sentence_embeddings(sents), skip=[is_heading(t) for t in sents])


def sample_floor(emb):
    from engine.data import load_paths
    from engine.sample import SAMPLE_BUNDLE, load_manifest

    ds, _ = load_paths([SAMPLE_BUNDLE], name="sample")
    manifest = load_manifest()
    documented = found = other_flags = 0
    clean = 0
    for s in ds.summaries:
        red = [d for d in manifest["summaries"].get(s.summary_id, {}).get("defects", []) if d["type"] == "redundancy"]
        sents = split_sentences(s.text)
        res = restatements([x.clean for x in sents], emb.sentence_embeddings([x.clean for x in sents]),
                           skip=[is_heading(x.clean) for x in sents])
        if not red:
            clean += 1
            other_flags += len(res)
            continue
        for d in red:
            documented += 1
            a, b = (s.text.find(x) for x in d["summary_spans"])
            la, lb = (len(x) for x in d["summary_spans"])
            ia = {k for k, x in enumerate(sents) if a < x.end and a + la > x.start}
            ib = {k for k, x in enumerate(sents) if b < x.end and b + lb > x.start}
            found += any({r.first, r.later} & ia and {r.first, r.later} & ib for r in res)
    print(f"sample floor (rule chosen here): documented restatements found {found}/{documented}; "
          f"flags in the {clean} summaries without one: {other_flags}")


def validity(emb):
    from validity_set import all_variants

    for split in ("dev", "test"):
        vs = [v for v in all_variants() if v.split == split]
        succ = [v for v in vs if v.kind == "succinct"]
        other = [v for v in vs if v.kind != "succinct"]
        added = found = 0
        for v in succ:
            sents, res = flags(emb, v.text)
            copies = {k for k, t in enumerate(sents) if t.startswith("To reiterate")}
            added += len(copies)
            found += len(copies & {r.later for r in res})
        false = [(v, r, s) for v in other for s, rs in [flags(emb, v.text)] for r in rs]
        n_sent = sum(len(split_sentences(v.text)) for v in other)
        print(f"validity set, {split} split: added restatements found {found}/{added} (pipeline check); "
              f"false alarms {len(false)} in {n_sent} sentences of {len(other)} summaries without one "
              f"({len({v.summary_id for v, _, _ in false})} summaries)")
        if split == "test":
            for v, r, s in false:
                print(f"   {v.summary_id}: {r.describe()}\n      {s[r.first][:110]}\n      {s[r.later][:110]}")


def written(emb):
    from omission_benchmark import load_conversations, load_note_cases

    n = n_sent = 0
    shown = []
    for item in load_note_cases() + load_conversations():
        for sid, text, _, _ in item.written:
            sents, res = flags(emb, text)
            n += 1
            n_sent += len(sents)
            shown += [(sid, r, sents) for r in res]
    print(f"written summaries: {len(shown)} flags in {n_sent} sentences of {n} summaries")
    for sid, r, sents in shown:
        print(f"   {sid}: {r.describe()}\n      {sents[r.first][:110]}\n      {sents[r.later][:110]}")


def main():
    emb = Embedder()
    sample_floor(emb)
    validity(emb)
    written(emb)


if __name__ == "__main__":
    main()
