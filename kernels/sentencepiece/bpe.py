"""SentencePiece BPE encoding (Llama 2, Mistral v0.x, Gemma): one call per batch, exactly as
``corpustok.sentencepiece.reference`` (``normalize``, ``bpe_segments``, ``segments_to_ids``),
which is exact against ``sentencepiece`` 0.2.3.

Two kernels, because a charsmap normalizer may run elsewhere first:

- :func:`normalize_batch`: the normalizer of a model without a precompiled charsmap (every BPE
  file we know: ``identity``): invalid UTF-8 bytes become U+FFFD (one each), leading,
  trailing and repeated spaces go with ``remove_extra_whitespaces``, one space is put in front
  with ``add_dummy_prefix``, every space is written U+2581 with ``escape_whitespaces``.
- :func:`encode_segments`: the model on normalized text. Symbols are the longest
  user-defined piece at a position (frozen: they never merge) or one character; the adjacent
  pair whose concatenation is a mergeable piece (NORMAL, USER_DEFINED, UNUSED) of the highest
  score merges first, the leftmost on ties (the score order is sentencepiece's: the float32 bit
  patterns compared as int32, turned into a dense *rank* at load time, 0 the best; an HF
  ``tokenizer.json`` ranks pairs by their line in its merges list: see ``merge_value``). A binary
  heap of candidate pairs over a linked list of symbols (``O(n log n)``, so a 1 MB text without
  a space is no quadratic blow-up); a popped pair is stale when either side's byte length has
  changed since it was pushed (lengths only grow), the reference's rule. A final symbol that is
  no mergeable piece is unknown: its bytes as ``<0xXX>`` pieces with byte fallback, else one
  unknown id per run of unknowns; an UNUSED piece is split back into the pair last pushed to
  form it (``rev_left``/``rev_right``), as sentencepiece does.

Words: when the model allows it (``cut_words``: no UNUSED piece, whose splitting back depends
on the whole text), the text is cut into words wherever no merge can join the characters on
both sides (the ``cut`` table, built at load time from the pieces' bytes: before U+2581 after
another character, and between most ASCII pairs such as a letter and a comma or any two
digits of Llama 2); merges in different words never interact, so each word is merged alone
and memoized in the bounded chunk cache of :mod:`corpustok.kernels.bpe.cache` (a pure memo),
and a word of one ASCII byte takes its piece's id directly. A run of unknown ids across a cut
is still one id. Otherwise the whole document is merged at once.

The model is :class:`SpBpeModel` (built by ``corpustok.sentencepiece.bpe``); symbols are
identified by ids: the piece's id for a piece string, ids past the vocabulary for characters
that are no piece but occur inside a mergeable piece (Gemma's ``\\t``), -1 for any other
character (it never merges).
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.bpe.cache import (FAST_PART, FAST_WORDS, GENERAL_PART, NO_PART,
                                         WIDE_IDS, WIDE_PART, WIDE_WORDS, chunk_get,
                                         chunk_keep, chunk_key, general_prefetch, line_set)
from corpustok.kernels.memory.prefetch import prefetch

# A merge is what a pair of symbols becomes: ``merge_value[m]`` packs its rank (0 the best;
# the heap's order) and the merged symbol. A ``.model``'s merge is its merged piece (m = the
# piece's id, rank = the piece's score rank: every split of a piece ranks alike); an HF
# tokenizer.json's is its line of the merges list (m = rank = the line's index: two pairs
# that make the same piece may rank apart, as in ``tokenizers``).
SpBpeModel = namedtuple("SpBpeModel", [
    "char_sym",   # int32 [0x110000]: symbol id of each one-character string, -1 for none
    "pairs",      # int64 [slots]: (left << 21 | right) << 21 | merge, -1 empty
    "merge_value",  # int64 [merges]: rank << 21 | merged symbol of a merge (see below)
    "grid_of",    # int16 [symbols]: a symbol's row and column in the grid, -1 for none
    "grid",       # int32 [GRID * GRID]: the merge of a pair of grid symbols, -1 for none
    "out_id",     # int32 [symbols]: the id a final symbol emits; UNKNOWN or RESEGMENT
    "sym_len",    # int32 [symbols]: the byte length of each symbol's string
    "byte_ids",   # int32 [256]: the ids of <0x00> .. <0xFF> (byte fallback), else unk
    "user_trie",  # int32 [4 * nodes]: first child, next sibling, byte, user piece id (-1)
    "user_first",  # uint8 [256]: 1 where a user-defined piece starts with that byte
    "cut",        # uint8 [256 * 256]: may a word end between these two bytes (see below)
    "settings",   # int64 [SETTINGS]: see UNK .. N_PIECES
])
# ``cut[b1 << 8 | b2]``: CUT_HERE when a word may end between a character ending in byte b1
# and one beginning with b2 (no mergeable piece holds the bytes b1 b2 side by side, so no
# merge can join them), CUT_BEFORE_SPACE when it may if U+2581 begins at b2 and the character
# before it is not U+2581 (no mergeable piece holds U+2581 after a character ending in b1
# other than U+2581), NO_CUT else (and for every b2 that is no first byte of a character).
NO_CUT, CUT_HERE, CUT_BEFORE_SPACE = 0, 1, 2
UNK, BYTE_FALLBACK, DUMMY_PREFIX, COLLAPSE, ESCAPE, CUT_WORDS, HAS_UNUSED, N_PIECES = range(8)
SETTINGS = 8
UNKNOWN = -1  # out_id of a symbol that is no mergeable piece
RESEGMENT = -2  # out_id of an UNUSED piece: split back into the pair that formed it
ID_BITS = 21  # symbol ids and ranks below 2**21 (Gemma: 262,144 pieces)
ID_MASK = np.int64((1 << ID_BITS) - 1)
POS_BITS = 42  # a heap key: rank << 42 | left symbol
POS_MASK = np.int64((1 << POS_BITS) - 1)
SIZE_BITS = 13  # a merged piece is below 8,000 bytes (sentencepiece refuses longer ones)
SIZE_MASK = np.int64((1 << SIZE_BITS) - 1)
RIGHT_SHIFT = ID_BITS + SIZE_BITS  # a heap value: right << 34 | size << 21 | merged
MAX_RESEGMENT_DEPTH = 100  # bpe_model.cc kMaxBpeResegmentDepth
WORK = 256  # bytes of a word merged in the preallocated work arrays (longer: allocated)
GRID = 512  # symbols whose pairs are answered by a dense grid (ASCII, U+2581, the best merges)
PAIR_MULT = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 (Fibonacci hashing)
SPACE0, SPACE1, SPACE2 = 0xE2, 0x96, 0x81  # U+2581 in UTF-8


# --- load time -----------------------------------------------------------------------------
@njit(nogil=True, cache=True, _nrt=False)
def _pair_home(key, mask):
    x = key * PAIR_MULT
    return (x ^ (x >> 29)) & mask


@njit(nogil=True, cache=True)
def fill_pairs(pairs, left, right, merged):
    """Insert pair ``k``: ``(left[k], right[k]) -> merged[k]`` (a merge: an index of
    ``merge_value``) into the empty table ``pairs`` (int64 slots, all -1, a power of two
    >= 2 * pairs; a slot packs the key and the merge in 63 bits, eight slots a cache line).
    O(pairs) expected."""
    mask = len(pairs) - 1
    for k in range(len(left)):
        key = np.int64(left[k]) << ID_BITS | np.int64(right[k])
        s = _pair_home(key, mask)
        while pairs[s] >= 0 and pairs[s] >> ID_BITS != key:
            s = (s + 1) & mask
        pairs[s] = key << ID_BITS | np.int64(merged[k])  # a repeated pair: the last wins


# --- UTF-8 ---------------------------------------------------------------------------------
@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _one_char_len(lead):
    """sentencepiece's ``OneCharLen``: 1 below 0xC0, then 2, 3, 4 by the top bits."""
    if lead < 0xC0:
        return 1
    if lead < 0xE0:
        return 2
    if lead < 0xF0:
        return 3
    return 4


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _valid_char(data, at, end):
    """``(length, code point)`` of the valid UTF-8 character at ``data[at]`` (before
    ``end``), or ``(0, -1)`` (sentencepiece's ``DecodeUTF8``: overlong forms, surrogates,
    code points past U+10FFFF and cut characters are invalid)."""
    b0 = np.int64(data[at])
    if b0 < 0x80:
        return 1, b0
    n = end - at
    if n >= 2 and b0 & 0xE0 == 0xC0:
        b1 = np.int64(data[at + 1])
        cp = (b0 & 0x1F) << 6 | (b1 & 0x3F)
        if b1 & 0xC0 == 0x80 and cp >= 0x80:
            return 2, cp
    elif n >= 3 and b0 & 0xF0 == 0xE0:
        b1, b2 = np.int64(data[at + 1]), np.int64(data[at + 2])
        cp = (b0 & 0x0F) << 12 | (b1 & 0x3F) << 6 | (b2 & 0x3F)
        if b1 & 0xC0 == 0x80 and b2 & 0xC0 == 0x80 and cp >= 0x800 and \
                not 0xD800 <= cp < 0xE000:
            return 3, cp
    elif n >= 4 and b0 & 0xF8 == 0xF0:
        b1, b2, b3 = np.int64(data[at + 1]), np.int64(data[at + 2]), np.int64(data[at + 3])
        cp = (b0 & 0x07) << 18 | (b1 & 0x3F) << 12 | (b2 & 0x3F) << 6 | (b3 & 0x3F)
        if b1 & 0xC0 == 0x80 and b2 & 0xC0 == 0x80 and b3 & 0xC0 == 0x80 and \
                0x10000 <= cp <= 0x10FFFF:
            return 4, cp
    return 0, np.int64(-1)


