"""Installed as ``corpustok.pipeline`` (``setup.py`` maps this folder; ``corpustok/pipeline`` links here).

Beam transforms, the jobs (tokenize, train, report, the demo), their I/O, the ``corpustok`` CLI."""
