"""Module names that moved: an old import name gives the module it became (the same object, so
monkeypatching either name patches both). Only names the documentation once gave users are
kept (:data:`corpustok.MOVED`, :data:`corpustok.pipeline.MOVED`)."""
import importlib
import importlib.abc
import importlib.util
import sys


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``<package>.<old name>`` for each old name of ``moved`` (old -> new, relative to
    ``package``) and loads the module it is now."""

    def __init__(self, package, moved):
        self.package = package
        self.moved = dict(moved)

    def find_spec(self, name, path=None, target=None):
        prefix, _, old = name.rpartition(".")
        if prefix != self.package or old not in self.moved:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        new = self.moved[spec.name.rpartition(".")[2]]
        module = importlib.import_module(f"{self.package}.{new}")
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the old name's
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


def keep_old_names(package, moved):
    """Install the finder of ``package``'s moved modules once per process."""
    if not any(isinstance(f, MovedModules) and f.package == package for f in sys.meta_path):
        sys.meta_path.append(MovedModules(package, moved))
