"""The split kernel in plain Python, written to be read (like tiktoken's ``_educational.py``).

:mod:`corpustok.pretokenize.pattern` compiles a pre-tokenizer regex into a program; the Numba kernel
:mod:`corpustok.kernels.split.interpreter` interprets it. This module interprets the same program the same
way, step for step, with the kernel's field names, and gives the same chunks *and* the same
reach; the tests hold the kernel to it. It is slow (a dict lookup per character).

It works on UTF-8 bytes, as the kernel does, because the reach is a byte position: invalid
bytes read as U+FFFD, each maximal ill-formed subpart one character, as
``bytes.decode("utf-8", "replace")`` reads them.

Reach: one past the last byte a decision read, or ``end + 1`` when a decision depended on the
text ending at ``end`` (a run or literal that reached the end, or an ill-formed sequence that
ends there and may be a code point cut by ``end``). A chunk with ``reach <= end`` is the same
for every continuation of the text.
"""
from collections import namedtuple

from corpustok.kernels.split import interpreter as kernel
from corpustok.kernels.split.interpreter import CLASS_TAIL, GROUP_TAIL, LITERALS, UNBOUNDED
from corpustok.pretokenize.pattern import compile_pattern

__all__ = ["Program", "Text", "chunk_end", "split"]


class Branch(namedtuple("Branch", "kind first has_lead lead_set a_set a_min a_max has_b b_set "
                                   "b_min tail tail_mask tail_group not_ahead not_set lits")):
    """One row of the kernel's ``prog``, a field per column (``KIND`` is ``kind`` ...).

    ``LITERALS``: ``lits`` is a literal group. ``RUN``: ``L? A{a_min,a_max} [B{b_min,}] [tail]
    [(?!C)]``, the classes as masks over class ids (``lead_set``, ``a_set``, ``b_set``,
    ``not_set``); ``tail`` is ``NO_TAIL``, ``CLASS_TAIL`` (``T*``, T = ``tail_mask``) or
    ``GROUP_TAIL`` (the optional literal group ``tail_group``, whose strings start with the
    classes of ``tail_mask``). ``first``: the classes a match can start with; a branch is only
    tried at those (a shortcut: elsewhere it fails having read just that character)."""
    __slots__ = ()


class Program:
    """The kernel's program tuple ``(ids, prog, lit_cp, lit_off, group_off, group_icase,
    fold_from, fold_to, rule, id_props)`` unpacked (but the last two, the kernel's shortcut):
    ``branches`` (one :class:`Branch` per row of ``prog``), ``groups`` (a literal group is
    ``(strings, icase)``) and the ``(?i)`` folds."""

    def __init__(self, program):
        ids, prog, lit_cp, lit_off, group_off, group_icase, fold_from, fold_to = program[:8]
        self.ids = ids  # class id of every code point
        self.branches = [Branch(**{f: int(row[getattr(kernel, f.upper())])
                                   for f in Branch._fields}) for row in prog]
        strings = ["".join(map(chr, lit_cp[lit_off[s]:lit_off[s + 1]]))
                   for s in range(len(lit_off) - 1)]
        self.groups = [(strings[group_off[g]:group_off[g + 1]], bool(group_icase[g]))
                       for g in range(len(group_off) - 1)]
        self.folds = dict(zip(fold_from.tolist(), fold_to.tolist()))

    def has(self, mask, cp):
        """Whether the class ``mask`` (a bit per class id) holds code point ``cp``."""
        return (mask >> int(self.ids[cp])) & 1

    def fold(self, cp):
        """``cp`` as ``(?i)`` compares it with the (lowercase) strings: ASCII capitals and the
        non-ASCII code points that fold to an ASCII letter (U+017F, U+212A) become it."""
        if 0x41 <= cp <= 0x5A:
            return cp + 32
        return self.folds.get(cp, cp)


class Text:
    """``raw[start:end]`` decoded once: ``at[q]`` is ``(cp, next, reach)`` for the character
    that starts at byte ``q``: its code point, where the next one starts, and the reach of
    reading it (``next``, or ``end + 1`` for an ill-formed sequence that ends at ``end``)."""

    def __init__(self, raw, start, end):
        self.end, self.at = end, {}
        q = start
        while q < end:
            try:
                good, bad = raw[q:end].decode("utf-8"), None
            except UnicodeDecodeError as e:
                good, bad = raw[q:q + e.start].decode("utf-8"), q + e.end
            for c in good:
                n = len(c.encode("utf-8"))
                self.at[q] = (ord(c), q + n, q + n)
                q += n
            if bad is not None:  # one U+FFFD for the maximal ill-formed subpart
                self.at[q] = (0xFFFD, bad, bad + (bad == end))
                q = bad


def run(text, p, mask, most, program):
    """Greedy run of class ``mask`` from ``p``, at most ``most`` characters:
    ``(end, count, start of its last character, reach)``. Stopping at a character outside the
    class reads that character, stopping at the text's end reaches ``end + 1`` and stopping
    after ``most`` characters reads nothing more."""
    count, last, reach = 0, -1, p
    while count < most:
        if p >= text.end:
            return p, count, last, text.end + 1
        cp, nxt, reach = text.at[p]
        if not program.has(mask, cp):
            return p, count, last, reach
        last, p, count = p, nxt, count + 1
    return p, count, last, reach


def literals(text, p, g, program):
    """The first string of literal group ``g`` that matches at ``p`` (alternation order, not
    the longest): ``(its end, or -1, reach)``; ``(?i)`` groups compare folded characters. The
    reach covers every character compared, over all strings tried."""
    strings, icase = program.groups[g]
    reach = p
    for s in strings:
        q = p
        for want in s:
            if q >= text.end:
                reach = text.end + 1
                break
            cp, nxt, r = text.at[q]
            reach = max(reach, r)
            if (program.fold(cp) if icase else cp) != ord(want):
                break
            q = nxt
        else:
            return q, reach
    return -1, reach


