"""Special tokens in a BPE tokenizer's text: the kernel's matcher and the Python split's regex.

With ``recognize_special``, a special token's text is matched in the raw text and splits it,
leftmost and longest first, as HF's added vocabulary does; the batch kernel does the
matching itself, a pre-tokenizer that runs in Python matches with the regex.
"""
import re

import numpy as np

__all__ = ["special_matcher"]


def special_matcher(specials, vocab):
    """``(kernel matcher, byte strings, regex or None)`` of the ``specials`` (strings of
    ``vocab``). The kernel matcher is ``(bytes uint8, offsets int64, ids int32, first-byte
    mask bool[256])`` in any order (the kernel keeps the longest match at a position); the
    byte strings are the non-empty ones (the streaming encoder holds back a text end that
    could begin one); the regex tries longer texts first."""
    enc = [s.encode("utf-8", "surrogatepass") for s in specials]
    offsets = np.zeros(len(enc) + 1, np.int64)
    np.cumsum([len(b) for b in enc], out=offsets[1:])
    first = np.zeros(256, bool)
    for b in enc:
        if b:
            first[b[0]] = True
    match = (np.frombuffer(b"".join(enc) or b"\0", np.uint8),  # read-only either way
             offsets, np.array([vocab[s] for s in specials], np.int32), first)
    by_length = sorted((s for s in specials if s),
                       key=lambda s: -len(s.encode("utf-8", "surrogatepass")))
    regex = re.compile("|".join(map(re.escape, by_length))) if by_length else None
    return match, [b for b in enc if b], regex
