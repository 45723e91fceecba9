"""Zero-copy bridges between Arrow arrays (or lists of ``str``) and the kernels' flat buffers.

Kernels take a ``uint8`` data buffer plus ``int64`` offsets (``n + 1`` of them, absolute into
the buffer), exactly the buffers of an Arrow ``string``/``binary`` array, and write flat outputs
plus offsets that become Arrow list arrays again here.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_TEXT_TYPES = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())
INT32_MAX = 2**31 - 1


@dataclass
class Utf8Batch:
    """A batch of documents as the kernels see it.

    ``data``/``offsets``: the UTF-8 bytes and ``len + 1`` int64 offsets into ``data``.
    ``valid``: False where the input was null (the kernels see an empty document), or None
    when nothing is null. ``replaced``: per-document count of lone surrogates in Python
    ``str`` input that were replaced by U+FFFD before the kernel ran (None when there were
    none). ``binary``: the input was a binary column, so it may hold invalid UTF-8.
    ``well_formed``: the bytes are known to be well-formed UTF-8 (made from Python ``str``
    or checked); False when unknown (see :func:`is_well_formed`).
    """

    data: np.ndarray
    offsets: np.ndarray
    valid: Optional[np.ndarray]
    replaced: Optional[np.ndarray]
    binary: bool
    well_formed: bool = False

    def __len__(self):
        return len(self.offsets) - 1


def decode_replacing(raw: bytes):
    """``(text, replaced)``: ``raw`` decoded as the kernels read it (``errors="replace"``) and
    the number of U+FFFD the decoding made (those already in ``raw`` not counted)."""
    text = raw.decode("utf-8", "replace")
    return text, text.count("\ufffd") - raw.count(b"\xef\xbf\xbd")


def replace_surrogates(s: str):
    """UTF-8 bytes of ``s`` with every lone surrogate replaced by U+FFFD, and the count."""
    try:
        return s.encode("utf-8"), 0
    except UnicodeEncodeError:
        pass
    out = []
    n = 0
    for ch in s:
        if 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\ufffd")
            n += 1
        else:
            out.append(ch)
    return "".join(out).encode("utf-8"), n


def _from_pylist(texts) -> Utf8Batch:
    texts = list(texts)
    try:
        batch = _from_arrow(pa.array(texts, type=pa.large_string()))
    except (UnicodeEncodeError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        pass
    else:  # Arrow encoded each str and refused any bytes that are not UTF-8
        batch.well_formed = True
        return batch
    # Slow path only for lists holding lone surrogates (JSON "\ud800" escapes), invalid
    # UTF-8 bytes (read by the kernels as a binary column is) or bad types.
    encoded = []
    replaced = np.zeros(len(texts), np.int64)
    binary = False
    for i, t in enumerate(texts):
        if t is None:
            encoded.append(None)
        elif isinstance(t, str):
            b, replaced[i] = replace_surrogates(t)
            encoded.append(b)
        elif isinstance(t, (bytes, bytearray, memoryview)):
            encoded.append(bytes(t))
            binary = True
        else:
            raise TypeError(f"texts[{i}] is {type(t).__name__}, expected str, bytes or None")
    batch = _from_arrow(pa.array(encoded, type=pa.large_binary()))
    batch.binary = binary
    batch.replaced = replaced if replaced.any() else None
    return batch


def is_well_formed(batch: Utf8Batch, offsets: Optional[np.ndarray] = None) -> bool:
    """Whether the documents of ``batch`` (those of ``offsets``, a slice of its offsets, when
    given) are well-formed UTF-8: known from how the batch was made, else checked by Arrow's
    validation of a string view of its buffers (about half the time of the kernels' own count
    of replacements, and outside the GIL, so threads check their own parts)."""
    if batch.well_formed:
        return True
    offsets = batch.offsets if offsets is None else offsets
    view = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets),
                                            pa.py_buffer(batch.data))
    try:
        view.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def one_array(arr):
    """``arr`` as one Arrow array: a ChunkedArray's only chunk as it is (``combine_chunks``
    copies even a single chunk: 8 MB of text or 11 MB of ids per shard), else combined."""
    if isinstance(arr, pa.ChunkedArray):
        return arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr


def _from_arrow(arr: pa.Array) -> Utf8Batch:
    arr = one_array(arr)
    if arr.type not in _TEXT_TYPES:
        raise TypeError(f"expected a string or binary Arrow array, got {arr.type}")
    valid = None
    if arr.null_count:
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        # Null slots may own bytes in Arrow; refill them so every null is an empty document.
        arr = pc.if_else(arr.is_null(), pa.scalar(b"" if pa.types.is_binary(arr.type)
                                                   or pa.types.is_large_binary(arr.type)
                                                   else "", arr.type), arr)
    bufs = arr.buffers()
    wide = arr.type in (pa.large_string(), pa.large_binary())
    offsets = np.frombuffer(bufs[1], np.int64 if wide else np.int32,
                            count=len(arr) + 1, offset=arr.offset * (8 if wide else 4))
    offsets = offsets.astype(np.int64, copy=not wide) if not wide else offsets
    if bufs[2] is not None and bufs[2].size:
        data = np.frombuffer(bufs[2], np.uint8)
    else:  # read-only like Arrow's buffers, so kernels see one array type
        data = np.zeros(1, np.uint8)
        data.setflags(write=False)
    binary = arr.type in (pa.binary(), pa.large_binary())
    return Utf8Batch(data, offsets, valid, None, binary)


def utf8_batch(texts) -> Utf8Batch:
    """Turn ``texts`` (an Arrow string/binary array, chunked or not, or an iterable of ``str``,
    ``bytes`` (UTF-8, invalid bytes read with replacement) and None) into the kernels' view,
    without copying Arrow data."""
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):
        return _from_arrow(texts)
    if isinstance(texts, (str, bytes)):
        raise TypeError("expected a batch of texts, got a single string; wrap it in a list")
    return _from_pylist(texts)


def list_array(offsets: np.ndarray, values: np.ndarray, valid: Optional[np.ndarray] = None):
    """Arrow list array over ``values`` split at int64 ``offsets``; large_list past 2**31-1."""
    mask = None if valid is None else pa.array(~valid)
    if offsets[-1] > INT32_MAX:
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(values),
                                             mask=mask)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values),
                                    mask=mask)


def string_array(offsets: np.ndarray, data: np.ndarray, valid: Optional[np.ndarray] = None):
    """Arrow ``large_string`` array over UTF-8 ``data`` split at int64 ``offsets``."""
    n = len(offsets) - 1
    bitmap = None
    null_count = 0
    if valid is not None:
        null_count = int(n - valid.sum())
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(np.ascontiguousarray(offsets)),
                                            pa.py_buffer(np.ascontiguousarray(data)), bitmap,
                                            null_count)


def id_array(ids, dtype=np.int64) -> np.ndarray:
    """``dtype`` (int64) ids from a sequence or array of integers; TypeError for anything
    else, since floats, bools or digit strings would otherwise turn silently into other ids."""
    arr = np.asarray(ids)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"ids must be integers, got {arr.dtype} values such as "
                        f"{arr.reshape(-1)[0]!r}")
    return arr.astype(dtype, copy=False).reshape(-1)


def id_lists(lists, dtype=np.int64):
    """``(ids, offsets int64 from 0, valid bool | None)`` of a batch of id lists: an Arrow
    list/large_list array (chunked or not) or a sequence of id sequences / None; the ids as
    ``dtype`` (int64; int32 reads token shards without a copy)."""
    if not isinstance(lists, (pa.Array, pa.ChunkedArray)):
        lists = [None if x is None else id_array(x) for x in lists]
        lists = pa.array(lists, pa.large_list(pa.int64()))
    lists = one_array(lists)
    if not (pa.types.is_list(lists.type) or pa.types.is_large_list(lists.type)):
        raise TypeError(f"expected a list array of ids, got {lists.type}")
    offsets = lists.offsets.to_numpy().astype(np.int64)
    ids = id_array(lists.values.to_numpy(zero_copy_only=False), dtype)[offsets[0]:offsets[-1]]
    valid = lists.is_valid().to_numpy(zero_copy_only=False) if lists.null_count else None
    return ids, offsets - offsets[0], valid


def freeze_arrays(fields):
    """Every numpy array among ``fields`` (a kernel's named tuple of tables, or any sequence)
    made read-only in place, so that the kernels have one signature whoever built the tables;
    returns ``fields``."""
    for a in fields:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return fields


def pool_array(n, dtype=np.int32) -> np.ndarray:
    """An uninitialized writable array of ``n`` items in a buffer of Arrow's default memory
    pool (kept alive by the array), for a kernel's output: a pool hands freed memory out
    again with its pages already in use, where a new numpy array of some MB is a fresh
    mapping the OS faults in and zeroes page by page (the job's pool keeps its pages:
    decision 0046). Wrapping it in an Arrow array copies nothing."""
    dtype = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize), dtype)


def read_only(a):
    """``a`` as a read-only array (a view when it is writable): the kernels then have one
    signature whether the array came from Arrow (read-only) or from Python (writable); each
    extra signature costs seconds of compilation on a cold cache."""
    if a.flags.writeable:
        a = a.view()
        a.setflags(write=False)
    return a
