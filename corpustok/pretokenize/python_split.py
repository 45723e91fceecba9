"""Pre-tokenizers the split kernel does not run, run in Python with the ``regex`` module.

The split kernel (:mod:`corpustok.kernels.split.interpreter`) interprets one family of patterns and one HF
behavior (``Isolated``). Everything else a byte-level BPE ``tokenizer.json`` commonly holds
(a pattern outside that family, ``Digits``, a ``Split`` on a plain string, a ``Split`` with
another behavior, several splitting steps in a ``Sequence``) is run here, exactly as HF's
``pre_tokenizers`` define it, and the chunks are then encoded by the same kernels, one chunk
per kernel "document". It is slow (the ``regex`` module in a Python loop), so choosing it
prints one warning; it is never wrong.

A spec is the HF ``pre_tokenizer`` JSON object itself; :func:`kernel_pattern` tells when it is
one pattern the kernel runs, so only what needs Python takes this path.
"""
import re
import warnings

import numpy as np

from corpustok.arrow import decode_replacing, utf8_batch

GPT2_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
BEHAVIORS = ("Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
SUPPORTED = ("ByteLevel(add_prefix_space=false) (last), Split(Regex or String, behavior "
             f"{'/'.join(BEHAVIORS)}, invert), Digits, Sequence of these")

__all__ = ["PythonSplit", "SlowSplitWarning", "describe", "isolated", "kernel_pattern",
           "oniguruma_pattern", "oniguruma_repeats", "steps"]


class SlowSplitWarning(UserWarning):
    """A pre-tokenizer runs in Python (the ``regex`` module) instead of the split kernel."""


def isolated(pattern):
    """The HF spec of one regex split with the ``Isolated`` behavior: what a pattern string
    given as ``pretokenizer=`` means."""
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
            "invert": False}


def steps(spec, where="pre_tokenizer"):
    """The splitting steps of an HF pre-tokenizer spec, flattened: a list of ``("regex", P,
    behavior, invert)``; a trailing ``ByteLevel`` contributes
    GPT-2's regex when ``use_regex`` (its default). ValueError names the first component
    outside :data:`SUPPORTED`."""
    items = spec.get("pretokenizers") if isinstance(spec, dict) and \
        spec.get("type") == "Sequence" else [spec]
    if not isinstance(items, list) or not items:
        raise ValueError(f"{where}: Sequence.pretokenizers must be a non-empty list")
    out = []
    for k, p in enumerate(items):
        kind = p.get("type") if isinstance(p, dict) else None
        name = f"{where}[{k}] ({kind or type(p).__name__})"
        if kind == "ByteLevel":
            if p.get("add_prefix_space"):
                raise ValueError(f"{name}: add_prefix_space=true adds text; not supported")
            if k != len(items) - 1:
                raise ValueError(f"{name}: ByteLevel must be the last step")
            if p.get("use_regex", True):
                out.append(("regex", GPT2_REGEX, "Isolated", False))
        elif kind == "Digits":  # Rust's char::is_numeric is \p{N}; one match per digit
            out.append(("regex", r"\p{N}", "Isolated" if p.get("individual_digits") else
                        "Contiguous", False))
        elif kind == "Split":
            pat = p.get("pattern")
            text = pat.get("Regex", pat.get("String")) if isinstance(pat, dict) else None
            if not isinstance(text, str) or len(pat) != 1:
                raise ValueError(f"{name}: pattern must be {{\"Regex\": str}} or "
                                 f"{{\"String\": str}}, got {pat!r}")
            behavior = p.get("behavior")
            if behavior not in BEHAVIORS:
                raise ValueError(f"{name}: behavior {behavior!r} is not supported ("
                                 f"{', '.join(BEHAVIORS)}; Removed would drop text that "
                                 "decoding cannot give back)")
            regex_text = text if "Regex" in pat else re.escape(text)
            out.append(("regex", regex_text, behavior, bool(p.get("invert"))))
        else:
            raise ValueError(f"{name} is not supported; supported: {SUPPORTED}")
    return out


def describe(spec):
    """A short name of an HF pre-tokenizer spec for messages."""
    if not isinstance(spec, dict):
        return repr(spec)[:60]
    if spec.get("type") == "Sequence" and isinstance(spec.get("pretokenizers"), list):
        return f"Sequence[{', '.join(map(describe, spec['pretokenizers']))}]"
    if spec.get("type") == "Split":
        return f"Split({str(spec.get('pattern'))[:60]}, {spec.get('behavior')})"
    return str(spec.get("type"))


