"""The judge with the real embedded model (Gemma 3 270M Q4_K_M through llama.cpp) on a short case.

This proves the real pipeline: chat formatting, token counting, grammar-constrained decoding, parsing,
self-consistency and expected scores. The 270M model's grades themselves are not meaningful.
"""
import pytest

from engine.llm.backends import BackendError
from engine.llm.llama import LlamaCppBackend
from engine.judge.results import STATUS_REFUSED, STATUS_SCORED, JudgeParams
from engine.judge.runner import Judge, open_llama_backend
from engine.llm.modelfiles import resolve_model_path
from engine.core.models import Case, Dataset, Note, Summary
from engine.core.rubric import ITEMS

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
def prefix_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def own_prefix_cache(prefix_dir, monkeypatch):
    """Saved prompt prefixes go to a folder of this module's, never the user's cache."""
    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(prefix_dir))


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


def test_early_stop_gives_the_medians_of_the_full_run(backend):
    """Same seed, early stopping on and off: identical medians, and the early run's samples are the full run's
    first ones (the prompt is evaluated once; each sample is only its decoding)."""
    be, sha = backend
    params = dict(n_samples=3, temperature=0.01, seed=77)
    full = Judge(be, sha, JudgeParams(**params, early_stop=False)).judge(SHORT, "c1-s1")
    early = Judge(be, sha, JudgeParams(**params)).judge(SHORT, "c1-s1")
    assert full.status == early.status == STATUS_SCORED
    assert early.medians() == full.medians() and early.cache_key == full.cache_key
    k = early.samples_taken
    assert [s.raw for s in early.samples] == [s.raw for s in full.samples[:k]]
    assert k < 3 and early.stopped_early and "stopped early" in early.reason  # at 0.01 the model agrees with itself
    assert {i: v.expected for i, v in early.items.items()} == {i: v.expected for i, v in full.items.items()}


def test_rubric_prefix_is_saved_once_and_loaded_bit_exact(backend, tmp_path, monkeypatch):
    """A fresh backend (as in a fresh process) loads the saved rubric prefix instead of evaluating it, and the
    replies, token for token, and the expected scores are those of a cold evaluation without any prefix."""
    from engine.llm._prefix_cache import prefix_cache_dir
    from engine.llm.modelfiles import resolve_model_path

    monkeypatch.setenv("SUMCHECK_CACHE_DIR", str(tmp_path))
    be, sha = backend
    be.llm.reset()
    be._cached_prompt = None
    cold = Judge(be, None, JudgeParams(n_samples=1)).judge(SHORT, "c1-s1")  # no model hash: nothing kept on disk
    assert not prefix_cache_dir().exists()

    saver = LlamaCppBackend(resolve_model_path(""), n_ctx=4096, n_threads=2)
    saved = Judge(saver, sha, JudgeParams(n_samples=1)).judge(SHORT, "c1-s1")
    # the shared prefix only: the smoke-test model (sliding-window attention) keeps the case's record in process
    files = list(prefix_cache_dir().glob("*.kvprefix"))
    assert len(files) == 1 and saver.prefix_stats["saved"] == 1 and saver.prefix_stats["tokens"] >= 1024
    assert saver.kept_stats["saved"] == 0
    assert saver.prefix_stats["tokens"] % saver.llm.n_batch == 0  # a whole number of batches

    loader = LlamaCppBackend(resolve_model_path(""), n_ctx=4096, n_threads=2)
    loaded = Judge(loader, sha, JudgeParams(n_samples=1)).judge(SHORT, "c1-s1")
    assert loader.prefix_stats["loaded"] == 1 and loader.prefix_stats["evaluated"] == 0
    assert loader.prefix_stats["saved"] == 0 and not loader.prefix_stats["error"]
    for r in (saved, loaded):
        assert r.samples[0].raw == cold.samples[0].raw
        assert {i: (v.expected, v.expected_mass) for i, v in r.items.items()} == \
               {i: (v.expected, v.expected_mass) for i, v in cold.items.items()}

    # a damaged file is noticed, removed, and the prefix evaluated again
    files[0].write_bytes(files[0].read_bytes()[:-1000])
    loader.llm.reset()
    loader._cached_prompt = None
    assert loader._load_prefix() is False and not files[0].exists() and "damaged" in loader.prefix_stats["error"]


def test_saved_prefixes_are_pruned_to_the_most_recent(tmp_path, monkeypatch):
    import os

    import engine.llm._prefix_cache as prefix_cache
    from engine.llm.llama import LlamaCppBackend

    for i in range(12):
        p = tmp_path / f"{i}.kvprefix"
        p.write_bytes(b"x" * 10)
        os.utime(p, (1000 + i, 1000 + i))
    monkeypatch.setattr(prefix_cache, "PREFIX_CACHE_MAX_FILES", 8)
    LlamaCppBackend._prune_prefix_files(tmp_path, tmp_path / "0.kvprefix")  # 0 was just written
    assert sorted(int(p.stem) for p in tmp_path.glob("*.kvprefix")) == [0, 5, 6, 7, 8, 9, 10, 11]
    monkeypatch.setattr(prefix_cache, "PREFIX_CACHE_MAX_BYTES", 35)
    LlamaCppBackend._prune_prefix_files(tmp_path, tmp_path / "0.kvprefix")
    assert sorted(int(p.stem) for p in tmp_path.glob("*.kvprefix")) == [0, 10, 11]
