"""Which Beam runner runs a job, with which options.

Local runs use the FnApiRunner directly (Beam 2.77's DirectRunner first tries to download the
Prism runner, which fails offline); ``workers`` > 1 scales it over cores, as threads of this
process (Beam's ``multi_threading`` mode, the default: the kernels release the GIL, and it was
as fast or faster end to end and quicker to start, decision 0018) or as worker processes
(``multi_processing``). ``--runner dask`` runs the job on Dask (Beam's DaskRunner over
``dask.distributed``: a local cluster of worker processes, or a scheduler's workers with
``--dask_client_address``); it computes Create, ParDo, GroupByKey and Flatten, which is all the
jobs use. Any other Beam option passes through, so ``--runner DataflowRunner|FlinkRunner|
SparkRunner ...`` runs the same job elsewhere.
"""
import importlib
import logging
import multiprocessing
from contextlib import contextmanager

from corpustok.pipeline.runtime.workers import DEFAULT_LOCAL_MODE, LOCAL_MODES

DASK_NAMES = ("dask", "daskrunner")  # --runner values that mean Beam's DaskRunner
# Beam is imported inside the functions here: the CLI imports this module for every command,
# and only the commands that run a pipeline load Beam.


def check_beam_args(beam_args):
    """Raise ValueError naming the arguments that no Beam option knows: Beam itself only logs
    and drops them, so a typo such as ``--rejetcs`` would otherwise pass unnoticed."""
    if not beam_args:  # nothing to check: spares loading the Dask runner (0.2 s) for its options
        return
    # here: Beam loads only when a job runs (see the top)
    from apache_beam.options.pipeline_options import PipelineOptions

    try:  # its options exist only once its module is loaded
        importlib.import_module("apache_beam.runners.dask.dask_runner")
    except ImportError:
        pass
    # Beam's public API: the options every PipelineOptions class knows, with and without the
    # ones it does not (which Beam would log as discarded: quiet here, they are named below).
    options = PipelineOptions(list(beam_args))
    beam_logger = logging.getLogger("apache_beam.options.pipeline_options")
    level = beam_logger.level
    beam_logger.setLevel(logging.ERROR)
    try:
        known = options.get_all_options(drop_default=False)
        every = options.get_all_options(drop_default=False, retain_unknown_options=True)
    finally:
        beam_logger.setLevel(level)
    names = {k.split("=", 1)[0] for k in every if k not in known}
    flags = [a for a in beam_args if a.startswith("-") and (
        a.lstrip("-").split("=", 1)[0] in names or not a.startswith("--"))]  # Beam's are --x
    if flags:
        raise ValueError(f"unknown option(s) {' '.join(flags)}: neither a corpustok option nor "
                         "an Apache Beam pipeline option (see --help)")


def beam_options(beam_args=(), workers=None, local_mode=DEFAULT_LOCAL_MODE):
    """``(PipelineOptions, runner or None)``: FnApiRunner unless ``--runner`` is given;
    ``workers`` > 1 runs that many local workers, threads or processes (``local_mode``, a
    :data:`LOCAL_MODES` key). ``--runner dask`` gives Beam's DaskRunner, one partition per
    element of a ``Create`` unless ``--dask_npartitions`` or ``--dask_partition_size`` says
    otherwise; run the job inside :func:`dask_cluster`. Any other runner name is Beam's
    (None: Beam builds it from the options)."""
    # here: Beam loads only when a job runs (see the top)
    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    check_beam_args(beam_args)
    if local_mode not in LOCAL_MODES:
        raise ValueError(f"local mode {local_mode!r}: one of {', '.join(LOCAL_MODES)}")
    args = list(beam_args)
    name = PipelineOptions(args).view_as(StandardOptions).runner
    dask = name is not None and name.lower() in DASK_NAMES
    if not dask and any(a.startswith("--dask_client_address") for a in args):
        raise ValueError("a Dask scheduler address (--dask-address) needs --runner dask")
    if dask:
        DaskRunner = _dask_runner()
        if not any(a.startswith(("--dask_npartitions", "--dask_partition_size")) for a in args):
            args.append("--dask_partition_size=1")  # a unit a partition: spread, retried alone
        return PipelineOptions(args), DaskRunner()
    if name is not None:
        return PipelineOptions(args), None
    if workers and workers > 1:
        args += [f"--direct_running_mode={LOCAL_MODES[local_mode]}",
                 f"--direct_num_workers={workers}"]
    options = PipelineOptions(args)
    # here: Beam loads only when a job runs (see the top)
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    return options, FnApiRunner(provision_info=_worker_provision(options))


