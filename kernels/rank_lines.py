"""The lines of a tiktoken rank file, decoded in one pass: ``base64(token bytes) rank``.

Reading o200k's 200,000 lines one by one in Python (split, ``b64decode``, ``int``) took 0.45 s
of every job's start-up; this pass takes a few milliseconds. It accepts only the lines every
published rank file has, each exactly ``[A-Za-z0-9+/]`` in groups of four (the last padded
with one or two ``=``), one space, 1 to 18 digits, then ``\\n`` or the end of the file. Any
other line (blank, ``\\r\\n``, tabs or other spacing, a sign, a bad character) makes it answer
"not mine", and the caller reads the file line by line instead (its reference, which also
names a bad line). Bits a padded group leaves over are ignored, as Python's ``b64decode``
ignores them.
"""
import numpy as np
from numba import njit

PAD = -2  # the value of "=" in BASE64
BASE64 = np.full(256, -1, np.int8)  # byte -> its 6 bits, PAD for "=", -1 for any other byte
for _k, _c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"):
    BASE64[_c] = _k
BASE64[ord("=")] = PAD
MAX_DIGITS = 18  # a rank of more digits could overflow int64: left to the line-by-line reader


@njit(nogil=True, cache=True)
def decode_rank_lines(raw, base64):
    """``(ok, tokens uint8, offsets int64 [n + 1], ranks int64 [n])`` of the rank file
    ``raw`` (uint8): line ``k``'s token is ``tokens[offsets[k]:offsets[k + 1]]`` and its rank
    ``ranks[k]``; ``ok`` False (and the arrays empty) when a line is not of the shape the
    module docstring names. ``base64``: :data:`BASE64`. O(bytes)."""
    size = len(raw)
    lines = 1
    for p in range(size):
        if raw[p] == 10:
            lines += 1
    tokens = np.empty(size // 4 * 3 + 3, np.uint8)
    offsets = np.zeros(lines + 1, np.int64)
    ranks = np.empty(lines, np.int64)
    bad = (False, tokens[:0], offsets[:1], ranks[:0])
    n = 0
    j = 0
    p = 0
    while p < size:
        q = p  # the token: groups of four, "=" only at the end of the last
        while q < size and base64[raw[q]] >= 0:
            q += 1
        pads = 0
        while q < size and base64[raw[q]] == PAD and pads < 2:
            q += 1
            pads += 1
        if q == p or (q - p) % 4 or q >= size or raw[q] != 32:
            return bad
        for g in range(p, q, 4):
            v = np.int64(0)
            for t in range(4):
                c = base64[raw[g + t]]
                v = (v << 6) | (c if c >= 0 else 0)
            tokens[j] = (v >> 16) & 255
            tokens[j + 1] = (v >> 8) & 255
            tokens[j + 2] = v & 255
            j += 3
        j -= pads
        r = q + 1  # the rank: digits, then the end of the line or of the file
        rank = np.int64(0)
        while r < size and 48 <= raw[r] <= 57 and r - q <= MAX_DIGITS:
            rank = rank * 10 + (raw[r] - 48)
            r += 1
        if r == q + 1 or (r < size and raw[r] != 10):
            return bad
        ranks[n] = rank
        n += 1
        offsets[n] = j
        p = r + 1
    return True, tokens[:j], offsets[:n + 1], ranks[:n]
