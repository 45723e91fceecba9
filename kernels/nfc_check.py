"""NFC quick check over UTF-8 documents: which documents may change under NFC.

Nearly all text is already in NFC; finding that without decoding each document in Python
saves the slow path for the few that hold a character NFC may change. The table is a bitset
over code points (:func:`corpustok.nfc.flagged_code_points`): every character whose NFC quick
check is not Yes or whose canonical combining class is not 0. A document with none of them is
in NFC by the quick-check rule of UAX #15.
"""
from numba import njit

from corpustok.kernels.unicode import utf8_step

FIRST_FLAGGED_LEAD = 0xCC  # lead byte of U+0300; every code point below it passes


@njit(nogil=True, cache=True)
def nfc_suspects(data, offsets, flagged, out):
    """``out[d] = True`` when document ``d`` (``data[offsets[d]:offsets[d + 1]]``) holds a
    flagged code point. Ill-formed bytes read as U+FFFD, which passes, as Python reads them."""
    for d in range(len(offsets) - 1):
        i = offsets[d]
        end = offsets[d + 1]
        hit = False
        while i < end:
            if data[i] < FIRST_FLAGGED_LEAD:
                i += 1
                continue
            cp, n, _ = utf8_step(data, i, end)
            if (flagged[cp >> 3] >> (cp & 7)) & 1:
                hit = True
                break
            i += n
        out[d] = hit
