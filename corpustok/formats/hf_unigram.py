"""Which HF ``tokenizer.json`` files with a ``Unigram`` model corpustok encodes exactly
(:class:`corpustok.sentencepiece.hf_unigram.HfUnigramTokenizer`), and a one-line reason for
the others; plain Python, so recognising a file imports no kernel.

Accepted (decision 0037): the model with an ``unk_id`` (HF's fuse_unk is always on), with or
without byte fallback, of at most 2**21 tokens (the word cache's ids); a normalizer that is
none, or ``Precompiled``, ``Strip``, ``Replace`` with a string pattern or the regex ``" {2,}"``
(T5's own file), ``NFKD``, ``StripAccents``, ``Lowercase`` (ALBERT's converted file, decision
0039) in a ``Sequence``; the pre-tokenizer ``Metaspace`` alone or after ``WhitespaceSplit``
(what ``transformers`` writes for T5, mT5 and ALBERT), replacement U+2581; a ``Metaspace``
decoder (or none); added tokens that are not normalized and neither lstrip, rstrip nor
single_word.
"""
import json
import math

from corpustok.formats.metaspace import metaspace_problem, prepend_scheme

__all__ = ["is_unigram_doc", "unigram_problem", "normalizer_steps", "pre_tokenizer",
           "prepend_scheme", "hf_score"]

WHAT = "an HF tokenizer.json with a Unigram model"
SPACE_RUNS = " {2,}"  # the only regex Replace we run (T5's tokenizer.json)
MAX_VOCAB = 1 << 21  # ids the word cache holds (kernels/bpe/cache.py's 21-bit inline ids)


def is_unigram_doc(doc):
    model = doc.get("model")
    return isinstance(model, dict) and model.get("type") == "Unigram"


def normalizer_steps(doc):
    """The normalizer as a list of step dicts ([] for none), or None when it is no list."""
    norm = doc.get("normalizer")
    if norm is None:
        return []
    if not isinstance(norm, dict):
        return None
    steps = norm.get("normalizers") if norm.get("type") == "Sequence" else [norm]
    return steps if isinstance(steps, list) and all(isinstance(s, dict) for s in steps) \
        else None


def pre_tokenizer(doc):
    """``(whitespace_split, metaspace dict)`` of an accepted pre-tokenizer, else None."""
    pre = doc.get("pre_tokenizer")
    if not isinstance(pre, dict):
        return None
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        return None
    kinds = [s.get("type") for s in steps]
    if kinds == ["Metaspace"]:
        return False, steps[0]
    if kinds == ["WhitespaceSplit", "Metaspace"]:
        return True, steps[1]
    return None


def _step_problem(step):
    kind = step.get("type")
    if kind == "Precompiled":
        return None if isinstance(step.get("precompiled_charsmap"), str) else \
            "a Precompiled normalizer without its charsmap"
    if kind in ("Strip", "NFKD", "StripAccents", "Lowercase"):
        return None
    if kind == "Replace":
        pattern, content = step.get("pattern") or {}, step.get("content")
        if not isinstance(content, str):
            return "a Replace normalizer without content"
        if isinstance(pattern.get("String"), str) and pattern["String"]:
            return None
        if pattern.get("Regex") == SPACE_RUNS:
            return None
        return (f"the Replace normalizer pattern {json.dumps(pattern)[:60]} (runs: a string, "
                f"or the regex {SPACE_RUNS!r})")
    return (f"the normalizer {kind!r} (runs: Precompiled, Strip, Replace, NFKD, StripAccents, "
            "Lowercase)")


