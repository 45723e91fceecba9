"""Installed as ``corpustok.pipeline`` (``setup.py`` maps this folder; a checkout finds it
beside ``corpustok/``): Beam, the jobs and their I/O, the ``corpustok`` CLI, in folders by
subject, each importing only those before it (docs/architecture.md):

    files/    paths, globs, compression, atomic writes (local or any Beam filesystem)
    config.py, batches.py   the job's configuration; what flows between the stages
    read/     inputs -> DocBatch          encode.py  DocBatch -> TokenBatch
    output/   the output folder: layout, shards, manifests, exports, verify, stats
    runtime/  Beam transforms, runners, workers, progress
    jobs/     tokenize, train, main (the demo)      report/  the token-budget report
    cli/      the ``corpustok`` command

The module names users imported before the folders existed (documented in the README and
docs/) still import: each is the module it became (:data:`MOVED`)."""
import importlib
import importlib.util
import sys

# Old name -> the module it is now. Only names the documentation gave users.
MOVED = {
    "run": "jobs.tokenize",
    "train": "jobs.train",
    "count": "jobs.count",
    "transforms": "runtime.transforms",
    "inputs": "read.inputs",
    "report_metrics": "report.metrics",
    "report_output": "report.output",
}


class _MovedModules:
    """Finds ``corpustok.pipeline.<old name>`` and gives the module it is now (the same
    object, so monkeypatching either name patches both)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        prefix, _, old = name.rpartition(".")
        if prefix != __name__ or old not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, _MovedModules)

    @staticmethod
    def create_module(spec):
        module = importlib.import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the old name's
        return module

    @staticmethod
    def exec_module(module):
        module.__spec__ = module.__spec__.loader_state


if not any(f is _MovedModules for f in sys.meta_path):
    sys.meta_path.append(_MovedModules)
