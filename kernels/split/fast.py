"""The split of 64 bytes of text at once, for the named patterns that have a rule for it.

The interpreter (:mod:`corpustok.kernels.split.interpreter`) decides one chunk at a time with a branch
per alternative: some 25-40 ns a chunk. For a pattern with a bit-parallel rule (the program's
``RULE`` field: GPT-2's, cl100k's and o200k's families, and Qwen 3.5's), the chunk starts of
a 64-byte window are computed at once: ASCII is classified by byte-range masks
(:mod:`corpustok.kernels.split.byte_masks`), other characters one by one by their Unicode
properties, and word operations turn the classes into starts, which the chunks are read off.
Each rule's docstring says which regex branch gives which starts; the tests hold every rule
to the interpreter (and so to the ``regex`` module) for whole texts, batches, invalid UTF-8
and every cut of a streamed text.

A window starts at a chunk start ``p`` (a match depends only on the text from its start).
Its text is known up to ``lim``: the window's or the text's end, or the first byte a rule
leaves to the interpreter (ill-formed UTF-8, a character the window cuts, and a few classes
per rule). A start at ``q`` is final when its rule read nothing past ``q + 2`` (``q < lim -
2``; a rule stops earlier where it needs to), or anywhere when the text is known to end at
``lim``; the last final start is where the next window begins, so no chunk is ever cut short
by a window's edge. Where a window decides nothing (one chunk fills it, or its first
character is left to the interpreter), the interpreter takes that chunk.

:func:`split_some` is the one entry point: the encoder, :func:`split_batch` and training's
chunk counts call it.
"""
import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros

from corpustok.kernels.split.byte_masks import WINDOW, range_mask
from corpustok.kernels.split.interpreter import ID_PROPS, RULE, chunk_end
from corpustok.kernels.unicode import short_lead_length, utf8_step

# a program's RULE
NO_RULE, GPT2_RULE, CL100K_RULE, QWEN2_RULE, O200K_RULE, TEKKEN_RULE, QWEN3_5_RULE = range(7)
# split_pattern.PROPERTY_BITS of Ll, \p{L}, \p{N}, \s, of the letters o200k's letter runs take
# as either case (Lm, Lo), and of \p{M}
PROPS_LOWER, PROPS_L, PROPS_N, PROPS_S, PROPS_CASELESS = 2, 31, 64, 128, 8 | 16
PROPS_M = 32
PLAIN, CASED_RUNS, WITH_MARKS = 0, 1, 2  # a rule's letter runs: \p{L}, by case, with \p{M}
NO_CONTRACTIONS, STANDALONE, SUFFIX = 0, 1, 2  # how a rule's pattern takes 's, 't, ...
# Each rule's pattern, by rule: digits a chunk, its letter runs (case-split ones come with a
# slash in the O tail), how it takes contractions.
GROUP = (0, 0, 3, 1, 3, 1, 1)
LETTERS = (PLAIN, PLAIN, PLAIN, PLAIN, CASED_RUNS, CASED_RUNS, WITH_MARKS)
CONTRACTIONS = (0, 0, STANDALONE, STANDALONE, SUFFIX, NO_CONTRACTIONS, STANDALONE)
LOW63 = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _below(n):
    """The bits ``0 .. n - 1`` (``n <= 64``)."""
    return np.int64(-1) if n >= 64 else (np.int64(1) << max(n, 0)) - 1


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _next(x):
    """Bit ``q`` of the result is bit ``q + 1`` of ``x`` (the character after)."""
    return (x >> 1) & LOW63


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _compared(c, icase):
    """Byte ``c`` as a contraction compares it: an ASCII capital lowered under ``icase``; -1
    for a byte that is not ASCII under ``icase`` (``(?i)`` folds U+017F to s)."""
    if icase and c >= 0x80:
        return np.int64(-1)
    return np.int64(c) + 32 if icase and 65 <= c <= 90 else np.int64(c)


