"""SentencePiece-style BPE ``tokenizer.json`` files (Mistral v0.1, Gemma 1/2, Gemma 3) give HF
``tokenizers``' ids and decoded text (``corpustok.sentencepiece.hf_json``, decision 0034).

The oracle is ``Tokenizer.from_file(f).encode(text, add_special_tokens=False).ids`` and
``Tokenizer.decode(ids)`` (special tokens skipped, its default). Files: the three json of
``../shared/data/vocab/sentencepiece`` (skipped with the reason when ../shared is absent: no
package of the test extra ships them). Texts: the UDHR sample (532 languages), a
shared-corpus sample, corpus-b documents, edge strings, emoji sequences, hypothesis texts
(whitespace runs, leading/trailing spaces, tabs, newlines, emoji, unassigned code points,
literal ``<s>``, ``</s>``, ``<unk>`` and Gemma's added tokens), llama.cpp's Gemma 4 vectors.
Where the json and its ``.model`` give different ids, both are checked against their own
oracle (``sentencepiece`` for the ``.model``).
"""
import json
import re
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pytest
import sentencepiece as spm
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import corpustok
from corpustok.arrow import read_only, utf8_batch
from corpustok.pipeline.encode import encode_documents
from corpustok.kernels.sentencepiece.bpe import CUT_BEFORE_SPACE, CUT_HERE, NO_CUT
from corpustok.sentencepiece.hf_added import join_segments
from corpustok.sentencepiece.hf_json import HfSentencePieceTokenizer
from tests.conftest import EDGE_TEXTS, SHARED_DATA, corpus_lines, emoji_texts, \
    special_texts, udhr_sample_texts
from tests.sentencepiece.test_sentencepiece_bpe import ALPHABET, EDGES, corpus_b_documents
from tests.sentencepiece.conftest import hf_first_difference as first_difference, hf_ids

SP_DIR = SHARED_DATA / "vocab" / "sentencepiece"
FILES = ["mistral-7b-v0.1/tokenizer.json", "gemma-1-2/gemma2.tokenizer.json",
         "gemma-3/tokenizer.json"]


def file_path(rel):
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{rel}: read from ../shared/data (absent here); no package of the test "
                    "extra ships it")
    return SP_DIR / rel


@lru_cache(maxsize=None)
def pair(rel):
    """(ours, HF's) for a name of FILES."""
    path = file_path(rel)
    ours = corpustok.load(path)
    assert isinstance(ours, HfSentencePieceTokenizer)
    return ours, Tokenizer.from_file(str(path))


def first_decode_difference(ours, theirs, id_lists, skip_special_tokens=True):
    got = ours.decode_batch(id_lists, skip_special_tokens=skip_special_tokens)
    want = theirs.decode_batch(id_lists, skip_special_tokens=skip_special_tokens)
    for ids, a, b in zip(id_lists, got, want):
        if a != b:
            return ids, a, b
    return None


def added_texts(ours):
    """Texts holding added tokens: every one of a small file, a spread of Gemma's (its
    ``<start_of_turn>``, ``\\n`` runs, ``▁`` runs, tabs, HTML tags) between and beside text."""
    added = sorted(ours._added, key=ours._added.get)
    chosen = added if len(added) < 300 else added[:120] + added[120::97]
    return special_texts(chosen) + [
        "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
        "<s><s></s> <unk>x<unk>", "a\n\n\nb\t\t\tc   d\u2581\u2581\u2581e", "<b>bold</b><tr>",
        " <s> ", "<s", "s>", "<<s>>", "\n", "\n\n", " \n \n"]


