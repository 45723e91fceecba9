"""The model's normalizer as kernel state: :func:`normalizer_state` builds the
:class:`~corpustok.kernels.sentencepiece.normalize.NormalizerState` of a
:class:`~corpustok.sentencepiece.model_file.SentencePieceModel` once, and :func:`normalize`
runs the batch kernel (the readable reference is
:func:`corpustok.sentencepiece.reference.normalize`)."""
import numpy as np

from corpustok.arrow import freeze_arrays, pool_array, read_only
from corpustok.kernels.sentencepiece.normalize import (NormalizerState, normalize_batch,
                                                        normalized_room)
from corpustok.kernels.sentencepiece.trie import build_trie
from corpustok.sentencepiece.model_file import USER_DEFINED

__all__ = ["normalizer_state", "normalize"]


def normalizer_state(model):
    """The :class:`NormalizerState` of ``model``: its charsmap (or an empty one), a trie of
    its user-defined pieces (matched first, copied as is) and its whitespace flags."""
    spec = model.normalizer
    user = [p.encode() for p, t in zip(model.pieces, model.types.tolist())
            if t == USER_DEFINED]
    user_da, user_val = build_trie(user)
    if model.charsmap_trie is not None:
        charsmap = np.ascontiguousarray(model.charsmap_trie, np.uint32)
        strings = np.frombuffer(model.charsmap_strings + b"\x00", np.uint8).copy()
    else:
        charsmap, strings = np.zeros(1, np.uint32), np.zeros(1, np.uint8)
    ascii_plain = _ascii_plain(model)
    freeze_arrays((charsmap, strings, user_da, user_val, ascii_plain))
    return NormalizerState(
        charsmap=charsmap, strings=strings, user_da=user_da, user_val=user_val,
        has_charsmap=np.int64(model.charsmap_trie is not None), has_user=np.int64(bool(user)),
        dummy_prefix=np.int64(spec["add_dummy_prefix"]),
        collapse=np.int64(spec["remove_extra_whitespaces"]),
        escape=np.int64(spec["escape_whitespaces"]), ascii_plain=ascii_plain)


def _darts_walk(trie, key):
    """``(alive, longest)``: whether the charsmap's trie still has a node after ``key`` and
    the length of the longest key that is a prefix of ``key`` (the walk of
    :func:`corpustok.sentencepiece.reference.charsmap_match`)."""
    def offset(unit):
        return (unit >> 10) << ((unit & 512) >> 6)
    pos, best = offset(int(trie[0])), 0
    for i, c in enumerate(key):
        pos ^= c
        if pos >= len(trie):
            return False, best
        unit = int(trie[pos])
        if unit & 0x800000FF != c:
            return False, best
        pos ^= offset(unit)
        if unit >> 8 & 1:
            best = i + 1
    return True, best


def _ascii_plain(model):
    """``[b * 129 + c]`` = 1 when the ASCII byte ``b`` followed by the ASCII byte ``c``
    (``c = 128``: nothing follows) begins no charsmap key, so ``b`` is copied as is."""
    table = np.ones(128 * 129, np.uint8)
    trie = model.charsmap_trie
    if trie is None:
        return table
    for b in range(128):
        alive, best = _darts_walk(trie, [b])
        table[b * 129 + 128] = best == 0
        if not alive:
            continue
        for c in range(128):
            alive2, best2 = _darts_walk(trie, [b, c])
            table[b * 129 + c] = best2 == 0 and not alive2
    return table


def normalize(state, data, offsets):
    """``(bytes uint8, offsets int64 [n+1], replaced int64 [n])`` of the documents
    ``data[offsets[d]:offsets[d + 1]]`` (uint8, int64), written into memory from Arrow's pool
    (decision 0046). The arrays go in read-only, whoever made them: one compiled signature
    (decision 0017)."""
    data = read_only(np.ascontiguousarray(data, np.uint8))
    offsets = read_only(np.ascontiguousarray(offsets, np.int64))
    return normalize_batch(data, offsets, state, pool_array(normalized_room(offsets), np.uint8))
