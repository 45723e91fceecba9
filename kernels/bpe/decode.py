"""Byte-level BPE decoding: token ids back to base symbols, and the decoded segments joined with
the special tokens' text. The symbols' own decoding (UTF-8, UBE, UTF-16) is
:mod:`corpustok.kernels.substrate`'s."""
import numpy as np
from numba import njit

SPAN = 8  # symbols copied at once for a token


@njit(nogil=True, cache=True)
def expand_ids(ids, doc_off, tok_sym, tok_off, is_special):
    """Base symbols of token ids, cut into segments at special tokens (which have no
    symbols): document ``d`` with ``s`` specials owns ``s + 1`` consecutive segments.

    Returns ``(symbols uint16, seg_off int64)``. Ids must be valid (checked by the caller).
    O(ids + symbols). A token of at most :data:`SPAN` symbols is copied as a whole span (the
    next token overwrites what runs past it): a fixed count the compiler unrolls.
    """
    nsym = 0
    nseg = len(doc_off) - 1
    for k in range(doc_off[0], doc_off[len(doc_off) - 1]):
        t = ids[k]
        nsym += tok_off[t + 1] - tok_off[t]
        if is_special[t]:
            nseg += 1
    symbols = np.empty(nsym + SPAN, np.uint16)  # room for a whole span after the last token
    seg_off = np.empty(nseg + 1, np.int64)
    seg_off[0] = 0
    j = 0
    g = 0
    for d in range(len(doc_off) - 1):
        for k in range(doc_off[d], doc_off[d + 1]):
            t = ids[k]
            if is_special[t]:
                g += 1
                seg_off[g] = j
                continue
            a = tok_off[t]
            n = tok_off[t + 1] - a
            # views indexed from 0: no gathers (decision 0017, Numba habits)
            if n <= SPAN and a + SPAN <= len(tok_sym):
                dst, src = symbols[j:j + SPAN], tok_sym[a:a + SPAN]
                for q in range(SPAN):
                    dst[q] = src[q]
            else:
                dst, src = symbols[j:j + n], tok_sym[a:a + n]
                for q in range(n):
                    dst[q] = src[q]
            j += n
        g += 1
        seg_off[g] = j
    return symbols[:nsym], seg_off


@njit(nogil=True, cache=True)
def stitch_text(ids, doc_off, is_special, sp_text, sp_off, seg_text, seg_off):
    """Join each document's decoded segments (``seg_text[seg_off[g]:seg_off[g + 1]]``, as
    cut by :func:`expand_ids`) with the UTF-8 of its special tokens (``sp_text[sp_off[t]:
    sp_off[t + 1]]`` for token ``t``). Returns ``(text uint8, text_off int64)``. O(output)."""
    total = len(seg_text)
    for k in range(doc_off[0], doc_off[len(doc_off) - 1]):
        t = ids[k]
        if is_special[t]:
            total += sp_off[t + 1] - sp_off[t]
    text = np.empty(total, np.uint8)
    text_off = np.empty(len(doc_off), np.int64)
    text_off[0] = 0
    j = 0
    g = 0
    for d in range(len(doc_off) - 1):
        for k in range(doc_off[d], doc_off[d + 1] + 1):
            if k < doc_off[d + 1] and not is_special[ids[k]]:
                continue
            n = seg_off[g + 1] - seg_off[g]  # the segment ending here
            text[j:j + n] = seg_text[seg_off[g]:seg_off[g + 1]]
            j += n
            g += 1
            if k < doc_off[d + 1]:
                t = ids[k]
                n = sp_off[t + 1] - sp_off[t]
                text[j:j + n] = sp_text[sp_off[t]:sp_off[t + 1]]
                j += n
        text_off[d + 1] = j
    return text, text_off
