"""What the split tests share (tests/pretokenize/test_pretokenize.py and the slow sweeps of
tests/parity/test_pretokenize_slow.py): the named pre-tokenizers and the ``regex`` oracle of
each."""
import regex

from corpustok.pretokenize.patterns import PATTERNS
from tests.conftest import reference_pattern

NAMES = list(PATTERNS)
BLANK = regex.compile(r"\s+")


def final_blanks_joined(chunks):
    """``chunks`` with the last ones that are all ``\\s`` joined into one: how a pattern with
    ``\\s++$`` before its other whitespace branches takes a text-final whitespace run."""
    k = len(chunks)
    while k and BLANK.fullmatch(chunks[k - 1]):
        k -= 1
    return chunks[:k] + ([''.join(chunks[k:])] if k < len(chunks) else [])


class _Cl100k:
    """The oracle of the ``cl100k`` split, which is Llama 3's string (llama-models), as HF's
    tokenizer.json files and tiktoken's older releases write it. tiktoken's newer cl100k string
    (0.14's) adds ``\\s++$``: a text-final whitespace run is one chunk there, where the older
    string cuts it after its last line break. ``findall`` gives Llama 3's chunks and checks,
    vendor against vendor, that tiktoken's string differs from them by exactly that. The ids
    do not differ: tests/formats/test_modern_vocab.py::
    test_final_whitespace_run_reading_leaves_ids_alone."""

    def __init__(self):
        self.llama3 = regex.compile(reference_pattern("llama3"))
        self.tiktoken = regex.compile(reference_pattern("cl100k"))

    def findall(self, text):
        chunks = self.llama3.findall(text)
        tiktokens = self.tiktoken.findall(text)
        assert tiktokens in (chunks, final_blanks_joined(chunks)), (text, chunks, tiktokens)
        return chunks


class _Compiled(dict):
    """The ``regex`` oracle of each named pre-tokenizer, compiled from the vendor's published
    pattern (conftest.reference_pattern: tiktoken's strings for gpt2 and o200k, Llama 3's and
    tiktoken's for cl100k, :class:`_Cl100k`), never from corpustok's constant."""

    def __missing__(self, name):
        self[name] = _Cl100k() if name == "cl100k" else regex.compile(reference_pattern(name))
        return self[name]


COMPILED = _Compiled()