def kernel_pattern(spec_steps):
    """The pattern string when the steps are one isolated regex split (the split kernel's
    case), ``""`` for no split at all, else None."""
    if not spec_steps:
        return ""
    if len(spec_steps) == 1 and spec_steps[0][0] == "regex" and \
            spec_steps[0][2:] == ("Isolated", False):
        return spec_steps[0][1]
    return None


_REPEAT = re.compile(r"\{(?:\d+(?:,\d*)?|,\d+)\}")  # {n}, {m,}, {m,n}, {,n}
_ESCAPE = re.compile(r"\\(?:[pPxuUN]\{[^}]*\}|[pP]\w|x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{4}|"
                     r"U[0-9a-fA-F]{8}|0[0-7]{0,2}|[1-9]\d*|.)", re.S)
_NO_ATOM = ("|", "(", "^", "$")  # what a repeat cannot apply to


def _rewrite_repeats(pattern, rewrite):
    """``pattern`` with each atom ``A`` repeated as ``A{m,n}+`` or ``A{n}?`` replaced by
    ``rewrite(A, "{m,n}", "+" or "?")``; atoms as the regex syntax delimits them (an escape,
    a class, a group, one character, with their quantifiers), groups rewritten inside too.
    A pattern that does not scan is returned as it is, for ``regex.compile`` to judge."""
    out = [[]]  # the pieces of each open group, innermost last
    k = 0
    try:
        while k < len(pattern):
            c = pattern[k]
            last = out[-1][-1] if out[-1] else "|"
            if c == "\\":
                m = _ESCAPE.match(pattern, k)
                out[-1].append(m.group())
                k = m.end()
            elif c == "[":
                end = _class_end(pattern, k)
                out[-1].append(pattern[k:end])
                k = end
            elif pattern.startswith("(?#", k):  # a comment
                k = pattern.index(")", k) + 1
            elif c == "(":
                out.append(["("])
                k += 1
            elif c == ")" and len(out) > 1:
                out[-1].append(")")
                group = "".join(out.pop())
                out[-1].append(group)
                k += 1
            elif c == "{" and last not in _NO_ATOM and (m := _REPEAT.match(pattern, k)):
                after = pattern[m.end():m.end() + 1]
                if after == "+" or (after == "?" and "," not in m.group()):
                    out[-1][-1] = rewrite(last, m.group(), after)
                    k = m.end() + 1
                else:
                    out[-1][-1] = last + m.group()
                    k = m.end()
            elif c in "?*+" and last not in _NO_ATOM:
                out[-1][-1] = last + c  # a quantifier stays with its atom
                k += 1
            else:
                out[-1].append(c)
                k += 1
    except (IndexError, ValueError, AttributeError):  # unclosed class or comment, bad escape
        return pattern
    return pattern if len(out) > 1 else "".join(out[0])  # an unclosed group: as it is


def _class_end(pattern, k):
    """The end of the character class opening at ``pattern[k]`` (nested classes counted, a
    leading ``]`` a member); IndexError when it is not closed."""
    end, depth = k + 1, 1
    if pattern[end] == "^":
        end += 1
    if pattern[end] == "]":
        end += 1
    while depth:
        ch = pattern[end]
        if ch == "\\":
            end += 1
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        end += 1
    return end


def oniguruma_repeats(pattern):
    r"""``pattern`` as the ``regex`` module must read it to split as HF's Oniguruma does, for
    two constructs the engines read differently: ``A{m,n}+`` is a possessive bounded repeat
    to ``regex`` (and to tiktoken, whose cl100k string has ``\p{N}{1,3}+``), but to Oniguruma
    (Ruby syntax) the ``+`` repeats the bounded repeat, ``(?:A{m,n})+``: "1234567" is one
    chunk; ``A{n}?`` is exactly n to ``regex`` and an optional ``A{n}`` to Oniguruma. Other
    differences remain (decision 0043)."""
    return _rewrite_repeats(pattern, lambda atom, rep, op: f"(?:{atom}{rep}){op}")


