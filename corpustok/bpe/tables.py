"""The tables a BPE tokenizer builds from its vocabulary and merges: the token table of symbol
strings, the whole-chunk table, and merges as id pairs, checked as one Numba hash pass
(:mod:`corpustok.kernels.bpe.token_table`)."""
from itertools import chain
from typing import NamedTuple

import numpy as np

from corpustok.kernels.bpe.merge import PairTable, build_pair_table
from corpustok.kernels.bpe.premerge import premerge_table
from corpustok.kernels.bpe.token_table import (EMPTY, WholeTokens, fill_token_table, lookup_tokens,
                                                token_splits, unmergeable)
from corpustok.substrate import parse_symbols

def token_table(tok_sym, tok_off, plain):
    """The open-addressing table (:mod:`corpustok.kernels.bpe.token_table`) of the tokens ``i``
    with ``plain[i]``, whose symbols are ``tok_sym[tok_off[i]:tok_off[i + 1]]``."""
    size = 16
    while size < 2 * np.count_nonzero(plain):
        size *= 2
    slots = np.full(size, EMPTY, np.uint64)  # numpy's: huge pages where the system has them
    fill_token_table(slots, tok_sym, tok_off, plain, np.empty(len(plain), np.uint64))
    return slots


def whole_chunk_table(tok_sym, tok_off, plain, sym_id, pairs, merged):
    """The encoder's ``whole`` table (:class:`WholeTokens`) for tiktoken's rule (a chunk
    that is a token is emitted whole) over the tokens ``plain`` marks (none: the rule is off).
    ``slots`` holds only the tokens merging does not reach: a chunk that is any other token
    merges into it anyway. Empty when there are none (every rank file we know), so the rule
    costs no lookup; else small enough to stay in cache.

    ``merged``: the ids the merges of ``pairs`` make. A token of two symbols or more that no
    merge makes is not reached, without merging its symbols (O(L log L) for L symbols: a
    second for a 10 MB token that a rank file lists alone)."""
    made = np.zeros(len(plain), bool)
    made[merged] = True
    made |= np.diff(tok_off) == 1  # a base symbol is its own token
    hard = plain & ~made
    hard |= unmergeable(tok_sym, tok_off, plain & made, sym_id, pairs)
    slots = token_table(tok_sym, tok_off, hard) if hard.any() else np.empty(0, np.uint64)
    return WholeTokens(slots, tok_sym, tok_off)


class RankTables(NamedTuple):
    """The tables a BPE tokenizer encodes with: the pair table, the pre-merge table and the
    whole-chunk table, built from a rank file's tokens (tiktoken's rule:
    :func:`build_rank_tables`) or from a merge list (``BytePairTokenizer._merge_tables``)."""

    pairs: PairTable
    pre: np.ndarray
    whole: WholeTokens


def build_rank_tables(tok_sym, tok_off, plain, whole_plain, sym_id):
    """The :class:`RankTables` of the tokens ``i`` with ``plain[i]`` (symbols
    ``tok_sym[tok_off[i]:tok_off[i + 1]]``), merged as tiktoken merges (any adjacent pair whose
    concatenation is a token, by that token's id), those with ``whole_plain[i]`` emitted whole;
    ``sym_id``: the base symbols' ids. Kept on disk by :mod:`corpustok.bpe.table_cache`."""
    left, right, merged = token_splits(tok_sym, tok_off, plain)
    pairs = build_pair_table(left, right, merged, merged)
    return RankTables(pairs, premerge_table(pairs),
                      whole_chunk_table(tok_sym, tok_off, whole_plain, sym_id, pairs, merged))


MERGE_STEP = 1 << 18  # merges per pass of merge_ids (temporaries of about 60 MB)


def merge_ids(merges, tok_sym, tok_off, plain, substrate, strings=False):
    """``(left, right, merged)`` ids (int64, 3 rows) of a list of ``(left, right)``
    token-string pairs (or, with ``strings``, also of ``"left right"`` strings) when every
    part and every merged string is a token ``i`` with ``plain[i]``, whose symbol ids are
    ``tok_sym[tok_off[i]:tok_off[i + 1]]``; else None, and the caller's loop names the merge.

    Exact: every match is compared symbol by symbol. Each pass joins a slice of the merges
    into one string, checks where the separators are, and looks the parts up in a Numba hash
    table of the tokens, without a Python string or dict lookup per merge."""
    slots = token_table(tok_sym, tok_off, plain)
    ids = np.empty((3, len(merges)), np.int64)
    for start in range(0, len(merges), MERGE_STEP):
        chunk = merges[start:start + MERGE_STEP]
        kinds = set(map(type, chunk))
        try:
            if strings and kinds <= {str}:  # "a0 b0\na1 b1...": one space per merge
                flat, inner = "\n".join(chunk), 10
            elif kinds <= {tuple, list} and set(map(len, chunk)) == {2}:
                flat, inner = " ".join(chain.from_iterable(chunk)), 32  # "a0 b0 a1 b1..."
            else:
                return None
        except TypeError:  # a part that is not a str
            return None
        cps = np.frombuffer(flat.encode("utf-32-le", "surrogatepass"), np.uint32)
        seps = np.flatnonzero((cps == 32) | (cps == inner))
        want = np.full(2 * len(chunk) - 1, inner, np.uint32)
        want[0::2] = 32
        if len(seps) != len(want) or (cps[seps] != want).any():
            return None  # a part holds a separator: it is no token (neither is a symbol)
        try:
            sym = parse_symbols(flat.replace(" ", "").replace("\n", "") if inner == 10
                                else flat.replace(" ", ""), substrate)
        except ValueError:  # a part holds a non-symbol: it is no plain token
            return None
        # part j is sym[at[j]:at[j + 1]]; merge k looks up parts 2k, 2k + 1 and both
        at = np.concatenate(([0], seps - np.arange(len(seps)), [len(sym)]))
        starts = np.stack([at[:-1:2], at[1::2], at[:-1:2]], 1).ravel()
        stops = np.stack([at[1::2], at[2::2], at[2::2]], 1).ravel()
        out = np.empty(len(starts), np.int64)
        if lookup_tokens(slots, tok_sym, tok_off, sym, starts, stops, out) >= 0:
            return None
        ids[:, start:start + len(chunk)] = out.reshape(-1, 3).T
    return ids
