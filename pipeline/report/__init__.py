"""The token-budget report (``corpustok report``): ``metrics`` (counts, premiums, Gini,
encoding floor), ``output`` (tables, plots, summary.md) and ``job`` (training, the Beam
counting job, the command's options and its run).

``corpustok.pipeline.report.beam_report`` and ``run_report`` are documented names of ``job``:
they load it on first use."""


def __getattr__(name):
    if name in ("beam_report", "run_report", "add_report_parser"):
        from corpustok.pipeline.report import job  # here: the package stays light to import
        return getattr(job, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
