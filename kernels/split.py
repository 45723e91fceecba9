"""The GPT-2 pre-tokenizer split as a state machine over code points (no regex engine).

Pattern: ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
with ``regex.findall`` semantics. Every code point falls in exactly one class (letter, number,
whitespace, other), so at each chunk start the alternatives reduce to:

- ``'`` followed by ``s t m d`` or ``re ve ll`` (case-sensitive): the contraction;
- U+0020 followed by a non-space: the space plus the maximal run of that character's class;
- a letter, number or other character: the maximal run of its class;
- whitespace: the maximal whitespace run, minus its last character when a non-space follows
  and the run is longer than one (that character then starts the next chunk, which is how a
  single space becomes the prefix of a word and why other whitespace stays on its own).

Text is UTF-8 bytes decoded with the shared ``utf8_step``: invalid bytes act as U+FFFD
(class "other"), as when splitting ``bytes.decode("utf-8", "replace")``. ``cls`` is the flat
uint8 table of 0x110000 class flags built by ``corpustok.pretokenize.gpt2_classes()``.
"""
import numpy as np
from numba import njit

from corpustok.kernels.unicode import utf8_step

LETTER = 1
NUMBER = 2
SPACE = 4
LOOKAHEAD = 2  # code points beyond a chunk end that the decision may read


@njit(nogil=True, cache=True, _nrt=False)  # no refcounting: it is called once per chunk
def chunk_end(data, i, end, cls):
    """End (byte position) of the GPT-2 chunk starting at ``data[i]``, ``i < end``.

    ``data[:end]`` is the document's UTF-8 (only ``data[i:end]`` is read). The result equals
    ``regex.findall`` on the decoded document. Lookahead: the decision reads at most
    ``LOOKAHEAD`` = 2 code points at or after the returned end ``j``, so ``j`` is final for
    every continuation of the text once ``data[j:end]`` holds 2 complete code points (a
    streaming encoder buffers that much). O(chunk length).
    """
    cp = np.int64(data[i])
    n = 1
    if cp >= 0x80:  # ASCII is read directly, the decoder only runs for the rest
        cp, n, bad = utf8_step(data, i, end)
    j = i + n
    if cp == 0x27 and j < end:  # contractions: ASCII bytes, compared directly
        c1 = data[j]
        if c1 == 0x73 or c1 == 0x74 or c1 == 0x6D or c1 == 0x64:  # s t m d
            return j + 1
        if j + 1 < end:
            c2 = data[j + 1]
            if (c1 == 0x72 and c2 == 0x65) or (c1 == 0x76 and c2 == 0x65) or \
                    (c1 == 0x6C and c2 == 0x6C):  # re ve ll
                return j + 2
    kind = cls[cp]
    if cp == 0x20 and j < end:  # a single U+0020 joins the run that follows it
        cp1 = np.int64(data[j])
        n1 = 1
        if cp1 >= 0x80:
            cp1, n1, bad = utf8_step(data, j, end)
        if cls[cp1] != SPACE:
            kind = cls[cp1]
            j += n1
    if kind != SPACE:  # one loop serves letter, number and other runs
        while j < end:
            cp = np.int64(data[j])
            n = 1
            if cp >= 0x80:
                cp, n, bad = utf8_step(data, j, end)
            if cls[cp] != kind:
                break
            j += n
        return j
    last = i  # start of the last whitespace character of the run
    while j < end:
        cp = np.int64(data[j])
        n = 1
        if cp >= 0x80:
            cp, n, bad = utf8_step(data, j, end)
        if cls[cp] != SPACE:
            return last if last > i else j
        last = j
        j += n
    return j


@njit(nogil=True, cache=True)
def split_batch(data, offsets, cls, out_ends, chunk_offsets):
    """Split every document of a batch; one call per batch. O(bytes).

    Document ``d`` is ``data[offsets[d]:offsets[d + 1]]``. Writes the end byte positions of
    all chunks, in order, to ``out_ends`` (needs ``offsets[-1] - offsets[0]`` entries: a chunk
    has at least one byte) and, to ``chunk_offsets`` (``len(offsets)`` int64 entries), where
    each document's ends start: the chunks of ``d`` are ``out_ends[chunk_offsets[d]:
    chunk_offsets[d + 1]]``, the first one starting at ``offsets[d]``, each next one at the
    previous end. Returns the number of chunks.
    """
    k = 0
    chunk_offsets[0] = 0
    for d in range(len(offsets) - 1):
        i = offsets[d]
        end = offsets[d + 1]
        while i < end:
            i = chunk_end(data, i, end, cls)
            out_ends[k] = i
            k += 1
        chunk_offsets[d + 1] = k
    return k
