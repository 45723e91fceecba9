"""Numba's cache of corpustok's kernels, emptied when any kernel's source changes.

Numba keys a function's cached machine code on the time and size of the function's own file.
That code also holds, compiled in, every kernel it calls from other files. When an update
changes only those files (a ``git pull`` touches only the files it changes), Numba loads the
caller's old code: the old results, or code built for a table layout that is no longer the
one passed in (the kernels index unchecked). Seen 2026-12-06: after a fix in
``kernels/bpe/merge.py``, the encoder in ``kernels/bpe/chunk.py`` kept the old merge.

So corpustok keeps beside Numba's cache of its kernels a stamp: the sha256 of the source of
every kernel module. When ``import corpustok`` finds another digest there, it deletes the
kernels' cache entries (Numba's ``.nbi`` index and ``.nbc`` data files, nothing else) in every
folder of them and writes the new stamp; the next run compiles afresh (the first run's
compilation, said by the job). An unchanged checkout pays 2-3 ms to digest 0.4 MB of source.

Where Numba keeps them, as its locators decide for a source file (numba 0.60-0.68; the tests
compare these folders with Numba's own): ``$NUMBA_CACHE_DIR/<folder>_<sha1 of its path>``
when that is set, else the ``__pycache__`` beside each source. A folder Numba cannot write
makes it use a per-user cache instead; that happens for a read-only install, whose files an
upgrade replaces all at once (new times: Numba's own check suffices), so it is not handled.
Nor are locators chosen with ``NUMBA_CACHE_LOCATOR_CLASSES`` or ``numba.config`` set in code.
A folder that cannot be read or written is left as it is: this only ever deletes the
kernels' own cache entries.
"""
import hashlib
import os
from pathlib import Path

STAMP = "corpustok-kernels.sha256"
ENTRY_SUFFIXES = (".nbi", ".nbc")


def sources_digest(root):
    """sha256 (hex) of every ``.py`` under ``root``: relative paths and contents, in order;
    None when ``root`` is no folder or a file cannot be read."""
    root = Path(root)
    if not root.is_dir():
        return None
    h = hashlib.sha256()
    try:
        for p in sorted(root.rglob("*.py")):
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    except OSError:
        return None
    return h.hexdigest()


def cache_folder(source_folder, cache_dir=None):
    """The folder where Numba keeps the cache of functions defined in ``source_folder``'s
    files: under ``cache_dir`` (``$NUMBA_CACHE_DIR``) when given, else its ``__pycache__``."""
    folder = os.path.abspath(source_folder)
    if cache_dir:
        tag = hashlib.sha1(folder.encode()).hexdigest()
        return Path(cache_dir, f"{os.path.basename(folder)}_{tag}")
    return Path(folder, "__pycache__")


def source_folders(root):
    """``root`` and each folder under it that holds a ``.py`` file (no ``__pycache__``)."""
    root = Path(root)
    folders = {p.parent for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    return sorted(folders | {root})


def refresh(root, cache_dir=None):
    """Delete the cached kernels of the sources under ``root`` when the stamp in ``root``'s
    cache folder is not their current digest, and write the digest there. Returns the number
    of cache files deleted (0 when the stamp matched or nothing was kept yet)."""
    digest = sources_digest(root)
    if digest is None:
        return 0
    stamp = cache_folder(root, cache_dir) / STAMP
    try:
        if stamp.read_text(encoding="ascii").strip() == digest:
            return 0
    except (OSError, UnicodeDecodeError):
        pass
    deleted = 0
    for folder in source_folders(root):
        modules = {p.stem for p in folder.glob("*.py")}
        try:
            entries = list(cache_folder(folder, cache_dir).iterdir())
        except OSError:
            continue
        for p in entries:
            # <module>.<function>-<line>.py<version>[.<n>].nbi/.nbc: this folder's modules only
            if p.suffix in ENTRY_SUFFIXES and p.name.split(".", 1)[0] in modules:
                try:
                    p.unlink()
                    deleted += 1
                except FileNotFoundError:
                    pass  # another process of the same update took it first
                except OSError:
                    continue
    try:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        tmp = stamp.with_name(f"{STAMP}.{os.getpid()}.tmp")
        tmp.write_text(digest + "\n", encoding="ascii")
        os.replace(tmp, stamp)
    except OSError:
        pass  # a folder Numba cannot write either: it keeps nothing here
    return deleted