def a_run(text, s, b, program):
    """``A{a_min,a_max}`` from ``s``, greedy: ``(end, count, start of last, reach)``, end -1
    when fewer than ``a_min`` characters are in ``A``."""
    p, count, last, reach = run(text, s, b.a_set, b.a_max, program)
    return (p if count >= b.a_min else -1), count, last, reach


def not_ahead(text, p, count, last, reach, b, program):
    """``A+(?!C)``: when a ``C`` character follows the run, the regex backtracks one character
    (``A`` and ``C`` are disjoint, so the run's last character is not a ``C``): the match ends
    at ``last`` if the shorter run still has ``max(a_min, 1)`` characters, else fails. The
    run's reach already covers the character after it."""
    if p < text.end and program.has(b.not_set, text.at[p][0]):
        return (last if count - 1 >= max(b.a_min, 1) else -1), reach
    return p, reach


def b_run(text, s, p, b, program):
    """``B{b_min,}`` after the ``A`` run ``text[s:p]``: ``(end or -1, reach)``. ``A*B+`` with no
    ``B`` after the run: the regex gives back ``A`` characters until a ``B`` can follow, so the
    match ends after the run's last ``B`` character (none: no match); this rescans the run,
    which reads nothing new."""
    q, nb, _, reach = run(text, p, b.b_set, UNBOUNDED, program)
    if nb == 0 and b.a_min == 0:
        if b.a_set & b.b_set == 0:
            return -1, reach
        q = -1
        k = s
        while k < p:
            cp, nxt, _ = text.at[k]
            if program.has(b.b_set, cp):
                q = nxt
            k = nxt
        return q, reach
    return (q if nb >= b.b_min else -1), reach


def tail(text, p, b, program):
    """The tail, which always matches: ``T*`` greedy, or the optional literal group when its
    first character can start one of the group's strings. ``(end, reach)``."""
    if b.tail == CLASS_TAIL:
        e, _, _, reach = run(text, p, b.tail_mask, UNBOUNDED, program)
        return e, reach
    if b.tail == GROUP_TAIL:
        if p >= text.end:
            return p, text.end + 1
        cp, _, reach = text.at[p]
        if program.has(b.tail_mask, cp):
            q, r = literals(text, p, b.tail_group, program)
            return (q if q >= 0 else p), max(reach, r)
        return p, reach
    return p, p


def body(text, s, b, program):
    """``A [B] [tail] [(?!C)]`` of a RUN branch from ``s``: ``(end or -1, reach)``."""
    p, count, last, reach = a_run(text, s, b, program)
    if p < 0:
        return -1, reach
    if b.not_ahead:
        return not_ahead(text, p, count, last, reach, b, program)
    if b.has_b:
        p, r = b_run(text, s, p, b, program)
        reach = max(reach, r)
        if p < 0:
            return -1, reach
    p, r = tail(text, p, b, program)
    return p, max(reach, r)


def branch(text, i, b, program):
    """``(end or -1, reach)`` of one branch at ``i``. A literal group matches its first string
    that fits. A run branch whose optional leading character ``L`` is there takes it, and when
    the rest then fails, the regex retries without it (the ``A`` run may start with that
    character)."""
    if b.kind == LITERALS:
        return literals(text, i, b.lits, program)
    cp0, nxt, _ = text.at[i]
    starts = [nxt, i] if b.has_lead and program.has(b.lead_set, cp0) else [i]
    reach = i
    for s in starts:
        e, r = body(text, s, b, program)
        reach = max(reach, r)
        if e >= 0:
            return e, reach
    return -1, reach


def match(text, i, program):
    """The first branch (in pattern order) that matches at ``i``: ``(end or -1, reach)``;
    only branches whose ``first`` classes hold the character at ``i`` are tried."""
    cp0, _, reach = text.at[i]
    for b in program.branches:
        if program.has(b.first, cp0):
            e, r = branch(text, i, b, program)
            reach = max(reach, r)
            if e >= 0:
                return e, reach
    return -1, reach


def _chunk_end(text, i, program):
    j, reach = i, i
    while True:
        e, r = match(text, j, program)
        reach = max(reach, r)
        if e >= 0:
            return (e if j == i else j), reach
        j = text.at[j][1]  # no branch matches at j: the unmatched text grows by a character
        if j >= text.end:
            return text.end, text.end + 1


def _program(pattern):
    if isinstance(pattern, Program):
        return pattern
    return Program(compile_pattern(pattern).program if isinstance(pattern, str) else pattern)


def chunk_end(raw, i, end, pattern):
    """``(e, reach)`` as :func:`corpustok.kernels.split.interpreter.chunk_end` gives them: the chunk that
    starts at byte ``i < end`` of ``raw[:end]`` is ``raw[i:e]``. Text where no branch matches
    is a chunk of its own, up to where one does. ``pattern``: a regex string, the kernel's
    program tuple or a :class:`Program`."""
    return _chunk_end(Text(bytes(raw), i, end), i, _program(pattern))


def split(text, pattern):
    """The chunks of ``text`` (a ``str``, read as its UTF-8, or ``bytes``), as the split
    kernel cuts them; the same type as ``text``."""
    raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    program, decoded = _program(pattern), Text(raw, 0, len(raw))
    chunks, i = [], 0
    while i < len(raw):
        e = _chunk_end(decoded, i, program)[0]
        chunks.append(raw[i:e])
        i = e
    return [c.decode("utf-8") for c in chunks] if isinstance(text, str) else chunks