@njit(nogil=True, cache=True, _nrt=False)
def _contraction(data, p, q, lim, known_end, icase):
    """Length of ``'s|'t|'re|'ve|'m|'ll|'d`` (``icase``: any case, as ``(?i:...)``) at the
    apostrophe ``p + q``: 0 for none, -1 when that needs a byte past ``lim`` that is not the
    text's end, or (``icase``) a byte that is not ASCII."""
    if q + 1 >= lim:
        return 0 if known_end else -1
    c1 = _compared(data[p + q + 1], icase)
    if c1 == 115 or c1 == 116 or c1 == 109 or c1 == 100:  # s t m d
        return 2
    if c1 != 114 and c1 != 118 and c1 != 108:  # r v l
        return -1 if c1 < 0 else 0
    if q + 2 >= lim:
        return 0 if known_end else -1
    c2 = _compared(data[p + q + 2], icase)
    if c2 < 0:
        return -1
    return 3 if (c2 == 101 and c1 != 108) or (c2 == 108 and c1 == 108) else 0  # re ve ll


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _window_char(data, i, end, follow):
    """:func:`utf8_step` at ``data[i]``, a lead byte, inline for the 2- and 3-byte characters
    of :func:`short_lead_length` with plain continuations (the common cases); ``follow``: the
    window's continuation bits from ``i`` on (bit 0 is ``i``'s), which say whether the next
    bytes are continuations without reading them again."""
    b0 = np.int64(data[i])
    m = short_lead_length(b0)
    if m == 2 and follow & 2:
        return ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F), 2, 0
    if m == 3 and follow & 6 == 6:
        return ((b0 & 0x0F) << 12) | ((np.int64(data[i + 1]) & 0x3F) << 6) | \
            (np.int64(data[i + 2]) & 0x3F), 3, 0
    return utf8_step(data, i, end)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _classes(data, p, n, ids, props, letters, digits):
    r"""``(upper, lower, caseless, digit, ws, lim, tails)``: the bits of the bytes of
    ``data[p:p + n]`` (``n <= 64``, 64 bytes readable) of letters (``\p{L}``, and ``\p{M}``
    when ``letters`` is ``WITH_MARKS``), digits (``\p{N}``) and ``\s``, every byte of a
    character marked, up to ``lim``: the window's end, or its first byte of ill-formed UTF-8,
    of a character the window cuts, of a digit that is not ASCII unless ``digits`` (rules that
    count digits count bytes) or, for ``CASED_RUNS``, of a mark (``\p{M}``: o200k's letter
    runs take marks as either case, but so does its ``[^\s\p{L}\p{N}]+`` run). Letters are
    ``upper`` (``Lu``, ``Lt``), ``lower`` (``Ll``) or ``caseless`` (``Lm``, ``Lo``: either
    case to o200k's letter runs) for ``CASED_RUNS``; else all are ``upper`` but ASCII small
    ones.
    ``tails``: the bytes that continue a character. ASCII is classified by byte ranges 64 at a
    time; other characters one by one, by their class id's Unicode properties (``ids``: the
    program's class of each code point, ``props``: each class's properties; only these two
    arrays are passed, not the program). Inlined into the window rules, as
    :func:`_contractions` is: a call would pass every field of its arrays again each window."""
    window = _below(n)
    upper = range_mask(data, p, 65, 90)
    lower = range_mask(data, p, 97, 122)
    digit = range_mask(data, p, 48, 57)
    ws = range_mask(data, p, 9, 13) | range_mask(data, p, 32, 32)
    high = range_mask(data, p, 0x80, 0xFF) & window
    if high == 0:
        return upper & window, lower & window, np.int64(0), digit & window, ws & window, n, \
            np.int64(0)
    tails = range_mask(data, p, 0x80, 0xBF) & window
    upper &= ~high
    lower &= ~high
    digit &= ~high
    ws &= ~high
    caseless = np.int64(0)
    lim = n
    covered = np.int64(0)
    leads = high & ~tails
    while leads != 0:
        q = trailing_zeros(leads)
        leads &= leads - 1
        cp, m, bad = _window_char(data, p + q, p + n, tails >> q)
        c = props[ids[cp]]
        if bad or (letters == CASED_RUNS and c & PROPS_M) or (not digits and c & PROPS_N):
            lim = q
            break
        bits = ((np.int64(1) << m) - 1) << q
        covered |= bits
        if c & PROPS_L or (letters == WITH_MARKS and c & PROPS_M):
            if letters == CASED_RUNS and c & PROPS_LOWER:
                lower |= bits
            elif letters == CASED_RUNS and c & PROPS_CASELESS:
                caseless |= bits
            else:
                upper |= bits
        elif c & PROPS_N:
            digit |= bits
        elif c & PROPS_S:
            ws |= bits
    stray = tails & ~covered & _below(lim)  # a continuation byte without its lead
    if stray != 0:
        lim = trailing_zeros(stray)
    valid = _below(lim)
    return upper & valid, lower & valid, caseless & valid, digit & valid, ws & valid, lim, \
        tails & valid


