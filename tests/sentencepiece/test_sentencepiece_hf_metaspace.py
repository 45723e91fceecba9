"""SentencePiece-style BPE ``tokenizer.json`` files in the Metaspace shape give HF
``tokenizers``' ids and decoded text (``corpustok.sentencepiece.hf_json``, decision 0037).

That shape is what ``transformers``' ``LlamaConverter`` writes with ``legacy=False`` (Llama 2,
Mistral): no normalizer, the pre-tokenizer ``Metaspace("▁", prepend_scheme="first",
split=False)``, the same model, merges and decoder as the legacy file. The files here are
Mistral v0.1's ``tokenizer.json`` of ``../shared`` with its normalizer removed and that
pre-tokenizer put in (``first``, ``always``, ``never``; ``split`` false and true; the
converter itself needs a newer ``protobuf`` than the test extra pins). The oracle is
``Tokenizer.from_str(doc).encode(text, add_special_tokens=False).ids`` and ``decode``.
"""
import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

import corpustok
from corpustok.sentencepiece.hf_json import HfSentencePieceTokenizer
from tests.conftest import EDGE_TEXTS, SHARED_DATA, corpus_lines, emoji_texts, \
    udhr_sample_texts
from tests.sentencepiece.test_sentencepiece_bpe import ALPHABET, EDGES, corpus_b_documents
from tests.sentencepiece.test_sentencepiece_hf_unigram import first_difference, hf_ids

SOURCE = SHARED_DATA / "vocab" / "sentencepiece" / "mistral-7b-v0.1" / "tokenizer.json"
SHAPES = [("first", False), ("always", False), ("never", False), ("first", True),
          ("always", True)]


@lru_cache(maxsize=None)
def doc_of(scheme, split):
    if not SOURCE.is_file():
        pytest.skip("mistral-7b-v0.1/tokenizer.json: read from ../shared/data (absent here); "
                    "no package of the test extra ships it")
    doc = json.loads(SOURCE.read_text(encoding="utf-8"))
    doc["normalizer"] = None
    doc["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                            "prepend_scheme": scheme, "split": split}
    return doc


@lru_cache(maxsize=None)
def pair(scheme, split):
    doc = doc_of(scheme, split)
    return HfSentencePieceTokenizer(doc), Tokenizer.from_str(json.dumps(doc))


TEXTS_EXTRA = ["<s>hi</s> there", " <s> x", "<s>", "</s>  a", "a<s> b", "\u2581a", " \u2581 b",
               "  lead", "trail  ", "a  b   c", "<unk>x<unk>", ""]


@pytest.mark.parametrize("scheme, split", SHAPES)
def test_texts_give_hf_ids(scheme, split):
    """The UDHR sample, a corpus sample, 100 corpus-b documents, edge strings, emoji and
    literal added tokens; two threads give the same ids."""
    ours, theirs = pair(scheme, split)
    texts = udhr_sample_texts()[::2] + corpus_lines(20_000, at_least=500)[::10] + \
        list(corpus_b_documents(100)) + EDGE_TEXTS + EDGES + emoji_texts()[::20] + TEXTS_EXTRA
    assert first_difference(ours, theirs, texts) is None
    assert first_difference(ours, theirs, texts, threads=2) is None


@pytest.mark.parametrize("scheme, split", SHAPES)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_hypothesis_texts_give_hf_ids(scheme, split, data):
    ours, theirs = pair(scheme, split)
    pieces = st.one_of(st.text(alphabet=ALPHABET, max_size=12),
                       st.sampled_from(["<s>", "</s>", "<unk>", "  ", "   ", "\u2581\u2581",
                                        " the", "\n\n", "\t\t", "<s", " \u2581"]))
    texts = data.draw(st.lists(st.lists(pieces, max_size=10).map("".join), min_size=1,
                               max_size=4))
    assert first_difference(ours, theirs, texts) is None
    ids = hf_ids(theirs, texts)
    assert ours.decode_batch(ids) == theirs.decode_batch(ids)


def test_loads_by_content(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc_of("first", False)), encoding="utf-8")
    assert isinstance(corpustok.load(path), HfSentencePieceTokenizer)


def test_metaspace_after_a_normalizer_is_named(tmp_path):
    doc = dict(doc_of("first", False))
    doc["normalizer"] = json.loads(SOURCE.read_text(encoding="utf-8"))["normalizer"]
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="with a Metaspace pre-tokenizer after the normalizer"):
        corpustok.load(path)
