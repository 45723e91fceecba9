"""Readable pure-Python references of SentencePiece encoding and decoding, exact against
``sentencepiece`` 0.2.3 (``SentencePieceProcessor.encode(text)`` with default options; the
semantics are those of its C++ sources, ``EncodeOptimized``/``DecodeOptimized``: older
releases score user-defined Unigram pieces and very long Unigram texts differently).

Everything works on UTF-8 bytes, as sentencepiece does, in four steps that a Numba kernel
can follow one to one (flat arrays of :class:`~corpustok.sentencepiece.model_file.
SentencePieceModel`; the dicts here stand for its hash table or trie):

1. :func:`normalize`: the normalizer (``normalizer.cc``). From each position the longest
   user-defined piece is copied as is; else the longest key of the precompiled charsmap (a
   Darts double-array trie, :func:`charsmap_match`) is replaced by its string; else one UTF-8
   character is copied (an invalid byte becomes U+FFFD). Leading, trailing and repeated
   spaces are dropped when ``remove_extra_whitespaces``; ``add_dummy_prefix`` puts one space
   in front; ``escape_whitespaces`` writes every space as U+2581.
2. The model, on the normalized bytes, giving ``(piece bytes, id)`` segments:
   :func:`bpe_segments` (``bpe_model.cc``: symbols are user-defined pieces or characters;
   adjacent pairs whose concatenation is a piece merge, highest score first, leftmost on
   ties; UNUSED pieces are split back) or :func:`unigram_segments` (``unigram_model.cc``,
   the optimized Viterbi: float32 path scores, rebased past +-100,000, user-defined pieces
   scored ``0.1 * (length - 1)``, an unknown character ``min_score - 10``).
3. :func:`segments_to_ids` (``PopulateSentencePieceText``): an unknown segment becomes its
   ``<0xXX>`` byte pieces with byte fallback, else one unknown id per run of unknowns.
4. :func:`decode` (``SentencePieceProcessor::Decode``): control ids vanish, the unknown id
   is " \u2047 ", runs of byte pieces are read as UTF-8 (each invalid byte one U+FFFD,
   sentencepiece's rule, not Python's), U+2581 becomes a space and the first piece loses one
   leading U+2581 (the dummy prefix).
"""
import heapq

import numpy as np

from corpustok.sentencepiece.model_file import (BPE, BYTE, CONTROL, NORMAL, SPACE, UNKNOWN, UNUSED,
                                          USER_DEFINED)

SPACE_BYTES = SPACE.encode()  # b"\xe2\x96\x81"
REPLACEMENT = "\ufffd".encode()
UNK_PENALTY = np.float32(10.0)


class Vocab:
    """The lookup tables sentencepiece builds from the pieces (``InitializePieces``).
    ``pieces`` maps what a model may produce to ids: for Unigram the NORMAL, USER_DEFINED and
    UNUSED pieces (the others, UNKNOWN, CONTROL and BYTE, are ``reserved``); for BPE every
    piece, of which only those three types may come out of a merge (a CONTROL string never
    forms). A ``"\\0"`` UNUSED piece is a placeholder and skipped. ``user_defined`` pieces are
    matched before anything else."""

    def __init__(self, model):
        self.model = model
        self.types = model.types
        self.scores = model.scores
        self.bpe = model.trainer["model_type"] == BPE
        raw = [p.encode() for p in model.pieces]
        self.raw = raw
        types = model.types.tolist()
        self.mergeable = [t in (NORMAL, USER_DEFINED, UNUSED) for t in types]
        self.pieces, self.reserved = {}, {}
        for i, (r, t) in enumerate(zip(raw, types)):
            if r == b"\x00" and t == UNUSED:
                continue
            (self.pieces if self.bpe or self.mergeable[i] else self.reserved).setdefault(r, i)
        self.user_defined = {r for r, t in zip(raw, types) if t == USER_DEFINED}
        self.user_lengths = sorted({len(r) for r in self.user_defined}, reverse=True)
        self.max_piece = max(len(r) for r in self.pieces) if self.pieces else 0
        self.unk_id = int(np.flatnonzero(model.types == UNKNOWN)[0])
        self.byte_ids = [self.piece_to_id(f"<0x{b:02X}>".encode()) for b in range(256)]
        normal_scores = model.scores[model.types == NORMAL]
        self.min_score = normal_scores.min() if len(normal_scores) else np.float32(3.4e38)
        # BPE's heap order: sentencepiece 0.2.3 compares the scores' float32 bit patterns as
        # int32 (equal to float order, except -0.0 < +0.0); this key keeps that order.
        bits = model.scores.view(np.int32).astype(np.int64)
        self.score_key = np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)

    def piece_to_id(self, piece):
        i = self.reserved.get(piece)
        if i is None:
            i = self.pieces.get(piece, self.unk_id)
        return i

    def user_prefix(self, data, at):
        """Length of the longest user-defined piece that begins ``data[at:]``, or 0."""
        for n in self.user_lengths:
            if data[at:at + n] in self.user_defined:
                return n
        return 0