# ---- the real files -------------------------------------------------------------------------
def test_gemma3_words_are_cut_where_no_merge_joins():
    """Gemma 3's merges make ``>▁</`` (U+2581 after ``>``): its words are cut as the others',
    except before U+2581 after ``>``; the texts around it give HF's ids."""
    ours, theirs = pair("gemma-3/tokenizer.json")
    assert ours._kernel.cut_words
    cut = ours._kernel.tables.cut
    assert cut[ord(">") << 8 | 0xE2] == NO_CUT
    assert cut[ord("a") << 8 | 0xE2] in (CUT_HERE, CUT_BEFORE_SPACE)
    texts = ["<p> </p>", "a> </b", ">  </", "x>\u2581</y", "<td> </td> <td>1</td>", "> </"]
    assert first_difference(ours, theirs, texts) is None


@pytest.mark.parametrize("rel", FILES)
def test_udhr_gives_hf_ids(rel):
    """Every record of the UDHR sample (532 languages)."""
    ours, theirs = pair(rel)
    texts = udhr_sample_texts()
    assert len(texts) > 1500
    assert first_difference(ours, theirs, texts) is None


@pytest.mark.parametrize("rel", FILES)
def test_corpus_and_edge_texts_give_hf_ids(rel):
    """A shared-corpus sample, corpus-b documents, edge strings, emoji sequences and texts
    holding the file's added tokens; two threads give the same ids."""
    ours, theirs = pair(rel)
    lines = corpus_lines(20_000, at_least=500)[::4]
    texts = lines + list(corpus_b_documents(60)) + EDGE_TEXTS + emoji_texts()[::9] + EDGES + \
        added_texts(ours)
    assert first_difference(ours, theirs, texts) is None
    assert first_difference(ours, theirs, texts, threads=2) is None


@pytest.mark.parametrize("rel", FILES)
def test_decode_gives_hf_text(rel):
    """Decoding HF's ids of the texts gives HF's text, special tokens skipped or kept; byte
    runs that are no valid UTF-8 included."""
    ours, theirs = pair(rel)
    texts = udhr_sample_texts()[::7] + EDGE_TEXTS + EDGES + emoji_texts()[::50] + \
        added_texts(ours)
    lists = hf_ids(theirs, texts)
    b = ours.token_to_id("<0xE2>")
    lists += [[b], [b, b], [ours.token_to_id("<0x41>"), b, ours.token_to_id("a")], [],
              [ours.token_to_id("\u2581\u2581"), b]]
    for skip in (True, False):
        assert first_decode_difference(ours, theirs, lists, skip) is None


@pytest.mark.parametrize("rel", FILES)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_hypothesis_texts_give_hf_ids(rel, data):
    """Batches over the characters that matter (whitespace runs, leading/trailing spaces,
    tabs, newlines, emoji, unassigned code points) and the file's added tokens."""
    ours, theirs = pair(rel)
    added = sorted(ours._added)[:400]
    pieces = st.one_of(st.text(alphabet=ALPHABET, max_size=12),
                       st.sampled_from(added + ["<s>", "</s>", "<unk>", "<start_of_turn>",
                                                "  ", "   ", "\u2581\u2581", " the", "\n\n",
                                                "\t\t", "<s", "turn>"]))
    texts = data.draw(st.lists(st.lists(pieces, max_size=10).map("".join), min_size=1,
                               max_size=4))
    assert first_difference(ours, theirs, texts) is None
    ids = hf_ids(theirs, texts)
    assert first_decode_difference(ours, theirs, ids) is None


def test_gemma4_vectors():
    """llama.cpp's Gemma 4 test strings and expected ids (Gemma 3's merges): ours, HF's and
    llama.cpp's agree on Gemma 3's json."""
    ours, theirs = pair("gemma-3/tokenizer.json")
    folder = SP_DIR / "gemma-3"
    inp = (folder / "ggml-vocab-gemma-4.gguf.inp").read_bytes().decode("utf-8")
    texts = inp.split("\n__ggml_vocab_test__\n")  # the last one has no separator after it
    if texts[-1].endswith("\n__ggml_vocab_test__"):
        texts[-1] = texts[-1][:-len("\n__ggml_vocab_test__")]
    outs = (folder / "ggml-vocab-gemma-4.gguf.out").read_text(encoding="utf-8").split("\n")
    outs = outs[:len(texts)]
    assert len(texts) == len(outs) == 46
    got = ours.encode_batch(texts).to_pylist()
    for text, line, ids, want in zip(texts, outs, got, hf_ids(theirs, texts)):
        assert ids == [int(x) for x in line.split()] == want, repr(text)