# --- 1. normalizer -------------------------------------------------------------------------
@njit(nogil=True, cache=True, _nrt=False)
def _put_space(out, j, escape):
    if escape:
        out[j] = SPACE0
        out[j + 1] = SPACE1
        out[j + 2] = SPACE2
        return j + 3
    out[j] = 32
    return j + 1


@njit(nogil=True, cache=True, _nrt=False)
def _normalize_doc(settings, data, s, e, out, j):
    """Normalize ``data[s:e]`` into ``out[j:]`` (room for ``3 * (e - s) + 3`` bytes); returns
    ``(end in out, invalid bytes replaced)``. The reference's ``normalize`` without a charsmap
    (user-defined pieces are copied as characters are, the same bytes: the loader sends a
    model whose user-defined pieces hold a space to the reference when spaces collapse)."""
    collapse = settings[COLLAPSE] != 0
    escape = settings[ESCAPE] != 0
    at = s
    if collapse:
        while at < e and data[at] == 32:
            at += 1
    if at == e:
        return j, 0
    start = j
    if settings[DUMMY_PREFIX]:
        j = _put_space(out, j, escape)
    prev_space = collapse
    replaced = 0
    while at < e:
        b = data[at]
        if b == 32:
            at += 1
            if not prev_space:
                j = _put_space(out, j, escape)
                prev_space = collapse
            continue
        prev_space = False
        if b < 0x80:
            out[j] = b
            j += 1
            at += 1
            continue
        n, _ = _valid_char(data, at, e)
        if n == 0:
            out[j] = 0xEF
            out[j + 1] = 0xBF
            out[j + 2] = 0xBD
            j += 3
            at += 1
            replaced += 1
            continue
        for k in range(n):
            out[j + k] = data[at + k]
        j += n
        at += n
    if collapse:  # trailing spaces (escaped or not) go
        while True:
            if escape and j - start >= 3 and out[j - 3] == SPACE0 and out[j - 2] == SPACE1 \
                    and out[j - 1] == SPACE2:
                j -= 3
            elif not escape and j > start and out[j - 1] == 32:
                j -= 1
            else:
                break
    return j, replaced


