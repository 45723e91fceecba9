"""Checks shared by the tokenizer-file loaders: a malformed file is a ValueError that names
the file and the entry, never an AttributeError, a MemoryError or a silently wrong table."""
import json

import numpy as np

from ._arrow import id_array

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


def check_dense_ids(vocab, where=""):
    """ValueError unless the largest id of ``vocab`` (token -> non-negative int id) is below
    ``2 * len(vocab) + SPARSE_IDS_SLACK``; tables sized by the largest id stay small."""
    if not vocab:
        return
    top_tok, top = max(vocab.items(), key=lambda kv: kv[1])
    limit = 2 * len(vocab) + SPARSE_IDS_SLACK
    if top >= limit:
        raise ValueError(f"{where}vocab ids are too sparse: the largest id is {top} "
                         f"({top_tok!r}) but there are only {len(vocab)} entries; ids must be "
                         f"dense (the "
                         f"largest id below 2 * entries + {SPARSE_IDS_SLACK} = {limit}), as "
                         "the tables are sized by the largest id")


def checked_id_array(ids, stop, error):
    """``id_array(ids)``, first checking what int64 cannot hold, so that ids are reported as
    given: for a list or tuple, its min and max (then, only when one is outside ``0..stop-1``,
    the first such id); for a uint64 array, its max. ``error(k, value)`` makes the exception.
    Other inputs convert to int64 losslessly and are checked by the caller."""
    if isinstance(ids, (list, tuple)):
        if ids:
            try:
                bad = bool(min(ids) < 0 or max(ids) >= stop)
            except (TypeError, ValueError):  # items that do not compare: id_array names them
                bad = False
            if bad:
                for k, i in enumerate(ids):
                    if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) \
                            and not 0 <= i < stop:
                        raise error(k, int(i))
    elif isinstance(ids, np.ndarray) and ids.dtype.kind == "u" and ids.size \
            and int(ids.max()) > _INT64_MAX:
        flat = ids.reshape(-1)
        k = int(np.flatnonzero(flat >= stop)[0])
        raise error(k, int(flat[k]))
    return id_array(ids)


def read_json(path):
    """The JSON document in ``path``; ValueError naming the file if it is not UTF-8 JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None


def added_token(path, k, t):
    """``(content, id)`` of HF ``added_tokens[k]``, or ValueError naming what is wrong."""
    if not isinstance(t, dict):
        raise ValueError(f"{path}: added_tokens[{k}] = {short(t)} is not an object with "
                         "\"content\" and \"id\"")
    for key in ("content", "id"):
        if key not in t:
            raise ValueError(f"{path}: added_tokens[{k}] has no \"{key}\"")
    content, i = t["content"], t["id"]
    if not isinstance(content, str):
        raise ValueError(f"{path}: added_tokens[{k}].content = {short(content)} is not a "
                         "string")
    if not is_id(i) or i < 0:
        raise ValueError(f"{path}: added_tokens[{k}].id = {short(i)} ({content!r}) is not a "
                         "non-negative int id")
    return content, i
