"""What claim verification marks on our own sample: the documented fabrications it finds and the sentences it
marks that no documented defect explains.

Reads shipped or re-exported verification rows (``python -m engine sample --export-verification FILE``) and the
sample's manifest. Prints: documented fabricated and falsified facts found (an unsupported claim on the span),
the sentences with no documented fabrication or falsification marked unsupported (and those marked uncertain),
and every such mark on a high-quality summary with the sentence, P and what drove it. The sample was written by
the team and the fact checks were written while reading it: a floor the product keeps, not a measurement.
Usage: python bench/verify_sample.py [FILE]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.data import load_paths  # noqa: E402
from engine.evidence.support.verification import VerificationResult  # noqa: E402
from engine.evidence import check_verification  # noqa: E402
from engine.sample import SAMPLE_BUNDLE, SAMPLE_VERIFY, load_manifest  # noqa: E402

FACT_KINDS = ("fabricated_fact", "falsified_fact")


def main(path: Path = SAMPLE_VERIFY) -> dict:
    ds, _ = load_paths(sorted(str(p) for p in SAMPLE_BUNDLE.iterdir() if p.suffix in (".csv", ".jsonl")))
    results = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        results[row["summary_id"]] = VerificationResult.from_dict(json.loads(row["result"]))
    manifest = load_manifest()
    checks = check_verification(ds, manifest, results)
    facts = [c for c in checks if c.kind in FACT_KINDS]
    out = {"documented_facts": len(facts), "found": sum(c.found for c in facts), "sentences": 0,
           "other_sentences": 0, "other_unsupported": 0, "other_uncertain": 0, "high_quality_marks": []}
    for sid, res in sorted(results.items()):
        entry = manifest["summaries"].get(sid, {})
        text = ds.summary(sid).text
        spans = [(text.find(d["summary_span"]), text.find(d["summary_span"]) + len(d["summary_span"]))
                 for d in entry.get("defects", []) if d.get("type") in FACT_KINDS and d["summary_span"] in text]
        for s in res.sentences:
            out["sentences"] += 1
            if any(a < s.end and b > s.start for a, b in spans):
                continue
            out["other_sentences"] += 1
            out["other_unsupported"] += s.verdict == "unsupported"
            out["other_uncertain"] += s.verdict == "uncertain"
            if entry.get("quality_group") == "high" and s.verdict in ("unsupported", "uncertain"):
                why = "; ".join(d for c in s.claims for d in c.drivers)
                out["high_quality_marks"].append(f"{sid} [{s.verdict}, P {s.p_supported:.2f}] {s.text} — {why}")
    cites = [c for c in checks if c.kind == "wrong_citation"]
    out["wrong_citations"], out["wrong_citations_found"] = len(cites), sum(bool(c.found) for c in cites)
    wrong_spans = {(c.summary_id, c.span) for c in cites}
    flagged = checked = 0
    for sid, res in results.items():
        text = ds.summary(sid).text
        spans = [(text.find(sp), text.find(sp) + len(sp)) for k, sp in wrong_spans if k == sid and sp in text]
        for s in res.sentences:
            if s.citation_verdict and not any(a < s.end and b > s.start for a, b in spans):
                checked += 1
                flagged += s.citation_verdict in ("wrong", "unknown")
    out["other_citations_checked"], out["other_citations_flagged"] = checked, flagged
    print(f"the model's citation check: documented wrong citations flagged {out['wrong_citations_found']} of "
          f"{out['wrong_citations']}; other checked citations flagged {flagged} of {checked}")
    missed = [f"{c.summary_id}: {c.span} ({c.evidence})" for c in facts if not c.found]
    print(f"documented fabricated/falsified facts found: {out['found']} of {out['documented_facts']}")
    for m in missed:
        print("  missed:", m)
    print(f"other sentences: {out['other_sentences']}; marked unsupported {out['other_unsupported']}, uncertain "
          f"{out['other_uncertain']}")
    print("marks on high-quality summaries:")
    for m in out["high_quality_marks"]:
        print("  " + m)
    return out


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE_VERIFY)
