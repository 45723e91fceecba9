"""HF ``tokenizer.json`` files with a Unigram model give HF ``tokenizers``' ids and decoded
text (``corpustok.sentencepiece.hf_unigram``, decision 0037).

The oracle is ``Tokenizer.from_str(doc).encode(text, add_special_tokens=False).ids`` and
``Tokenizer.decode(ids)``. Files: T5's own ``tokenizer.json`` of ``../shared`` (Precompiled
charsmap normalizer, Strip, Replace, Metaspace; skipped with the reason when ../shared is
absent), and the json ``transformers``' ``T5Converter`` writes for T5's and mT5's
``spiece.model`` (``legacy`` True: prepend_scheme ``always``, False: ``first``), which a fresh
clone has through diffsynth's copies of the ``.model`` files (tests/sentencepiece/conftest.py)
and transformers from the test extra. (transformers 5.25's
``T5TokenizerFast(vocab_file=...)`` does not read the file: a 104-token vocabulary.) And the
json ``AlbertConverter`` writes for ALBERT's ``spiece.model`` (../shared) in its four shapes
(do_lower_case, keep_accents: NFKD, StripAccents, Lowercase; decision 0039). Texts: the UDHR
sample (532 languages), a shared-corpus sample, 300 corpus-b
documents, edge strings, emoji, hypothesis texts (whitespace runs, leading/trailing spaces,
tabs, newlines, emoji, unassigned code points, NFKC-sensitive characters, combining marks,
literal control-token text, accents, marks out of order, Hangul, Turkish İ, sigma, ``, '',
where HF's Unicode differs from Python's); the kernels also against the Python reference.
"""
import importlib
import json
import pickle
import types
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import corpustok
from corpustok.arrow import pool_array, read_only, utf8_batch
from corpustok.formats.hf_unigram import hf_score, unigram_problem
from corpustok.kernels.bpe.cache import BYTES, META
from corpustok.kernels.sentencepiece.hf_normalize import hf_normalize_batch, hf_normalized_room
from corpustok.pipeline.encode import encode_documents
from corpustok.sentencepiece import hf_unigram as hf_unigram_module
from corpustok.sentencepiece.hf_unigram import HfUnigramTokenizer
from corpustok.sentencepiece.hf_unigram_reference import Reference
from corpustok.sentencepiece.model_file import parse_model
from tests.conftest import EDGE_TEXTS, SHARED_DATA, corpus_lines, emoji_texts, \
    udhr_sample_texts
from tests.sentencepiece.test_sentencepiece_bpe import ALPHABET, EDGES, corpus_b_documents
from tests.sentencepiece.conftest import hf_first_difference as first_difference, hf_ids, \
    hf_oracle_text as oracle_text, job_ids, model_path

SP_DIR = SHARED_DATA / "vocab" / "sentencepiece"
# transformers' AlbertConverter in each of the four shapes it writes: do_lower_case adds
# Lowercase, keep_accents=False adds NFKD and StripAccents (decision 0039)
ALBERT = {"albert-lower-strip": dict(do_lower_case=True, keep_accents=False),
          "albert-lower-keep": dict(do_lower_case=True, keep_accents=True),
          "albert-cased-strip": dict(do_lower_case=False, keep_accents=False),
          "albert-cased-keep": dict(do_lower_case=False, keep_accents=True)}
ALBERT_FILES = [f"{kind}:albert/spiece.model" for kind in ALBERT]
FILES = ["shared:t5/tokenizer.json", "legacy:t5/spiece.model", "first:t5/spiece.model",
         "legacy:mt5/spiece.model"] + ALBERT_FILES
# characters NFKC, the charsmap and grapheme clusters change: full-width forms, ligatures,
# compatibility signs, combining marks after ASCII, CJK and Devanagari, CR LF
NFKC = ("\uff48\uff45\uff4c\uff4c\uff4f\u3000\ufb01\u2167\u338f\u2460\u00bd\u00b2\u01c4"
        "\u1e9b\u0323\u0301\u0308\u20d7\ufe0f\u0958\u093c\u094d\u0915\u0937\u3099\u309a"
        "\u304b\u00c5\u212b\u2126\u0600\r\n\x1e\u00ad\u200d\u2028\u0085")
