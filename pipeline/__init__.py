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
from corpustok.moved import keep_old_names

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


keep_old_names(__name__, MOVED)
