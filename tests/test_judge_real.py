"""The judge with the real embedded model (Gemma 3 270M Q4_K_M through llama.cpp) on a short case.

This proves the real pipeline: chat formatting, token counting, grammar-constrained decoding, parsing,
self-consistency and expected scores. The 270M model's grades themselves are not meaningful.
"""
import pytest

from engine.backends import BackendError, LlamaCppBackend
from engine.judge import STATUS_REFUSED, STATUS_SCORED, Judge, JudgeParams, open_llama_backend
from engine.modelfiles import resolve_model_path
from engine.models import Case, Dataset, Note, Summary
from engine.rubric import ITEMS

SHORT = Dataset(
    name="short",
    cases=[Case("c1", "Cardiology", (
        Note("1", "67 y/o man with new atrial fibrillation, HR 112. Started metoprolol 25 mg daily and apixaban "
                  "5 mg twice daily. Echo ordered.", "2024-01-09", "Progress note"),
        Note("2", "Echo: LVEF 35%, moderate mitral regurgitation. Start sacubitril/valsartan. Cardiology follow-up "
                  "in 4 weeks.", "2024-01-20", "Imaging follow-up")))],
    summaries=[Summary("c1-s1", "c1", "New atrial fibrillation on metoprolol and apixaban. <NoteID:1> Echo showed "
                                      "LVEF 35% with moderate MR; sacubitril/valsartan started. <NoteID:2>")])


@pytest.fixture(scope="module")
def backend():
    be, sha = open_llama_backend("", n_ctx=4096, n_threads=2)
    return be, sha


def test_real_model_replies_parse_into_every_item(backend):
    be, sha = backend
    r = Judge(be, sha, JudgeParams(n_samples=2)).judge(SHORT, "c1-s1")
    assert r.status == STATUS_SCORED, r.reason
    assert all(s.ok for s in r.samples), [s.error for s in r.samples]
    for s in r.samples:  # every reply parsed into every item, within its scale
        for item in ITEMS:
            if item.key in s.values and s.values[item.key] is not None:
                assert s.values[item.key] in item.allowed_values
        assert {i.key for i in ITEMS} - set(s.values) <= {"synthesized"}
    for key in ("cited", "accurate", "thorough", "useful", "organized", "comprehensible", "succinct"):
        assert r.items[key].median in (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0)
        assert r.items[key].expected is not None and 1.0 <= r.items[key].expected <= 5.0
    p = r.provenance
    assert p.model_sha256 == sha and len(sha) == 64 and p.quantization == "Q4_K_M" and p.llama_cpp_python
    assert r.timing.prompt_tokens > 500 and r.timing.decode_tokens > 20 and r.timing.prompt_tps > 0


def test_real_model_explanations(backend):
    be, sha = backend
    r = Judge(be, sha, JudgeParams(n_samples=1, explain=True)).judge(SHORT, "c1-s1")
    assert r.status == STATUS_SCORED, r.reason
    assert any(v.explanation for v in r.items.values())


def test_real_tokenizer_refuses_overlong_case():
    be = LlamaCppBackend(resolve_model_path(""), n_ctx=1024, n_threads=2)
    r = Judge(be, None, JudgeParams(n_samples=1)).judge(SHORT, "c1-s1")
    assert r.status == STATUS_REFUSED and "context holds 1024" in r.reason


def test_corrupt_gguf_and_bad_path(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 64)  # right magic, garbage body
    with pytest.raises(BackendError, match="could not load|not a GGUF"):
        LlamaCppBackend(bad, n_ctx=512)
    with pytest.raises(BackendError, match="does not exist"):
        open_llama_backend(str(tmp_path / "missing.gguf"))