@njit(nogil=True, cache=True, _nrt=False)
def _gpt2_window(data, p, n, final, ids, props):
    r"""``(starts, ready)`` of GPT-2's pattern in ``data[p:p + n]`` (``n <= 64``, 64 bytes
    readable), ``p`` a chunk start: the chunk start bits, of which those below ``ready`` are
    final; ``final``: the text ends at ``p + n``.

    Rules, by the branch that makes them (L letters, N digits, W ``\s``, O the rest):
    ``' ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+'``: a run of L, N or O starts a chunk, unless a
    space is before it (the space starts it); ``\s+(?!\S)|\s+``: a W run starts one, and so
    does its last character when a non-W follows (given back by the lookahead), which is how
    that space joins the next run; ``'s|'t|...``: an apostrophe that starts a chunk and is
    followed by one of them makes that chunk, and a chunk starts after it."""
    upper, lower, _, digit, ws, lim, tails = _classes(data, p, n, ids, props, PLAIN, True)
    letter = upper | lower
    known_end = final and lim == n
    valid = _below(lim)
    space = range_mask(data, p, 32, 32) & valid
    other = valid & ~(letter | digit | ws)
    solid = valid & ~ws
    same = (letter & (letter << 1)) | (digit & (digit << 1)) | (other & (other << 1))
    last_ws = _leads(ws & _next(solid), tails)  # the last W of a run a non-W follows
    starts = (solid & ~same & ~(space << 1)) | (ws & ~(ws << 1)) | last_ws | 1
    ready = lim if known_end else lim - 2
    return _contractions(data, p, starts, starts, lim, known_end, ready, False, 0, 0)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _contractions(data, p, starts, at, lim, known_end, ready, icase, joins, fresh):
    """``(starts, ready)`` with a contraction made at each apostrophe of ``at`` (in order) that
    has one: no start inside it (nor at it, when it ``joins`` the chunk before), one after
    it. ``ready`` stops at the first apostrophe that cannot be decided in the window, and
    after the start that follows a contraction when a byte of ``fresh`` is there (the cased
    rules' caseless letters: the case starts after it were read across the contraction's
    letters, so a window that starts there decides them)."""
    quotes = at & range_mask(data, p, 39, 39) & _below(lim)
    while quotes != 0:
        q = trailing_zeros(quotes)
        quotes &= quotes - 1
        m = _contraction(data, p, q, lim, known_end, icase)
        if m < 0:
            return starts, min(ready, q)
        if m:
            starts &= ~(((np.int64(1) << (m - 1 + joins)) - 1) << (q + 1 - joins))
            if q + m < 64:
                starts |= np.int64(1) << (q + m)
                if joins:  # a contraction ends a chunk: what follows takes none
                    quotes &= ~(np.int64(1) << (q + m))
                if (fresh >> (q + m)) & 1:
                    return starts, min(ready, q + m + 1)
    return starts, ready


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _leads(bits, tails):
    """``bits`` with each one on a continuation byte moved to its character's first byte."""
    inside = bits & tails
    bits &= ~tails
    while inside != 0:
        q = trailing_zeros(inside)
        inside &= inside - 1
        while (tails >> q) & 1:
            q -= 1
        bits |= np.int64(1) << q
    return bits


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _fill(seeds, run):
    """The bits of ``run`` from each of ``seeds`` (bits of ``run``) to the end of its stretch
    of ``run``: the carry of an addition runs through them (a seed the carry of another
    reaches loses its own bit, hence the ``| seeds``)."""
    return (((run + seeds) ^ run) & run) | seeds


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _case_starts(upper, lower, caseless, letter, lim, known_end, ready, starts):
    r"""``(starts, ready)`` with the chunk starts inside letter runs of the cased patterns
    (``U*D+|U+D*``, U ``[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]``, D ``[\p{Ll}\p{Lm}\p{Lo}\p{M}]``;
    marks never reach here): a run's chunks start only at capitals (``upper``), where either
    - the nearest letter before that is not ``caseless`` is small: the D part of a chunk has
      begun, and it takes small and caseless letters up to the next capital; or
    - a caseless letter is just before it and capitals alone run from it to the letter run's
      end: with no small letter left, ``U*D+`` ends at the last caseless letter (its D part)
      and the capitals after it are ``U+`` of their own. A capital whose run the window cuts
      is not decided: ``ready`` stops before it.
    The first rule reads letters before the capital as one chunk's; where a contraction (o200k's
    suffix) ends a chunk inside a letter run and a caseless letter follows, ``_contractions``
    stops ``ready`` there."""
    small = _fill(lower, lower | caseless)  # a D part, from its first small letter on
    starts |= upper & (small << 1)
    after = upper & (caseless << 1) & ~(small << 1)
    while after != 0:
        q = trailing_zeros(after)
        after &= after - 1
        rest = ~upper & ~_below(q)
        e = 64 if rest == 0 else trailing_zeros(rest)  # the first byte after its capitals
        if e >= lim and not known_end:
            return starts, min(ready, q)
        if e >= lim or not (letter >> e) & 1:
            starts |= np.int64(1) << q
    return starts, ready


