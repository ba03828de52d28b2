"""Build the bundled synthetic sample dataset from the hand-written cases (seeded, deterministic).

Input : sample_data/authoring/cases/*.json  (see authoring/SPEC.md; synthetic patients, known defects)
Output: sample_data/pdsqi_sample/{cases,notes,summaries,ratings}.csv   the tidy bundle the app opens on
        sample_data/manifest.json                                     ground truth: every injected defect
        sample_data/formats/...                                       the same data in the other input formats

Ratings: 7 simulated physicians (R1-R5 junior, R6-R7 senior) score every summary on the PDSQI-9. Each item's
latent "true" score comes from the summary's injected defects (e.g. each dropped pertinent fact lowers
Thorough by 1.5 points; a fabrication lowers Accurate by 2), from the summary's quality group, and from the
length of the source notes (longer sources -> lower Thorough/Organized/Succinct, as reported for PDSQI-9).
Each rater adds a personal leniency bias and Gaussian noise (senior raters less noise); the result is rounded
and clipped to the scale. About 8 % of (summary, rater) pairs are left unrated, as in real rating studies.

Run:  python sample_data/build_sample.py          (rewrites the outputs; a test checks they are up to date)
"""
from __future__ import annotations

import csv
import json
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
AUTHORING = HERE / "authoring" / "cases"
BUNDLE = HERE / "pdsqi_sample"
FORMATS = HERE / "formats"
MANIFEST = HERE / "manifest.json"
SEED = 20261121
ITEMS = ("cited", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct", "abstraction",
         "synthesized", "stigmatizing_notes", "stigmatizing_summary")
RATERS = (("R1", "junior"), ("R2", "junior"), ("R3", "junior"), ("R4", "junior"), ("R5", "junior"),
          ("R6", "senior"), ("R7", "senior"))
MISSING_RATE = 0.08


def load_cases() -> list[dict]:
    files = sorted(AUTHORING.glob("*.json"))
    if not files:
        sys.exit(f"no authored cases in {AUTHORING}")
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def latent_scores(summary: dict, case: dict, z_len: float) -> dict[str, float]:
    d = Counter(x["type"] for x in summary["defects"])
    q = summary["quality_group"]
    low = 1.0 if q == "low" else 0.0
    structured = summary.get("prompt_variant") == "structured"
    return {
        "cited": 5.0 - 1.5 * d["missing_citation"] - 1.7 * d["wrong_citation"],
        "accurate": 5.0 - 2.0 * d["fabricated_fact"] - 1.6 * d["falsified_fact"],
        "thorough": 4.8 - 1.5 * d["dropped_fact"] - 0.35 * z_len,
        "useful": 4.7 - 0.6 * d["dropped_fact"] - 0.6 * d["fabricated_fact"] - 0.3 * d["falsified_fact"]
                  - 0.3 * d["redundancy"],
        "organized": (4.5 if structured else 3.7) - 0.25 * z_len - 0.2 * low,
        "comprehensible": 4.4 - 0.4 * low,
        "succinct": 4.6 - 1.4 * d["redundancy"] - 0.2 * z_len,
        "synthesized": {"high": 4.2, "medium": 3.6, "low": 3.0}.get(q, 3.6),
        "p_stigma_summary": 0.85 if d["stigmatizing_language"] else 0.03,
        "p_stigma_notes": 0.85 if case.get("notes_stigmatizing") else 0.05,
    }


