"""Numba's cache of corpustok's kernels, emptied when any kernel's source changes.

Numba keys a function's cached machine code on its own file (numba 0.68: the sha256 of the
file's content). That code also holds, compiled in, every kernel it calls from other files.
When an update changes only those files, Numba loads the caller's old code: the old results,
or code built for a table layout that is no longer the one passed in (the kernels index
unchecked). Seen 2026-12-06: after a fix in ``kernels/bpe/merge.py``, the encoder in
``kernels/bpe/chunk.py`` kept the old merge.

So corpustok keeps beside Numba's cache of its kernels a stamp: the sha256 of the source of
every kernel module. When ``import corpustok`` finds another digest there, it deletes the
kernels' cache entries (Numba's ``.nbi`` index and ``.nbc`` data files, nothing else) in every
folder of them and writes the new stamp; the next run compiles afresh (the first run's
compilation, said by the job). An unchanged install pays a few milliseconds to digest the
kernels' 0.3 MB of source.

Where: where Numba's locators put a source file's cache (numba 0.60-0.68; the tests compare
with Numba's own): ``$NUMBA_CACHE_DIR/<folder>_<sha1 of its path>`` when that is set and
writable, else the ``__pycache__`` beside the source when writable, else the same name under
Numba's per-user folder (``~/.cache/numba``: a read-only install). Only the folder Numba
uses now is checked; one it used under other settings is checked when it is used again.
Not followed: locators chosen with ``NUMBA_CACHE_LOCATOR_CLASSES``, a cache folder set in
code or in ``.numba_config.yaml``, and a process of the old code still running that saves an
entry after the new one cleared (Numba stamps it with the file as it is then). A folder that
cannot be read or written is left as it is: this only ever deletes the kernels' own cache
entries.
"""
import hashlib
import os
from functools import lru_cache
from pathlib import Path

STAMP = "corpustok-kernels.sha256"
ENTRY_SUFFIXES = (".nbi", ".nbc")


def sources_digest(root):
    """sha256 (hex) of every ``.py`` under ``root``: relative paths and contents, in order;
    None when ``root`` is no folder or a file cannot be read. Once per folder and process
    (``import corpustok`` and the rank-table memo both need the kernels'; a process runs the
    code it imported, whatever the files become)."""
    return _digest(os.path.realpath(root))


@lru_cache(maxsize=16)
def _digest(root):
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


def cache_folder(source_folder, base=None):
    """The folder where Numba keeps the cache of functions defined in ``source_folder``'s
    files: its ``__pycache__`` when ``base`` is None, else ``base/<folder name>_<sha1 of its
    path>`` (``base``: ``$NUMBA_CACHE_DIR``, or Numba's per-user folder)."""
    folder = os.path.abspath(source_folder)
    if base:
        tag = hashlib.sha1(folder.encode()).hexdigest()
        return Path(base, f"{os.path.basename(folder)}_{tag}")
    return Path(folder, "__pycache__")


def _usable(folder):
    """Whether Numba can keep a cache in ``folder``: made if missing, and writable."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _user_cache_dir():
    """Numba's per-user cache folder (``~/.cache/numba`` on Linux)."""
    # here: importing Numba would add 0.25 s to every `import corpustok`; only a read-only
    # install, whose sources' folders Numba cannot write, comes this far
    from numba.misc.appdirs import AppDirs
    return AppDirs(appname="numba", appauthor=False).user_cache_dir


def cache_base(root, cache_dir=None):
    """Where Numba keeps the cache of the functions in ``root``'s files, as its locators
    choose: ``cache_dir`` (``$NUMBA_CACHE_DIR``) when set and usable, else beside the
    source (None) when usable, else Numba's per-user folder; the folder for ``root`` is
    made, as Numba makes it. ``False`` when none is usable (Numba keeps nothing)."""
    if cache_dir and _usable(cache_folder(root, cache_dir)):
        return cache_dir
    if _usable(cache_folder(root)):
        return None
    user = _user_cache_dir()
    return user if _usable(cache_folder(root, user)) else False


def source_folders(root):
    """``root`` and each folder under it that holds a ``.py`` file (no ``__pycache__``)."""
    root = Path(root)
    folders = {p.parent for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    return sorted(folders | {root})


def refresh(root, cache_dir=None):
    """Delete the cached kernels of the sources under ``root`` when the stamp in ``root``'s
    cache folder (where Numba keeps it now: :func:`cache_base`) is not their current
    digest, and write the digest there. Returns the number of cache files deleted (0 when
    the stamp matched or nothing was kept yet)."""
    digest = sources_digest(root)
    if digest is None:
        return 0
    base = cache_base(root, cache_dir)
    if base is False:
        return 0
    stamp = cache_folder(root, base) / STAMP
    try:
        if stamp.read_text(encoding="ascii").strip() == digest:
            return 0
    except (OSError, UnicodeDecodeError):
        pass
    deleted = 0
    for folder in source_folders(root):
        modules = {p.stem for p in folder.glob("*.py")}
        try:
            entries = list(cache_folder(folder, base).iterdir())
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