# what NFKD, StripAccents and Lowercase (ALBERT) change, and where HF's Unicode tables differ
# from Python's: accents precomposed and not, marks of several classes out of order (U+0316
# 220, U+0301 230, U+0334 1, U+0345 240, U+05B0 10), Hangul syllables and jamo, Turkish
# dotted and dotless i, Greek sigmas, the sharp s, title-case digraphs, U+32FF (Python
# decomposes it, HF not), U+1C89 (HF lowercases it, Python not), U+07FD (a mark HF keeps)
ALBERT_CHARS = ("\u00e9\u00c9\u00f1\u00d1\u1ea5\u1ec7\u01d5\u0316\u0334\u0345\u05b0\u0e49"
                "\ud55c\uad6d\uc5b4\u1100\u1161\u11a8\u0130\u0131\u03a3\u03c3\u03c2\u0391"
                "\u1e9e\u00df\u01c5\u01c6\u32ff\u1c89\u07fd\u0958\uff21\u2075\u00aa\u0149"
                "\u2163\ufdfa\u1f88\u0390AIZ`'")


def converted_doc(converter, path, **attrs):
    """The tokenizer.json ``transformers``' converter (``convert_slow_tokenizer.<converter>``)
    writes for a ``.model`` file. Its own protobuf module needs a newer ``protobuf`` than the
    test extra pins, so the converter is handed the same fields read by corpustok's reader
    (pieces with their score and type, trainer and normalizer specs); ``attrs``: the slow
    tokenizer's settings the converter reads (``legacy``, ``_extra_ids``, ...)."""
    pytest.importorskip("transformers", reason="transformers (the test extra) writes "
                        "converted json")
    convert = importlib.import_module("transformers.convert_slow_tokenizer")
    m = parse_model(path.read_bytes(), str(path))
    ns = types.SimpleNamespace
    pieces = [ns(piece=p, score=float(s), type=int(t))
              for p, s, t in zip(m.pieces, m.scores.tolist(), m.types.tolist())]
    index = {p.piece: i for i, p in enumerate(pieces)}
    conv = object.__new__(getattr(convert, converter))
    conv.original_tokenizer = ns(vocab_file=str(path), convert_tokens_to_ids=index.get,
                                 convert_ids_to_tokens=lambda i: pieces[i].piece, **attrs)
    conv.proto = ns(pieces=pieces, trainer_spec=ns(**m.trainer),
                    normalizer_spec=ns(**m.normalizer))
    return json.loads(conv.converted().to_str())


@lru_cache(maxsize=None)
def doc_of(name):
    """The parsed tokenizer.json of a FILES name."""
    kind, _, rel = name.partition(":")
    if kind == "shared":
        if not SHARED_DATA.is_dir():
            pytest.skip(f"{rel}: read from ../shared/data (absent here); no package of the "
                        "test extra ships T5's tokenizer.json")
        return json.loads((SP_DIR / rel).read_text(encoding="utf-8"))
    if kind in ALBERT:
        return converted_doc("AlbertConverter", model_path(rel), **ALBERT[kind])
    legacy = kind != "first"
    return converted_doc("T5Converter", model_path(rel), _extra_ids=100, legacy=legacy)


@lru_cache(maxsize=None)
def pair(name):
    """(ours, HF's) for a FILES name."""
    doc = doc_of(name)
    return HfUnigramTokenizer(doc, name), Tokenizer.from_str(json.dumps(doc))


def added_texts(ours):
    added = sorted(ours._added, key=ours._added.get)
    return [f"{a}x {b} y{c}" for a, b, c in zip(added, added[1:], added[2:])][::7] + [
        "</s>hi</s> there", "<pad><unk></s>", " </s> ", "</s", "/s>", "<extra_id_0>", "a</s>b",
        "<extra_id_99>x<extra_id_1> <extra_id_2>  ", "<unk>x<unk>", "<0x41>", "<s>"]


# ---- the files ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FILES)
def test_udhr_gives_hf_ids(name):
    """Every record of the UDHR sample (532 languages)."""
    ours, theirs = pair(name)
    texts = udhr_sample_texts()
    assert len(texts) > 1500
    assert first_difference(ours, theirs, texts) is None


@pytest.mark.parametrize("name", FILES)
def test_corpus_and_edge_texts_give_hf_ids(name):
    """A shared-corpus sample, 300 corpus-b documents, edge strings, emoji sequences and the
    added tokens in text; two threads give the same ids."""
    ours, theirs = pair(name)
    texts = corpus_lines(20_000, at_least=500)[::8] + list(corpus_b_documents(300)) + \
        EDGE_TEXTS + emoji_texts()[::9] + EDGES + added_texts(ours) + list(NFKC)
    assert first_difference(ours, theirs, texts) is None
    assert first_difference(ours, theirs, texts, threads=2) is None


