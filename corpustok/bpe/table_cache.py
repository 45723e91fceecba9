"""A memo on disk of the tables a BPE tokenizer builds: pairs, pre-merge, whole chunks.

A tiktoken rank file has no merge list: its pairs are every cut of every token into two tokens
(:func:`corpustok.kernels.bpe.token_table.token_splits`), from which the pair table, the
pre-merge table and the whole-chunk table follow. For o200k that took 0.4 s of every load, and
so of every job's start-up and every process worker's (measured 2026-12-06), to rebuild the
same 11 MB each time. A merge list (GPT-2's ``merges.txt``, a tokenizer.json's ``merges``) is
read into id pairs and the same three tables: 0.2-0.4 s of every load of GPT-2's files or of
a 100K tokenizer.json (measured 2026-12-06), kept the same way.

The tables are a function of the tokens' symbols (and which are plain, and which are emitted
whole), of the merge list where there is one, and of the code that builds them, nothing else.
They are kept under a key that is the sha256 of all of them: the input arrays' bytes, the
merges' strings (with their lengths, so that no two lists read alike), and the source of every
module of ``corpustok/kernels/`` and of the Python modules that call them here. A changed
vocabulary, merge list or kernel is a new key, never a stale table. A file that cannot be read
back as the arrays it should hold (damaged, truncated, another version's) is built again and
replaced; one that cannot be written (a read-only home, a full disk) is skipped: the memo only
ever saves time. A merge list the memo does not recognise as strings (or pairs of them) is
built each time, and building names what is wrong with it.

Where: ``$CORPUSTOK_CACHE_DIR``, else ``$XDG_CACHE_HOME/corpustok``, else
``~/.cache/corpustok``; the tables go in its ``bpe-tables/`` folder, one ``<key>.npz`` a
vocabulary (11 MB for o200k, 3.5 MB for GPT-2). The folder keeps the :data:`MAX_FILES` files
read or written last (a hit touches its file); older ones, of vocabularies not used lately or
of an earlier corpustok, are deleted when a new one is written. An empty
``CORPUSTOK_CACHE_DIR`` turns the memo off. Deleting the folder is always safe. Vocabularies
of fewer than :data:`MIN_TOKENS` tokens build in under 0.05 s and are not kept.
"""
import hashlib
import os
import time
from functools import lru_cache
from itertools import chain
from pathlib import Path

import numpy as np

import corpustok.kernels.bpe as kernels_bpe
from corpustok.array_files import read_arrays, write_arrays
from corpustok.bpe.tables import RankTables
from corpustok.numba_cache import sources_digest
from corpustok.kernels.bpe.merge import GRID, pair_table
from corpustok.kernels.memory.hugepages import huge_page_array
from corpustok.kernels.bpe.token_table import WholeTokens

TABLES_VERSION = 3  # the layout of a kept file; part of every key
MIN_TOKENS = 32_768
MAX_FILES = 16  # files the folder keeps
STALE_TMP_S = 3600  # a temporary this old is a killed writer's
FOLDER = "bpe-tables"
ENV = "CORPUSTOK_CACHE_DIR"
ARRAYS = ("slots", "new_of_rank", "pre", "whole")  # and "merges" for a merge list's


def cache_dir():
    """The memo's folder (see the module docstring), or None when it is turned off."""
    root = os.environ.get(ENV)
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                ".cache")
        root = os.path.join(base, "corpustok")
    return Path(root, FOLDER) if root else None


@lru_cache(maxsize=None)
def code_digest():
    """sha256 of the source of every module of ``corpustok/kernels/`` (the builders and all
    they call: the pair table's allocation is in ``kernels/memory/``), of
    ``corpustok/bpe/tables.py`` and of this module; None when a source cannot be read (an
    install without them): the memo is then off."""
    here = Path(__file__).resolve()
    kernels = sources_digest(Path(kernels_bpe.__file__).resolve().parents[1])
    if kernels is None:
        return None
    h = hashlib.sha256(kernels.encode())
    try:
        for p in (here.parent / "tables.py", here):
            h.update(b"\0" + p.read_bytes())
    except OSError:
        return None
    return h.hexdigest()


def tables_key(tok_sym, tok_off, plain, whole_plain, sym_id, merges=None):
    """The key of the tables built from these arrays (and the merge list whose
    :func:`merges_digest` is ``merges``) by the current code."""
    h = hashlib.sha256(f"v{TABLES_VERSION} {code_digest()} merges {merges}".encode())
    for a in (tok_sym, tok_off, plain, whole_plain, sym_id):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.view(np.uint8).reshape(-1) if a.size else b"")
    return h.hexdigest()


