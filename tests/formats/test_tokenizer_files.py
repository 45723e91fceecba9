"""Hostile tokenizer files and ids (issue 12, points 10 and 13).

Every malformed tokenizer file must make :func:`corpustok.load` raise ValueError naming the
file and what is wrong in it (never AttributeError, KeyError, MemoryError...), so that the CLI
exits 2 with a one-line message instead of 3 with a traceback. Ids given to ``decode`` are
reported as given, however large.
"""
import collections
import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import corpustok
from corpustok import BytePairTokenizer, WordPiece
from tests.conftest import BERT_VOCAB, GPT2, TEST_DATA as DATA

BERT_JSON = DATA / "bert-base-uncased" / "tokenizer.json"
SMALL = 4000  # ids of the small GPT-2 derived vocabulary: 256 bytes + 3744 merges


# ---------------------------------------------------------------- base files (valid)
def _gpt2_small():
    """GPT-2's first 4000 ids and the merges that make them (merge k makes id 256 + k)."""
    vocab = json.loads((GPT2 / "vocab.json").read_text(encoding="utf-8"))
    lines = (GPT2 / "merges.txt").read_text(encoding="utf-8").split("\n")[1:]
    merges = [ln.split(" ") for ln in lines if ln][:SMALL - 256]
    return {t: i for t, i in vocab.items() if i < SMALL}, merges


def hf_wordpiece():
    return json.loads(BERT_JSON.read_text(encoding="utf-8"))


def hf_bpe():
    vocab, merges = _gpt2_small()
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": SMALL, "content": "<|endoftext|>", "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": False,
                              "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False,
                              "trim_offsets": True, "use_regex": True},
            "post_processor": None, "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": vocab, "merges": merges}}


def ours_bpe(tmp_path):
    vocab, merges = _gpt2_small()
    path = tmp_path / "base_bpe.json"
    BytePairTokenizer(vocab, merges, "utf8").save(path)
    return json.loads(path.read_text(encoding="utf-8"))


def ours_wordpiece(tmp_path):
    path = tmp_path / "base_wp.json"
    WordPiece.from_vocab(BERT_VOCAB).save(path)
    return json.loads(path.read_text(encoding="utf-8"))


BASES = {"hf_wp": lambda tmp: hf_wordpiece(), "hf_bpe": lambda tmp: hf_bpe(),
         "bpe": ours_bpe, "wp": ours_wordpiece}


