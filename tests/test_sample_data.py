"""Sample data integrity: shape, every manifest defect really in the text, ratings reproducible and meaningful."""
import csv
import re
import statistics
import sys
from collections import Counter, defaultdict

import pytest

from conftest import BUNDLE, SAMPLE
from engine.data.loading import load_paths
from engine.sample import load_manifest

sys.path.insert(0, str(SAMPLE))
import build_sample  # noqa: E402

TAG = re.compile(r"<NoteID:\s*([^>]+)>")


@pytest.fixture(scope="module")
def ds():
    return load_paths([BUNDLE])[0]


@pytest.fixture(scope="module")
def manifest():
    return load_manifest()


def _sentences(text):
    """Sentences of a summary, each keeping the citation tags that follow it ("... EF 35%. <NoteID:2> Next")."""
    return [p for p in re.split(r"(?<=[.!?>])\s+(?=[A-Z0-9])|\n+", text) if p.strip()]


def test_shape(ds, manifest):
    assert len(ds.cases) >= 12
    assert len({c.target_specialty for c in ds.cases}) >= 5
    for c in ds.cases:
        assert 3 <= len(c.notes) <= 5, c.case_id
        assert 500 <= c.word_count <= 1600, (c.case_id, c.word_count)
        sums = ds.summaries_for(c.case_id)
        assert len(sums) == 3
        assert {s.quality_group for s in sums} == {"high", "medium", "low"}
    raters = {(r.rater_id, r.rater_group) for r in ds.ratings}
    assert len(raters) == 7 and sum(g == "senior" for _, g in raters) == 2
    kinds = Counter(d["type"] for s in manifest["summaries"].values() for d in s["defects"])
    for k in ("dropped_fact", "fabricated_fact", "falsified_fact", "missing_citation", "wrong_citation",
              "redundancy", "stigmatizing_language"):
        assert kinds[k] >= 2, k


def test_every_manifest_defect_is_in_the_text(ds, manifest):
    checked = 0
    for sid, entry in manifest["summaries"].items():
        s = ds.summary(sid)
        case = ds.case(s.case_id)
        notes = {n.note_id: n.text for n in case.notes}
        all_notes = " ".join(notes.values()).lower()
        low = s.text.lower()
        for d in entry["defects"]:
            t = d["type"]
            where = f"{sid} {t}"
            if t == "dropped_fact":
                assert d["source_span"] in notes[d["note_id"]], where
                for k in d["key_terms"]:
                    assert k.lower() in d["source_span"].lower(), where
                    assert k.lower() not in low, f"{where}: {k!r} is in the summary"
            elif t == "fabricated_fact":
                assert d["summary_span"] in s.text, where
                for k in d["key_terms"]:
                    assert k.lower() in d["summary_span"].lower() and k.lower() not in all_notes, where
            elif t == "falsified_fact":
                assert d["summary_span"] in s.text and d["source_span"] in notes[d["note_id"]], where
                for k in d["key_terms"]:
                    assert k.lower() in d["summary_span"].lower() and k.lower() not in all_notes, where
            elif t == "missing_citation":
                sent = next(x for x in _sentences(s.text) if d["summary_span"] in x)
                assert not TAG.search(sent), where
            elif t == "wrong_citation":
                i = s.text.index(d["summary_span"]) + len(d["summary_span"])
                assert re.match(r"\s*<NoteID:\s*" + re.escape(d["cited_note_id"]) + r"\s*>", s.text[i:]), where
                for k in d["key_terms"]:
                    assert k.lower() in notes[d["correct_note_id"]].lower(), where
                    assert k.lower() not in notes[d["cited_note_id"]].lower(), where
            elif t == "redundancy":
                a, b = d["summary_spans"]
                assert a != b and a in s.text and b in s.text, where
            elif t == "stigmatizing_language":
                assert d["summary_span"] in s.text and d["phrase"] in d["summary_span"], where
            else:
                pytest.fail(f"unknown defect type {t}")
            checked += 1
    assert checked >= 20
    for cid, c in manifest["cases"].items():
        if c["notes_stigmatizing"]:
            assert any(c["notes_stigmatizing_span"] in n.text for n in ds.case(cid).notes), cid


def test_citations_point_to_existing_notes(ds, manifest):
    for s in ds.summaries:
        ids = {n.note_id for n in ds.case(s.case_id).notes}
        assert s.citations, s.summary_id
        assert {c.note_id for c in s.citations} <= ids, s.summary_id


def test_ratings_are_reproducible_from_the_seeded_script():
    expected = build_sample.simulate_ratings(build_sample.load_cases())
    with (BUNDLE / "ratings.csv").open(encoding="utf-8", newline="") as fh:
        committed = list(csv.DictReader(fh))
    assert committed == [{k: str(v) for k, v in r.items()} for r in expected]


def test_ratings_reflect_the_defects(ds, manifest):
    """The simulated raters see the injected defects: item means drop where the matching defect is present."""
    by = defaultdict(list)
    for r in ds.ratings:
        if r.value is not None:
            by[(r.summary_id, r.item)].append(r.value)
    mean = {k: statistics.mean(v) for k, v in by.items()}

    def split(item, defect):
        yes = [mean[(sid, item)] for sid, e in manifest["summaries"].items()
               if any(d["type"] == defect for d in e["defects"])]
        no = [mean[(sid, item)] for sid, e in manifest["summaries"].items()
              if not any(d["type"] == defect for d in e["defects"])]
        return statistics.mean(yes), statistics.mean(no)

    for item, defect in (("thorough", "dropped_fact"), ("accurate", "fabricated_fact"),
                         ("cited", "wrong_citation"), ("succinct", "redundancy"),
                         ("stigmatizing_summary", "stigmatizing_language")):
        with_d, without = split(item, defect)
        assert with_d < without - 0.3 if item != "stigmatizing_summary" else with_d > without + 0.5, (item, defect)


def test_recorded_judge_results_belong_to_this_sample_and_prompt(ds):
    """sample_data/judge_results.jsonl holds the embedded model's real judge results for the sample (recorded with
    `engine judge` + `engine judge-export`). They must match the current prompt and the sample's content — when
    either changes, this test says to regenerate them."""
    from engine.judge.results import JudgeParams, JudgeResult
    from engine.judge._planning import cache_key
    from engine.judge.prompt import PROMPT_VERSION
    from engine.llm.modelfiles import QWEN_KEY, embedded_sha256
    from engine.sample import SAMPLE_JUDGE

    lines = [x for x in SAMPLE_JUDGE.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert {JudgeResult.from_json(x).summary_id for x in lines} == {s.summary_id for s in ds.summaries}
    for line in lines:
        r = JudgeResult.from_json(line)
        assert r.provenance.prompt_version == PROMPT_VERSION, "prompt changed: regenerate sample_data/judge_results"
        assert r.provenance.model_sha256 == embedded_sha256(QWEN_KEY)  # the 1.5B default judge, not the smoke model
        s = ds.summary(r.summary_id)
        key = cache_key(r.provenance.model_sha256, JudgeParams(**r.provenance.params), r.provenance.n_ctx,
                        ds.case(s.case_id), s, [])
        assert r.cache_key == key, f"{r.summary_id}: content changed: regenerate sample_data/judge_results"
        assert r.samples and all(x.raw for x in r.samples) and r.status in ("scored", "unscored")


def test_sample_import_brings_the_judge_results(store):
    from engine.sample import ensure_sample

    ensure_sample(store)
    assert len(store.judge_results("sample")) == 36