@njit(nogil=True, cache=True, _nrt=False)
def _cl100k_window(data, p, n, final, ids, props, group, letters, contractions):
    r"""``(starts, ready)`` as :func:`_gpt2_window` gives them, for the patterns of cl100k's
    family: cl100k (Llama 3) and Qwen 2 (``group`` digits a chunk: 3 or 1, contractions
    ``STANDALONE``), Qwen 3.5 (marks are letters: ``letters`` ``WITH_MARKS``), o200k (Llama
    4) and Tekken (``CASED_RUNS`` and a slash in the O tail, contractions as a ``SUFFIX`` or
    none).

    Rules, by branch (L letters, N digits, W ``\s``, NL ``[\r\n]``, O the rest; X is a
    character that is neither NL, L nor N): ``X?\p{L}+``: an L run starts a chunk, or takes
    the character before it when that is a W (the last of its run) or an O that starts a
    chunk and is alone (no O nor space before it); cased, a run also starts a chunk at each
    capital that follows a small letter (``U*D+|U+D*``). ``\p{N}{1,3}``: every ``group``-th
    digit of a run, from its first. `` ?O+[\r\n]*``: an O run starts one, or its space
    before it does, and the NLs after it belong to it. ``\s*[\r\n]+|\s+(?!\S)|\s+``: a W run
    starts one, and so do the character after its last NL when W follows, and its last
    character when a non-W follows. Contractions: ``STANDALONE``, at an apostrophe that starts
    a chunk; ``SUFFIX``, at an apostrophe after a letter, which then joins that letter's
    chunk."""
    upper, lower, caseless, digit, ws, lim, tails = _classes(data, p, n, ids, props, letters,
                                                            False)
    cased = letters == CASED_RUNS
    letter = upper | lower | caseless
    known_end = final and lim == n
    valid = _below(lim)
    space = range_mask(data, p, 32, 32) & valid
    nl = (range_mask(data, p, 10, 10) | range_mask(data, p, 13, 13)) & valid
    other = valid & ~(letter | digit | ws)
    # branch-free: the mask under a conditional made the whole window 1.7x slower (o200k on
    # ASCII text, 2026-12-07)
    tailset = nl | (range_mask(data, p, 47, 47) & valid & -np.int64(cased))
    held = _fill(nl & (other << 1), tailset)  # the NLs (and slashes) after an O run
    other &= ~held
    ws &= ~held
    solid = valid & ~ws
    blank = ws & ~nl
    lone = other & ~(other << 1) & ~(space << 1) & ~tails  # an O that starts a chunk alone
    takes = (_fill(tails & (lone << 1), tails) | lone | blank) & _next(letter)  # taken by L
    starts = (letter & ~(letter << 1) & ~(takes << 1)) | (other & ~(other << 1) & ~(space << 1))
    ready = lim if known_end else lim - 2
    if cased:
        starts, ready = _case_starts(upper, lower, caseless, letter, lim, known_end, ready,
                                     starts)
    runs = digit & ~(digit << 1)
    starts |= runs
    if group == 1:
        starts |= digit
    else:
        full = digit & (digit << 1) & (digit << 2)
        runs = (runs << 3) & full
        while runs != 0:
            starts |= runs
            runs = (runs << 3) & full
    starts |= (ws & ~(ws << 1)) | _leads(blank & _next(solid), tails) | 1
    if not known_end and (ws >> (lim - 1)) & 1:  # a W run the window cuts: its start only
        gaps = ~ws & valid
        ready = min(ready, 1 if gaps == 0 else 65 - leading_zeros(gaps))
    after = blank & ((nl & ws) << 1)  # a W after a NL starts a chunk if no NL follows in its run
    while after != 0:
        q = trailing_zeros(after)
        after &= after - 1
        rest = ~blank & ~_below(q)
        c = 64 if rest == 0 else trailing_zeros(rest)
        if c >= lim or not (nl >> c) & 1:
            starts |= np.int64(1) << q
    if contractions == STANDALONE:
        return _contractions(data, p, starts, starts, lim, known_end, ready, True, 0, 0)
    if contractions == SUFFIX:
        return _contractions(data, p, starts, letter << 1, lim, known_end, ready, True, 1,
                             caseless)
    return starts, ready