def test_ties_follow_hf():
    """T5's ``-`` and ``---`` tie exactly in float64 on ``----------`` once the scores are
    read as HF reads them (serde_json's float reading, :func:`hf_score`); HF's path
    (``---``, ``---``, ``-``, ``---``) differs from sentencepiece's (``-`` first)."""
    ours, theirs = pair("shared:t5/tokenizer.json")
    texts = ["-" * n for n in range(1, 40)] + ["    ----------", "a ----------- b"]
    assert first_difference(ours, theirs, texts) is None
    assert ours.encode("----------")[1] == ours.token_to_id("---")


def test_scores_are_read_as_hf_reads_them():
    """Every score of T5's json as HF holds it (its own re-serialization): equal to
    :func:`hf_score`, and one ulp off Python's reading for thousands of them."""
    doc = doc_of("shared:t5/tokenizer.json")
    held = json.loads(Tokenizer.from_str(json.dumps(doc)).to_str())["model"]["vocab"]
    ours = [hf_score(s) for _, s in doc["model"]["vocab"]]
    assert ours == [s for _, s in held]
    assert sum(a != s for a, (_, s) in zip(ours, doc["model"]["vocab"])) > 1000


@pytest.mark.parametrize("name", FILES)
def test_decode_gives_hf_text(name):
    ours, theirs = pair(name)
    texts = udhr_sample_texts()[::7] + EDGE_TEXTS + EDGES + added_texts(ours)
    lists = hf_ids(theirs, texts) + [[], [5, 5], [3], [ours.unk_id, 7, ours.unk_id]]
    for skip in (True, False):
        got = ours.decode_batch(lists, skip_special_tokens=skip)
        want = theirs.decode_batch(lists, skip_special_tokens=skip)
        assert [(ids, a) for ids, a, b in zip(lists, got, want) if a != b] == []


PIECES = st.one_of(st.text(alphabet=ALPHABET + NFKC + ALBERT_CHARS, max_size=12),
                   st.sampled_from(["</s>", "<pad>", "<unk>", "<extra_id_0>", "<s>", "  ",
                                    "   ", "\u2581\u2581", " the", "\n\n", "\t\t", "</s",
                                    " \u0301", "e\u0301\u0301", "\r\n", "ｈｉ", "---",
                                    "``", "''", "```", "'''", "[MASK]", "[CLS]",
                                    "\u0130stanbul", "\u039f\u0394\u039f\u03a3 ",
                                    "a\u0301\u0316\u0334", "\u00e1\u0345\u0316",
                                    "\ufb01\ufb03", "\U0001f600\u200d"]))


@pytest.mark.parametrize("name", FILES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_hypothesis_texts_give_hf_ids(name, data):
    ours, theirs = pair(name)
    texts = data.draw(st.lists(st.lists(PIECES, max_size=10).map("".join), min_size=1,
                               max_size=4))
    assert first_difference(ours, theirs, texts) is None


@pytest.mark.parametrize("name", ["shared:t5/tokenizer.json", "legacy:t5/spiece.model",
                                  "albert-lower-strip:albert/spiece.model",
                                  "albert-cased-strip:albert/spiece.model"])
@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.lists(PIECES, max_size=10).map("".join), min_size=1, max_size=4))
def test_kernels_equal_the_reference(name, texts):
    ours, _ = pair(name)
    ref = Reference(doc_of(name))
    assert ours.encode_batch(texts).to_pylist() == [ref.encode(oracle_text(t)) for t in texts]


def test_invalid_bytes_are_replacement_characters():
    """A binary column's invalid bytes: one U+FFFD each, counted."""
    ours, _ = pair("shared:t5/tokenizer.json")
    arr = pa.array([b"ab\xffcd", b"\xe2\x96 x</s>\x80"], pa.binary())
    ids, offsets, replaced = ours.encode_arrays(utf8_batch(arr))
    assert replaced.tolist() == [1, 3]
    assert ids[offsets[0]:offsets[1]].tolist() == ours.encode("ab\ufffdcd")
    assert ids[offsets[1]:offsets[2]].tolist() == ours.encode("\ufffd\ufffd x</s>\ufffd")


