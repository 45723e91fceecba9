"""Numba's cache of the kernels is emptied when a kernel's source changes (numba_cache.py).

The hazard is Numba's: a cached caller keeps the code of a callee in another file after that
file changed. The tests show it on a two-file package, then that ``refresh`` cures it, that
the folders it looks in are the ones Numba's own locators pick, and that ``import corpustok``
runs it on the kernels."""
import functools
import importlib
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from numba.core.caching import FunctionCache
from numba.core.registry import CPUDispatcher

from corpustok.kernels import rank_lines
from corpustok.numba_cache import STAMP, cache_base, cache_folder, refresh, sources_digest

CALLEE = "from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return {}\n"
CALLER = ("from numba import njit\n\nfrom pkg.deep.callee import value\n\n\n"
          "@njit(cache=True)\ndef call():\n    return value() + 0\n")


def _package(tmp_path):
    root = tmp_path / "pkg"
    (root / "deep").mkdir(parents=True)
    for folder in (root, root / "deep"):
        (folder / "__init__.py").write_text("")
    (root / "deep" / "callee.py").write_text(CALLEE.format(1))
    (root / "caller.py").write_text(CALLER)
    return root


def _call(root, cache_dir, refresh_first=False, user_dir=None):
    """Run pkg.caller.call() in a fresh process (Numba's cache in ``cache_dir``, or in tree
    when None; Numba's per-user folder under ``user_dir``), after refresh(pkg) when asked;
    returns what it printed."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    if user_dir:
        env["XDG_CACHE_HOME"] = str(user_dir)
    code = ("import sys\n"
            + (f"from corpustok.numba_cache import refresh\n"
               f"print(refresh({str(root)!r}, {str(cache_dir) if cache_dir else None!r}))\n"
               if refresh_first else "")
            + "from pkg.caller import call\nprint(call())\n")
    env["PYTHONPATH"] = os.pathsep.join([str(root.parent), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def _pycache_entries(root, base):
    return sorted(p.name for folder in (root, root / "deep")
                  for p in cache_folder(folder, base).glob("*.nb*"))


@pytest.mark.parametrize("where", ["tree", "NUMBA_CACHE_DIR", "per-user"])
def test_a_stale_caller_is_emptied_by_refresh(tmp_path, where):
    root = _package(tmp_path)
    cache_dir = tmp_path / "numba-cache" if where == "NUMBA_CACHE_DIR" else None
    user_dir = tmp_path / "xdg"
    base = cache_dir
    if where == "per-user":  # no __pycache__ can be made beside the sources (a read-only
        for folder in (root, root / "deep"):  # install, as root can write anywhere)
            (folder / "__pycache__").write_text("")
        base = user_dir / "numba"
    call = functools.partial(_call, root, cache_dir, user_dir=user_dir)
    assert call(refresh_first=True) == ["0", "1"]  # nothing kept yet
    assert call() == ["1"]
    assert any(n.startswith("caller.call-") for n in _pycache_entries(root, base))
    (root / "deep" / "callee.py").write_text(CALLEE.format(22))
    # Numba's hazard: the caller's file did not change, so its cached code (holding the old
    # callee) is loaded
    assert call() == ["1"]
    deleted, value = call(refresh_first=True)
    assert int(deleted) >= 4 and value == "22"  # both functions' index and data
    assert call(refresh_first=True) == ["0", "22"]  # the stamp matches
    assert (cache_folder(root, base) / STAMP).read_text().strip() == sources_digest(root)


def test_refresh_deletes_only_the_cached_functions_of_the_folders_modules(tmp_path):
    root = _package(tmp_path)
    pycache = root / "__pycache__"
    pycache.mkdir()
    keep = ["caller.cpython-311.pyc", "other.f-3.py311.nbi", "other.f-3.py311.1.nbc",
            "caller.notes.txt"]
    gone = ["caller.call-6.py311.nbi", "caller.call-6.py311.1.nbc"]
    for name in keep + gone:
        (pycache / name).write_bytes(b"x")
    (pycache / STAMP).write_text("another digest\n")
    assert refresh(root) == 2
    assert sorted(p.name for p in pycache.iterdir()) == sorted(keep + [STAMP])
    assert refresh(root) == 0
    (pycache / gone[0]).write_bytes(b"x")  # kept after the stamp: from the current sources
    assert refresh(root) == 0 and (pycache / gone[0]).exists()


def test_refresh_of_unreadable_or_unwritable_folders_does_nothing(tmp_path, monkeypatch):
    assert refresh(tmp_path / "missing") == 0 and not (tmp_path / "missing").exists()
    root = _package(tmp_path)
    (root / "__pycache__").write_text("a file where the folder would be")
    (tmp_path / "xdg").write_text("and where Numba's per-user folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_base(root) is False
    assert refresh(root) == 0


def test_the_folders_are_those_numbas_locators_pick(tmp_path, monkeypatch):
    fn = next(v for v in vars(rank_lines).values() if isinstance(v, CPUDispatcher))
    folder = Path(fn.py_func.__code__.co_filename).parent
    assert cache_base(folder) is None
    assert FunctionCache(fn.py_func).cache_path == str(cache_folder(folder))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    assert cache_base(folder, str(tmp_path)) == str(tmp_path)
    assert FunctionCache(fn.py_func).cache_path == str(cache_folder(folder, tmp_path))
    # the per-user folder, where a source's own folder cannot hold a __pycache__
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = _package(tmp_path)
    (root / "__pycache__").write_text("")
    sys.path.insert(0, str(tmp_path))
    try:  # the package this test wrote: importable only once it is on the path
        call = importlib.import_module("pkg.caller").call
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]
    base = cache_base(root)
    assert base == str(tmp_path / "xdg" / "numba")
    assert FunctionCache(call.py_func).cache_path == str(cache_folder(root, base))


def test_import_corpustok_refreshes_the_kernels(tmp_path):
    """A kernel module's entry under an old stamp is deleted by ``import corpustok``, in the
    folder ``$NUMBA_CACHE_DIR`` gives; the stamp is then the kernels' digest."""
    kernels = Path(rank_lines.__file__).parent
    folder = cache_folder(kernels, tmp_path)
    folder.mkdir(parents=True)
    entry = folder / "rank_lines.decode-1.py311.nbi"
    entry.write_bytes(b"stale")
    (folder / STAMP).write_text("an older corpustok\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", "import corpustok"], env=env, check=True)
    assert not entry.exists()
    assert (folder / STAMP).read_text().strip() == sources_digest(kernels)
