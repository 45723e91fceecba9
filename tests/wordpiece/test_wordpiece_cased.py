"""Fast WordPiece on a real cased vocabulary, against HF.

No package on the index ships a cased BERT ``vocab.txt`` (the models' files are downloaded
from the HF hub, which the tests do not reach), and the uncased vocabulary holds no upper-case
token, so the cased configurations there mostly meet ``[UNK]``. Here HF's own
``WordPieceTrainer`` makes the cased vocabulary (capitals, accented letters, 532 languages'
scripts, ``##`` continuations) from the embedded UDHR sample, and HF's ``BertNormalizer`` +
``BertPreTokenizer`` + ``WordPiece`` encode with it: the vocabulary, the splitting and the ids
all come from HF. corpustok loads the written ``vocab.txt`` as a user's file (casing detected)."""
import functools
import json
import unicodedata

import numpy as np
import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

import corpustok
from corpustok.wordpiece.tokenizer import WordPiece

SAMPLE = corpustok.__path__[0] + "/data/udhr_sample.jsonl"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def udhr_texts():
    with open(SAMPLE, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def hf_pipeline(vocab=None, strip_accents=False):
    tok = Tokenizer(models.WordPiece(vocab or {"[UNK]": 0}, unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=strip_accents, lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok


@functools.lru_cache(maxsize=None)
def cased_vocab(tmp_dir):
    """HF's WordPieceTrainer on the UDHR sample, cased: the vocab.txt it writes."""
    tok = hf_pipeline()
    trainer = trainers.WordPieceTrainer(vocab_size=8000, special_tokens=SPECIALS,
                                        continuing_subword_prefix="##")
    tok.train_from_iterator(udhr_texts(), trainer)
    path = f"{tmp_dir}/vocab.txt"
    tok.model.save(tmp_dir)  # writes vocab.txt, one token per line in id order
    return path


@pytest.fixture(scope="module")
def vocab_path(tmp_path_factory):
    return cased_vocab(str(tmp_path_factory.mktemp("cased")))


def read_vocab(path):
    with open(path, encoding="utf-8") as f:
        return {line.rstrip("\n"): i for i, line in enumerate(f)}


def test_the_vocabulary_is_cased(vocab_path):
    vocab = read_vocab(vocab_path)
    upper = [t for t in vocab if any(unicodedata.category(c) == "Lu" for c in t)]
    assert len(vocab) > 5000 and len(upper) > 500
    assert {"[UNK]", "Universal"} <= set(vocab) and any(t.startswith("##") for t in vocab)


@pytest.mark.parametrize("strip_accents", [False, True])
def test_cased_ids_equal_hf(vocab_path, strip_accents):
    """The UDHR sample, the same text upper-cased and title-cased, and every 97th scalar
    alone and between capitals: equal ids, with casing detected from the file."""
    hf = hf_pipeline(read_vocab(vocab_path), strip_accents)
    detected = corpustok.load(vocab_path)  # casing from the vocabulary: cased
    ours = WordPiece.from_vocab(vocab_path, lowercase=False, strip_accents=strip_accents)
    texts = udhr_texts()
    texts += [t.upper() for t in texts[::5]] + [t.title() for t in texts[1::5]]
    scalars = [chr(c) for c in range(0, 0x110000, 97) if not 0xD800 <= c <= 0xDFFF]
    texts += scalars + ["Ab" + c + "Cd" for c in scalars]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    got = ours.encode_batch(texts).to_pylist()
    bad = [k for k in range(len(texts)) if got[k] != want[k]]
    assert not bad, f"{len(bad)} of {len(texts)} differ, first {texts[bad[0]][:60]!r}"
    unk = read_vocab(vocab_path)["[UNK]"]
    assert np.mean([i != unk for ids in want[:1563] for i in ids]) > 0.95  # mostly real tokens
    if not strip_accents:
        assert detected.encode_batch(texts[:1563]).to_pylist() == want[:1563]