@njit(nogil=True, cache=True)
def normalized_room(offsets):
    """The bytes :func:`normalize_batch` reserves for the documents of ``offsets``: 3 an input
    byte (an invalid byte becomes U+FFFD, a space U+2581), a dummy prefix a document."""
    ndoc = len(offsets) - 1
    return 3 * (offsets[ndoc] - offsets[0]) + 3 * ndoc + 8


@njit(nogil=True, cache=True)
def normalize_batch(data, offsets, settings, room):
    """The normalized text of every document ``data[offsets[d]:offsets[d + 1]]``:
    ``(text uint8, text_offsets int64 [n+1], replaced int64 [n])``, ``replaced`` counting the
    invalid bytes written as U+FFFD. ``room``: a uint8 array the text is written into when it
    holds :func:`normalized_room` (memory a pool hands out with its pages in use, decision
    0046), else (an empty one) a new array is made. O(bytes); memory 3 bytes per input byte at
    most, of which only those written are touched."""
    ndoc = len(offsets) - 1
    need = normalized_room(offsets)
    out = room if len(room) >= need else np.empty(need, np.uint8)
    out_off = np.zeros(ndoc + 1, np.int64)
    replaced = np.zeros(ndoc, np.int64)
    j = np.int64(0)
    for d in range(ndoc):
        j, replaced[d] = _normalize_doc(settings, data, offsets[d], offsets[d + 1], out, j)
        out_off[d + 1] = j
    return out[:j], out_off, replaced


# --- 2. merging ----------------------------------------------------------------------------
def merge_work(size):
    """Work arrays for a word of ``size`` bytes: ``(sym int32, pos int64, length int32,
    nxt int32, prv int32, frozen uint8, heap_key int64, heap_val int64, stack int64)``."""
    n = size + 1
    return (np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int32),
            np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.uint8),
            np.empty(3 * n, np.int64), np.empty(3 * n, np.int64), np.empty(4 * 128, np.int64))


