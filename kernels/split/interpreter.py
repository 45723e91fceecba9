"""Pre-tokenizer split: one interpreter for every compiled split pattern (no regex engine).

A pattern (``regex.findall`` semantics, compiled by :mod:`corpustok.pretokenize.pattern`) is an
ordered list of branches; at a chunk start the first branch that matches gives the chunk. A
branch is a row of ``prog`` (fields below), one of two kinds:

- ``LITERALS``: the first of a group of literal strings that matches (``'s|'t|'re|...``, or
  ``(?i:...)`` with case folding);
- ``RUN``: ``L? A{min,max} [B{min,}] [tail] [(?!C)]`` where ``L``, ``A``, ``B``, ``C`` are
  character classes, ``tail`` is ``T*`` or an optional literal group. The compiler admits only
  shapes whose regex backtracking reduces to a forward scan: a taken ``L`` is retried without
  it; ``A*B+`` ends after the last ``B`` character of the ``A`` run when no ``B`` follows the run
  (so one pass, tracking that position); ``A+(?!C)`` with ``A`` and ``C`` disjoint gives the run
  back its last character when a ``C`` follows; tails always succeed.

Text is UTF-8 decoded with the shared ``utf8_step`` (invalid bytes act as U+FFFD, as when
splitting ``bytes.decode("utf-8", "replace")``). A character class is a 64-bit mask over the
pattern's class ids (``ids[cp]``). Text no branch matches becomes a chunk of its own up to where
a branch matches again (HF's ``Split(behavior="isolated")``); no built-in pattern has any.

Every step reports its *reach*: one past the last byte any decision read, or ``end + 1`` when a
decision depended on the text ending there (or on a code point cut by ``end``). A chunk whose
reach is at most ``end`` is final for every continuation of the text, which is what a
streaming encoder needs.
"""
import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from corpustok.kernels.unicode import HIGH_BITS, load_word, utf8_step

(KIND, FIRST, HAS_LEAD, LEAD_SET, A_SET, A_MIN, A_MAX, HAS_B, B_SET, B_MIN, TAIL,
 TAIL_MASK, TAIL_GROUP, NOT_AHEAD, NOT_SET, LITS, BODY_FIRST) = range(17)
FIELDS = 17  # TAIL_MASK also holds a tail group's first-character mask
RULE, ID_PROPS = 8, 9  # the program's fields for corpustok.kernels.split.fast
RUN, LITERALS = 0, 1
NO_TAIL, CLASS_TAIL, GROUP_TAIL = 0, 1, 2
UNBOUNDED = 1 << 62


@njit(nogil=True, cache=True, _nrt=False)
def _read(data, q, end, ids):
    """``(class id, bytes, reach)`` of the code point at ``data[q]``, ``q < end``."""
    b = data[q]
    if b < 0x80:
        return ids[b], 1, q + 1
    cp, n, bad = utf8_step(data, q, end)
    cut = 1 if bad != 0 and q + n == end else 0  # a cut sequence may still complete
    return ids[cp], n, q + n + cut


@njit(nogil=True, cache=True, _nrt=False)
def _has(mask, cid):
    return (mask >> cid) & 1


