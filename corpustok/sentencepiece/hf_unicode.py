"""The Unicode tables of HF ``tokenizers``' ``NFKD``, ``StripAccents`` and ``Lowercase``
normalizers (decision 0039), from ``corpustok/data/hf_unicode.npz``
(``tools/gen_hf_unicode_tables.py`` reads them from ``tokenizers`` itself: its Unicode version
is not Python's).

:func:`hf_unicode_tables` gives the kernels' two-stage
:class:`~corpustok.kernels.sentencepiece.hf_unicode.HfUnicodeTables`; :func:`hf_unicode_maps`
the same content as dicts for the readable reference.
"""
from importlib import resources
from types import SimpleNamespace

import numpy as np

from corpustok.arrow import freeze_arrays
from corpustok.kernels.sentencepiece.hf_unicode import HfUnicodeTables

__all__ = ["hf_unicode_arrays", "hf_unicode_maps", "hf_unicode_tables"]

_ARRAYS = _TABLES = _MAPS = None


def hf_unicode_arrays():
    """The packed arrays of ``hf_unicode.npz`` (a dict; see the generator's docstring)."""
    global _ARRAYS
    if _ARRAYS is None:
        with resources.files("corpustok").joinpath("data/hf_unicode.npz").open("rb") as f:
            z = np.load(f)
            _ARRAYS = {k: z[k] for k in z.files}
    return _ARRAYS


def _mapping(z, name):
    keys, off, cps = z[f"{name}_keys"], z[f"{name}_off"].tolist(), z[f"{name}_cps"]
    return {k: "".join(map(chr, cps[off[i]:off[i + 1]].tolist()))
            for i, k in enumerate(keys.tolist())}


def hf_unicode_maps():
    """``nfkd``, ``lower`` ({char: str}), ``marks`` (a set of chars) and ``ccc``
    ({char: rank of its canonical combining class}, non-starters only)."""
    global _MAPS
    if _MAPS is None:
        z = hf_unicode_arrays()
        _MAPS = SimpleNamespace(
            nfkd={chr(k): v for k, v in _mapping(z, "nfkd").items()},
            lower={chr(k): v for k, v in _mapping(z, "lower").items()},
            marks=frozenset(map(chr, z["mark_keys"].tolist())),
            ccc=dict(zip(map(chr, z["ccc_keys"].tolist()), z["ccc_rank"].tolist())))
    return _MAPS


def hf_unicode_tables():
    """The kernels' :class:`HfUnicodeTables` (read-only, built once a process)."""
    global _TABLES
    if _TABLES is None:
        z = hf_unicode_arrays()
        keys = [z["nfkd_keys"], z["lower_keys"], z["mark_keys"], z["ccc_keys"]]
        rows = np.unique(np.concatenate(keys) >> 8)
        block = np.zeros(0x1100, np.int32)
        block[rows] = np.arange(1, len(rows) + 1, dtype=np.int32)  # row 0: nothing changes

        def per_code_point(k, values, dtype):
            out = np.zeros((len(rows) + 1) * 256, dtype)
            out[(block[k >> 8].astype(np.int64) << 8) | (k & 255)] = values
            return out

        entries = np.arange(1, 1 << 20, dtype=np.int32)
        _TABLES = freeze_arrays(HfUnicodeTables(
            block=block,
            ccc=per_code_point(z["ccc_keys"], z["ccc_rank"], np.uint8),
            mark=per_code_point(z["mark_keys"], 1, np.uint8),
            nfkd=per_code_point(z["nfkd_keys"], entries[:len(z["nfkd_keys"])], np.int32),
            nfkd_off=z["nfkd_off"].astype(np.int32), nfkd_cps=z["nfkd_cps"].astype(np.int32),
            lower=per_code_point(z["lower_keys"], entries[:len(z["lower_keys"])], np.int32),
            lower_off=z["lower_off"].astype(np.int32),
            lower_cps=z["lower_cps"].astype(np.int32)))
    return _TABLES