def merges_digest(merges, strings):
    """sha256 of a merge list as the tokenizer reads it: ``"left right"`` strings (where
    ``strings``) or ``(left, right)`` pairs of strings, their kind and every part's length
    in it, so that two lists that differ have different digests; None for a list of anything
    else (building then names the bad merge)."""
    kinds = set(map(type, merges))
    if strings and kinds <= {str}:
        kind, parts = "strings", merges
    elif kinds <= {tuple, list} and set(map(len, merges)) <= {2}:
        kind, parts = "pairs", list(chain.from_iterable(merges))
        if not set(map(type, parts)) <= {str}:
            return None
    else:
        return None
    h = hashlib.sha256(f"{kind} {len(parts)}".encode())
    h.update(np.fromiter(map(len, parts), np.int64, len(parts)).tobytes())
    h.update("".join(parts).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def rank_tables(tok_sym, tok_off, plain, whole_plain, sym_id, build):
    """``build(tok_sym, tok_off, plain, whole_plain, sym_id)`` (a
    :class:`corpustok.bpe.tables.RankTables`; :func:`corpustok.bpe.tables.build_rank_tables`),
    read from the memo when it holds them, else built and kept there (see the module
    docstring)."""
    folder = _folder(plain)
    if folder is None:
        return build(tok_sym, tok_off, plain, whole_plain, sym_id)
    key = tables_key(tok_sym, tok_off, plain, whole_plain, sym_id)
    tables, _ = _kept(folder / f"{key}.npz", tok_sym, tok_off, False,
                      lambda: (build(tok_sym, tok_off, plain, whole_plain, sym_id), None))
    return tables


def merge_tables(tok_sym, tok_off, plain, whole_plain, sym_id, merges, strings, build):
    """``(tables, pairs)`` of a merge list: ``build()``'s :class:`RankTables` and the merges
    as ``(left, right)`` ids (int32, one row a merge), read from the memo when it holds them
    for these arrays and ``merges`` (``strings``: ``"left right"`` strings are read too),
    else built and kept there (see the module docstring)."""
    folder = _folder(plain)
    digest = None if folder is None else merges_digest(merges, strings)
    if digest is None:
        return build()
    key = tables_key(tok_sym, tok_off, plain, whole_plain, sym_id, digest)
    return _kept(folder / f"{key}.npz", tok_sym, tok_off, True, build)


def _folder(plain):
    """The memo's folder when it keeps the tables of a vocabulary of these ``plain`` tokens,
    else None."""
    folder = cache_dir()
    if folder is None or np.count_nonzero(plain) < MIN_TOKENS or code_digest() is None:
        return None
    return folder


def _kept(path, tok_sym, tok_off, with_merges, build):
    """``(tables, merges)`` kept at ``path``, or ``build()``'s, then kept there."""
    found = _read(path, tok_sym, tok_off, with_merges)
    if found is None:
        found = build()
        if _write(path, *found):
            _evict(path.parent)
    else:
        try:
            os.utime(path)  # used: the last to go
        except OSError:
            pass
    return found


def _read(path, tok_sym, tok_off, with_merges=False):
    """``(tables, merges)`` kept at ``path`` (``merges`` None unless ``with_merges``), or None
    when it is absent or not what this code writes: every array of the dtype and shape the
    kernels index without bounds checks (the pair table's grid and bucket count are
    recomputed from its slots, as building computes them). The folder is trusted as Numba's
    own cache is: a file is checked for shape, not for intent."""
    a = read_arrays(path)
    names = ARRAYS + (("merges",) if with_merges else ())
    if a is None or any(k not in a for k in names):
        return None
    kinds = {"slots": np.int64, "new_of_rank": np.int32, "pre": np.int64, "whole": np.uint64,
             "merges": np.int32}
    if any(a[k].dtype != kinds[k] or a[k].ndim != 1 for k in ARRAYS) or \
            not all(_table_size(len(a[k])) for k in ("slots", "whole")) or \
            len(a["pre"]) not in (0, GRID * GRID):
        return None
    merges = None
    if with_merges:
        merges = a["merges"]
        if merges.dtype != np.int32 or merges.ndim != 2 or merges.shape[1] != 2:
            return None
    slots = huge_page_array(len(a["slots"]), np.int64, -1)  # as built: on huge pages
    slots[:] = a["slots"]
    pairs = pair_table(slots, a["new_of_rank"])
    if len(pairs.new_of_rank) and len(pairs.new_of_rank) < pairs.buckets:
        return None
    return RankTables(pairs, a["pre"], WholeTokens(a["whole"], tok_sym, tok_off)), merges


def _table_size(n):
    """Whether ``n`` is the size of an open-addressing table here: empty, or a power of two
    of at least 16."""
    return n == 0 or (n >= 16 and n & (n - 1) == 0)


def _write(path, tables, merges=None):
    """Keep ``tables`` (and a merge list's ``merges``) at ``path``
    (:func:`corpustok.array_files.write_arrays`: whole or not at all); True when kept. Any
    OSError (no room, no permission) leaves the memo as it was."""
    p = tables.pairs
    arrays = {"slots": p.slots, "new_of_rank": p.new_of_rank, "pre": tables.pre,
              "whole": tables.whole.slots}
    if merges is not None:
        arrays["merges"] = merges
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_arrays(path, arrays)
        return True
    except OSError:
        return False


def _evict(folder):
    """Delete the memo's files beyond the :data:`MAX_FILES` used last, and temporaries more
    than :data:`STALE_TMP_S` old (of a process killed while writing): only names this module
    writes (64 hex digits and ``.npz``; 16 and ``.tmp``), never another file in the folder."""
    kept, stale = [], []
    now = time.time()
    try:
        names = list(folder.iterdir())
    except OSError:
        return
    for p in names:
        key, _, rest = p.name.partition(".")
        try:
            if rest == "npz" and _hex(key, 64):
                kept.append((p.stat().st_mtime, p))
            elif rest.endswith(".tmp") and _hex(key, 16) and \
                    p.stat().st_mtime < now - STALE_TMP_S:
                stale.append(p)
        except OSError:
            pass
    for p in stale + [p for _, p in sorted(kept, reverse=True)[MAX_FILES:]]:
        try:
            p.unlink()
        except OSError:
            pass


def _hex(name, n):
    return len(name) == n and all(c in "0123456789abcdef" for c in name)