def simulate_ratings(cases: list[dict]) -> list[dict]:
    rng = random.Random(SEED)
    bias = {r: rng.gauss(0.0, 0.25) for r, _ in RATERS}
    noise = {r: (0.45 if g == "senior" else 0.6) for r, g in RATERS}
    words = [sum(len(n["text"].split()) for n in c["notes"]) for c in cases]
    mu, sd = statistics.mean(words), statistics.pstdev(words) or 1.0
    p_abs = {c["case_id"]: rng.uniform(0.6, 0.95) for c in cases}
    rows = []
    for case, w in zip(cases, words):
        z_len = (w - mu) / sd
        for s in case["summaries"]:
            lat = latent_scores(s, case, z_len)
            raters = [r for r in RATERS if rng.random() >= MISSING_RATE]
            if len(raters) < 4:
                raters = list(RATERS)
            for rid, group in raters:
                vals: dict[str, str] = {}
                for item in ("cited", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct"):
                    x = lat[item] + bias[rid] + rng.gauss(0.0, noise[rid])
                    vals[item] = str(int(min(5, max(1, round(x)))))
                needs = rng.random() < p_abs[case["case_id"]]
                vals["abstraction"] = "1" if needs else "0"
                if needs:
                    x = lat["synthesized"] + bias[rid] + rng.gauss(0.0, noise[rid])
                    vals["synthesized"] = str(int(min(5, max(1, round(x)))))
                else:
                    vals["synthesized"] = "NA"
                vals["stigmatizing_notes"] = "1" if rng.random() < lat["p_stigma_notes"] else "0"
                vals["stigmatizing_summary"] = "1" if rng.random() < lat["p_stigma_summary"] else "0"
                for item in ITEMS:
                    rows.append({"summary_id": s["summary_id"], "rater_id": rid, "rater_group": group,
                                 "item": item, "value": vals[item]})
    return rows


def write_csv(path: Path, header: list[str], rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


DIALOGUES = [
    ("enc-001",
     "[doctor] Good morning, what brings you in today?\n[patient] I've had a cough for about three weeks, "
     "mostly dry, worse at night.\n[doctor] Any fever, shortness of breath, or weight loss?\n[patient] No fever. "
     "A little winded on stairs. No weight loss.\n[doctor] Do you smoke?\n[patient] I quit ten years ago, "
     "smoked a pack a day for twenty years.\n[doctor] Any new medications?\n[patient] My blood pressure pill was "
     "changed to lisinopril last month.\n[doctor] Lisinopril can cause a dry cough. Lungs sound clear today and "
     "your oxygen is 97 percent. Let's switch you to losartan and get a chest X-ray given your smoking history. "
     "Call if the cough is not better in four weeks.",
     "Chief complaint: dry cough x3 weeks, worse at night, mild exertional dyspnea. No fever or weight loss. "
     "Former smoker (20 pack-years, quit 10 years ago). Lisinopril started 1 month ago. Exam: lungs clear, SpO2 "
     "97%. Assessment: likely ACE-inhibitor cough. Plan: switch lisinopril to losartan; chest X-ray; return if "
     "no improvement in 4 weeks."),
    ("enc-002",
     "[doctor] How has your blood sugar been?\n[patient] Fasting numbers are around 160 to 180.\n[doctor] Are you "
     "taking the metformin twice a day?\n[patient] Yes, but it upsets my stomach some days.\n[doctor] Your A1c "
     "came back at 8.4, up from 7.6. Kidney function is normal. I'd like to switch you to the extended-release "
     "metformin, which is easier on the stomach, and add semaglutide once weekly. We'll recheck the A1c in three "
     "months.\n[patient] Okay. Will the shot make me nauseous?\n[doctor] It can at first; we start at a low dose.",
     "Type 2 diabetes, suboptimally controlled: A1c 8.4% (previously 7.6%), fasting glucose 160-180. GI upset on "
     "metformin IR; normal renal function. Plan: change to metformin ER; start semaglutide weekly at low dose "
     "(counselled on nausea); repeat A1c in 3 months."),
    ("enc-003",
     "[doctor] Tell me about the headaches.\n[patient] They started two months ago, on the right side, throbbing, "
     "with light sensitivity. About four a month.\n[doctor] Any weakness, numbness, or vision loss?\n[patient] "
     "No, but I see zigzag lines before some of them.\n[doctor] That sounds like migraine with aura. Your "
     "neurological exam is normal. Since you have aura, we should avoid estrogen-containing birth control. "
     "Let's try sumatriptan at onset and keep a headache diary.",
     "New migraine with aura: right-sided throbbing headaches x2 months, ~4/month, photophobia, visual zigzag "
     "aura. Neuro exam normal. Plan: sumatriptan at onset; headache diary; avoid estrogen-containing "
     "contraception given aura."),
]


def main() -> None:
    cases = load_cases()
    case_rows, note_rows, summ_rows = [], [], []
    manifest = {"seed": SEED, "raters": [{"rater_id": r, "rater_group": g} for r, g in RATERS],
                "description": "Ground truth for the synthetic sample: every defect injected into each summary, "
                               "with exact spans (checked by tests/test_sample_data.py).",
                "cases": {}, "summaries": {}}
    for c in cases:
        case_rows.append({"case_id": c["case_id"], "target_specialty": c["target_specialty"]})
        manifest["cases"][c["case_id"]] = {
            "target_specialty": c["target_specialty"], "patient_label": c.get("patient_label", ""),
            "notes_stigmatizing": bool(c.get("notes_stigmatizing")),
            "notes_stigmatizing_span": c.get("notes_stigmatizing_span"),
            "note_words": sum(len(n["text"].split()) for n in c["notes"])}
        for n in c["notes"]:
            note_rows.append({"case_id": c["case_id"], "note_id": n["note_id"], "date": n.get("date", ""),
                              "note_type": n.get("note_type", ""), "author_specialty": n.get("author_specialty", ""),
                              "text": n["text"]})
        for s in c["summaries"]:
            summ_rows.append({"summary_id": s["summary_id"], "case_id": c["case_id"], "text": s["text"],
                              "generator_model": s["generator_model"], "quality_group": s["quality_group"],
                              "prompt_variant": s.get("prompt_variant", "")})
            manifest["summaries"][s["summary_id"]] = {"case_id": c["case_id"], "quality_group": s["quality_group"],
                                                      "generator_model": s["generator_model"],
                                                      "defects": s["defects"]}
    ratings = simulate_ratings(cases)
    write_csv(BUNDLE / "cases.csv", ["case_id", "target_specialty"], case_rows)
    write_csv(BUNDLE / "notes.csv", ["case_id", "note_id", "date", "note_type", "author_specialty", "text"], note_rows)
    write_csv(BUNDLE / "summaries.csv", ["summary_id", "case_id", "text", "generator_model", "quality_group",
                                         "prompt_variant"], summ_rows)
    write_csv(BUNDLE / "ratings.csv", ["summary_id", "rater_id", "rater_group", "item", "value"], ratings)
    MANIFEST.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    # --- the same data in the other input formats (two cases), for demos and loader tests
    demo = cases[:2]
    (FORMATS / "case_json").mkdir(parents=True, exist_ok=True)
    redcap = []
    for c in demo:
        s = c["summaries"][0]
        obj = {"target_specialty": c["target_specialty"], "notes": {n["note_id"]: n["text"] for n in c["notes"]},
               "summary": s["text"]}
        (FORMATS / "case_json" / f"{c['case_id']}.json").write_text(json.dumps(obj, indent=2, ensure_ascii=False)
                                                                     + "\n", encoding="utf-8")
        by_rater: dict[str, dict] = {}
        for r in ratings:
            if r["summary_id"] == s["summary_id"]:
                by_rater.setdefault(r["rater_id"], {"record_id": c["case_id"], "redcap_event_name": "eval_arm_1",
                                                    "rater": r["rater_id"], "rater_group": r["rater_group"]})
                v = r["value"]
                by_rater[r["rater_id"]][r["item"]] = "" if v == "NA" else v
        for row in by_rater.values():
            row["pdsqi_complete"] = "2"
            redcap.append(row)
    write_csv(FORMATS / "redcap_ratings.csv", ["record_id", "redcap_event_name", "rater", "rater_group", *ITEMS,
                                               "pdsqi_complete"], redcap)
    write_csv(FORMATS / "dialogue.csv", ["encounter_id", "dialogue", "note"],
              [{"encounter_id": e, "dialogue": d, "note": n} for e, d, n in DIALOGUES])
    write_fhir_export()
    print(f"{len(cases)} cases, {len(note_rows)} notes, {len(summ_rows)} summaries, {len(ratings)} ratings "
          f"-> {BUNDLE.relative_to(HERE.parent)}")


def write_fhir_export() -> None:
    """The whole tidy bundle as a FHIR R4 Bulk Data export (every third note's text in a Binary), read back by
    'python -m engine import sample_data/formats/fhir/ --summary-type llm-summary'."""
    sys.path.insert(0, str(HERE.parent))
    from engine.data.fhir.export import dataset_resources, write_bulk
    from engine.data.loading import load_paths

    ds, _ = load_paths([BUNDLE])
    write_bulk(dataset_resources(ds, binary_every=3), FORMATS / "fhir")


if __name__ == "__main__":
    main()