def test_normalized_text_and_ids_are_written_into_arrows_pool():
    """The normalizer's text and the ids come from Arrow's pool (decision 0046): the
    normalizer writes into the room it is given, and a batch's ids, with and without added
    tokens in it (``join_segments`` passes the kernel's ids on, or joins them into the pool),
    hold pool memory until dropped. The ids are HF's."""
    ours, theirs = pair("legacy:t5/spiece.model")
    texts = udhr_sample_texts()[:300]
    batch = utf8_batch(texts)
    data = read_only(np.ascontiguousarray(batch.data, np.uint8))
    offsets = read_only(np.asarray(batch.offsets, np.int64))
    room = pool_array(hf_normalized_room(offsets), np.uint8)
    text, _ = hf_normalize_batch(data, offsets, ours._norm, room)
    assert len(text) > 0 and np.shares_memory(text, room)
    del text, room
    for batch_texts in (texts, [f"{t}</s><extra_id_3>" for t in texts[:100]]):
        before = pa.total_allocated_bytes()
        ids, offs, _ = ours.encode_arrays(utf8_batch(batch_texts))
        assert pa.total_allocated_bytes() - before >= 4 * len(ids) > 0
        assert [ids[offs[k]:offs[k + 1]].tolist() for k in range(len(batch_texts))] == \
            hf_ids(theirs, batch_texts)
        del ids, offs
        assert pa.total_allocated_bytes() - before < 1 << 16


def test_documents_past_the_long_document_limit_give_hf_ids():
    """A job streams a document past ``--max-doc-mb`` through ``stream()`` (the text held and
    encoded whole); a tokenizer.json had none, and such a job failed. Its ids are HF's, beside
    short documents and added tokens."""
    ours, theirs = pair("legacy:t5/spiece.model")
    udhr = udhr_sample_texts()
    texts = [" ".join(udhr[:40]), "short </s> one", " ".join(udhr[40:60]) + "</s>", ""]
    assert sum(len(t.encode()) > 1000 for t in texts) == 2
    ids, offsets = encode_documents(ours, pa.array(texts), max_doc_bytes=1000)[:2]
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == \
        hf_ids(theirs, texts)


# ---- loading, files, the job, refusals ------------------------------------------------------
def test_load_save_and_pickle_round_trip(tmp_path):
    ours, _ = pair("shared:t5/tokenizer.json")
    assert isinstance(corpustok.load(SP_DIR / "t5" / "tokenizer.json"), HfUnigramTokenizer)
    texts = ["Hello </s>world", "  x\ty\n"]
    want = ours.encode_batch(texts).to_pylist()
    path = tmp_path / "tokenizer.json"
    ours.save(path)
    assert corpustok.load(path).encode_batch(texts).to_pylist() == want
    assert pickle.loads(pickle.dumps(ours)).encode_batch(texts).to_pylist() == want


def test_tokenize_job_gives_hf_ids(tmp_path):
    """`corpustok tokenize --tokenizer tokenizer.json --eos </s>` with a Unigram json (the one
    transformers writes for T5, on a fresh clone too) writes HF's ids plus ``</s>``."""
    name = "legacy:t5/spiece.model"
    _, theirs = pair(name)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc_of(name)), encoding="utf-8")
    texts = udhr_sample_texts()[:30] + ["  leading and trailing  ", "tab\tand\nnewline",
                                        "</s> written <extra_id_0> in text"]
    eos = theirs.token_to_id("</s>")
    assert job_ids(tmp_path, path, texts) == [ids + [eos] for ids in hf_ids(theirs, texts)]


def _refused(tmp_path, change):
    doc = json.loads(json.dumps(doc_of("legacy:t5/spiece.model")))
    change(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "NFKD"}, {"type": "NFC"}, {"type": "Lowercase"}]}),
     r"with the normalizer 'NFC' \(runs: Precompiled, Strip, Replace, NFKD, StripAccents, "
     r"Lowercase\): not supported;"),
    (lambda d: d.update(normalizer={"type": "BertNormalizer"}),
     "with the normalizer 'BertNormalizer'"),
    (lambda d: d.update(pre_tokenizer={"type": "Whitespace"}), "with the pre-tokenizer"),
    (lambda d: d["model"].update(unk_id=None), "without an unk_id"),
    (lambda d: d["added_tokens"][1].update(lstrip=True), "added token '</s>' is normalized, "
                                                         "lstrip"),
    (lambda d: d.update(decoder={"type": "ByteLevel"}), "with the decoder"),
    (lambda d: d["pre_tokenizer"].update(replacement="_"), "with replacement '_'"),
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, dict(d["pre_tokenizer"], prepend_scheme="first")]}),
     "WhitespaceSplit, Metaspace prepend_scheme 'first' and a normalizer"),
])
def test_unsupported_shapes_are_named(tmp_path, change, words):
    path = _refused(tmp_path, change)
    with pytest.raises(ValueError, match=words) as raised:
        corpustok.load(path)
    assert "\n" not in str(raised.value)


