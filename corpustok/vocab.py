"""Checks of a vocabulary shared by the tokenizer loaders: a malformed file is a ValueError that
names the file and the entry, never an AttributeError, a MemoryError or a silently wrong table.

The checks of large vocabularies run over whole arrays (types as sets, ids with numpy), and only
when one fails does a per-entry loop look for the entry to name, so a 10M-entry file costs
little more than its JSON parse."""
from itertools import islice

import numpy as np

from corpustok.arrow import id_array

# Tables are sized by the largest id (about 40 bytes per id), so ids must be dense: the largest
# id below 2 * entries + SPARSE_IDS_SLACK (gaps are allowed, a stray id of 10**12 is not).
SPARSE_IDS_SLACK = 1024
_INT64_MAX = (1 << 63) - 1


def short(value, width=60):
    """``repr(value)`` cut to ``width`` characters, for messages about file contents."""
    r = repr(value)
    return r if len(r) <= width else r[:width - 3] + "..."


def is_id(i):
    """A JSON/Python integer id: an int that is not a bool."""
    return isinstance(i, int) and not isinstance(i, bool)


def vocab_ids(vocab):
    """The ids of ``vocab`` (a dict) in its order as int64, when every key is a ``str`` and
    every id a non-negative ``int`` below 2**63 (exactly these types); else None, and the
    caller's per-entry loop names the first bad entry (or accepts an int subclass)."""
    if set(map(type, vocab.values())) - {int} or set(map(type, vocab)) - {str}:
        return None
    try:
        ids = np.fromiter(vocab.values(), np.int64, len(vocab))
    except OverflowError:
        return None
    return None if len(ids) and ids.min() < 0 else ids


def check_dense_ids(vocab, where="", ids=None):
    """ValueError unless the largest id of ``vocab`` (token -> non-negative int id; ``ids``:
    :func:`vocab_ids` of it, if known) is below ``2 * len(vocab) + SPARSE_IDS_SLACK``; tables
    sized by the largest id stay small."""
    if not vocab:
        return
    if ids is None:
        top_tok, top = max(vocab.items(), key=lambda kv: kv[1])
    else:
        k = int(np.argmax(ids))  # the first largest, as max() above
        top, top_tok = int(ids[k]), None
    limit = 2 * len(vocab) + SPARSE_IDS_SLACK
    if top >= limit:
        top_tok = next(islice(vocab, k, None)) if top_tok is None else top_tok
        raise ValueError(f"{where}vocab ids are too sparse: the largest id is {top} "
                         f"({top_tok!r}) but there are only {len(vocab)} entries; ids must be "
                         f"dense (the "
                         f"largest id below 2 * entries + {SPARSE_IDS_SLACK} = {limit}), as "
                         "the tables are sized by the largest id")


def string_list(value, name, what="token strings"):
    """``list(value)`` for an argument that must hold only str; a lone str, bytes or dict is
    refused rather than iterated (a str would become its characters)."""
    if isinstance(value, (str, bytes, dict)):
        raise TypeError(f"{name} must be a list of {what}, got {type(value).__name__}; "
                        "wrap a single str in a list")
    items = list(value)
    for k, s in enumerate(items):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{k}] = {short(s)} is {type(s).__name__}, expected str")
    return items


class VocabIds:
    """The ids a vocabulary decodes: ``0..len(exists)-1`` where ``exists[id]`` (a vocabulary
    may leave ids unused). Both tokenizers check decode input through it, so a bad id gets
    the same message everywhere."""

    def __init__(self, exists):
        self.exists = exists
        self.stop = len(exists)
        self.dense = bool(exists.all())

    def error(self, k, value, where=""):
        unused = 0 <= value < self.stop
        return ValueError(f"{where}ids[{k}] = {value} is not a token id of this vocabulary "
                          f"({'an unused id in ' if unused else ''}0..{self.stop - 1})")

    def array(self, ids, where=""):
        """``id_array(ids)``, first checking what int64 cannot hold, so that ids are reported
        as given: for a list or tuple, its min and max (then, only when one is outside the
        range, the first such id); for a uint64 array, its max. Other inputs convert to int64
        losslessly and are checked by :meth:`check`."""
        stop = self.stop
        if isinstance(ids, (list, tuple)):
            if ids:
                try:
                    bad = bool(min(ids) < 0 or max(ids) >= stop)
                except (TypeError, ValueError):  # items that do not compare
                    bad = False  # id_array names them
                if bad:
                    for k, i in enumerate(ids):
                        if isinstance(i, (int, np.integer)) \
                                and not isinstance(i, (bool, np.bool_)) and not 0 <= i < stop:
                            raise self.error(k, int(i), where)
        elif isinstance(ids, np.ndarray) and ids.dtype.kind == "u" and ids.size \
                and int(ids.max()) > _INT64_MAX:
            flat = ids.reshape(-1)
            k = int(np.flatnonzero(flat >= stop)[0])
            raise self.error(k, int(flat[k]), where)
        return id_array(ids)

    def check(self, ids):
        """Raise for the first id of an int64 array this vocabulary does not decode."""
        if not len(ids):
            return
        bad = (ids < 0) | (ids >= self.stop)
        if not self.dense and not bad.any():
            bad = ~self.exists[ids]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise self.error(k, int(ids[k]))
