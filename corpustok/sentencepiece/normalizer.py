"""The model's normalizer as kernel state: :func:`normalizer_state` builds the
:class:`~corpustok.kernels.sentencepiece.normalize.NormalizerState` of a
:class:`~corpustok.sentencepiece.model_file.SentencePieceModel` once, and :func:`normalize`
runs the batch kernel (the readable reference is
:func:`corpustok.sentencepiece.reference.normalize`)."""
import numpy as np

from corpustok.kernels.sentencepiece.normalize import NormalizerState, normalize_batch
from corpustok.kernels.sentencepiece.trie import build_trie
from corpustok.sentencepiece.model_file import USER_DEFINED

__all__ = ["normalizer_state", "normalize"]


def _read_only(*arrays):
    for a in arrays:
        a.flags.writeable = False
    return arrays


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
    _read_only(charsmap, strings, user_da, user_val)
    return NormalizerState(
        charsmap=charsmap, strings=strings, user_da=user_da, user_val=user_val,
        has_charsmap=np.int64(model.charsmap_trie is not None), has_user=np.int64(bool(user)),
        dummy_prefix=np.int64(spec["add_dummy_prefix"]),
        collapse=np.int64(spec["remove_extra_whitespaces"]),
        escape=np.int64(spec["escape_whitespaces"]))


def normalize(state, data, offsets):
    """``(bytes uint8, offsets int64 [n+1], replaced int64 [n])`` of the documents
    ``data[offsets[d]:offsets[d + 1]]`` (uint8, int64)."""
    return normalize_batch(data, offsets, state)