@njit(nogil=True, cache=True, _nrt=False)
def _known(data, q, end, ids, cid, n, r):
    """``(class id, bytes, reach)`` of the code point at ``q < end``: the one given when it was
    already read (``cid >= 0``), else read now. Each code point is read once per attempt."""
    if cid >= 0:
        return cid, n, r
    return _read(data, q, end, ids)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _run(data, p, end, ids, mask, most, mark, cid, n, r):
    """Greedy run of class ``mask`` from ``p``, at most ``most`` code points, ``(cid, n, r)``
    the code point at ``p`` if read (see ``_known``): ``(end, count, start of its last code
    point, end of its last code point of class ``mark`` (-1: none), reach, and the code point
    that stopped it as (cid, n, r), cid -1 if none was read)``."""
    count = 0
    last = -1
    marked = -1
    reach = p
    while count < most:
        if cid < 0 and mark == 0 and p + 8 <= end and most - count >= 8:
            w = load_word(data, p)
            if w & HIGH_BITS == 0:  # 8 ASCII bytes: their memberships as 8 bits, no branch
                bits = np.int64(0)
                for j in range(8):
                    bits |= ((mask >> ids[(w >> (8 * j)) & 0xFF]) & 1) << j
                m = trailing_zeros(~bits)  # members before the first other byte (8: all)
                count += m
                p += m
                if m == 8:
                    last = p - 1
                    reach = p
                    continue
                if m:
                    last = p - 1
                return p, count, last, marked, p + 1, ids[data[p]], 1, p + 1
        if p >= end:
            return p, count, last, marked, end + 1, -1, 0, 0
        cid, n, reach = _known(data, p, end, ids, cid, n, r)
        if not _has(mask, cid):
            return p, count, last, marked, reach, cid, n, reach
        last = p
        p += n
        if mark != 0 and _has(mark, cid):  # invariant test first: the loop unswitches
            marked = p
        count += 1
        cid = -1
    return p, count, last, marked, reach, -1, 0, 0


@njit(nogil=True, cache=True, _nrt=False)
def _fold(cp, fold_from, fold_to):
    """The ASCII lowercase letter ``(?i)`` matches ``cp`` to, else ``cp``."""
    if 0x41 <= cp <= 0x5A:
        return cp + 32
    if cp >= 0x80:
        for k in range(len(fold_from)):
            if fold_from[k] == cp:
                return fold_to[k]
    return cp