_merge_work = njit(nogil=True, cache=True)(merge_work)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _pair_value(model, a, b):
    """``rank << 21 | merged id`` of the symbol pair ``(a, b)``, or -1: one load in the
    grid when both are grid symbols (most pairs of ASCII text: the pair table, megabytes,
    would cost a cache miss each), else a probe of the pair table. O(1) expected."""
    ga, gb = model.grid_of[a], model.grid_of[b]
    if ga >= 0 and gb >= 0:
        merge = model.grid[np.int64(ga) * GRID + np.int64(gb)]
        if merge < 0:
            return np.int64(-1)
        return model.merge_value[merge]
    pairs = model.pairs
    key = np.int64(a) << ID_BITS | np.int64(b)
    mask = len(pairs) - 1
    s = _pair_home(key, mask)
    while True:
        v = pairs[s]
        if v < 0:
            return np.int64(-1)
        if v >> ID_BITS == key:
            return model.merge_value[v & ID_MASK]
        s = (s + 1) & mask


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _prefetch_pair(model, a, b):
    """Start loading the line :func:`_pair_value` of ``(a, b)`` reads first (symbols >= 0)."""
    ga, gb = model.grid_of[a], model.grid_of[b]
    if ga >= 0 and gb >= 0:
        prefetch(model.grid, np.int64(ga) * GRID + np.int64(gb))
    else:
        key = np.int64(a) << ID_BITS | np.int64(b)
        prefetch(model.pairs, _pair_home(key, len(model.pairs) - 1))


