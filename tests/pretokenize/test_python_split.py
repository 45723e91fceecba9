"""Pre-tokenizers that run in Python (:mod:`corpustok.pretokenize.python_split`) against HF ``tokenizers``
itself: every Split behavior, Digits, Sequences, and whole tokenizers built on them."""
import json
import sys
import warnings

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex, Tokenizer
from tokenizers import pre_tokenizers as hf_pre
from tokenizers.models import BPE

import corpustok
from tests.conftest import GPT2, TEST_DATA
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.pretokenize.patterns import GPT2_PATTERN, resolve
from corpustok.pretokenize.python_split import (PythonSplit, SlowSplitWarning, oniguruma_pattern,
                                               oniguruma_repeats)
from corpustok.substrate import SYMBOL_STRINGS
from tests.pretokenize.test_pretokenize import assigned_texts as texts

BEHAVIORS = {"Isolated": "isolated", "MergedWithPrevious": "merged_with_previous",
             "MergedWithNext": "merged_with_next", "Contiguous": "contiguous"}
PATTERNS = ["-+", "x*", "a|b+", r"\s+", r"\p{N}", "(?:ab)+|c*", ".", "", r"\p{L}+(?=\s)",
            r"(?<=a)b", "'s|'t| ?\\p{L}+",
            # bounded repeats with a +: possessive to regex, repeated to HF's Oniguruma
            r"\p{N}{1,3}+", r"(?:ab){1,2}+|c", r"[a-]{2}+", r"x{2,}+|\s++", "a{,2}+b",
            "a{1}?b|a:{2}+"]
EDGE = st.lists(st.sampled_from(list("-xab c1٣'s\u0301 \n") + ["ab", "--", "  "]),
                max_size=20).map("".join)
DIGITS_THEN_BYTES = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
BYTE_OF = {c: b for b, c in enumerate(SYMBOL_STRINGS[:256])}  # HF ByteLevel's alphabet


def test_oniguruma_repeats_wraps_bounded_repeats_with_a_plus():
    cases = {r"\p{N}{1,3}+": r"(?:\p{N}{1,3})+", "a{2}+b": "(?:a{2})+b",
             "(?:ab){2,}+": "(?:(?:ab){2,})+", "[]a]{1,2}+": "(?:[]a]{1,2})+",
             r"\x{41}{2}+": r"(?:\x{41}{2})+", "(?i:[sd]|ll){1,2}+|x": "(?:(?i:[sd]|ll){1,2})+|x",
             r"[\]a]{3}+": r"(?:[\]a]{3})+",
             "a{,2}+b": "(?:a{,2})+b", "a{2}?b": "(?:a{2})?b", "a{1,2}?b": "a{1,2}?b",
             r"\x41{2}+": r"(?:\x41{2})+", r"\101{2}+": r"(?:\101{2})+", "a:{2}+": "a(?::{2})+",
             "a(?#[)b": "ab", "x{2}+?": "(?:x{2})+?",
             # unchanged: no + after the repeat, another possessive form, a pattern that
             # does not scan (regex.compile names it)
             "x{3}": "x{3}", r"\p{L}++|a?+b*+": r"\p{L}++|a?+b*+", r"\{2}+": r"\{2}+",
             "[a{2}+": "[a{2}+", "(a{2}+": "(a{2}+"}
    for pattern, want in cases.items():
        assert oniguruma_repeats(pattern) == want, pattern


@given(pattern=st.sampled_from([r"\p{N}{1,3}+", r"(?:ab){1,2}+|c", r"[a-]{2}+", "a{2}?b|a",
                                 r"x{2,}+|\s++", "a{,2}+b"]), text=st.one_of(EDGE, texts))