# --- UTF-8 as sentencepiece reads it -----------------------------------------------------
def one_char_len(lead):
    """sentencepiece's ``OneCharLen``: the length the lead byte announces (1 for a stray
    continuation byte)."""
    return (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)[lead >> 4]


def valid_char_len(data, at):
    """``(valid, length)`` of the character at ``data[at]`` (``DecodeUTF8``): an invalid
    one (bad lead or trail bytes, overlong, surrogate, past U+10FFFF, cut) is 1 byte."""
    b0 = data[at]
    n = len(data) - at
    if b0 < 0x80:
        return True, 1
    trail = lambda k: 0x80 <= data[at + k] < 0xC0  # noqa: E731
    if n >= 2 and b0 & 0xE0 == 0xC0:
        cp = (b0 & 0x1F) << 6 | data[at + 1] & 0x3F
        if trail(1) and cp >= 0x80:
            return True, 2
    elif n >= 3 and b0 & 0xF0 == 0xE0:
        cp = (b0 & 0x0F) << 12 | (data[at + 1] & 0x3F) << 6 | data[at + 2] & 0x3F
        if trail(1) and trail(2) and cp >= 0x800 and not 0xD800 <= cp < 0xE000:
            return True, 3
    elif n >= 4 and b0 & 0xF8 == 0xF0:
        cp = ((b0 & 0x07) << 18 | (data[at + 1] & 0x3F) << 12 | (data[at + 2] & 0x3F) << 6
              | data[at + 3] & 0x3F)
        if trail(1) and trail(2) and trail(3) and 0x10000 <= cp <= 0x10FFFF:
            return True, 4
    return False, 1


def invalid_bytes(raw):
    """How many bytes of ``raw`` are not part of a valid UTF-8 character (sentencepiece's
    rule: one U+FFFD each)."""
    try:
        raw.decode("utf-8")
        return 0
    except UnicodeDecodeError:
        pass
    count = at = 0
    while at < len(raw):
        ok, n = valid_char_len(raw, at)
        count += not ok
        at += n
    return count


# --- 1. normalizer -----------------------------------------------------------------------
def charsmap_match(trie, strings, data, at):
    """``(length, replacement)`` of the longest charsmap key that begins ``data[at:]``, or
    ``(0, None)``: Darts' ``commonPrefixSearch``. A unit is a uint32: bit 8 ``has_leaf``,
    ``label`` = bits 0-7 and 31 (a leaf unit has bit 31 set, so no byte matches it), ``offset``
    = ``(unit >> 10) << ((unit & 512) >> 6)``; a child is found at ``pos ^ offset ^ byte``,
    a key's value in the unit at ``pos ^ offset`` (its low 31 bits: where its NUL-terminated
    replacement starts in ``strings``)."""
    def offset(unit):
        return (unit >> 10) << ((unit & 512) >> 6)

    pos = offset(int(trie[0]))
    best, value = 0, 0
    for i in range(at, len(data)):
        pos ^= data[i]
        if pos >= len(trie):
            break
        unit = int(trie[pos])
        if unit & 0x800000FF != data[i]:
            break
        pos ^= offset(unit)
        if unit >> 8 & 1:
            best, value = i + 1 - at, int(trie[pos]) & 0x7FFFFFFF
    if not best:
        return 0, None
    return best, strings[value:strings.index(b"\x00", value)]


def normalize_prefix(vocab, data, at):
    """``(replacement bytes, bytes consumed)`` at ``data[at]`` (``NormalizePrefix``)."""
    n = vocab.user_prefix(data, at)
    if n:
        return data[at:at + n], n
    model = vocab.model
    if model.charsmap_trie is not None:
        n, out = charsmap_match(model.charsmap_trie, model.charsmap_strings, data, at)
        if n:
            return out, n
    ok, n = valid_char_len(data, at)
    return (data[at:at + n], n) if ok else (REPLACEMENT, 1)


