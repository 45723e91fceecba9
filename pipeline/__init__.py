"""Installed as ``corpustok.pipeline`` (``setup.py`` maps this folder; a checkout finds it beside ``corpustok/``).

Beam transforms, the jobs (tokenize, train, report, the demo), their I/O, the ``corpustok`` CLI."""
