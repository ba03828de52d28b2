"""Embedder caches and long texts, with the real bundled model."""
import numpy as np
import pytest

from engine.evidence.embeddings import Embedder


@pytest.fixture(scope="module")
def emb():
    return Embedder()


def _sentences(n, tag="s"):
    return [f"Sentence {tag}{i}: the patient reports symptom number {i} on day {i % 7}." for i in range(n)]


def test_more_distinct_sentences_than_the_cache_holds_returns_every_vector(emb):
    small = Embedder(cache_size=1)  # the sentence cache holds 50 * cache_size = 50 vectors
    texts = _sentences(130)
    got = small.sentence_embeddings(texts + texts[:5])  # more distinct sentences in one call than it holds
    ref = emb.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    assert got.shape == (135, ref.shape[1])
    np.testing.assert_allclose(got[:130], ref, atol=1e-5)
    np.testing.assert_allclose(got[130:], ref[:5], atol=1e-5)
    # across calls: half found in the cache, half new, the total over capacity
    more = _sentences(80, "t")
    got2 = small.sentence_embeddings(texts[-40:] + more)
    ref2 = emb.model.encode(texts[-40:] + more, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)
    np.testing.assert_allclose(got2, ref2, atol=1e-5)
    assert len(small._sent_cache) <= 50


def test_token_cache_smaller_than_the_texts_of_one_case(emb):
    small = Embedder.__new__(Embedder)  # the loaded model with a token cache of 2 entries
    small.__dict__.update(emb.__dict__)
    small._cache, small._sent_cache, small._cache_size = type(emb._cache)(), type(emb._sent_cache)(), 2
    texts = [f"Note {i}: blood pressure {120 + i}/80, heart rate {60 + i}." for i in range(5)]
    for _ in range(2):
        got = [small.token_embeddings(t) for t in texts]
        for t, te in zip(texts, got):
            np.testing.assert_allclose(te.vectors, emb._compute(t).vectors, atol=1e-5)
    assert len(small._cache) == 2


# ------------------------------------------------------------------------------------ long sentence-level texts

TOPIC = ("The patient keeps a pet green iguana at home and was bitten on the left thumb by it last Tuesday; the "
         "wound was cleaned, a tetanus booster was given and amoxicillin-clavulanate was started for the bite.")
QUERY = "Iguana bite to the thumb treated with a tetanus booster and antibiotics."


@pytest.fixture(scope="module")
def long_turn(emb):
    from engine.data.loading import load_paths
    from engine.sample import SAMPLE_BUNDLE

    ds, _ = load_paths([SAMPLE_BUNDLE])
    words = " ".join(n.text for n in ds.case("card-01").notes).split()
    text = " ".join(words[:250]) + " " + TOPIC + " " + TOPIC  # ~600 tokens, the last ~100 about the bite
    n = len(emb.tok(text, add_special_tokens=False, verbose=False)["input_ids"])
    assert 550 <= n <= 700, n
    return text


def test_a_long_text_is_embedded_whole_in_windows(emb, long_turn):
    q = emb.model.encode([QUERY], normalize_embeddings=True)[0]
    truncated = emb.model.encode([long_turn], normalize_embeddings=True)[0]  # sentence-transformers alone
    whole = emb.sentence_embeddings([long_turn])[0]
    assert abs(float(np.linalg.norm(whole)) - 1) < 1e-5
    assert float(whole @ q) > float(truncated @ q) + 0.15  # the tail's topic is in the vector
    assert float(whole @ truncated) > 0.6  # and the opening still is


def test_windows_cover_the_text_at_word_boundaries(emb, long_turn):
    from engine.evidence.embeddings import SENTENCE_WINDOW, word_windows

    offs = emb.tok(long_turn, add_special_tokens=False, return_offsets_mapping=True, verbose=False)["offset_mapping"]
    wins = word_windows(long_turn, offs)
    assert len(wins) >= 5 and wins[0][0] == 0 and wins[-1][1] == len(long_turn)
    for (s, e), (s2, _) in zip(wins, wins[1:]):
        assert s2 < e and s < s2  # overlapping, moving forward: no gap
    for s, e in wins:
        assert s == 0 or long_turn[s - 1].isspace()  # starts at a word
        assert e == len(long_turn) or long_turn[e].isspace()  # ends at a word
        assert len(emb.tok(long_turn[s:e], add_special_tokens=False, verbose=False)["input_ids"]) <= SENTENCE_WINDOW
    # a "word" longer than a window (no whitespace) is cut between tokens and still covered
    blob = "x" * 3000
    offs = emb.tok(blob, add_special_tokens=False, return_offsets_mapping=True, verbose=False)["offset_mapping"]
    spans = word_windows(blob, offs)
    assert spans[0][0] == 0 and spans[-1][1] == len(blob) and all(s2 < e for (_, e), (s2, _) in zip(spans, spans[1:]))


