"""Every tokenizer class satisfies the Tokenizer protocol the pipeline is written against:
BPE, WordPiece, SentencePiece's ``.model`` class and HF Unigram's ``tokenizer.json`` class
(whose missing ``stream()`` failed a job on a document past ``--max-doc-mb``, 2026-12-07)."""
import inspect

import pytest

import corpustok
from corpustok.arrow import utf8_batch
from corpustok.tokenizer import Tokenizer, TokenStream
from tests.conftest import TEST_DATA as DATA
from tests.sentencepiece.conftest import model_path
from tests.sentencepiece.test_sentencepiece_hf_unigram import pair as hf_unigram_pair



def _sentencepiece_model():
    return corpustok.load(model_path("t5/spiece.model"))  # the test extra's T5 .model


def _hf_unigram_json():
    return hf_unigram_pair("legacy:t5/spiece.model")[0]  # transformers' T5Converter json


# built in the test, not at collection (the json needs transformers)
TOKENIZERS = {
    "bpe": lambda: corpustok.BytePairTokenizer.train(["hello world, hello there"] * 4, 300),
    "wordpiece": lambda: corpustok.WordPiece.from_vocab(
        str(DATA / "bert-base-uncased" / "vocab.txt")),
    "sentencepiece-model": _sentencepiece_model,
    "hf-unigram-json": _hf_unigram_json,
}


def _members(proto):
    return [n for n, v in vars(proto).items()
            if not n.startswith("_") and (callable(v) or isinstance(v, property))]


@pytest.mark.parametrize("kind", list(TOKENIZERS))
def test_each_class_is_a_tokenizer(kind):
    tok = TOKENIZERS[kind]()
    assert isinstance(tok, Tokenizer)
    assert isinstance(tok.stream(), TokenStream)
    for name in _members(Tokenizer):
        mine = getattr(type(tok), name)
        if isinstance(mine, property):
            continue
        params = inspect.signature(getattr(Tokenizer, name)).parameters.values()
        wanted = [p.name for p in params if p.name != "self" and p.kind != p.KEYWORD_ONLY]
        keywords = {p.name for p in params if p.kind == p.KEYWORD_ONLY}
        have = inspect.signature(mine).parameters
        assert list(have)[1:1 + len(wanted)] == wanted or not wanted, (name, have, wanted)
        assert all(have[k].kind == have[k].KEYWORD_ONLY for k in keywords if k in have) and \
            keywords <= set(have), (name, have, keywords)  # e.g. encode_arrays(threads=)
    text = "hello world"
    assert tok.encode(text) == tok.encode_batch([text]).to_pylist()[0]
    batch = utf8_batch([text])
    assert isinstance(batch, corpustok.Utf8Batch)
    ids, offsets, replaced = tok.encode_arrays(batch)
    assert ids.tolist() == tok.encode(text) and offsets.tolist() == [0, len(ids)]
    assert replaced.tolist() == [0]
    s = tok.stream()
    assert s.feed("hello wo") + s.feed("rld") + s.finish() == tok.encode(text)


def test_the_protocol_names_what_the_pipeline_uses():
    assert not isinstance(object(), Tokenizer)
    assert {"encode_arrays", "stream", "vocab_size", "to_dict"} <= set(_members(Tokenizer))
