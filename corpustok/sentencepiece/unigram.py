"""Unigram models as kernel state: :func:`unigram_state` builds the
:class:`~corpustok.kernels.sentencepiece.unigram.UnigramState` of a
:class:`~corpustok.sentencepiece.model_file.SentencePieceModel` once (the trie of its pieces
and their float32 Viterbi scores), and :func:`encode_unigram` runs normalizer and Viterbi on a
batch. The readable reference is :func:`corpustok.sentencepiece.reference.unigram_segments`."""
import sys

import numpy as np

from corpustok.arrow import pool_array, read_only
from corpustok.gather import gather_ranges
from corpustok.kernels.sentencepiece.trie import build
from corpustok.kernels.sentencepiece.unigram import (SCORE_RESET, UnigramState, unigram_batch,
                                                      unigram_ids_room)
from corpustok.sentencepiece.model_file import NORMAL, UNKNOWN, USER_DEFINED
from corpustok.sentencepiece.normalizer import normalize

__all__ = ["unigram_state", "encode_unigram"]

UNK_PENALTY = np.float32(10.0)  # unigram_model.cc kUnkPenalty


def unigram_state(model):
    """The :class:`UnigramState` of a Unigram ``model``. The Viterbi sees the NORMAL and
    USER_DEFINED pieces (UNUSED ones and sentencepiece's ``"\\0"`` placeholder are never
    produced; UNKNOWN, CONTROL and BYTE pieces are reserved); a user-defined piece scores
    ``0.1 * (bytes - 1)`` as in 0.2.3, rounded to float32 as it does."""
    types = model.types
    keep = np.flatnonzero((types == NORMAL) | (types == USER_DEFINED))
    off = model.piece_off
    keys, key_off = gather_ranges(model.piece_bytes, off[keep], off[keep + 1] - off[keep])
    da, piece = build(keys, key_off, keep.astype(np.int64))
    scores = model.scores.astype(np.float32).copy()
    user = np.flatnonzero(types == USER_DEFINED)
    scores[user] = (0.1 * (off[user + 1] - off[user] - 1)).astype(np.float32)
    # one cache line per trie step: [check << 32 | base, piece << 32 | score bits]
    nodes = np.empty(2 * len(da), np.int64)
    nodes[0::2] = da
    slot_score = np.where(piece >= 0, scores[np.maximum(piece, 0)], np.float32(0))
    nodes[1::2] = (piece.astype(np.int64) << 32) | \
        slot_score.astype(np.float32).view(np.uint32).astype(np.int64)
    node_scores = nodes.view(np.float32)
    assert sys.byteorder == "little"  # node_scores[4t + 2] is the low half of nodes[2t + 1]
    unk_id = int(np.flatnonzero(model.types == UNKNOWN)[0])
    normal = model.scores[model.types == NORMAL]
    min_score = normal.min() if len(normal) else np.float32(3.4e38)
    unk_score = np.array([np.float32(min_score) - UNK_PENALTY], np.float32)
    index = {p: i for i, p in enumerate(model.pieces) if len(p) == 6 and p.startswith("<0x")}
    byte_ids = np.array([index.get(f"<0x{b:02X}>", unk_id) for b in range(256)], np.int32)
    reset = np.array([SCORE_RESET], np.float32)
    for a in (nodes, node_scores, byte_ids, unk_score, reset):
        a.flags.writeable = False
    return UnigramState(nodes=nodes, node_scores=node_scores, byte_ids=byte_ids,
                        unk_id=np.int64(unk_id), unk_score=unk_score,
                        byte_fallback=np.int64(model.byte_fallback), reset=reset)


def encode_unigram(norm_state, state, data, offsets):
    """``(ids int32, id_offsets int64 [n+1], replaced int64 [n])`` of the raw UTF-8
    documents ``data[offsets[d]:offsets[d + 1]]``. Every array reaches the kernels read-only
    (:func:`~corpustok.sentencepiece.normalizer.normalize` takes the input so): one compiled
    signature whatever the caller passes."""
    text, text_offsets, replaced = normalize(norm_state, data, offsets)
    text_offsets = read_only(text_offsets)
    ids, id_offsets = unigram_batch(read_only(text), text_offsets, state,
                                    pool_array(unigram_ids_room(text_offsets)))  # decision 0046
    return ids, id_offsets, replaced