def normalize(vocab, data):
    """The normalized bytes of UTF-8 ``data`` (``Normalizer::Normalize``)."""
    spec = vocab.model.normalizer
    collapse, escape = spec["remove_extra_whitespaces"], spec["escape_whitespaces"]
    space = SPACE_BYTES if escape else b" "
    at, end = 0, len(data)
    if collapse:  # leading spaces (after normalization) go
        while at < end:
            out, n = normalize_prefix(vocab, data, at)
            if out != b" ":
                break
            at += n
    if at == end:
        return b""
    parts = []
    if spec["add_dummy_prefix"]:
        parts.append(space)
    prev_space = collapse
    while at < end:
        out, n = normalize_prefix(vocab, data, at)
        if prev_space:
            out = out.lstrip(b" ")
        if out:
            parts.append(out.replace(b" ", SPACE_BYTES) if escape else out)
            prev_space = out.endswith(b" ")
        at += n
        if not collapse:
            prev_space = False
    text = b"".join(parts)
    if collapse:
        while text.endswith(space):
            text = text[:-len(space)]
    return text


# --- 2. models ---------------------------------------------------------------------------
def initial_symbols(vocab, text):
    """``[(start, end, frozen)]``: user-defined pieces (frozen: they never merge) and single
    characters (``PrefixMatcher::PrefixMatch``)."""
    out, at = [], 0
    while at < len(text):
        n = vocab.user_prefix(text, at)
        frozen = n > 0
        if not n:
            n = min(len(text) - at, one_char_len(text[at]))
        out.append((at, at + n, frozen))
        at += n
    return out


MAX_RESEGMENT_DEPTH = 100  # bpe_model.cc kMaxBpeResegmentDepth


def bpe_segments(vocab, text):
    """``[(piece bytes, id)]`` of normalized ``text`` by SentencePiece BPE. A heap holds the
    candidate pairs, highest score first (:attr:`Vocab.score_key`), leftmost on ties; a popped
    pair is stale when either side has changed length since it was pushed (lengths only grow,
    so an unchanged length means an unchanged symbol). Symbols that are not a mergeable piece
    at the end are unknown; UNUSED pieces are split back into the pair that last formed them
    (``rev_merge``, written when the pair is pushed)."""
    symbols = initial_symbols(vocab, text)
    n = len(symbols)
    start = [s for s, _, _ in symbols]
    length = [e - s for s, e, _ in symbols]
    frozen = [f for _, _, f in symbols]
    prev = list(range(-1, n - 1))
    nxt = list(range(1, n)) + [-1]
    heap, rev_merge = [], {}

    def push(left, right):
        if left < 0 or right < 0 or frozen[left] or frozen[right]:
            return
        piece = text[start[left]:start[left] + length[left] + length[right]]
        i = vocab.pieces.get(piece, vocab.unk_id)
        if i == vocab.unk_id or not vocab.mergeable[i]:
            return
        heapq.heappush(heap, (-int(vocab.score_key[i]), left, right, len(piece)))
        if vocab.types[i] == UNUSED:
            rev_merge[piece] = (text[start[left]:start[left] + length[left]],
                                text[start[right]:start[right] + length[right]])

    for i in range(1, n):
        push(i - 1, i)
    while heap:
        _, left, right, size = heapq.heappop(heap)
        if not length[left] or not length[right] or length[left] + length[right] != size:
            continue
        length[left] = size
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prev[nxt[right]] = left
        length[right] = 0
        push(prev[left], left)
        push(left, nxt[left])

    out = []

    def resegment(piece, depth):
        i = vocab.pieces.get(piece, vocab.unk_id)
        if depth > MAX_RESEGMENT_DEPTH:
            out.append((piece, i))
        elif i == vocab.unk_id or not vocab.mergeable[i]:
            out.append((piece, vocab.unk_id))
        elif vocab.types[i] != UNUSED:
            out.append((piece, i))
        elif piece not in rev_merge:
            out.append((piece, vocab.unk_id))
        else:
            a, b = rev_merge[piece]
            resegment(a, depth + 1)
            resegment(b, depth + 1)

    i = 0 if n else -1
    while i != -1:
        resegment(text[start[i]:start[i] + length[i]], 0)
        i = nxt[i]
    return out


SCORE_RESET = np.float32(100000.0)  # unigram_model.cc kScoreResetThreshold