@njit(nogil=True, cache=True, _nrt=False)
def _literals(data, p, end, program, g):
    """End of the first string of literal group ``g`` that matches at ``p`` (-1: none) and
    the reach."""
    lit_cp, lit_off, group_off, icase = program[2], program[3], program[4], program[5]
    reach = p
    for s in range(group_off[g], group_off[g + 1]):
        q = p
        ok = True
        for k in range(lit_off[s], lit_off[s + 1]):
            if q >= end:
                reach = end + 1
                ok = False
                break
            cp = np.int64(data[q])
            n = 1
            r = q + 1
            if cp >= 0x80:
                cp, n, bad = utf8_step(data, q, end)
                r = q + n + (1 if bad != 0 and q + n == end else 0)
            reach = max(reach, r)
            if icase[g]:
                cp = _fold(cp, program[6], program[7])
            if cp != lit_cp[k]:
                ok = False
                break
            q += n
        if ok:
            return q, reach
    return -1, reach


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _body(data, s, end, program, row, cid, n, r):
    """Match ``A [B] [tail] [(?!C)]`` of a RUN branch from ``s`` (``cid, n, r``: its first code
    point if read): ``(end or -1, reach)``. Each run starts from the code point that stopped
    the one before. Each helper has one call site here, so that inlining stays small."""
    ids, prog = program[0], program[1]
    star_plus = prog[row, HAS_B] != 0 and prog[row, A_MIN] == 0  # A*B+: marks A's B's
    p, count, last, marked, reach, cid, n, r = _run(data, s, end, ids, prog[row, A_SET],
                                                    prog[row, A_MAX],
                                                    prog[row, B_SET] if star_plus else 0,
                                                    cid, n, r)
    if count < prog[row, A_MIN]:
        return -1, reach
    if prog[row, NOT_AHEAD]:
        if p < end:
            cid, n, r = _known(data, p, end, ids, cid, n, r)
            if _has(prog[row, NOT_SET], cid):  # give the run's last character back
                return (last, reach) if count - 1 >= max(prog[row, A_MIN], 1) else (-1, reach)
        return p, reach
    if prog[row, HAS_B]:
        q, nb, lb, mb, rb, cid, n, r = _run(data, p, end, ids, prog[row, B_SET], UNBOUNDED, 0,
                                            cid, n, r)
        reach = max(reach, rb)
        if nb == 0 and star_plus:  # no B after the A run: the match ends after its last B
            if marked < 0:
                return -1, reach
            q = marked
            if q != p:
                cid = -1  # the match ends before the code point that stopped A
        elif nb < prog[row, B_MIN]:
            return -1, reach
        p = q
    tail = prog[row, TAIL]
    if tail == CLASS_TAIL:
        p, nt, lt, mt, rt, cid, n, r = _run(data, p, end, ids, prog[row, TAIL_MASK],
                                            UNBOUNDED, 0, cid, n, r)
        reach = max(reach, rt)
    elif tail == GROUP_TAIL:
        if p >= end:
            reach = end + 1
        else:
            cid, n, r = _known(data, p, end, ids, cid, n, r)
            reach = max(reach, r)
            if _has(prog[row, TAIL_MASK], cid):  # the group's first characters
                q, rq = _literals(data, p, end, program, prog[row, TAIL_GROUP])
                reach = max(reach, rq)
                if q >= 0:
                    p = q
    return p, reach


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _branch(data, i, end, program, row, cid0, n0, r0, c1, n1, r1):
    """``(end or -1, reach, c1, n1, r1)`` of branch ``row`` at ``i``, whose first code point
    has class ``cid0``, ``n0`` bytes and reach ``r0``, and ``(c1, n1, r1)`` the one after it
    once a branch has read it (``c1 < 0``: not yet): with the leading character when it is
    one, then without. A body is tried only when its first code point can start it
    (``BODY_FIRST``)."""
    prog = program[1]
    if prog[row, KIND] == LITERALS:
        e, r = _literals(data, i, end, program, prog[row, LITS])
        return e, r, c1, n1, r1
    first = prog[row, BODY_FIRST]
    reach = r0
    s, c, n, r = i, cid0, n0, r0
    if prog[row, HAS_LEAD] and _has(prog[row, LEAD_SET], cid0):
        s = i + n0
        c = -1
        if s < end:
            if c1 < 0:
                c1, n1, r1 = _read(data, s, end, program[0])
            c, n, r = c1, n1, r1
            reach = max(reach, r1)
    while True:  # one call site of _body: inlined once
        e = -1
        if c < 0 or _has(first, c):  # c < 0: at the end of the text
            e, rb = _body(data, s, end, program, row, c, n, r)
            reach = max(reach, rb)
        if e >= 0 or s == i:
            return e, reach, c1, n1, r1
        s, c, n, r = i, cid0, n0, r0


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _match(data, i, end, program):
    """``(end or -1, reach)`` of the first branch matching at ``i < end``."""
    prog = program[1]
    cid0, n0, reach = _read(data, i, end, program[0])
    r0 = reach
    c1, n1, r1 = -1, 0, 0
    for row in range(prog.shape[0]):
        if _has(prog[row, FIRST], cid0):
            e, r, c1, n1, r1 = _branch(data, i, end, program, row, cid0, n0, r0, c1, n1, r1)
            reach = max(reach, r)
            if e >= 0:
                return e, reach
    return -1, reach


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def chunk_end(data, i, end, program):
    """``(e, reach)``: the chunk starting at ``data[i]``, ``i < end``, is ``data[i:e]``, equal to
    ``regex.findall`` on the decoded ``data[:end]`` (``data[i:end]`` is read); it stays the
    same for every continuation of the text when ``reach <= end``. O(chunk length) (O(twice) for
    a retried leading character). Text no branch matches is a chunk up to where one does."""
    j = i
    reach = i
    while True:
        e, r = _match(data, j, end, program)
        reach = max(reach, r)
        if e >= 0:
            return (e if j == i else j), reach
        j += _read(data, j, end, program[0])[1]
        if j >= end:
            return end, end + 1
