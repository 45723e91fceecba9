"""Tokenizer files recognised by content: whatever :func:`corpustok.load` cannot run is a
ValueError of one line naming the file, what it looks like and what would load it (the CLI:
exit 2 with that line), never a traceback or a misleading message (issue: a 100,000-deep
JSON gave a traceback, merges.txt asked for an unknown-token option, a Parquet file was "not
UTF-8", any text file with an [UNK] line loaded as a WordPiece vocabulary)."""
import gzip
import json
import lzma
import struct
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

import corpustok
from tests.conftest import BERT_VOCAB, GPT2, protobuf_varint, SHARED_DATA
from corpustok import BytePairTokenizer, WordPiece
from corpustok.pipeline.cli import main
from corpustok.formats.recognize import is_merges_file, is_sentencepiece_model
from corpustok.wordpiece.tokenizer import vocab_txt_problem

CASED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Hello", "hello", "world", "World",
         "##s", ",", "!"]  # test_cli_usability's cased vocabulary
PROSE = ("WordPiece notes\n\nA word the vocabulary cannot cut becomes\n[UNK]\nin BERT; see the "
         "paper for details.\nIt is a common sight in outputs.\n")


def sentencepiece_model(pieces=(("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("\u2581the", -1.5, 1))):
    """The start of a SentencePiece ModelProto: its ``pieces`` (piece, score, type)."""
    out = b""
    for piece, score, kind in pieces:
        raw = piece.encode()
        entry = b"\x0a" + protobuf_varint(len(raw)) + raw + b"\x15" + struct.pack("<f", score) + \
            b"\x18" + protobuf_varint(kind)
        out += b"\x0a" + protobuf_varint(len(entry)) + entry
    return out + b"\x12\x04\x08\x01\x10\x02"  # a trainer_spec


def deep(depth):
    return '{"model": ' * depth + "1" + "}" * depth


def deep_pre_tokenizer(depth):
    """An HF tokenizer.json that parses but whose pre_tokenizer nests too deep to walk."""
    step = '{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}'
    for _ in range(depth):
        step = '{"type": "Sequence", "pretokenizers": [' + step + ']}'
    vocab = json.dumps({c: i for i, c in enumerate(corpustok.substrate.alphabet("utf8"))})
    return ('{"model": {"type": "BPE", "vocab": ' + vocab + ', "merges": []}, '
            '"pre_tokenizer": ' + step + '}')


def hf_json(model, pre=None):
    tok = Tokenizer(model)
    if pre is not None:
        tok.pre_tokenizer = pre
    return tok.to_str()


def parquet(path):
    pq.write_table(pa.table({"text": ["a", "b"]}), path)


def zip_of(path):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("tokenizer.json", "{}")


# name, what the file holds (bytes, str, or a function writing the path), words of the message
CASES = [
    ("deep.json", deep(100_000), "nested too deep to be a tokenizer file"),
    ("deep_list.json", '{"model": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested too deep to be a tokenizer file"),
    ("deep_walk.json", deep_pre_tokenizer(900), "nested too deep to be a tokenizer file"),
    ("merges.txt", (GPT2 / "merges.txt").read_bytes(),
     "this is a BPE merges file; pass the vocabulary as --tokenizer vocab.json --merges "
     "merges.txt (or the folder)"),
    ("merges_no_header.txt", "\u0120 t\n\u0120 a\nh e\ni n\nr e\n\u0120t he\n",
     "this is a BPE merges file"),
    ("vocab.json", (GPT2 / "vocab.json").read_bytes(),
     "a BPE vocabulary without its merges: add --merges merges.txt (or give the folder "
     "holding both)"),
    ("data.parquet", parquet, "a Parquet file"),
    ("tokenizer.json.gz", gzip.compress(b'{"model": {}}'), "a gzip-compressed file"),
    ("tokenizer.json.xz", lzma.compress(b'{"model": {}}'), "an xz-compressed file"),
    ("tokenizer.json.zst", b"\x28\xb5\x2f\xfd" + bytes(20), "a zstd-compressed file"),
    ("tokenizer.zip", zip_of, "a zip archive"),
    ("word.model", sentencepiece_model() + b"\x12\x02\x18\x03",  # a second trainer_spec
     "a SentencePiece WORD model: corpustok runs the BPE and UNIGRAM model types"),
    ("suffix.model", sentencepiece_model() + b"\x12\x03\xc0\x01\x01",
     "a SentencePiece model with treat_whitespace_as_suffix"),
    ("cut.model", sentencepiece_model()[:-9] + b"\x0a\x40",
     "not a readable ModelProto (a length-delimited field runs past its message)"),
    ("unigram.json", hf_json(models.Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0)], 0,
                                            False), pre_tokenizers.Whitespace()),
     "an HF tokenizer.json with a Unigram model with the pre-tokenizer"),
    ("wordlevel.json", hf_json(models.WordLevel({"[UNK]": 0, "a": 1}, unk_token="[UNK]")),
     "an HF tokenizer.json with a WordLevel model"),
    ("sp_bpe.json", hf_json(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")],
                                       byte_fallback=True), pre_tokenizers.Metaspace()),
     "an HF tokenizer.json with a SentencePiece-style BPE model"),
    ("sp_bpe_metaspace.json", hf_json(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]),
                                      pre_tokenizers.Metaspace()),
     "SentencePiece-style BPE model"),
    ("model_x.json", json.dumps({"model": {"type": "Tiktoken2", "vocab": {}}}),
     "a model of type 'Tiktoken2': not supported"),
    ("prose.txt", PROSE, "not a WordPiece vocab.txt (one token per line): 5 of its 6 lines are "
     "blank or hold whitespace (line 1: 'WordPiece notes')"),
    ("words.txt", "[UNK]\nthe\ncat\nsat\n", "no continuation token"),
    ("unk_other.txt", "<unk>\nthe\n##s\n", "no line is its unknown token '[UNK]'; it lists "
     "'<unk>': WordPiece.from_vocab(path, unk_token='<unk>') reads it"),
    ("data.jsonl", '{"text": "a"}\n{"text": "b"}\n', "JSON Lines, one object per line"),
    ("tokenizer_config.json", json.dumps({"tokenizer_class": "BertTokenizer",
                                          "model_max_length": 512}),
     "an HF settings file (tokenizer_config.json or config.json)"),
    ("utf16.txt", "\ufeff[UNK]\n##s\n".encode("utf-16"), "UTF-16 text"),
    ("binary.bin", b"\x01\x02\x00\x03" * 10, "a binary file (a NUL byte at offset 2)"),
    ("empty.txt", b"", "the file is empty"),
]