# ---- json and .model --------------------------------------------------------------------
@pytest.mark.parametrize("rel, model", [("mistral-7b-v0.1/tokenizer.json",
                                         "mistral-7b-v0.1/tokenizer.model.v1"),
                                        ("gemma-1-2/gemma2.tokenizer.json",
                                         "gemma-1-2/tokenizer.model")])
def test_json_and_model_differ_where_their_references_do(rel, model):
    """Ordinary text: the same ids from the json (HF) and the ``.model`` (sentencepiece).
    Literal ``<s>``/``</s>`` (Gemma: ``<bos>``/``<eos>``) in text: ids for HF, text for
    sentencepiece; Mistral's Prepend runs per segment between added tokens (``<s>hi``:
    ``▁hi`` after ``<s>``). Each side checked against its own oracle."""
    ours, theirs = pair(rel)
    sp_ours = corpustok.load(file_path(model))
    sp = spm.SentencePieceProcessor(model_file=str(file_path(model)))
    same = udhr_sample_texts()[::9] + ["Hello world", "  two  spaces ", "tab\tnew\nline"]
    assert ours.encode_batch(same).to_pylist() == hf_ids(theirs, same) == \
        sp_ours.encode_batch(same).to_pylist() == sp.encode(same)
    bos, eos = ("<s>", "</s>") if "mistral" in rel else ("<bos>", "<eos>")
    text = f"{bos}hi{eos} there"
    json_ids, model_ids = ours.encode(text), sp_ours.encode(text)
    assert json_ids == hf_ids(theirs, [text])[0]
    assert model_ids == sp.encode(text)
    assert json_ids != model_ids
    assert json_ids[0] == ours.token_to_id(bos) and ours.token_to_id(eos) in json_ids
    assert sp_ours.token_to_id(bos) not in model_ids  # control-token text is text
    if "mistral" in rel:  # Prepend per segment: "hi" after <s> is ▁hi
        assert ours.encode("<s>hi") == [ours.token_to_id("<s>")] + ours.encode("hi")


def _small_json(merges):
    """An HF tokenizer.json of a tiny SentencePiece-style BPE over ``a``, ``b`` (byte
    fallback, every byte token, Replace normalizer)."""
    from tokenizers import decoders, models, normalizers
    vocab = {"<unk>": 0}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for t in ["a", "b"] + [x + y for x, y in merges]:
        vocab.setdefault(t, len(vocab))
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True,
                               fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                     decoders.Fuse()])
    return tok


def test_pairs_that_make_the_same_token_keep_their_own_ranks():
    """``a ba`` and ``ab a`` both make ``aba``; in every order of four merges, every text of
    up to 8 letters gives HF's ids. Ranking both pairs alike (as a ``.model`` ranks a piece's
    splits) gives other ids on 112 of these texts (``abab`` first) in two of the orders: the
    kernel's pair table ranks each merges line on its own (``merge_value``)."""
    import itertools
    merges = [("b", "a"), ("a", "b"), ("a", "ba"), ("ab", "a")]
    texts = ["".join(p) for n in range(1, 9) for p in itertools.product("ab", repeat=n)]
    texts += [t.replace("b", " ") for t in texts[::5]]
    for order in itertools.permutations(merges):
        hf = _small_json(list(order))
        ours = HfSentencePieceTokenizer(json.loads(hf.to_str()))
        want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
        assert ours.encode_batch(texts).to_pylist() == want, order
        assert ours.decode_batch(want) == hf.decode_batch(want)