@settings(max_examples=200, deadline=None)
def test_oniguruma_pattern_splits_in_hf_as_regex_does(pattern, text):
    """What the HF export writes (python_split.oniguruma_pattern) splits in HF's engine as the
    pattern splits in the regex module."""
    spec = {"type": "Split", "pattern": {"Regex": oniguruma_pattern(pattern)},
            "behavior": "Isolated", "invert": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowSplitWarning)
        ours = PythonSplit({**spec, "pattern": {"Regex": pattern}}, "test", oniguruma=False)
    ref = hf_pre.Split(Regex(spec["pattern"]["Regex"]), "isolated")
    assert hf_pieces(ref, text) == ours.split(text)
    assert oniguruma_pattern(r"\p{N}{1,3}+") == r"(?>\p{N}{1,3})"
    assert oniguruma_pattern("a{2}?b") == "a{2}b" and regex.fullmatch("a{2}?b", "aab")


def quiet(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlowSplitWarning)
        return PythonSplit(spec, "test")


def hf_pieces(pre, text):
    return [p for p, _ in pre.pre_tokenize_str(text)]


@given(pattern=st.sampled_from(PATTERNS), behavior=st.sampled_from(list(BEHAVIORS)),
       invert=st.booleans(), kind=st.sampled_from(["Regex", "String"]),
       text=st.one_of(EDGE, texts))
@settings(max_examples=600, deadline=None)
def test_split_step_equals_hf(pattern, behavior, invert, kind, text):
    spec = {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}
    ref = hf_pre.Split(Regex(pattern) if kind == "Regex" else pattern, BEHAVIORS[behavior],
                       invert=invert)
    assert quiet(spec).split(text) == hf_pieces(ref, text)


@given(individual=st.booleans(), text=st.one_of(EDGE, texts))
@settings(max_examples=200, deadline=None)
def test_digits_and_sequences_equal_hf(individual, text):
    digits = {"type": "Digits", "individual_digits": individual}
    assert quiet(digits).split(text) == hf_pieces(hf_pre.Digits(individual), text)
    seq = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext",
         "invert": False}, digits, {"type": "ByteLevel", "use_regex": True}]}
    ref = hf_pre.Sequence([hf_pre.Split(" ", "merged_with_next"), hf_pre.Digits(individual),
                           hf_pre.ByteLevel(add_prefix_space=False, use_regex=True)])
    # HF's ByteLevel also maps the bytes to its alphabet; compare the pieces' texts
    assert [p.encode("utf-8") for p in quiet(seq).split(text)] == \
        [bytes(BYTE_OF[c] for c in p) for p in hf_pieces(ref, text)]


def gpt2_hf(pre_tokenizer):
    vocab = json.loads((GPT2 / "vocab.json").read_text("utf-8"))
    merges = [tuple(line.split()) for line in
              (GPT2 / "merges.txt").read_text("utf-8").splitlines()[1:] if line]
    hf = Tokenizer(BPE(vocab, merges))
    hf.pre_tokenizer = pre_tokenizer
    hf.add_special_tokens(["<|endoftext|>"])
    return hf


@pytest.fixture(scope="module")
def digits_tokenizer(tmp_path_factory):
    """GPT-2 with Digits(individual) before ByteLevel (StarCoder's pre-tokenizer) as an HF
    tokenizer.json: HF's own object and corpustok's load of its file."""
    hf = gpt2_hf(hf_pre.Sequence([hf_pre.Digits(individual_digits=True),
                                  hf_pre.ByteLevel(add_prefix_space=False)]))
    path = tmp_path_factory.mktemp("digits") / "tokenizer.json"
    hf.save(str(path))
    with pytest.warns(SlowSplitWarning, match=r"Sequence\[Digits, ByteLevel\] runs in Python"):
        ours = corpustok.load(path)
    return ours, hf