CASE_FILES = {name: content for name, content, _ in CASES}


def write(path, content):
    if callable(content):
        content(path)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name,content,words", CASES, ids=[c[0] for c in CASES])
def test_a_file_that_is_no_tokenizer_is_named(tmp_path, capsys, name, content, words):
    path = write(tmp_path / name, content)
    with pytest.raises(ValueError) as info:
        corpustok.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert words in message
    assert main(["encode", "--tokenizer", str(path), "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"corpustok encode: error: {message}"]


def test_direct_loaders_name_the_deep_and_the_unsupported(tmp_path):
    for content, words in ((deep(100_000), "nested too deep"),
                           (deep_pre_tokenizer(900), "nested too deep"),
                           (CASE_FILES["sp_bpe.json"], "SentencePiece-style BPE")):
        path = write(tmp_path / "tokenizer.json", content)
        with pytest.raises(ValueError, match=words):
            BytePairTokenizer.from_hf(path)
    path = write(tmp_path / "tokenizer.json", deep(100_000))
    with pytest.raises(ValueError, match="nested too deep"):
        WordPiece.from_hf_json(path)


def test_gpt2_files_swapped_or_wrong(tmp_path, capsys):
    vocab, merges = GPT2 / "vocab.json", GPT2 / "merges.txt"
    for args, words in (([merges, "--merges", vocab], f"{merges}: this is a BPE merges file"),
                        ([vocab, "--merges", vocab], f"{vocab}: a JSON file, not a merges.txt"),
                        ([vocab, "--merges", write(tmp_path / "m.parquet", parquet)],
                         "m.parquet: a Parquet file")):
        assert main(["encode", "--tokenizer", *map(str, args), "x"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
    assert main(["encode", "--tokenizer", str(vocab), "--merges", str(merges), "x"]) == 0


# ---- what must still load ------------------------------------------------------------------
TEXT = "Unaffable tokenizers, Hello worlds!"


def bert_ids(vocab_txt, lowercase=True):
    from tokenizers import BertWordPieceTokenizer
    hf = BertWordPieceTokenizer(str(vocab_txt), lowercase=lowercase)
    return hf.encode(TEXT, add_special_tokens=False).ids


def test_wordpiece_vocabularies_still_load(tmp_path):
    assert corpustok.load(BERT_VOCAB).encode(TEXT) == bert_ids(BERT_VOCAB)
    cased = write(tmp_path / "vocab.txt", "\n".join(CASED) + "\n")
    assert corpustok.load(cased).encode(TEXT) == bert_ids(cased, lowercase=False)
    assert vocab_txt_problem(CASED) is None


def test_a_small_sentencepiece_model_loads(tmp_path):
    """A .model is recognised by its protobuf shape, whatever its name."""
    path = write(tmp_path / "anything.bin", sentencepiece_model())
    tok = corpustok.load(path)
    assert type(tok).__name__ == "SentencePieceTokenizer" and tok.model_type == "UNIGRAM"
    assert tok.encode("the") == [2] and tok.encode("the x") == [2, 0]
    assert tok.decode([2, 0]) == "the \u2047 "


def test_real_vocabularies_load_or_are_named(modern_vocab):
    """Real files on a fresh clone (the test extra's packages): BERT's vocab.txt (tests/data),
    Llama 3's tokenizer.model (a rank file: it loads), and Mistral's SentencePiece models that
    mistral-common ships beside its Tekken file (tokenizer.model.v1, ...model.v2, .v3, .v7:
    they load as SentencePiece BPE; tests/sentencepiece/test_sentencepiece.py checks their ids)."""
    assert corpustok.load(BERT_VOCAB).encode(TEXT) == bert_ids(BERT_VOCAB)
    llama3 = modern_vocab("llama3")
    assert llama3.name == "tokenizer.model"
    assert corpustok.load(llama3).encode("hello world") == [15339, 1917]
    models = sorted(modern_vocab("tekken").parent.glob("*.model*"))
    assert {p.name for p in models} >= {"tokenizer.model.v1",
                                        "mistral_instruct_tokenizer_240216.model.v2"}
    for path in models:
        tok = corpustok.load(path)
        assert type(tok).__name__ == "SentencePieceTokenizer" and tok.model_type == "BPE"
        assert tok.decode(tok.encode(TEXT)) == TEXT


def test_shared_vocabularies_load_or_are_named():
    """The SentencePiece files of ../shared that no package of the test extra ships (Gemma,
    T5, mT5, ALBERT, Llama 2; Mistral's are also mistral-common's: checked on a fresh clone by
    test_real_vocabularies_load_or_are_named) and its BERT copy: the .model files load (their
    ids: tests/sentencepiece/test_sentencepiece.py), and so do their HF tokenizer.json."""
    if not SHARED_DATA.is_dir():
        pytest.skip("Gemma, T5, mT5, ALBERT and Llama 2 SentencePiece files: no package on the "
                    "index ships them; read from ../shared/data only")
    vocab = SHARED_DATA / "vocab"
    bert = vocab / "bert-base-uncased" / "vocab.txt"
    assert corpustok.load(bert).encode(TEXT) == bert_ids(bert)
    sp = vocab / "sentencepiece"
    for path in sorted(sp.glob("*/*.model*")) + sorted(sp.glob("*/spiece.model")):
        tok = corpustok.load(path)
        assert type(tok).__name__ == "SentencePieceTokenizer"
        assert tok.model_type == ("UNIGRAM" if path.name == "spiece.model" else "BPE")
    for path in sorted(sp.glob("*/*tokenizer.json")):
        if path.parent.name == "t5":  # Unigram json (its ids: test_sentencepiece_hf_unigram)
            assert type(corpustok.load(path)).__name__ == "HfUnigramTokenizer"
        else:  # Mistral v0.1, Gemma 1/2, Gemma 3: SentencePiece-style BPE json
            assert type(corpustok.load(path)).__name__ == "HfSentencePieceTokenizer"


# ---- the rules -----------------------------------------------------------------------------
def test_vocab_txt_rule():
    base = ["[UNK]", "##s"] + [f"w{k}" for k in range(98)]
    assert vocab_txt_problem(base) is None
    assert vocab_txt_problem(base + [""]) is None  # 1 line in 101: within 1%
    assert "2 of its 102 lines" in vocab_txt_problem(base + ["", "a b"])
    assert "no continuation token" in vocab_txt_problem([t for t in base if t != "##s"])
    assert "no continuation token" in vocab_txt_problem(base[:1] + ["##"] + base[2:])
    assert vocab_txt_problem(base, unk_token="[UNK]", suffix_indicator="@@") is not None
    assert vocab_txt_problem(["<unk>", "@@s"], unk_token="<unk>", suffix_indicator="@@") is None
    assert "'<unk>'" in vocab_txt_problem(["<unk>", "##s"])


def test_merges_and_sentencepiece_sniffing():
    assert is_merges_file(b"#version: 0.2\n")
    assert is_merges_file("\u0120 t\nh e\n\u0120t he\n".encode())
    assert not is_merges_file(b"hello world\ngood morning\n")  # word pairs: no first merge
    assert not is_merges_file(b"[PAD]\n[UNK]\n")
    assert not is_merges_file(b"a b\nc d e\n")
    assert is_sentencepiece_model(sentencepiece_model())
    assert not is_sentencepiece_model(b"\n[PAD]\n[UNK]\n")
    assert not is_sentencepiece_model(b"\x0a\x05\x0a\x03abc")  # no score or type after