# ---- loading, files, refusals ---------------------------------------------------------------
def test_to_dict_save_and_pickle_round_trip(tmp_path):
    import pickle
    ours, _ = pair("mistral-7b-v0.1/tokenizer.json")
    texts = ["Hello <s>world</s>", "  x\ty\n"]
    want = ours.encode_batch(texts).to_pylist()
    path = tmp_path / "tokenizer.json"
    ours.save(path)
    again = corpustok.load(path)
    assert isinstance(again, HfSentencePieceTokenizer)
    assert again.encode_batch(texts).to_pylist() == want
    assert pickle.loads(pickle.dumps(ours)).encode_batch(texts).to_pylist() == want
    assert ours.to_dict() == json.loads(path.read_text(encoding="utf-8"))


def _changed(tmp_path, change):
    doc = json.loads((file_path("mistral-7b-v0.1/tokenizer.json")).read_text(encoding="utf-8"))
    change(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(pre_tokenizer={"type": "Metaspace", "replacement": "\u2581",
                                       "prepend_scheme": "first", "split": False}),
     "with a Metaspace pre-tokenizer after the normalizer"),
    (lambda d: d.update(normalizer={"type": "NFKC"}), "whose normalizer is not"),
    (lambda d: d["added_tokens"][1].update(normalized=True), "added token '<s>' is normalized"),
    (lambda d: d["model"].update(dropout=0.1), "with dropout: not supported"),
    (lambda d: d["model"]["vocab"].pop("<0xE2>"), "byte_fallback without the byte token <0xE2>"),
    (lambda d: d.update(decoder={"type": "Metaspace"}), "with the decoder"),
])
def test_unsupported_shapes_are_named(tmp_path, change, words):
    path = _changed(tmp_path, change)
    with pytest.raises(ValueError, match=words):
        corpustok.load(path)


@pytest.mark.parametrize("merge, shown", [
    ("a c", "'a c'"), ("a", "'a'"), ("a b c", "'a b c'"), (["a", "c"], "['a', 'c']"),
    (["a", 1], "['a', 1]"), ([["a"], "b"], "[['a'], 'b']"), (["a", "b", "c"], "['a', 'b', 'c']"),
    (7, "7")])
def test_a_bad_merge_is_named(merge, shown):
    """Merges are read a whole list at a time; any merge that is not two tokens whose
    concatenation is one is named with its line, wherever it stands."""
    doc = json.loads(_small_json([("a", "b"), ("b", "a"), ("ab", "a")]).to_str())
    ours = HfSentencePieceTokenizer(doc)
    assert ours.encode_batch(["abab a"]).to_pylist() == [
        e.ids for e in _small_json([("a", "b"), ("b", "a"), ("ab", "a")]).encode_batch(
            ["abab a"], add_special_tokens=False)]
    for at in (0, 2, 3):
        bad = json.loads(json.dumps(doc))
        bad["model"]["merges"].insert(at, merge)
        with pytest.raises(ValueError, match=rf"merge {at} \({re.escape(shown)}\) is not two "
                                             "tokens of the vocab"):
            HfSentencePieceTokenizer(bad)


def test_byte_level_reader_names_the_json(tmp_path):
    from corpustok.bpe.tokenizer import BytePairTokenizer
    with pytest.raises(ValueError, match="SentencePiece-style BPE tokenizer.json"):
        BytePairTokenizer.from_hf(file_path("mistral-7b-v0.1/tokenizer.json"))


def test_recognize_special_changes_nothing():
    """Added tokens in the text are always their ids (HF's behaviour); ``encode --special``
    passes ``recognize_special=True``, which gives the same ids."""
    ours, theirs = pair("gemma-3/tokenizer.json")
    text = "<start_of_turn>user hi<end_of_turn>"
    assert ours.encode(text, recognize_special=True) == ours.encode(text) == \
        hf_ids(theirs, [text])[0]