def write(tmp_path, doc, name="tokenizer.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("base", sorted(BASES))
def test_base_files_load(tmp_path, base):
    """The uncorrupted files load: each case below fails for its corruption only."""
    tok = corpustok.load(write(tmp_path, BASES[base](tmp_path)))
    assert tok.encode("hello world")
    assert cli("encode", "--tokenizer", write(tmp_path, BASES[base](tmp_path)),
               "hello").returncode == 0


def test_hf_bpe_load_paths_agree(tmp_path):
    """load() (one parse), from_hf, both HF merge forms and the constructor (its array pass
    and, for pairs that are not plain tuples, its checking loop) build the same tokenizer."""
    doc = hf_bpe()
    as_pairs = write(tmp_path, doc, "pairs.json")
    doc["model"]["merges"] = [" ".join(m) for m in doc["model"]["merges"]]
    as_strings = write(tmp_path, doc, "strings.json")
    vocab, merges = _gpt2_small()
    vocab["<|endoftext|>"] = SMALL
    pair = collections.namedtuple("pair", "left right")
    toks = [corpustok.load(as_pairs), corpustok.load(as_strings),
            BytePairTokenizer.from_hf(as_strings), BytePairTokenizer.from_hf(as_pairs),
            BytePairTokenizer(vocab, merges, "utf8", ["<|endoftext|>"]),
            BytePairTokenizer(vocab, [pair(*m) for m in merges], "utf8", ["<|endoftext|>"])]
    text = "Hello world, the quick brown fox<|endoftext|> jumps: ünïcödé 性能 \u0100"
    want = toks[0].encode(text, recognize_special=True)
    assert toks[0].decode(want) == text and len(want) < len(text.encode())
    for tok in toks:
        assert tok.to_dict() == toks[0].to_dict()
        assert tok.merges == [tuple(m) for m in merges]
        assert tok.vocab == vocab and tok.special_tokens == ["<|endoftext|>"]
        assert all(np.array_equal(a, b) for a, b in zip(tok._pairs, toks[0]._pairs))
        assert tok.encode(text, recognize_special=True) == want


# ---------------------------------------------------------------- corruptions
def _vocab(doc):
    return doc["model"]["vocab"] if "model" in doc else doc["vocab"]


def set_id(token, value):
    def corrupt(doc):
        _vocab(doc)[token] = value
    return corrupt


def add_entry(token, value):
    def corrupt(doc):
        _vocab(doc)[token] = value
        if "special_tokens" in doc:  # ours: a non-symbol token must be listed as special
            doc["special_tokens"].append(token)
    return corrupt


def setter(*keys_and_value):
    *keys, value = keys_and_value

    def corrupt(doc):
        d = doc
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value
    return corrupt


def deleter(*keys):
    def corrupt(doc):
        d = doc
        for k in keys[:-1]:
            d = d[k]
        del d[keys[-1]]
    return corrupt


def as_list(*keys):
    def corrupt(doc):
        d = doc
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = list(d[keys[-1]])
    return corrupt


def first_merge(value):
    def corrupt(doc):
        merges = doc["model"]["merges"] if "model" in doc else doc["merges"]
        merges[0] = value
    return corrupt


def duplicate_id(doc):
    vocab = _vocab(doc)
    vocab["hello"] = vocab["the"] if "the" in vocab else vocab["Ġthe"]


def duplicate_id_bpe(doc):
    vocab = _vocab(doc)
    vocab["hello"] = vocab["Ġthe"]
    if "special_tokens" in doc:
        doc["special_tokens"].append("hello")


def added_id_mismatch(doc):
    doc["added_tokens"][0]["id"] = 5


CASES = [
    # HF tokenizer.json with a WordPiece model
    ("hf_wp", "added_tokens_str", setter("added_tokens", "x"), r"added_tokens must be a list"),
    ("hf_wp", "added_token_str", setter("added_tokens", ["x"]), r"added_tokens\[0\] = 'x'"),
    ("hf_wp", "added_token_no_content", deleter("added_tokens", 1, "content"),
     r"added_tokens\[1\] has no \"content\""),
    ("hf_wp", "added_token_no_id", deleter("added_tokens", 0, "id"),
     r"added_tokens\[0\] has no \"id\""),
    ("hf_wp", "added_token_id_bool", setter("added_tokens", 0, "id", True),
     r"added_tokens\[0\]\.id = True"),
    ("hf_wp", "added_token_id_mismatch", added_id_mismatch, r"'\[PAD\]' has id 5"),
    ("hf_wp", "model_vocab_list", as_list("model", "vocab"), r"model\.vocab must be an object"),
    ("hf_wp", "model_vocab_missing", deleter("model", "vocab"), r"model\.vocab must be"),
    ("hf_wp", "model_not_object", setter("model", ["WordPiece"]), r"nor an HF tokenizer.json"),
    ("hf_wp", "id_10_12", set_id("hello", 10**12),
     r"model\.vocab\['hello'\] = 1000000000000 is outside 0\.\.30521.*dense"),
    ("hf_wp", "id_5e7", set_id("[unused0]", 5 * 10**7), r"= 50000000 is outside"),
    ("hf_wp", "id_negative", set_id("hello", -1), r"\['hello'\] = -1 is outside"),
    ("hf_wp", "id_bool", set_id("hello", True), r"\['hello'\] = True is not an int id"),
    ("hf_wp", "id_float", set_id("hello", 7.0), r"\['hello'\] = 7\.0 is not an int id"),
    ("hf_wp", "id_duplicate", duplicate_id, r"ids must be unique: .* both have id"),
    ("hf_wp", "normalizer_str", setter("normalizer", "BertNormalizer"), r"normalizer"),
    ("hf_wp", "normalizer_option_str", setter("normalizer", "lowercase", "yes"),
     r"normalizer\.lowercase = 'yes' is not a boolean"),
    ("hf_wp", "pre_tokenizer_str", setter("pre_tokenizer", "Bert"), r"pre_tokenizer"),
    ("hf_wp", "unk_token_int", setter("model", "unk_token", 100), r"model\.unk_token = 100"),
    ("hf_wp", "unk_token_unknown", setter("model", "unk_token", "<unk>"), r"unk_token '<unk>'"),
    ("hf_wp", "max_chars_bool", setter("model", "max_input_chars_per_word", True),
     r"model\.max_input_chars_per_word = True"),
    ("hf_wp", "prefix_int", setter("model", "continuing_subword_prefix", 7),
     r"model\.continuing_subword_prefix = 7"),
    # HF tokenizer.json with a byte-level BPE model
    ("hf_bpe", "added_tokens_str", setter("added_tokens", "x"), r"added_tokens must be a list"),
    ("hf_bpe", "added_token_str", setter("added_tokens", ["x"]), r"added_tokens\[0\] = 'x'"),
    ("hf_bpe", "added_token_no_content", deleter("added_tokens", 0, "content"),
     r"added_tokens\[0\] has no \"content\""),
    ("hf_bpe", "added_token_content_int", setter("added_tokens", 0, "content", 5),
     r"added_tokens\[0\]\.content = 5"),
    ("hf_bpe", "added_token_id_negative", setter("added_tokens", 0, "id", -3),
     r"added_tokens\[0\]\.id = -3"),
    ("hf_bpe", "added_token_id_10_12", setter("added_tokens", 0, "id", 10**12),
     r"too sparse: the largest id is 1000000000000 \('<\|endoftext\|>'\) but there are only "
     r"4001 entries"),
    ("hf_bpe", "model_vocab_list", as_list("model", "vocab"), r"model\.vocab must be an object"),
    ("hf_bpe", "id_10_12", set_id("Ġthe", 10**12), r"largest id is 1000000000000 \('Ġthe'\)"),
    ("hf_bpe", "id_5e7", set_id("Ġthe", 5 * 10**7), r"largest id is 50000000 .*4001 entries"),
    ("hf_bpe", "id_negative", set_id("Ġthe", -1), r"model\.vocab\['Ġthe'\] = -1"),
    ("hf_bpe", "id_bool", set_id("Ġthe", False), r"model\.vocab\['Ġthe'\] = False"),
    ("hf_bpe", "id_str", set_id("Ġthe", "7"), r"model\.vocab\['Ġthe'\] = '7'"),
    ("hf_bpe", "id_duplicate", set_id("Ġthe", 300), r"id 300 is used by both"),
    ("hf_bpe", "merges_str", setter("model", "merges", "Ġ t"), r"model\.merges must be a list"),
    ("hf_bpe", "merges_dict", setter("model", "merges", {"Ġ": "t"}),
     r"model\.merges must be a list"),
    ("hf_bpe", "merge_int", first_merge(5), r"model\.merges\[0\] = 5 is not a pair"),
    ("hf_bpe", "merge_triple", first_merge(["Ġ", "t", "x"]), r"model\.merges\[0\] = "),
    ("hf_bpe", "merge_non_str", first_merge(["Ġ", 1]),
     r"merges\[0\] = \('Ġ', 1\): expected a pair of token strings"),
    ("hf_bpe", "merge_unknown_token", first_merge("Ġ zzzz"), r"merges\[0\] = .*'zzzz'"),
    ("hf_bpe", "normalizer_str", setter("normalizer", "NFC"), r"a normalizer \('NFC'\)"),
    ("hf_bpe", "pre_tokenizer_str", setter("pre_tokenizer", "ByteLevel"), r"pre_tokenizer"),
    # corpustok BPE file written by .save()
    ("bpe", "vocab_list", as_list("vocab"), r"\"vocab\" must be an object"),
    ("bpe", "vocab_missing", deleter("vocab"), r"lacks the key\(s\) \['vocab'\]"),
    ("bpe", "id_10_12", add_entry("<x>", 10**12), r"largest id is 1000000000000 \('<x>'\)"),
    ("bpe", "id_5e7", add_entry("<x>", 5 * 10**7),
     r"largest id is 50000000 \('<x>'\) but there are only 4001 entries"),
    ("bpe", "id_negative", set_id("Ġthe", -1), r"vocab entry 'Ġthe': -1"),
    ("bpe", "id_bool", set_id("Ġthe", True), r"vocab entry 'Ġthe': True"),
    ("bpe", "id_duplicate", duplicate_id_bpe, r"is used by both"),
    ("bpe", "merges_str", setter("merges", "Ġ t"), r"\"merges\" must be a list"),
    ("bpe", "merge_int", first_merge(5), r"merges\[0\] = 5: expected a pair"),
    ("bpe", "merge_triple", first_merge(["Ġ", "t", "x"]), r"merges\[0\] = .*expected a pair"),
    ("bpe", "special_tokens_str", setter("special_tokens", "<x>"),
     r"\"special_tokens\" must be a list"),
    ("bpe", "special_token_int", setter("special_tokens", [5]), r"special_tokens\[0\] = 5"),
    ("bpe", "special_token_unknown", setter("special_tokens", ["<x>"]),
     r"special token '<x>' is not in the vocabulary"),
    ("bpe", "substrate_list", setter("substrate", ["utf8"]), r"\"substrate\" must be"),
    ("bpe", "substrate_unknown", setter("substrate", "latin1"), r"unknown substrate 'latin1'"),
    # corpustok WordPiece file written by .save()
    ("wp", "vocab_str", setter("vocab", "[UNK]"), r"\"vocab\" must be a list"),
    ("wp", "vocab_dict", setter("vocab", {"[UNK]": 0}), r"\"vocab\" must be a list"),
    ("wp", "vocab_entry_int", setter("vocab", 5, 17), r"vocab\[5\] = 17 is not a token string"),
    ("wp", "vocab_missing", deleter("vocab"), r"lacks the key\(s\) \['vocab'\]"),
    ("wp", "unk_missing", deleter("unk_token"), r"lacks the key\(s\) \['unk_token'\]"),
    ("wp", "unk_list", setter("unk_token", ["[UNK]"]), r"unk_token must be a str"),
    ("wp", "normalizer_list", setter("normalizer", ["lowercase"]), r"\"normalizer\" must be"),
    ("wp", "normalizer_unknown", setter("normalizer", "nfkc", True),
     r"unknown option\(s\) \['nfkc'\]"),
    ("wp", "normalizer_value", setter("normalizer", "clean_text", "no"),
     r"normalizer\.clean_text = 'no' is not a boolean"),
    ("wp", "special_tokens_str", setter("special_tokens", "[CLS]"),
     r"\"special_tokens\" must be a list"),
    ("wp", "max_chars_str", setter("max_input_chars_per_word", "100"),
     r"max_input_chars_per_word must be an int >= 0, got '100'"),
    ("wp", "recognize_str", setter("recognize_special_tokens", "yes"),
     r"\"recognize_special_tokens\" = 'yes'"),
]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "corpustok.pipeline.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def assert_cli_usage_error(result, command, *needles):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"corpustok {command}: error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.mark.parametrize("base,name,corrupt,message", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_bad_tokenizer_file(tmp_path, base, name, corrupt, message):
    doc = BASES[base](tmp_path)
    corrupt(doc)
    path = write(tmp_path, doc)
    with pytest.raises(ValueError, match=message) as info:
        corpustok.load(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
    assert_cli_usage_error(cli("encode", "--tokenizer", path, "hello"), "encode", str(path))


@pytest.mark.parametrize("base", ["hf_bpe", "bpe"])
def test_sparse_id_is_refused_before_allocating(tmp_path, base):
    """An id of 5*10**7 in a 4000-entry vocabulary used to build 1.4 GB of tables: it is
    refused before any table sized by the largest id is allocated. The bound is on the
    allocations Python and numpy make (tracemalloc counts them; no clock, no RSS): with the
    check 1.5 to 4.7 MiB, without it (the check patched out) 2.4 GB."""
    doc = BASES[base](tmp_path)
    add_entry("<x>", 5 * 10**7)(doc)
    path = write(tmp_path, doc)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="too sparse") as info:
            corpustok.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MiB"
    message = str(info.value)
    entries = SMALL + 1 + (base == "hf_bpe")  # + <x>, + the HF file's <|endoftext|>
    assert "50000000" in message and f"{entries} entries" in message and "dense" in message


def test_sparse_ids_within_the_rule_load(tmp_path):
    """Gaps are allowed while the largest id stays below 2 * entries + 1024."""
    vocab, merges = _gpt2_small()
    vocab["<x>"] = 2 * (len(vocab) + 1) + 1023
    tok = BytePairTokenizer(vocab, merges, "utf8", special_tokens=["<x>"])
    # vocab_size: the largest id + 1 (tiktoken's n_vocab), unused ids counted
    assert len(vocab) == SMALL + 1 and tok.vocab_size == vocab["<x>"] + 1 == 9026
    assert tok.decode([vocab["<x>"]]) == "<x>"
    with pytest.raises(ValueError, match=r"ids\[0\] = 9000 is not a token id of this "
                                         r"vocabulary \(an unused id in 0\.\.9025\)"):
        tok.decode([9000])
    vocab["<x>"] += 1
    with pytest.raises(ValueError, match="too sparse"):
        BytePairTokenizer(vocab, merges, "utf8", special_tokens=["<x>"])


def test_vocab_txt_not_utf8(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(BERT_VOCAB.read_bytes()[:5000] + b"caf\xe9\n")
    with pytest.raises(ValueError, match="vocab.txt must be UTF-8") as info:
        corpustok.load(path)
    assert str(path) in str(info.value)
    assert_cli_usage_error(cli("encode", "--tokenizer", path, "hello"), "encode", str(path),
                           "UTF-8")


def test_tokenizer_json_not_utf8_or_not_json(tmp_path):
    for name, raw in (("latin1.json", b'{"model": "caf\xe9"}'), ("broken.json", b'{"model": ')):
        path = tmp_path / name
        path.write_bytes(raw)
        with pytest.raises(ValueError, match="not a tokenizer file"):
            corpustok.load(path)
        assert_cli_usage_error(cli("encode", "--tokenizer", path, "x"), "encode", str(path))
        for loader in (WordPiece.from_hf_json, BytePairTokenizer.from_hf):
            with pytest.raises(ValueError, match=str(path)):
                loader(path)


def test_direct_hf_loaders_reject_non_objects(tmp_path):
    path = write(tmp_path, ["model"])
    with pytest.raises(ValueError, match="JSON object"):
        WordPiece.from_hf_json(path)
    with pytest.raises(ValueError, match="not an HF tokenizer.json with a BPE model"):
        BytePairTokenizer.from_hf(path)


def test_gpt2_vocab_and_merges_files(tmp_path):
    merges = GPT2 / "merges.txt"
    vocab = json.loads((GPT2 / "vocab.json").read_text(encoding="utf-8"))
    bad_vocab = tmp_path / "vocab.json"
    for content, message in (([1, 2], "expected a JSON object"),
                             ({**vocab, "Ġthe": 10**12}, r"largest id is 1000000000000"),
                             ({**vocab, "Ġthe": -5}, r"entry 'Ġthe': -5"),
                             ({**vocab, "Ġthe": True}, r"entry 'Ġthe': True")):
        bad_vocab.write_text(json.dumps(content), encoding="utf-8")
        with pytest.raises(ValueError, match=message) as info:
            BytePairTokenizer.from_hf(bad_vocab, merges)
        assert str(bad_vocab) in str(info.value)
    bad_vocab.write_bytes(b'{"caf\xe9": 0}')
    with pytest.raises(ValueError, match="not UTF-8"):
        BytePairTokenizer.from_hf(bad_vocab, merges)
    bad_merges = tmp_path / "merges.txt"
    bad_merges.write_bytes(b"#version: 0.2\n\xc4\xa0 t\n\xff \xfe\n")
    with pytest.raises(ValueError, match="merges.txt: not UTF-8"):
        BytePairTokenizer.from_hf(GPT2 / "vocab.json", bad_merges)


def test_merges_txt_line_ends_blank_lines_and_the_bad_line_named(tmp_path):
    """merges.txt is read as a text file reads lines (``\\n``, ``\\r\\n`` or ``\\r`` ends),
    blank lines and a first ``#version`` line skipped: the same tokenizer as GPT-2's own file;
    a line that is not ``left right`` is named by its number in the file."""
    lines = (GPT2 / "merges.txt").read_text(encoding="utf-8").splitlines()
    ref = BytePairTokenizer.from_hf(GPT2 / "vocab.json", GPT2 / "merges.txt")
    texts = ["Hello world, it's 2026!\n\n  x", "caf\u00e9 \u4e2d\u6587"]
    for end in ("\r\n", "\r"):
        path = tmp_path / "merges.txt"
        path.write_bytes((lines[0] + end + end + end.join(lines[1:]) + end + end).encode())
        tok = BytePairTokenizer.from_hf(GPT2 / "vocab.json", path)
        assert tok.to_dict()["merges"] == ref.to_dict()["merges"]
        assert tok.encode_batch(texts).to_pylist() == ref.encode_batch(texts).to_pylist()
    path.write_bytes("\n".join([lines[0], "", lines[1], "a b c", lines[2]]).encode())
    with pytest.raises(ValueError, match=r"merges.txt:4: 'a b c' is not '<left> <right>'"):
        BytePairTokenizer.from_hf(GPT2 / "vocab.json", path)


def test_constructors_reject_strings_for_lists():
    vocab, merges = _gpt2_small()
    with pytest.raises(TypeError, match="merges must be a list"):
        BytePairTokenizer(vocab, "Ġ t", "utf8")
    with pytest.raises(TypeError, match="special_tokens must be a list"):
        BytePairTokenizer(vocab, merges, "utf8", special_tokens="Ġthe")
    with pytest.raises(TypeError, match="tokens must be a list"):
        WordPiece("[UNK]")
    with pytest.raises(TypeError, match="special_tokens must be a list"):
        WordPiece(["[UNK]", "[CLS]"], special_tokens="[CLS]")
    with pytest.raises(ValueError, match="max_input_chars_per_word"):
        WordPiece(["[UNK]"], max_input_chars_per_word=True)


# ---------------------------------------------------------------- decode: ids as given
HUGE = [2**63, -1, 10**30, -(2**63) - 1, 2**64]


@pytest.fixture(scope="module")
def small_bpe():
    vocab, merges = _gpt2_small()
    return BytePairTokenizer(vocab, merges, "utf8")


@pytest.fixture(scope="module")
def wordpiece():
    return WordPiece.from_vocab(BERT_VOCAB)


@pytest.mark.parametrize("value", HUGE)
def test_bpe_decode_reports_ids_as_given(small_bpe, value):
    want = rf"ids\[1\] = {value} is not a token id of this vocabulary \(0\.\.3999\)"
    with pytest.raises(ValueError, match=want):
        small_bpe.decode([72, value, 5])
    with pytest.raises(ValueError, match=want):
        small_bpe.decode((72, value))
    with pytest.raises(ValueError, match=rf"lists\[1\]: {want}"):
        small_bpe.decode_batch([[72], [72, value]])
    with pytest.raises(ValueError, match=rf"ids\[0\] = {value} "):
        small_bpe.decode_stream().feed(value)


@pytest.mark.parametrize("value", HUGE)
def test_wordpiece_decode_reports_ids_as_given(wordpiece, value):
    want = rf"ids\[1\] = {value} is not a token id of this vocabulary \(0\.\.30521\)"
    with pytest.raises(ValueError, match=want):
        wordpiece.decode([7592, value])
    with pytest.raises(ValueError, match=rf"lists\[1\]: {want}"):
        wordpiece.decode_batch([[7592], [7592, value]])


def test_decode_uint64_arrays_as_given(small_bpe, wordpiece):
    ids = np.array([72, 2**63 + 5], np.uint64)
    with pytest.raises(ValueError, match=r"ids\[1\] = 9223372036854775813 "):
        small_bpe.decode(ids)
    with pytest.raises(ValueError, match=r"ids\[1\] = 9223372036854775813 "):
        wordpiece.decode(ids)
    assert small_bpe.decode(np.array([72, 101], np.uint64)) == small_bpe.decode([72, 101])


def test_decode_still_checks_types_and_valid_ids(small_bpe, wordpiece):
    assert small_bpe.decode(small_bpe.encode("Hello there")) == "Hello there"
    assert wordpiece.decode([7592, 2088]) == "hello world"
    for tok in (small_bpe, wordpiece):
        for bad in (["7"], [1.5], [True], [5, "x"]):
            with pytest.raises(TypeError, match="integers"):
                tok.decode(bad)


@pytest.mark.parametrize("value", ["9223372036854775808", "-1", str(10**30)])
def test_cli_decode_reports_ids_as_given(tmp_path, value):
    vocab, merges = _gpt2_small()
    path = tmp_path / "bpe.json"
    BytePairTokenizer(vocab, merges, "utf8").save(path)
    for tokenizer in (path, BERT_VOCAB):
        result = cli("decode", "--tokenizer", tokenizer, "72", value)
        assert_cli_usage_error(result, "decode", f" {value} ")
        assert f"-{value}" not in result.stderr
