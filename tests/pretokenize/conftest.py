"""What the split tests share (tests/pretokenize/test_pretokenize.py and the slow sweeps of
tests/parity/test_pretokenize_slow.py): the named pre-tokenizers and the ``regex`` oracle of
each."""
import regex

from corpustok.pretokenize.patterns import PATTERNS
from tests.conftest import reference_pattern

NAMES = list(PATTERNS)


class _Compiled(dict):
    """The ``regex`` oracle of each named pre-tokenizer, compiled from the vendor's published
    pattern (conftest.reference_pattern: tiktoken's strings for gpt2, cl100k, o200k), never
    from corpustok's constant."""

    def __missing__(self, name):
        self[name] = regex.compile(reference_pattern(name))
        return self[name]


COMPILED = _Compiled()