def test_short_texts_give_the_same_vector_as_before(emb, long_turn):
    short = ["Chest pain radiating to the left arm.", "LVEF 35%.", TOPIC]
    before = emb.model.encode(short, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    got = emb.encode_sentences(short + [long_turn])[:3]  # batched with a long text's windows
    np.testing.assert_allclose(got, before, atol=1e-6)


# ------------------------------------------------------------------------------------ persistent cache


class _Spy:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *a, **k):
        self.calls += 1
        return self.fn(*a, **k)


def test_a_restarted_app_reads_embeddings_from_the_workspace(emb, tmp_path, long_turn):
    from engine.data.store import Store

    store = Store(tmp_path / "ws.sqlite")
    note = "Persistent cache note: " + long_turn
    sents = [f"Persistent cache sentence {i}." for i in range(30)] + [long_turn + " (cache)"]
    cold = Embedder.__new__(Embedder)  # first run: the loaded model, empty caches, the workspace attached
    cold.__dict__.update(emb.__dict__)
    cold._cache, cold._sent_cache = type(emb._cache)(), type(emb._sent_cache)()
    cold.attach_store(store)
    te1, S1 = cold.token_embeddings(note), cold.sentence_embeddings(sents)
    with store.connect() as con:
        kinds = dict(con.execute("SELECT kind, COUNT(*) FROM embedding_cache GROUP BY kind").fetchall())
    assert kinds == {"token": 1, "sentence": len(sents)}

    warm = Embedder(store=store)  # a new process on the same workspace
    warm.model.encode = enc = _Spy(warm.model.encode)
    warm._compute = comp = _Spy(warm._compute)
    te2, S2 = warm.token_embeddings(note), warm.sentence_embeddings(sents)
    assert enc.calls == 0 and comp.calls == 0
    assert np.array_equal(te1.vectors, te2.vectors) and te1.spans == te2.spans and te1.tokens == te2.tokens
    assert te1.n_windows == te2.n_windows and np.array_equal(S1, S2)
    # a new sentence among known ones: only it is computed, in one call
    S3 = warm.sentence_embeddings(sents[:3] + ["A sentence never seen before."])
    assert enc.calls == 1 and np.array_equal(S3[:3], S1[:3])

    # another model name never reads these entries
    other = Embedder.__new__(Embedder)
    other.__dict__.update(warm.__dict__)
    other._cache, other._sent_cache, other._name = type(emb._cache)(), type(emb._sent_cache)(), "another-model"
    other.sentence_embeddings(sents[:2])
    assert enc.calls > 1  # computed again
    assert other.cache_model != warm.cache_model


def test_a_failing_workspace_only_costs_a_recomputation(emb):
    class Broken:
        def get_embeddings(self, *a):
            raise OSError("disk gone")

        put_embeddings = get_embeddings

    b = Embedder.__new__(Embedder)
    b.__dict__.update(emb.__dict__)
    b._cache, b._sent_cache = type(emb._cache)(), type(emb._sent_cache)()
    b.attach_store(Broken())
    v = b.sentence_embeddings(["Broken workspace sentence."])
    np.testing.assert_allclose(v, emb.model.encode(["Broken workspace sentence."], normalize_embeddings=True),
                               atol=1e-6)
    assert b.token_embeddings("Broken workspace note.").vectors.shape[0] > 0


def test_length_batches_cover_every_text_once_and_cut_padding():
    from engine.evidence.embeddings import length_batches

    lengths = [5, 80, 6, 7, 79, 30, 31, 5, 200] * 20
    batches = length_batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 64 for b in batches)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    one_sorted = sorted(lengths)
    fixed64 = sum(len(one_sorted[i:i + 64]) * max(one_sorted[i:i + 64]) for i in range(0, len(lengths), 64))
    assert padded < 0.8 * fixed64
    assert length_batches([]) == []