def test_a_vocab_past_the_word_cache_ids_is_refused():
    """More than 2**21 tokens: the word cache keeps 21-bit ids; refused in one line."""
    doc = json.loads(json.dumps(doc_of("legacy:t5/spiece.model")))
    vocab = doc["model"]["vocab"]
    vocab += [[f"x{k}", -20.0] for k in range((1 << 21) + 1 - len(vocab))]
    with pytest.raises(ValueError, match="of 2,097,153 tokens \\(at most 2,097,152\\)"):
        HfUnigramTokenizer(doc)
    vocab.pop()
    assert unigram_problem(doc) is None


def test_albert_json_loads(tmp_path):
    """What transformers writes for ALBERT (two string Replaces, NFKD, StripAccents,
    Lowercase, the charsmap, then space runs to one space) loads, from a file through
    ``corpustok.load`` too, with each of its steps; its ids are HF's (the FILES tests)."""
    name = "albert-lower-strip:albert/spiece.model"
    doc = doc_of(name)
    kinds = [s["type"] for s in doc["normalizer"]["normalizers"]]
    assert kinds == ["Replace", "Replace", "NFKD", "StripAccents", "Lowercase", "Precompiled",
                     "Replace"]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    loaded = corpustok.load(path)
    assert isinstance(loaded, HfUnigramTokenizer)
    texts = ["\u00c9T\u00c9  ``Stra\u00dfe''  \u0130", "[MASK] ok"]
    assert loaded.encode_batch(texts).to_pylist() == hf_ids(pair(name)[1], texts)


# ---- the Precompiled step's ASCII fast path and the word cache ------------------------------
# a charsmap of our own (sentencepiece's normalization_rule_tsv): ASCII letters mapped alone
# ('z', 'Q'), ASCII that only begins a key ('k' of "km", 'e' of e + U+0301, 'c' of c + U+0327),
# CR LF and CR, a control character, and a non-ASCII key
ASCII_RULES = {"z": "Z", "Q": "q", "km": "KM", "e\u0301": "\u00e9", "c\u0327": "\u00e7",
               "\r\n": "\n", "\r": " ", "\x07": " ", "\uff21": "A"}
ASCII_TEXTS = [
    "e\u0301", "ae\u0301b", "caf\u00e9 cafe\u0301 cafe\u0301\u0301 cafe\u0300", "z\u0301",
    "kz\u0301m", "km kmz kkm mk", "Quiz QUIZ zzz", "c\u0327a c\u0327\u0327", "a\r\nb", "\r\n",
    "x\r", "\ra", "\r\r\n\n", "a\r\n\u0301", "abc\u0300def", "a\u200db", "1\ufe0f\u20e3 #\u20e3",
    "e\u0301" * 5, "ae\u0301" * 3 + "z", "zz\u0327", "ab\ud55c\uad6d", "x\u4e2d\u6587",
    "tab\there\x07bell", "\uff21\uff21z", "e\u0301\u0301\u0301\u0301\u0301\u0301",
    "naive\u0308 nai\u0308ve", "a" * 40 + "e\u0301", "the cat the cat the cat",
    "the " * 50 + "e\u0301 the", "  z  e\u0301  ", "k\u0301m", "ee\u0301e", "\x00e\u0301"]


@pytest.fixture(scope="module")
def ascii_rules_pair(tmp_path_factory):
    """(ours, HF's) for T5Converter's json of a Unigram model trained here over
    :data:`ASCII_RULES`."""
    spm = pytest.importorskip("sentencepiece")
    folder = tmp_path_factory.mktemp("spm-ascii-rules")
    tsv = folder / "rules.tsv"
    tsv.write_text("".join(" ".join(f"{ord(c):X}" for c in a) + "\t" +
                           " ".join(f"{ord(c):X}" for c in b) + "\n"
                           for a, b in ASCII_RULES.items()), encoding="utf-8")
    text = folder / "train.txt"
    latin = [t for t in udhr_sample_texts() if max(map(ord, t)) < 0x250]
    text.write_text("\n".join(latin[::3]), encoding="utf-8")
    prefix = folder / "m"
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(prefix),
                                   model_type="unigram", vocab_size=800, minloglevel=2,
                                   num_threads=1, normalization_rule_tsv=str(tsv),
                                   byte_fallback=True, hard_vocab_limit=False)
    doc = converted_doc("T5Converter", prefix.with_suffix(".model"), _extra_ids=0,
                        legacy=True)
    return HfUnigramTokenizer(doc, "ascii-rules"), Tokenizer.from_str(json.dumps(doc)), doc


