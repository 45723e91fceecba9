"""HF ``tokenizers``' ``NFKD``, ``StripAccents`` and ``Lowercase`` normalizer steps (the
ALBERT json, decision 0039), over the tables ``tools/gen_hf_unicode_tables.py`` reads from
``tokenizers`` itself (not Python's ``unicodedata``: another Unicode version). The readable
reference is :class:`corpustok.sentencepiece.hf_unigram_reference.Reference`
(``nfkd``, ``strip_accents``, ``lowercase``).

Each step reads valid UTF-8 ``src[:n]`` and writes ``dst`` (grown as needed), returning
``(dst, length)``, like the other steps of :mod:`.hf_normalize`:

- :func:`nfkd`: every character replaced by its full compatibility decomposition, then each
  run of non-starters (canonical combining class > 0) sorted stably by class: insertion sort
  for short runs, a stable merge sort past :data:`SHORT_RUN` (a text of a million combining
  marks stays O(n log n)).
- :func:`strip_accents`: the characters ``tokenizers`` calls combining marks removed.
- :func:`lowercase`: each character by Rust's ``char::to_lowercase`` (no context: final
  sigma is σ).

Lookups go through a two-stage table (:class:`HfUnicodeTables`): ``block[cp >> 8]`` is a row
of 256 entries shared by the four per-code-point arrays (row 0: a block nothing changes).
"""
from collections import namedtuple

import numpy as np
from numba import njit

from corpustok.kernels.memory.buffers import grown
from corpustok.kernels.unicode import char_at, put_bytes, put_utf8

SHORT_RUN = 32

HfUnicodeTables = namedtuple("HfUnicodeTables", [
    "block",      # int32 [0x1100]: the row of code points cp >> 8 (row r: entries r*256 ...)
    "ccc",        # uint8 [rows*256]: rank of the canonical combining class (0: a starter)
    "mark",       # uint8 [rows*256]: 1 where StripAccents removes the character
    "nfkd",       # int32 [rows*256]: 0 kept; k > 0: nfkd_cps[nfkd_off[k-1]:nfkd_off[k]]
    "nfkd_off",   # int32 [entries + 1]
    "nfkd_cps",   # int32: the decompositions, one after another
    "lower",      # int32 [rows*256]: as nfkd, for Lowercase
    "lower_off",  # int32 [entries + 1]
    "lower_cps",  # int32
])


@njit(nogil=True, cache=True, _nrt=False)
def entry(tables, cp):
    """Index of ``cp`` in the per-code-point arrays."""
    return (np.int64(tables.block[cp >> 8]) << 8) | (cp & 255)


@njit(nogil=True, cache=True, _nrt=False)
def _sort_short(run, rank, r):
    """Stable insertion sort of ``run[:r]`` by ``rank[:r]``."""
    for a in range(1, r):
        cp = run[a]
        k = rank[a]
        b = a
        while b > 0 and rank[b - 1] > k:
            run[b] = run[b - 1]
            rank[b] = rank[b - 1]
            b -= 1
        run[b] = cp
        rank[b] = k


@njit(nogil=True, cache=True)
def _flush(run, rank, r, dst, j):
    """The run of non-starters ``run[:r]`` sorted stably by class, written at ``dst[j]``."""
    if r > SHORT_RUN:
        order = np.argsort(rank[:r], kind="mergesort")  # stable
        sorted_run = run[:r][order]
        run[:r] = sorted_run
    else:
        _sort_short(run, rank, r)
    dst = grown(dst, j + 4 * r)
    for a in range(r):
        j = put_utf8(run[a], dst, j)
    return dst, j


@njit(nogil=True, cache=True)
def nfkd(src, n, dst, tables):
    """HF's NFKD of UTF-8 ``src[:n]`` into ``dst`` (grown as needed): each character through
    its decomposition table, each run of non-starters sorted stably by the combining classes
    read from HF (:func:`_flush`). Returns ``(dst, length)``. O(n) but for a run of marks
    (insertion sort up to 32, merge sort beyond)."""
    run = np.empty(16, np.int64)
    rank = np.empty(16, np.int64)
    r = 0
    dst = grown(dst, n)
    j = 0
    i = 0
    while i < n:
        if src[i] < 0x80:  # a run of ASCII: starters that do not decompose
            if r:
                dst, j = _flush(run, rank, r, dst, j)
                r = 0
            k = i + 1
            while k < n and src[k] < 0x80:
                k += 1
            dst = grown(dst, j + (k - i))
            j = put_bytes(src, i, k - i, dst, j)
            i = k
            continue
        cp, m = char_at(src, i)
        i += m
        e = np.int64(tables.nfkd[entry(tables, cp)])
        if e == 0:
            lo, hi = -1, 0
        else:
            lo, hi = np.int64(tables.nfkd_off[e - 1]), np.int64(tables.nfkd_off[e])
        for q in range(lo, hi):
            c = cp if q < 0 else np.int64(tables.nfkd_cps[q])
            k = np.int64(tables.ccc[entry(tables, c)])
            if k == 0:
                if r:
                    dst, j = _flush(run, rank, r, dst, j)
                    r = 0
                dst = grown(dst, j + 4)
                j = put_utf8(c, dst, j)
            else:
                if r == len(run):
                    run = grown(run, r + 1)
                    rank = grown(rank, r + 1)
                run[r] = c
                rank[r] = k
                r += 1
    if r:
        dst, j = _flush(run, rank, r, dst, j)
    return dst, j


@njit(nogil=True, cache=True)
def strip_accents(src, n, dst, tables):
    """HF's StripAccents of UTF-8 ``src[:n]`` into ``dst`` (grown as needed): every character
    its mark table flags is dropped. Returns ``(dst, length)``. O(n)."""
    dst = grown(dst, n)
    j = 0
    i = 0
    while i < n:
        if src[i] < 0x80:
            dst[j] = src[i]
            j += 1
            i += 1
            continue
        cp, m = char_at(src, i)
        if not tables.mark[entry(tables, cp)]:
            j = put_bytes(src, i, m, dst, j)
        i += m
    return dst, j


@njit(nogil=True, cache=True)
def lowercase(src, n, dst, tables):
    """HF's Lowercase of UTF-8 ``src[:n]`` into ``dst`` (grown as needed): ASCII runs at once,
    any other character through its lowercasing table (one or more code points). Returns
    ``(dst, length)``. O(n)."""
    dst = grown(dst, n)
    j = 0
    i = 0
    while i < n:
        if src[i] < 0x80:  # a run of ASCII
            k = i + 1
            while k < n and src[k] < 0x80:
                k += 1
            dst = grown(dst, j + (k - i))
            for t in range(i, k):
                b = src[t]
                dst[j] = b + 32 if 0x41 <= b <= 0x5A else b
                j += 1
            i = k
            continue
        cp, m = char_at(src, i)
        e = np.int64(tables.lower[entry(tables, cp)])
        if e == 0:
            dst = grown(dst, j + m)
            j = put_bytes(src, i, m, dst, j)
        else:
            lo, hi = np.int64(tables.lower_off[e - 1]), np.int64(tables.lower_off[e])
            dst = grown(dst, j + 4 * (hi - lo))
            for q in range(lo, hi):
                j = put_utf8(np.int64(tables.lower_cps[q]), dst, j)
        i += m
    return dst, j