def sample_lines():
    return (TEST_DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines(True)


def test_digits_tokenizer_equals_hf(digits_tokenizer):
    ours, hf = digits_tokenizer
    lines = sample_lines() + ["x 12345 <|endoftext|>y 1<|endoftext|>2"]
    # HF always matches its added tokens; corpustok does when asked
    assert ours.encode_batch(lines, recognize_special=True).to_pylist() == \
        [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    assert ours.decode(ours.encode(lines[-1])) == lines[-1]
    assert 50256 not in ours.encode(lines[-1])


@given(text=texts, cut=st.integers(0, 40))
@settings(max_examples=100, deadline=None)
def test_digits_tokenizer_random_text_and_stream(digits_tokenizer, text, cut):
    ours, hf = digits_tokenizer
    assert ours.encode(text, recognize_special=True) == \
        hf.encode(text, add_special_tokens=False).ids
    enc = ours.stream()
    assert enc.feed(text[:cut]) + enc.feed(text[cut:]) + enc.finish() == ours.encode(text)


def test_save_load_keeps_the_spec(digits_tokenizer, tmp_path):
    ours, _ = digits_tokenizer
    assert ours.pretokenizer == json.loads(json.dumps(DIGITS_THEN_BYTES))
    ours.save(tmp_path / "t.json")
    with pytest.warns(SlowSplitWarning):
        again = corpustok.load(tmp_path / "t.json")
    line = "a 2024-12-01 b"
    assert again.encode(line) == ours.encode(line)


def test_pattern_the_kernel_refuses_falls_back(tmp_path):
    """A pattern outside the kernel's family (a lookbehind here) from a tokenizer.json, and
    as ``pretokenizer=``: split by the regex module, equal to HF."""
    pattern = r"(?<=\p{L})\p{N}+|" + GPT2_PATTERN
    hf = gpt2_hf(hf_pre.Sequence([hf_pre.Split(Regex(pattern), "isolated"),
                                  hf_pre.ByteLevel(add_prefix_space=False, use_regex=False)]))
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    with pytest.warns(SlowSplitWarning, match="does not run this pattern"):
        ours = corpustok.load(path)
    lines = sample_lines() + ["abc123 x45 67"]
    assert ours.encode_batch(lines, recognize_special=True).to_pylist() == \
        [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    with pytest.warns(SlowSplitWarning):
        direct = BytePairTokenizer(ours.vocab, ours.merges, substrate="utf8",
                                   pretokenizer=pattern)
    assert direct.pretokenizer == pattern
    assert direct.encode(lines[-1]) == ours.encode(lines[-1])


def test_steps_the_kernel_runs_take_the_kernel(tmp_path):
    """Digits alone and ByteLevel(use_regex=false) alone need no Python: no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowSplitWarning)
        for spec in ({"type": "ByteLevel", "use_regex": False}, {"type": "ByteLevel"}):
            assert resolve(spec)[1] is None
        hf = gpt2_hf(hf_pre.Sequence([hf_pre.Digits(individual_digits=True),
                                      hf_pre.ByteLevel(add_prefix_space=False,
                                                       use_regex=False)]))
        hf.save(str(tmp_path / "tokenizer.json"))
        ours = corpustok.load(tmp_path / "tokenizer.json")
    assert ours.pretokenizer == r"\p{N}"
    lines = sample_lines()[:300] + ["x 12345 y"]
    assert ours.encode_batch(lines, recognize_special=True).to_pylist() == \
        [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]


def test_unsupported_steps_are_named():
    for spec, match in (({"type": "Whitespace"}, r"\[0\] \(Whitespace\) is not supported"),
                        ({"type": "ByteLevel", "add_prefix_space": True}, "add_prefix_space"),
                        ({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"},
                                                                {"type": "Digits"}]},
                         "ByteLevel must be the last step"),
                        ({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed"},
                         "Removed would drop text"),
                        ({"type": "Split", "pattern": "a", "behavior": "Isolated"},
                         "pattern must be"),
                        ({"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"},
                         "bad regex")):
        with pytest.raises(ValueError, match=match):
            quiet(spec)


def test_training_refuses_python_splits():
    with pytest.raises(ValueError, match="training needs a pre-tokenizer the split kernel"):
        BytePairTokenizer.train(["a 1 b"], 300, substrate="utf8",
                                pretokenizer=DIGITS_THEN_BYTES)


def test_without_the_regex_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "regex", None)
    with pytest.raises(ImportError, match="needs the `regex` module"):
        PythonSplit(DIGITS_THEN_BYTES, "test")