@njit(nogil=True, cache=True, _nrt=False)
def split_some(data, p, end, program, final, ends, k, most):
    """Chunks of ``data[p:end]`` (``p`` a chunk start) into ``ends[k:most]``, their end
    positions in order; returns ``(k, p, held)``: ``p`` where the next chunk starts, and
    ``held`` when, not ``final`` (streaming), that chunk waits for more text (its split's
    reach passes ``end``). Windows of the program's rule where it has one, else (and
    wherever a window decides nothing) the interpreter's ``chunk_end``. O(bytes)."""
    rule = program[RULE]
    ids, props = program[0], program[ID_PROPS]  # all a window reads of the program
    while k < most and p < end:
        if rule != NO_RULE and p + WINDOW <= len(data):
            n = min(WINDOW, end - p)
            ends_here = final and n == end - p  # the text ends in this window
            if rule == GPT2_RULE:
                starts, ready = _gpt2_window(data, p, n, ends_here, ids, props)
            else:
                starts, ready = _cl100k_window(data, p, n, ends_here, ids, props, GROUP[rule],
                                               LETTERS[rule], CONTRACTIONS[rule])
            bits = starts & _below(ready) & ~np.int64(1)
            whole = ends_here and ready == n  # the window's last chunk ends at the text's end
            if bits != 0 or whole:
                last = p
                while bits != 0 and k < most:
                    last = p + trailing_zeros(bits)
                    bits &= bits - 1
                    ends[k] = last
                    k += 1
                if bits == 0 and whole and k < most:
                    last = end
                    ends[k] = end
                    k += 1
                p = last
                continue
        e, reach = chunk_end(data, p, end, program)
        if not final and reach > end:
            return k, p, True
        ends[k] = e
        k += 1
        p = e
    return k, p, False


@njit(nogil=True, cache=True, _nrt=False)
def split_batch(data, offsets, program, out_ends, chunk_offsets):
    """Split every document of a batch; one call per batch. O(bytes).

    Document ``d`` is ``data[offsets[d]:offsets[d + 1]]``. Writes the end byte positions of
    all chunks, in order, to ``out_ends`` (needs ``offsets[-1] - offsets[0]`` entries: a chunk
    has at least one byte) and, to ``chunk_offsets`` (``len(offsets)`` int64 entries), where
    each document's ends start: the chunks of ``d`` are ``out_ends[chunk_offsets[d]:
    chunk_offsets[d + 1]]``, the first one starting at ``offsets[d]``, each next one at the
    previous end. Returns the number of chunks.
    """
    # an int64 0, not a literal: a literal compiles split_some once more (``final`` stays a
    # literal True: the split compiled for it drops the streaming reach, 3-9% faster)
    k = np.int64(0)
    chunk_offsets[0] = 0
    for d in range(len(offsets) - 1):
        k = split_some(data, offsets[d], offsets[d + 1], program, True, out_ends, k,
                       len(out_ends))[0]
        chunk_offsets[d + 1] = k
    return k
