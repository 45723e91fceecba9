"""Running the jobs on Beam: the tokenize job's transforms (``transforms``), runner options
and the Dask cluster (``runners``), local worker processes and threads (``workers``,
``worker_main``) and the progress line (``progress``)."""