def unigram_segments(vocab, text):
    """``[(piece bytes, id)]`` of normalized ``text`` by the Unigram model: Viterbi over
    every piece that begins at each character boundary (``EncodeOptimized``), in float32 as
    sentencepiece 0.2.3 sums: ``score[end] = piece score + score[start]``, a user-defined
    piece scoring ``0.1 * (bytes - 1)``, an unknown character ``min_score - 10``. When the
    path score reaching a boundary passes +-100,000 it is subtracted from every score from
    there to the farthest end reached (the rounding then differs from a plain running sum,
    so long documents need this step to give sentencepiece's ids). A character no
    one-character piece covers gets the unknown id. Ties keep the earlier candidate."""
    f32 = np.float32
    size = len(text)
    score = [f32(0)] * (size + 1)     # best path score ending at each byte, float32
    back = [-1] * (size + 1)          # where that path's last piece starts
    ids = [-1] * (size + 1)           # and its id
    unk_score = f32(vocab.min_score - UNK_PENALTY)
    at = frontier = 0
    while at < size:
        here = score[at]
        if here < -SCORE_RESET or here > SCORE_RESET:
            for k in range(at, frontier + 1):
                if k == at or back[k] != -1:
                    score[k] = score[k] - here
            here = f32(0)
        mblen = min(one_char_len(text[at]), size - at)
        single = False
        for end in range(at + 1, min(size, at + vocab.max_piece) + 1):
            i = vocab.pieces.get(text[at:end])
            if i is None:
                continue
            t = vocab.types[i]
            if t == UNUSED:
                continue
            frontier = max(frontier, end)
            piece_score = f32(0.1 * (end - at - 1)) if t == USER_DEFINED else vocab.scores[i]
            cand = piece_score + here
            if back[end] == -1 or cand > score[end]:
                score[end], back[end], ids[end] = cand, at, i
            if end - at == mblen:
                single = True
        if not single:
            end = at + mblen
            frontier = max(frontier, end)
            cand = unk_score + here
            if back[end] == -1 or cand > score[end]:
                score[end], back[end], ids[end] = cand, at, vocab.unk_id
        at += mblen
    out, end = [], size
    while end > 0:
        out.append((text[back[end]:end], ids[end]))
        end = back[end]
    return out[::-1]


# --- 3. ids ------------------------------------------------------------------------------
def segments_to_ids(vocab, segments):
    """Ids of the model's segments: unknown ones become byte pieces (byte fallback) or one
    unknown id per run."""
    byte_fallback = vocab.model.byte_fallback
    ids, prev_unk = [], False
    for piece, i in segments:
        unk = vocab.types[i] == UNKNOWN
        if unk and byte_fallback:
            ids.extend(vocab.byte_ids[b] for b in piece)
        elif not (unk and prev_unk):
            ids.append(i)
        prev_unk = unk
    return ids


def encode_bytes(vocab, data):
    text = normalize(vocab, data)
    if not text:
        return []
    segments = (bpe_segments if vocab.model.trainer["model_type"] == BPE
                else unigram_segments)(vocab, text)
    return segments_to_ids(vocab, segments)


def encode(vocab, text):
    """Ids of ``text`` (a ``str`` without lone surrogates)."""
    return encode_bytes(vocab, text.encode("utf-8"))


# --- 4. decode ---------------------------------------------------------------------------
def decode_bytes_run(run):
    """sentencepiece's reading of a run of byte pieces: valid characters as they are, each
    invalid byte one U+FFFD."""
    out, at = [], 0
    while at < len(run):
        ok, n = valid_char_len(run, at)
        out.append(run[at:at + n] if ok else REPLACEMENT)
        at += n
    return b"".join(out)


def decode(vocab, ids):
    """Text of ``ids`` as ``SentencePieceProcessor.decode`` gives it."""
    model = vocab.model
    spec = model.normalizer
    strip_first = spec["add_dummy_prefix"] or spec["remove_extra_whitespaces"]
    unk_surface = model.trainer["unk_surface"].encode()
    types = vocab.types
    out, run = [], []
    is_bos_ws, bos_ws_seen = True, False
    for i in ids:
        t = types[i]
        if t == BYTE:
            run.append(int(vocab.raw[i][3:5], 16))
            continue
        if run:
            out.append(decode_bytes_run(bytes(run)))
            run = []
        if bos_ws_seen or any(out):
            is_bos_ws = False
        bos_ws_seen = False
        if t == CONTROL:
            continue
        if t == UNKNOWN:
            out.append(unk_surface)
            continue
        piece = vocab.raw[i]
        if is_bos_ws and strip_first and piece.startswith(SPACE_BYTES):
            piece = piece[len(SPACE_BYTES):]
            bos_ws_seen = not spec["remove_extra_whitespaces"]
        out.append(piece.replace(SPACE_BYTES, b" "))
    if run:
        out.append(decode_bytes_run(bytes(run)))
    return b"".join(out).decode("utf-8")
