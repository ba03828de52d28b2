"""What a page reads on every rerun is not computed twice: a lexicon keeps the scans of the texts it read, and a
stored MED-OMIT result is built from its parsed JSON once."""
import json
import pickle

from engine.evidence.medomit.result import MedOmitResult
from engine.evidence.stigma.detector import Lexicon, load_lexicon
from engine.sample import SAMPLE_MEDOMIT

NOTE = "Pt is a poor historian and was noncompliant with insulin. Denies chest pain."


def test_a_lexicon_scans_each_text_once_and_keeps_a_bounded_memo():
    lex = load_lexicon()
    first = lex.scan(NOTE)
    assert first.hits  # the note carries stigmatizing terms, so the memo holds a real scan
    before = lex.scan.cache_info()
    again = lex.scan(NOTE)
    assert again is first and lex.scan.cache_info().hits == before.hits + 1
    assert lex.scan.cache_info().maxsize == Lexicon.SCAN_MEMO
    # a lexicon with extra terms has its own scans: the memo never answers for another set of entries
    extra = load_lexicon([{"term": "frequent flyer", "category": "stereotyping", "source": "local"}])
    assert extra.version != lex.version
    assert extra.scan(NOTE).lexicon_version == extra.version != first.lexicon_version
    # the memo does not stop a lexicon from being copied or pickled (Streamlit caches may pickle what holds one)
    copy = pickle.loads(pickle.dumps(extra))
    assert copy.version == extra.version and copy.scan(NOTE) == extra.scan(NOTE)


def test_a_stored_result_reads_the_same_from_its_parsed_json():
    rows = [json.loads(x) for x in SAMPLE_MEDOMIT.read_text(encoding="utf-8").splitlines() if x.strip()][:3]
    for r in rows:
        text = r["result"]
        assert MedOmitResult.from_dict(json.loads(text)) == MedOmitResult.from_json(text)
    old = json.loads(rows[0]["result"])
    old["provenance"] = {**old["provenance"], "method": "medomit-v1"}  # an older method's row is rescored either way
    a, b = MedOmitResult.from_dict(json.loads(json.dumps(old))), MedOmitResult.from_json(json.dumps(old))
    assert a == b and a.provenance["rescored_from"] == "medomit-v1"