def unigram_problem(doc):
    """Why a Unigram ``tokenizer.json`` (parsed) is not one corpustok encodes exactly, in one
    line naming the piece; None when it is."""
    model = doc["model"]
    vocab = model.get("vocab")
    if not isinstance(vocab, list) or not vocab or not all(
            isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and
            isinstance(v[1], (int, float)) and not isinstance(v[1], bool) for v in vocab):
        return f"{WHAT} whose vocab is not a list of [token, score] pairs"
    if len(vocab) > MAX_VOCAB:
        return f"{WHAT} of {len(vocab):,} tokens (at most {MAX_VOCAB:,}): not supported"
    unk = model.get("unk_id")
    if not isinstance(unk, int) or isinstance(unk, bool) or not 0 <= unk < len(vocab):
        return (f"{WHAT} without an unk_id inside the vocab (HF fails on an unknown "
                "character then): not supported")
    for key in ("alpha", "nbest_size"):
        if model.get(key):
            return f"{WHAT} with {key} (sampling): not supported"
    steps = normalizer_steps(doc)
    if steps is None:
        return f"{WHAT} whose normalizer is {json.dumps(doc.get('normalizer'))[:80]}: not supported"
    for step in steps:
        problem = _step_problem(step)
        if problem:
            return f"{WHAT} with {problem}: not supported"
    pre = pre_tokenizer(doc)
    if pre is None:
        return (f"{WHAT} with the pre-tokenizer {json.dumps(doc.get('pre_tokenizer'))[:100]}: "
                "not supported (runs: Metaspace, or WhitespaceSplit then Metaspace)")
    problem = metaspace_problem(pre[1], "pre-tokenizer")
    if problem:
        return f"{WHAT} with {problem}: not supported"
    if prepend_scheme(pre[1]) == "first" and steps and pre[0]:
        return (f"{WHAT} with WhitespaceSplit, Metaspace prepend_scheme 'first' and a "
                "normalizer (offsets into the original text decide it): not supported")
    dec = doc.get("decoder")
    if dec is not None and not (isinstance(dec, dict) and dec.get("type") == "Metaspace" and
                                metaspace_problem(dec, "decoder") is None):
        return f"{WHAT} with the decoder {json.dumps(dec)[:100]}: not supported (runs: Metaspace)"
    for t in doc.get("added_tokens") or []:
        if not isinstance(t, dict) or not isinstance(t.get("content"), str) or \
                not isinstance(t.get("id"), int):
            return f"{WHAT} with an added token that is not {{content, id}}"
        if t.get("normalized") or t.get("lstrip") or t.get("rstrip") or t.get("single_word"):
            return (f"{WHAT} whose added token {t.get('content')!r} is normalized, lstrip, "
                    "rstrip or single_word: not supported")
    return None




def hf_score(x):
    """The float64 HF ``tokenizers`` holds for a score that Python's ``json`` read as ``x``.

    ``tokenizers`` parses the file with serde_json's default (not correctly rounded) reader:
    the digits as a u64 significand (digits past u64 are dropped), converted to float64, then
    one multiplication or division by a power of ten. That is one ulp off the correctly rounded
    value for about a quarter of T5's scores, and breaks ties (``----------``). The digits
    are those of ``repr(x)``, the shortest string that reads back as ``x``: the digits the
    file holds when it was written by ``tokenizers`` (serde_json writes the shortest form) or
    by Python's ``json``."""
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"a score of {x} (HF refuses it)")
    mantissa, _, exp = repr(abs(x)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    exponent = int(exp or 0) - len(fraction)
    if len(digits) <= 19:  # fits a u64 whole (the usual case: no digit dropped)
        significand = int(digits)
    else:
        significand, exponent = _u64_digits(whole, fraction, int(exp or 0))
    f = float(significand)
    while True:
        if abs(exponent) <= 308:
            f = f * _POW10[abs(exponent)] if exponent >= 0 else f / _POW10[abs(exponent)]
            break
        if f == 0.0:
            break
        f /= 1e308
        exponent += 308
    return -f if math.copysign(1.0, x) < 0 else f


_POW10 = [float(f"1e{k}") for k in range(309)]


def _u64_digits(whole, fraction, exponent):
    """serde_json's significand and exponent of digits that do not all fit a u64: integer
    digits past it raise the exponent, fraction digits past it are dropped."""
    significand, full = 0, False
    for d in whole:
        if full or significand * 10 + int(d) >= 1 << 64:
            full = True
            exponent += 1
        else:
            significand = significand * 10 + int(d)
    for d in fraction:
        if full or significand * 10 + int(d) >= 1 << 64:
            full = True
            continue
        significand = significand * 10 + int(d)
        exponent -= 1
    return significand, exponent