def oniguruma_pattern(pattern):
    """``pattern`` (read as the ``regex`` module reads it) written so that HF's Oniguruma
    splits alike, in the two repeats :func:`oniguruma_repeats` reads: a possessive
    ``A{m,n}+`` as the atomic group ``(?>A{m,n})``, ``A{n}?`` (exactly n) as ``A{n}``. For
    exports to a tokenizer.json."""
    return _rewrite_repeats(pattern, lambda atom, rep, op: f"(?>{atom}{rep})" if op == "+"
                            else atom + rep)


def _matches(compiled, invert, text):
    """HF ``find_matches``: ``[start, end, is_match]`` spans covering ``text``."""
    spans, at, last_end = [], 0, -1
    for m in compiled.finditer(text):
        a, b = m.span()
        if a == b and a == last_end:  # Rust iterators skip an empty match right after one
            continue
        if at != a:
            spans.append([at, a, invert])
        spans.append([a, b, not invert])
        at = last_end = b
    return spans + ([[at, len(text), invert]] if at != len(text) else [])


def _apply(step, text):
    """The pieces of ``text`` after one step (HF ``NormalizedString::split``; empty pieces
    are dropped, as HF drops them)."""
    compiled, behavior, invert = step
    spans = _matches(compiled, invert, text) if text else []
    if behavior == "MergedWithNext":
        spans.reverse()
    merged, prev = [], False
    for span in spans:
        m = span[2]
        joins = m == prev if behavior == "Contiguous" else m and not prev  # onto the last piece
        if behavior == "Isolated" or not merged or not joins:
            merged.append(span)
        elif behavior == "MergedWithNext":  # walking backwards: the piece after this span
            merged[-1][0] = span[0]
        else:
            merged[-1][1] = span[1]
        prev = m
    if behavior == "MergedWithNext":
        merged.reverse()
    return [text[a:b] for a, b, _ in merged if a < b]


class PythonSplit:
    """An HF pre-tokenizer spec run in Python: ``split(text) -> list[str]``. Building one
    warns once (:class:`SlowSplitWarning`) with ``reason``. ``oniguruma``: its regexes are
    read as HF's engine reads them (:func:`oniguruma_repeats`), as for a spec from a
    tokenizer.json; False for a pattern string given by name or as ``pretokenizer=``, which
    means what ``regex.findall`` (and tiktoken) make of it."""

    def __init__(self, spec, reason, where="pre_tokenizer", oniguruma=True):
        try:
            import regex  # optional: the reference split's dependency, not the kernels'
        except ImportError:
            raise ImportError(f"{where}: this pre-tokenizer needs the `regex` module (pip "
                              "install regex); the split kernel cannot run it") from None
        self.spec = spec
        self._steps = []
        for _, pattern, behavior, invert in steps(spec, where):
            try:
                self._steps.append((regex.compile(oniguruma_repeats(pattern) if oniguruma
                                                  else pattern), behavior, invert))
            except regex.error as e:
                raise ValueError(f"{where}: bad regex {pattern!r}: {e}") from None
        warnings.warn(f"pre-tokenizer {describe(spec)} runs in Python with the regex module "
                      f"(slow, exact): {reason}", SlowSplitWarning, stacklevel=3)

    def split(self, text):
        pieces = [text]
        for step in self._steps:
            pieces = [q for p in pieces for q in _apply(step, p)]
        return pieces

    def split_batch(self, batch, special_regex=None):
        """``(chunks Utf8Batch, chunk_starts int64[n+1], replaced int64[n])`` for a
        :class:`corpustok.arrow.Utf8Batch`: document ``d``'s chunks are
        ``chunk_starts[d]:chunk_starts[d+1]``; a special token matched by ``special_regex``
        is its own chunk and is not split. Invalid UTF-8 is read with replacement, counted."""
        raw = batch.data.tobytes()
        offs = batch.offsets.tolist()
        chunks, starts = [], [0]
        replaced = np.zeros(len(offs) - 1, np.int64)
        for d, (a, b) in enumerate(zip(offs, offs[1:])):
            text, replaced[d] = decode_replacing(raw[a:b])
            at = 0
            for m in special_regex.finditer(text) if special_regex else ():
                chunks += self.split(text[at:m.start()])
                chunks.append(m.group())
                at = m.end()
            chunks += self.split(text[at:])
            starts.append(len(chunks))
        return utf8_batch(chunks), np.array(starts, np.int64), replaced