def _dask_runner():
    """Beam's DaskRunner class (importing it also registers the ``--dask_*`` options)."""
    try:
        # here: Beam loads only when a job runs (see the top)
        from apache_beam.runners.dask.dask_runner import DaskRunner
        importlib.import_module("distributed")  # DaskRunner imports it only when it runs
    except ImportError as e:
        raise ValueError(f"--runner dask needs Dask ({e}): pip install 'corpustok[dask]'") from e
    return DaskRunner


def is_dask(runner):
    return type(runner).__name__ == "DaskRunner"


def positional_split(options, runner):
    """The number of workers among which Beam's local runner splits each step's elements by
    position before it runs them (element ``i`` to worker ``i % n``): ``direct_num_workers``,
    0 meaning the machine's CPU count and unset meaning one, as Beam reads it; None for any
    other runner, which hands elements out its own way (see
    :mod:`corpustok.pipeline.runtime.unit_order`)."""
    if runner is None or is_dask(runner):
        return None
    # here: Beam loads only when a job runs (see the top)
    from apache_beam.options.pipeline_options import DirectOptions
    n = options.view_as(DirectOptions).direct_num_workers
    return multiprocessing.cpu_count() if n == 0 else (n or 1)


def runs_here(options, runner):
    """Whether the job's workers run on this machine (so they can report progress): the
    FnApiRunner, or Dask with no scheduler address (:func:`dask_cluster` starts one)."""
    if runner is None:
        return False
    return not is_dask(runner) or not options.get_all_options().get("address")


def where_it_runs(options, runner, out_dir):
    """One line for the driver when the job's workers run elsewhere (no live progress): the
    runner or Dask scheduler, and the store the output goes to; None when they run here."""
    if runs_here(options, runner):
        return None
    found = options.get_all_options()
    where = f"the Dask scheduler {found.get('address')}" if is_dask(runner) else \
        f"Beam's {found.get('runner')}"
    endpoint = found.get("s3_endpoint_url")
    store = f"{out_dir}" + (f" (through {endpoint})" if endpoint and
                            out_dir.startswith("s3://") else "")
    return (f"running on {where}, writing {store}; its workers report no live progress: the "
            "summary is read from the run manifest when the job ends")


@contextmanager
def dask_cluster(options, runner, workers=None):
    """Around a job run by ``runner``: for Beam's DaskRunner without a scheduler address
    (``--dask_client_address``), a ``distributed.LocalCluster`` of ``workers`` processes of
    one thread each for the job, closed after it; with an address, that scheduler's workers
    run it. Anything else: nothing."""
    if not is_dask(runner) or options.get_all_options().get("address"):
        yield
        return
    from apache_beam.runners.dask.dask_runner import DaskOptions  # here: only for --runner dask
    from distributed import LocalCluster
    log = logging.getLogger("distributed")  # its INFO lines on start, close and each worker
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        with LocalCluster(n_workers=max(1, workers or 1), threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=logging.ERROR,
                          preload=["corpustok.pipeline.runtime.workers"]) as cluster:
            view = options.view_as(DaskOptions)
            view.address = cluster.scheduler_address
            try:
                yield
            finally:
                view.address = None
    finally:
        log.setLevel(level)


def wait(result):
    """Wait for a started job; a Dask job's client is closed after it (it would otherwise
    outlive the cluster and log its lost connection)."""
    try:
        result.wait_until_finish()
    finally:
        client = getattr(result, "client", None)
        if client is not None:
            client.close()


def _worker_provision(options):
    """What the FnApiRunner tells the worker processes it starts: the job's options, which it
    otherwise leaves out (so a remote filesystem needing options, such as S3 with an endpoint,
    failed in local workers), and a CRITICAL log level unless the user chose one (each worker
    logged ~20 INFO lines about its gRPC channels, and every failure again, which the driver
    reports itself). Options with number values stay out: the
    provision format turns numbers into floats, which option flags do not parse back, and
    workers need none of them."""
    # here: Beam loads only when a job runs (see the top)
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner.fn_runner import ExtendedProvisionInfo
    from google.protobuf import struct_pb2

    def plain(v):
        return isinstance(v, (str, bool)) or (isinstance(v, list) and
                                              all(isinstance(x, str) for x in v))

    opts = {k: v for k, v in options.get_all_options(drop_default=True).items() if plain(v)}
    opts.setdefault("default_sdk_harness_log_level", "CRITICAL")
    struct = struct_pb2.Struct()
    struct.update({"options": opts})
    return ExtendedProvisionInfo(beam_provision_api_pb2.ProvisionInfo(
        retrieval_token="unused-retrieval-token", pipeline_options=struct))