@njit(nogil=True, cache=True, _nrt=False)
def _user_match(trie, text, at, e):
    """``(length, id)`` of the longest user-defined piece that begins ``text[at:e]``, or
    ``(0, -1)``: a walk down the byte trie (children as sibling lists)."""
    node = 0
    best = 0
    best_id = -1
    k = at
    while k < e:
        c = trie[4 * node]
        b = text[k]
        while c >= 0 and trie[4 * c + 2] != b:
            c = trie[4 * c + 1]
        if c < 0:
            break
        node = c
        k += 1
        if trie[4 * node + 3] >= 0:
            best = k - at
            best_id = trie[4 * node + 3]
    return best, best_id


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _heap_push(hkey, hval, n, key, val):
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if hkey[p] <= key:
            break
        hkey[i] = hkey[p]
        hval[i] = hval[p]
        i = p
    hkey[i] = key
    hval[i] = val
    return n + 1


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _heap_pop(hkey, hval, n):
    """Remove the smallest key; returns ``(key, val, n - 1)``."""
    key, val = hkey[0], hval[0]
    n -= 1
    last_k, last_v = hkey[n], hval[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and hkey[c + 1] < hkey[c]:
            c += 1
        if hkey[c] >= last_k:
            break
        hkey[i] = hkey[c]
        hval[i] = hval[c]
        i = c
    hkey[i] = last_k
    hval[i] = last_v
    return key, val, n


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _push(model, work, rev, left, right, hn):
    """Push the pair of symbols ``left``, ``right`` when they merge; returns the heap size."""
    sym, length, frozen, hkey, hval = work[0], work[2], work[5], work[6], work[7]
    if left < 0 or right < 0 or frozen[left] or frozen[right]:
        return hn
    a, b = sym[left], sym[right]
    if a < 0 or b < 0:
        return hn
    v = _pair_value(model, a, b)
    if v < 0:
        return hn
    merged = v & ID_MASK
    size = np.int64(length[left] + length[right])
    hn = _heap_push(hkey, hval, hn, (v >> ID_BITS) << POS_BITS | np.int64(left),
                    np.int64(right) << RIGHT_SHIFT | size << ID_BITS | merged)
    if len(rev) and model.out_id[merged] == RESEGMENT:  # the pair last pushed to form it
        rev[2 * merged] = a
        rev[2 * merged + 1] = b
    return hn


@njit(nogil=True, cache=True, _nrt=False)
def _emit_unknown(model, text, p, n, out, j, j0):
    """Ids of an unknown segment ``text[p:p + n]`` at ``out[j:]``: its bytes' pieces with
    byte fallback, else the unknown id unless the id before (from ``j0`` on) is one."""
    if model.settings[BYTE_FALLBACK]:
        for k in range(n):
            out[j + k] = model.byte_ids[text[p + k]]
        return n
    unk = model.settings[UNK]
    if j > j0 and out[j - 1] == unk:
        return 0
    out[j] = unk
    return 1


@njit(nogil=True, cache=True, _nrt=False)
def _emit(model, work, rev, text, s, p, n, out, j, j0):
    """Ids of the final symbol ``s`` (bytes ``text[p:p + n]``) at ``out[j:]``; returns their
    count. An UNUSED piece is split back, depth first, through ``rev`` (the reference's
    ``resegment``)."""
    o = model.out_id[s] if s >= 0 else UNKNOWN
    if o >= 0:
        out[j] = o
        return 1
    if o == UNKNOWN:  # n as an int64, as the calls below pass it: one signature
        return _emit_unknown(model, text, p, np.int64(n), out, j, j0)
    stack = work[8]
    top = 0
    stack[0], stack[1], stack[2], stack[3] = s, p, n, 0
    top = 1
    k = j
    while top:
        top -= 1
        s, p, n, depth = stack[4 * top], stack[4 * top + 1], stack[4 * top + 2], \
            stack[4 * top + 3]
        o = model.out_id[s]
        if depth > MAX_RESEGMENT_DEPTH:  # kept as it is, its own id
            if s < model.settings[N_PIECES] and s != model.settings[UNK]:
                out[k] = s
                k += 1
            else:
                k += _emit_unknown(model, text, p, n, out, k, j0)
        elif o >= 0:
            out[k] = o
            k += 1
        elif o == UNKNOWN or rev[2 * s] < 0:
            k += _emit_unknown(model, text, p, n, out, k, j0)
        else:
            a, b = rev[2 * s], rev[2 * s + 1]
            na = np.int64(model.sym_len[a])
            if top + 2 > len(stack) // 4:  # unreachable: depth is at most 101 on the stack
                k += _emit_unknown(model, text, p, n, out, k, j0)
                continue
            stack[4 * top], stack[4 * top + 1], stack[4 * top + 2], stack[4 * top + 3] = \
                b, p + na, n - na, depth + 1
            stack[4 * top + 4], stack[4 * top + 5], stack[4 * top + 6], stack[4 * top + 7] = \
                a, p, na, depth + 1
            top += 2
    return k - j


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _initial_symbols(model, work, text, s, e):
    """Cut ``text[s:e]`` into its first symbols (``work``'s ``sym``, ``pos``, ``length``,
    ``frozen``, ``prv``, ``nxt``): the longest user-defined piece at a position (frozen), else
    one character (a valid one's symbol id, -1 when it is no symbol; an invalid byte, -1).
    Returns their count."""
    sym, pos, length, nxt, prv, frozen = work[0], work[1], work[2], work[3], work[4], work[5]
    trie, user_first = model.user_trie, model.user_first
    n = 0
    at = s
    while at < e:
        b = text[at]
        size = 0
        if user_first[b]:
            size, uid = _user_match(trie, text, at, e)
            if size:
                sym[n] = uid
                frozen[n] = 1
        if not size:
            size, cp = _valid_char(text, at, e)
            if size:
                sym[n] = model.char_sym[cp]
            else:
                size = min(_one_char_len(b), e - at)
                sym[n] = -1
            frozen[n] = 0
        pos[n] = at
        length[n] = size
        prv[n] = n - 1
        nxt[n] = n + 1
        n += 1
        at += size
    return n


NO_KEY = np.int64(1) << 60  # merge_short's key of a pair that does not merge
SOME_KEY = np.int64(1) << 59  # below NO_KEY less any number of shifts, above every pair's key
SHORT = 48  # symbols up to which a word is merged by rescanning (merge_short)
SHORT_BITS = 6  # a short key: rank << 6 | position (positions below 64)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _short_key(model, sym, frozen, merged, i):
    """The key of the pair at position ``i`` (``rank << 6 | i``, its merged id into
    ``merged[i]``), or :data:`NO_KEY`."""
    if frozen[i] or frozen[i + 1] or sym[i] < 0 or sym[i + 1] < 0:
        return NO_KEY
    v = _pair_value(model, sym[i], sym[i + 1])
    if v < 0:
        return NO_KEY
    merged[i] = v & ID_MASK
    return (v >> ID_BITS) << SHORT_BITS | np.int64(i)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def merge_short(model, work, rev, text, s, n, out, j):
    """Merge the ``n`` (at most :data:`SHORT`) first symbols of a word beginning at
    ``text[s]`` by rescanning: the pair of the smallest key (the lowest rank, then the
    leftmost) merges, the symbols after it shift down one place (their keys less one) and
    the two pairs it makes are looked up; the heap's order exactly (a model with UNUSED
    pieces takes the heap, whose push order their splitting back follows). Returns the id
    count at ``out[j:]``. O(n^2), fastest for the short words that are nearly all of a
    text's new words."""
    sym, length, frozen, keys, merged = work[0], work[2], work[5], work[6], work[7]
    for i in range(n - 1):  # the lookups' lines load side by side, not one after another
        if sym[i] >= 0 and sym[i + 1] >= 0:
            _prefetch_pair(model, sym[i], sym[i + 1])
    for i in range(n - 1):
        keys[i] = _short_key(model, sym, frozen, merged, i)
    while n > 1:
        best = NO_KEY
        for i in range(n - 1):
            best = min(best, keys[i])
        if best >= SOME_KEY:
            break
        at = best & ((1 << SHORT_BITS) - 1)
        sym[at] = merged[at]
        if at > 0 and sym[at - 1] >= 0:  # the two pairs the merge makes, during the shift
            _prefetch_pair(model, sym[at - 1], sym[at])
        if at + 2 < n and sym[at + 2] >= 0:
            _prefetch_pair(model, sym[at], sym[at + 2])
        length[at] += length[at + 1]
        for i in range(at + 1, n - 1):
            sym[i] = sym[i + 1]
            length[i] = length[i + 1]
            frozen[i] = frozen[i + 1]
            keys[i] = keys[i + 1] - 1
            merged[i] = merged[i + 1]
        n -= 1
        if at > 0:
            keys[at - 1] = _short_key(model, sym, frozen, merged, at - 1)
        if at + 1 < n:
            keys[at] = _short_key(model, sym, frozen, merged, at)
    k = j
    p = s
    out_id = model.out_id
    for i in range(n):
        o = out_id[sym[i]] if sym[i] >= 0 else UNKNOWN
        if o >= 0:  # nearly always: no call
            out[k] = o
            k += 1
        else:
            k += _emit(model, work, rev, text, sym[i], p, length[i], out, k, j)
        p += length[i]
    return k - j


@njit(nogil=True, cache=True, _nrt=False)
def merge_word(model, work, rev, text, s, e, out, j):
    """Ids of the normalized word ``text[s:e]`` (or whole text) at ``out[j:]`` (room for
    ``e - s`` ids); ``work`` (:func:`merge_work`) sized for ``e - s`` bytes. Returns the
    count. :func:`merge_short` up to :data:`SHORT` symbols, else :func:`merge_heap`. Its
    first two steps are inlined into it: a call passes every array of the model and work
    tuples again (two dozen), which costs about a tenth of merging a short word; inlining
    it too into the word loop made the first compilation three times longer (35 s)."""
    n = _initial_symbols(model, work, text, s, e)
    if n <= SHORT and not model.settings[HAS_UNUSED]:
        return merge_short(model, work, rev, text, s, n, out, j)
    return merge_heap(model, work, rev, text, n, out, j)


@njit(nogil=True, cache=True, _nrt=False)
def merge_heap(model, work, rev, text, n, out, j):
    """Merge the ``n`` first symbols in ``work`` (:func:`_initial_symbols`) with a binary
    heap of candidate pairs over their linked list, the reference's algorithm step for step
    (its push order too, which UNUSED pieces' splitting back follows); returns the id count
    at ``out[j:]``. O(n log n)."""
    sym, pos, length, nxt, prv, hkey, hval = work[0], work[1], work[2], work[3], work[4], \
        work[6], work[7]
    if n == 0:
        return 0
    nxt[n - 1] = -1
    hn = 0
    for i in range(1, n):
        hn = _push(model, work, rev, i - 1, i, hn)
    while hn:
        key, val, hn = _heap_pop(hkey, hval, hn)
        left = key & POS_MASK
        right = val >> RIGHT_SHIFT
        size = (val >> ID_BITS) & SIZE_MASK
        if length[left] == 0 or length[right] == 0 or length[left] + length[right] != size:
            continue
        sym[left] = val & ID_MASK
        length[left] = size
        after = nxt[right]
        nxt[left] = after
        if after >= 0:
            prv[after] = left
        length[right] = 0
        hn = _push(model, work, rev, prv[left], left, hn)
        hn = _push(model, work, rev, left, after, hn)
    k = j
    i = 0
    while i >= 0:
        k += _emit(model, work, rev, text, sym[i], pos[i], length[i], out, k, j)
        i = nxt[i]
    return k - j


# --- 3. words and the batch ----------------------------------------------------------------
@njit(nogil=True, cache=True)
def _merge_long(model, rev, text, s, e, out, j):
    """:func:`merge_word` of a word too long for the preallocated work arrays."""
    return merge_word(model, _merge_work(np.int64(e - s)), rev, text, s, e, out, j)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _merge_any(model, work, rev, text, s, e, out, j):
    """:func:`merge_word` when ``text[s:e]`` fits the work arrays, else -1."""
    if e - s <= WORK:
        return merge_word(model, work, rev, text, s, e, out, j)
    return -1  # the caller allocates (see _merge_long)


ONE_BYTE = 4  # a word of one byte: its id from ``one_id`` (see _encode_stream), no cache
BLOCK = 64  # words cut, keyed and prefetched together
AHEAD = 16  # words between the prefetch of a word's cache set and its lookup
KEY_WORDS = 6  # a word's key in a block: k1 .. k4, its hash, its part


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _word_key(text, s, e, keys, b):
    """Write word ``text[s:e]``'s cache key at ``keys[b:b + KEY_WORDS]``: its fast or wide
    inline key, its hash, its part."""
    if e - s == 1:
        keys[b + 5] = ONE_BYTE
        return
    part, k1, k2, k3, k4, h = chunk_key(text, s, e)
    keys[b], keys[b + 1], keys[b + 2], keys[b + 3] = k1, k2, k3, k4
    keys[b + 4], keys[b + 5] = h, part


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _prefetch_word(cache, keys, b):
    """Start loading the cache lines the lookup of the word keyed at ``keys[b:]`` reads."""
    part, h = keys[b + 5], keys[b + 4]
    if part == FAST_PART:
        prefetch(cache.fast, line_set(cache.fast, FAST_WORDS, h))
    elif part == WIDE_PART:
        first = line_set(cache.wide, WIDE_WORDS, h)
        prefetch(cache.wide, first)
        prefetch(cache.wide, first + WIDE_WORDS)
    elif part == GENERAL_PART:
        general_prefetch(cache, h)


@njit(nogil=True, cache=True, _nrt=False, inline="always")
def _next_cut(cut, text, i, e):
    """The end of the word that begins at ``text[i]``: the next place where ``cut`` allows
    one (see :class:`SpBpeModel`; a word is never empty), or ``e``. One table load a byte."""
    k = i + 1
    prev = np.int64(text[i])
    while k < e:
        b = np.int64(text[k])
        c = cut[prev << 8 | b]
        if c == CUT_HERE:
            return k
        if c == CUT_BEFORE_SPACE and k + 2 < e and text[k + 1] == SPACE1 and \
                text[k + 2] == SPACE2 and not (k - 3 >= i and text[k - 3] == SPACE0 and
                                               text[k - 2] == SPACE1 and prev == SPACE2):
            return k
        prev = b
        k += 1
    return e


# The input of :func:`_encode_stream`: normalized text segments (or added tokens) of documents
# (see :func:`encode_segments`), and its scratch arrays for a block of items.
Segments = namedtuple("Segments", "text seg_off added doc_first")
StreamBlock = namedtuple("StreamBlock", "starts ends keys one_id")
ADDED = 5  # an item of the word stream: an added token's id (in its hash word), no text
DOC_END = 6  # an item of the word stream: the end of document (its index in the hash word)


@njit(nogil=True, cache=True, _nrt=False)
def _encode_stream(model, cache, work, rev, segs, block, out, out_off):
    """Ids of every document (segments ``doc_first[d]`` to ``doc_first[d + 1] - 1``) at
    ``out``, their ends at ``out_off[d + 1]``; returns the id count. A segment is an added
    token (``added[s] >= 0``: that id, its text unread) or normalized text
    ``text[seg_off[s]:seg_off[s + 1]]`` cut into words. The segments and documents of the
    batch are one stream of items (words, added ids, document ends): :data:`BLOCK` items are
    cut, then keyed, then encoded, each word's cache set prefetched :data:`AHEAD` items
    before its lookup (the inline parts are megabytes: a lookup right after its key would
    wait for memory on nearly every word; a stream, not a loop per segment, keeps that
    distance across Gemma's short segments between ``\\n`` tokens). A word of one byte
    (digits and punctuation are mostly cut alone) takes its id from ``one_id``
    (:func:`_one_byte_ids`) when it has one there. A run of unknown ids (no byte fallback)
    is one id across word cuts, not past an added token or a document's end. ``segs``:
    :class:`Segments`; ``block``: :class:`StreamBlock`."""
    text, seg_off, added, doc_first = segs.text, segs.seg_off, segs.added, segs.doc_first
    starts, ends, keys, one_id = block.starts, block.ends, block.keys, block.one_id
    fallback = model.settings[BYTE_FALLBACK] != 0
    unk = model.settings[UNK]
    ndoc = len(doc_first) - 1
    j = np.int64(0)
    j0 = j  # where the current text segment's ids began
    seg = 0
    p = np.int64(-1)  # the next word's start in segment ``seg``, -1 before it is entered
    d = 0
    while d < ndoc:
        k = 0
        while k < BLOCK and d < ndoc:  # cut the next BLOCK items
            if seg == doc_first[d + 1]:  # every segment of document d is cut
                keys[k * KEY_WORDS + 5] = DOC_END
                keys[k * KEY_WORDS + 4] = d
                starts[k] = -1
                k += 1
                d += 1
                continue
            if added[seg] >= 0:
                keys[k * KEY_WORDS + 5] = ADDED
                keys[k * KEY_WORDS + 4] = added[seg]
                starts[k] = -1
                k += 1
                seg += 1
                continue
            if p < 0:
                p = seg_off[seg]
            e = seg_off[seg + 1]
            if p < e:
                q = _next_cut(model.cut, text, p, e)
                starts[k] = p
                ends[k] = q
                k += 1
                p = q
            if p >= e:
                seg += 1
                p = -1
        for c in range(k):  # then key them (a tight cut loop first: faster)
            if starts[c] >= 0:
                _word_key(text, starts[c], ends[c], keys, c * KEY_WORDS)
                if c < AHEAD:
                    _prefetch_word(cache, keys, c * KEY_WORDS)
        for c in range(k):
            if c + AHEAD < k:
                _prefetch_word(cache, keys, (c + AHEAD) * KEY_WORDS)
            b = c * KEY_WORDS
            part = keys[b + 5]
            if part == ADDED:
                out[j] = keys[b + 4]
                j += 1
                j0 = j
                continue
            if part == DOC_END:
                out_off[keys[b + 4] + 1] = j
                j0 = j
                continue
            q, i = starts[c], ends[c]
            n = np.int64(-1)
            if part == ONE_BYTE:
                o = one_id[text[q]]
                if o >= 0:
                    out[j] = o
                    n = 1
            else:
                n = chunk_get(cache, text, q, i, part, keys[b + 4], keys[b], keys[b + 1],
                              keys[b + 2], keys[b + 3], out, j)
            if n < 0:
                n = _merge_any(model, work, rev, text, q, i, out, j)
                if n < 0:
                    n = _merge_long(model, rev, text, q, i, out, j)
                elif part != NO_PART and part != ONE_BYTE:
                    chunk_keep(cache, text, q, i, keys[b + 4], keys[b], keys[b + 1],
                               keys[b + 2], keys[b + 3], out, j, n)
            if not fallback and n and j > j0 and out[j - 1] == unk and out[j] == unk:
                for t in range(n - 1):  # one unknown id for a run across the cut
                    out[j + t] = out[j + t + 1]
                n -= 1
            j += n
    return j


@njit(nogil=True, cache=True, _nrt=False)
def _encode_whole(model, work, rev, text, seg_off, added, doc_first, out, out_off):
    """:func:`_encode_stream` for a model that does not cut words (UNUSED pieces): each text
    segment merged whole."""
    j = np.int64(0)
    for d in range(len(doc_first) - 1):
        for seg in range(doc_first[d], doc_first[d + 1]):
            if added[seg] >= 0:
                out[j] = added[seg]
                j += 1
                continue
            s, e = seg_off[seg], seg_off[seg + 1]
            if e - s <= WORK:
                j += merge_word(model, work, rev, text, s, e, out, j)
            else:
                j += _merge_long(model, rev, text, s, e, out, j)
        out_off[d + 1] = j
    return j


@njit(nogil=True, cache=True, _nrt=False)
def _one_byte_ids(model, one_id):
    """``one_id[b]``: the id of a word of the one byte ``b`` (ASCII): what merging it gives,
    its piece's id, else its byte's piece (byte fallback) or the unknown id (the caller
    keeps one for a run); -1 for the others (they take the merging path)."""
    fallback = model.settings[BYTE_FALLBACK] != 0
    for b in range(256):
        one_id[b] = -1
        if b < 0x80:
            sym = model.char_sym[b]
            if sym >= 0 and model.out_id[sym] >= 0:
                one_id[b] = model.out_id[sym]
            elif sym < 0 or model.out_id[sym] == UNKNOWN:
                one_id[b] = model.byte_ids[b] if fallback else model.settings[UNK]


@njit(nogil=True, cache=True)
def segment_ids_room(seg_off, n_added):
    """The ids :func:`encode_segments` reserves for text segments ``seg_off`` and ``n_added``
    added tokens: one a normalized byte and an added token, and the slots a cache hit writes
    past the last."""
    return seg_off[len(seg_off) - 1] - seg_off[0] + n_added + WIDE_IDS + 1


@njit(nogil=True, cache=True)
def encode_segments(text, seg_off, added, doc_first, model, cache, room):
    """Ids of every document of segments in one call: ``(ids int32, out_offsets int64
    [n+1])``. Segment ``s`` is the added token ``added[s]`` (>= 0: its id, its text not
    read) or the normalized text ``text[seg_off[s]:seg_off[s + 1]]`` (``added[s] < 0``);
    document ``d`` is segments ``doc_first[d]`` to ``doc_first[d + 1] - 1`` (the shape of
    :func:`corpustok.kernels.sentencepiece.added.cut_added`). ``cache``: a chunk cache of
    :func:`corpustok.kernels.bpe.cache.chunk_cache`, used only when the model cuts words.
    O(bytes) for cached words, O(n log n) a merged word or segment of n characters; memory:
    one int32 per normalized byte and segment for the output (written into ``room`` when it
    holds :func:`segment_ids_room`, else a new array), work arrays of the longest word."""
    ndoc = len(doc_first) - 1
    need = segment_ids_room(seg_off, len(added))
    out = room if len(room) >= need else np.empty(need, np.int32)
    out_off = np.zeros(ndoc + 1, np.int64)
    work = _merge_work(np.int64(WORK))
    n_sym = len(model.out_id)
    rev = np.full(2 * n_sym if model.settings[HAS_UNUSED] else 0, -1, np.int32)
    if model.settings[CUT_WORDS] == 0:
        j = _encode_whole(model, work, rev, text, seg_off, added, doc_first, out, out_off)
        return out[:j], out_off
    one_id = np.empty(256, np.int32)
    _one_byte_ids(model, one_id)
    block = StreamBlock(np.empty(BLOCK, np.int64), np.empty(BLOCK, np.int64),
                        np.empty(BLOCK * KEY_WORDS, np.int64), one_id)
    j = _encode_stream(model, cache, work, rev, Segments(text, seg_off, added, doc_first),
                       block, out, out_off)
    return out[:j], out_off