def test_ascii_fast_path_edges_give_hf_ids(ascii_rules_pair):
    """Runs of ASCII the charsmap keeps are copied at once, but for the last ASCII character
    before a non-ASCII byte (it may begin a cluster: e + U+0301), CR (CR LF is one cluster)
    and ASCII characters that are keys themselves; words seen before take their ids from the
    word cache. Both against HF on a charsmap that maps ASCII."""
    ours, theirs, doc = ascii_rules_pair
    plain = ours._norm.ascii_plain
    assert [c for c in range(128) if not plain[c]] == [7, 13, ord("Q"), ord("z")]
    hf_norm = theirs.normalizer.normalize_str
    # the cluster CR LF takes the shortest key's replacement (CR's), "km" is two clusters
    assert hf_norm("cafe\u0301 z km k\r\nQ") == "caf\u00e9 Z km k q"
    texts = ASCII_TEXTS + [a + " " + b for a, b in zip(ASCII_TEXTS, ASCII_TEXTS[1:])]
    assert first_difference(ours, theirs, texts) is None
    assert first_difference(ours, theirs, ["\n".join(texts)]) is None  # repeats in a call
    ref = Reference(doc)
    assert ours.encode_batch(texts).to_pylist() == [ref.encode(t) for t in texts]


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(
    list("aekmzcQq \r\n\t\x07.") + ["e\u0301", "\u0301", "\u0327", "\u200d", "\ufe0f",
                                    "\u00e9", "\uff21", "\ud55c", "km", "the "]),
    max_size=16).map("".join), min_size=1, max_size=6))
def test_ascii_fast_path_hypothesis_texts_give_hf_ids(ascii_rules_pair, texts):
    ours, theirs, _ = ascii_rules_pair
    assert first_difference(ours, theirs, texts) is None


def cache_texts():
    """Words for each part of the word cache (kernels/bpe/cache.py) and past it: 4 to 143
    bytes with their U+2581, at each part's edges, of a few ids or many (dashes; CJK
    characters: byte fallback, or one unknown id a run), repeated within a text and across
    texts."""
    letters = "thequickbrownfoxjumpsoverthelazydog" * 5
    words = [letters[:n] for n in (1, 2, 12, 13, 28, 29, 60, 125, 126, 140)]  # + U+2581
    words += ["\u4e2d" * n for n in (1, 2, 5, 6, 11, 12, 21, 22, 42, 43)]
    words += ["x" + "-" * n for n in (10, 20, 30, 60, 100)] + ["e\u0301" * 20, "z" * 70]
    return [" ".join(words[k::3] * 2) for k in range(3)] + [" ".join(words)]


@pytest.mark.parametrize("slots", [None, 1])
@pytest.mark.parametrize("source", ["shared:t5/tokenizer.json", "ascii-rules"])
def test_word_cache_across_batches_and_threads_gives_hf_ids(request, monkeypatch, source,
                                                            slots):
    """The word cache is a pure memo: kept by the tokenizer across batch calls, one per
    thread, of the default size or of one general slot (every part evicting), the words of
    every part (and those too long or of too many ids to keep) give HF's ids in a first
    batch, the same words again, and in two threads; on T5's json and on a model with byte
    fallback."""
    if slots:
        monkeypatch.setattr(hf_unigram_module, "CACHE_SLOTS", slots)
    if source == "ascii-rules":
        _, theirs, doc = request.getfixturevalue("ascii_rules_pair")
    else:
        doc, theirs = doc_of(source), pair(source)[1]
    ours = HfUnigramTokenizer(doc, source)
    texts = cache_texts()
    assert first_difference(ours, theirs, texts) is None
    cache = ours._cache()
    assert cache.fast.any() and cache.wide.any() and (cache.meta[BYTES::META] >= 0).any()
    assert first_difference(ours, theirs, texts[::-1] + [t.upper() for t in texts]) is None
    assert ours._cache() is cache
    assert first_difference(ours, theirs, texts * 3, threads=2) is None
