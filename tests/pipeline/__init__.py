"""The pipeline: the CLI, the jobs, readers, the output folder, exports, workers, Dask."""