def test_documents_past_the_long_document_limit_give_hf_ids():
    """A job streams a document past ``--max-doc-mb`` through ``stream()`` (the text held and
    encoded whole); a tokenizer.json had none, and such a job failed. Its ids are HF's, beside
    short documents and added tokens."""
    ours, theirs = pair("gemma-1-2/gemma2.tokenizer.json")
    udhr = udhr_sample_texts()
    texts = [" ".join(udhr[:40]), "<start_of_turn>user\nhi<end_of_turn>",
             " ".join(udhr[40:60]) + "<end_of_turn>", ""]
    assert sum(len(t.encode()) > 1000 for t in texts) == 2
    ids, offsets = encode_documents(ours, pa.array(texts), max_doc_bytes=1000)[:2]
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == \
        hf_ids(theirs, texts)


def test_tokenize_job_gives_hf_ids(tmp_path):
    """The pipeline takes the json like any tokenizer file: `corpustok tokenize` with
    `--eos <eos>` on Gemma 2's json writes HF's ids plus the end-of-sequence id."""
    import pyarrow.parquet as pq
    from corpustok.pipeline.cli import main
    path = file_path("gemma-1-2/gemma2.tokenizer.json")
    _, theirs = pair("gemma-1-2/gemma2.tokenizer.json")
    texts = udhr_sample_texts()[:30] + ["  leading and trailing  ", "tab\tand\nnewline",
                                        "<start_of_turn>user\nhi<end_of_turn>"]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{k}", "text": t}) + "\n"
                           for k, t in enumerate(texts)), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["tokenize", str(src), "--tokenizer", str(path), "--out", str(out),
                 "--no-progress", "--eos", "<eos>"]) == 0
    rows = [r for f in sorted((out / "data").glob("*.parquet"))
            for r in pq.read_table(f).to_pylist()]
    got = [r["tokens"] for r in sorted(rows, key=lambda r: int(r["id"][1:]))]
    eos = theirs.token_to_id("<eos>")
    assert got == [ids + [eos] for ids in hf_ids(theirs, texts)]


@pytest.mark.parametrize("rel", ["gemma-3/tokenizer.json", "mistral-7b-v0.1/tokenizer.json"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_segment_stream_equals_segments_encoded_alone(rel, data):
    """The kernel's one stream over a batch's segments (``encode_segments``: words, added ids
    and document ends; decision 0034) equals the readable composition it replaced: each text
    segment encoded as a document of its own, then the ids joined with the added tokens'
    (``join_segments``). Batches with empty documents, documents of added tokens only, and
    runs of Gemma's ``\\n``."""
    ours, _ = pair(rel)
    added = sorted(ours._added)[:200] + ["\n", "\n\n", "<s>", "</s>"]
    pieces = st.one_of(st.text(alphabet=ALPHABET, max_size=12), st.sampled_from(added))
    texts = data.draw(st.lists(st.lists(pieces, max_size=12).map("".join), min_size=1,
                               max_size=8))
    batch = utf8_batch(texts)
    raw = read_only(np.ascontiguousarray(batch.data, np.uint8))
    cuts, kinds, doc_first = ours._segments(raw, batch.offsets)
    kernel = ours._kernel
    got, got_off, got_replaced = kernel.encode_segments(raw, cuts, kinds, doc_first)
    seg_ids, seg_off, seg_replaced = kernel.encode_arrays(raw, cuts)  # one segment a document
    text = kinds < 0
    counts = np.diff(seg_off)[text]
    text_off = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=text_off[1:])
    want, want_off = join_segments(seg_ids[np.repeat(text, np.diff(seg_off))], text_off,
                                   kinds, doc_first)
    assert got.tolist() == want.tolist()
    assert got_off.tolist() == want_off.tolist()
    assert got_replaced.tolist() == [int(seg_replaced[doc_first[d]:doc_first[d + 1]].sum())
                                     for d in range(len(texts))]
