"""``python -m corpustok.pipeline.report ...``: the report command on its own."""
from corpustok.pipeline.report.job import main

raise SystemExit(main())
