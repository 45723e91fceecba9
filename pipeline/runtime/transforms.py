"""The tokenize job's Beam steps: ``ReadUnit`` (a reading unit -> ``DocBatch`` elements),
``Tokenize`` (``DocBatch`` -> ``TokenBatch``), ``WriteShard`` (``TokenBatch`` -> a shard and
its entry), ``ShardUnits`` (the three chained in one step: the job's form) and
``WriteRunManifest``; :func:`tokenize_to_shards` puts them on a pipeline.

Each element is a whole Arrow table (a ``DocBatch``, then a ``TokenBatch``): one kernel call
per element, no per-document Beam overhead, and no GroupByKey on the hot path (local runners
would materialize it). The inputs are planned in the driver into small work descriptors (a
Parquet row group, a JSONL or text file) that ``Create`` spreads over the workers; the one
shuffle gathers the shard entries for the run manifest. DoFns hold plain configuration; the
tokenizer is built in ``setup()``.
"""
import typing

import apache_beam as beam
import pyarrow.compute as pc
from apache_beam.metrics import Metrics

from corpustok.pipeline import files
from corpustok.pipeline.batches import ReadError
from corpustok.pipeline.config import TokenizeConfig, config_hash
from corpustok.pipeline.encode import (DEFAULT_MAX_DOC_BYTES, kept_tokenizer, load_tokenizer,
                                       tokenize_batch)
from corpustok.pipeline.output.layout import META_DIR, RUN_MANIFEST, shard_name
from corpustok.pipeline.output.shards import (load_entry, remove_shards, run_manifest,
                                              stale_entries, unverified_entries, write_json,
                                              write_shard)
from corpustok.pipeline.read.errors import READ_ERRORS, ReadFailure
from corpustok.pipeline.read.inputs import mapping_of, source_name
from corpustok.pipeline.read.spec import KeepColumn, ReadSpec
from corpustok.pipeline.read.units import plan_units, read_unit
from corpustok.pipeline.runtime import progress
from corpustok.pipeline.runtime.unit_order import spread_over
from corpustok.pipeline.runtime.workers import freeze_in_local_worker

NAMESPACE = "corpustok"
ERRORS = "errors"
DONE = "done"


def _total(table, column):
    return int(pc.sum(table.column(column)).as_py() or 0)


def _counter(name):
    return Metrics.counter(NAMESPACE, name)


def plan_inputs(paths, spec: ReadSpec, columns=None):
    """``(units, errors)``: the reading units of every input (read as ``spec`` says, with its
    own columns where ``columns`` names it), planned here in the driver (a Parquet footer
    each; JSONL and text files are a unit each), and a ``ReadError`` per input whose plan
    failed. Planned before the pipeline runs so that its first step is a ``Create`` of units,
    which every runner spreads over its workers, one unit a work item (a Dask partition each;
    a planning step inside the pipeline left Dask one partition per 128 files)."""
    units, errors = [], []
    for path in (files.canonical(p) for p in paths):
        try:
            units += plan_units(path, spec.with_columns(mapping_of(path, columns)))
        except READ_ERRORS as e:
            errors.append(ReadError(files.shown(path), f"{type(e).__name__}: {e}"))
    return units, errors


def job_read_spec(config: TokenizeConfig) -> ReadSpec:
    """How a tokenize job's inputs are read, from its configuration."""
    return ReadSpec(config.id_column, config.text_column, config.id_type,
                    config.txt_docs or "line", config.shard_bytes, config.shard_rows,
                    tuple(KeepColumn.parse(k) for k in config.keep_columns or ()))


class ReadUnit(beam.DoFn):
    """A reading unit -> its ``DocBatch`` elements (read as ``spec`` says, with the input's
    own columns where ``columns`` names it), with tagged outputs: ``done`` (the entries of
    shards complete in ``out_dir`` with ``config_id``, not read again; ``sources``: each
    input's name in its shards) and ``errors`` (a ``ReadError``)."""

    def __init__(self, spec: ReadSpec, columns=None, out_dir=None, config_id=None,
                 sources=None):
        self._spec = spec
        self._columns = columns
        self._out_dir = out_dir
        self._config_id = config_id
        self._sources = sources

    def process(self, unit):
        entries = {}
        mapping = mapping_of(unit.source, self._columns)
        called = source_name(unit.source, self._sources)

        def is_done(source, start, stop):
            if self._out_dir is None:
                return False
            name = shard_name(source, start, stop, self._config_id, mapping, called)
            entries[name] = load_entry(self._out_dir, name, self._config_id, called)
            return entries[name] is not None

        try:
            for item in read_unit(unit, self._spec.with_columns(mapping), is_done=is_done,
                                  on_bytes=progress.reporter()):
                if isinstance(item, tuple):
                    _counter("shards_skipped").inc()
                    yield beam.pvalue.TaggedOutput(DONE, entries[shard_name(
                        unit.source, *item, self._config_id, mapping, called)])
                else:
                    yield item
        except READ_ERRORS as e:
            _counter("read_errors").inc()
            where = f"row group {unit.row_group}: " if unit.kind == "parquet" else ""
            yield beam.pvalue.TaggedOutput(
                ERRORS, ReadError(files.shown(unit.source), f"{where}{type(e).__name__}: {e}",
                                  e.verified_rows if isinstance(e, ReadFailure) else None))


class Tokenize(beam.DoFn):
    """``DocBatch`` -> ``TokenBatch``: one tokenizer batch call per element, with counters
    (documents, bytes, tokens, replaced, rejects.<reason>) and per-batch distributions.

    ``tokenizer``: a tokenizer file path (anything ``corpustok.load`` reads) or a picklable
    zero-argument factory; it is built once per DoFn instance in ``setup()``, or once per
    process when ``identity`` (its sha256, as the job's configuration names it) is given
    (``encode.kept_tokenizer``). ``threads``: the kernel threads of each batch call
    (``encode_arrays``).
    """

    def __init__(self, tokenizer, bos=None, eos=None, max_doc_bytes=DEFAULT_MAX_DOC_BYTES,
                 threads=1, identity=None, sources=None):
        self._spec = tokenizer
        self._sources = sources
        self._identity = identity
        self._threads = threads
        self._bos = bos
        self._eos = eos
        self._max_doc_bytes = max_doc_bytes
        self._tok = None

    def setup(self):
        if self._tok is None:  # setup() may run more than once (apache/beam#20098)
            self._tok = load_tokenizer(self._spec) if self._identity is None else \
                kept_tokenizer(self._spec, self._identity)
            freeze_in_local_worker()

    def process(self, batch):
        tb = tokenize_batch(self._tok, batch, self._bos, self._eos, self._max_doc_bytes,
                            self._threads, source_name(batch.source, self._sources))
        t = tb.tokens
        ntok = _total(t, "n_tokens")
        _counter("documents").inc(t.num_rows)
        _counter("tokens").inc(ntok)
        _counter("bytes").inc(_total(t, "n_bytes"))
        _counter("replaced").inc(_total(t, "replaced"))
        for item in pc.value_counts(tb.rejects.column("reason")).to_pylist():
            _counter(f"rejects.{item['values']}").inc(item["counts"])
        Metrics.distribution(NAMESPACE, "batch_documents").update(t.num_rows)
        Metrics.distribution(NAMESPACE, "batch_tokens").update(ntok)
        yield tb


class WriteShard(beam.DoFn):
    """``TokenBatch`` -> its shard in ``out_dir`` (``output.shards.write_shard``); outputs the
    shard's entry. ``columns``: the inputs' own columns (``read.inputs.resolve_inputs``), part
    of shard names."""

    def __init__(self, out_dir, tokenizer_sha256, config_id, write_rejects=False, run_id=None,
                 columns=None):
        self._args = (tokenizer_sha256, config_id, write_rejects, run_id)
        self._out_dir = out_dir
        self._columns = columns

    def process(self, tb):
        entry = write_shard(self._out_dir, tb, *self._args,
                            mapping=mapping_of(tb.source, self._columns))
        _counter("shards_written").inc()
        progress.shard_written()
        yield entry


class ShardUnits(beam.DoFn):
    """A reading unit -> the manifest entries of its shards and its ``ReadError`` (if any):
    each shard read, tokenized and written in turn inside this one step (``ReadUnit``,
    ``Tokenize`` and ``WriteShard``, chained), so the step's output
    is small and single. A runner that materializes what passes between steps (Beam's
    DaskRunner keeps a partition's output in a list) then holds one shard at a time, and a
    retried unit finds its shards written so far complete and skips them."""

    def __init__(self, read, tokenize, write, filesystem_args=()):
        self._read = read
        self._tokenize = tokenize
        self._write = write
        self._filesystem_args = tuple(filesystem_args)

    def setup(self):
        # A Dask worker gets no pipeline options: the driver's filesystem options (or, when
        # it had none, the worker's environment) reach the store.
        files.ensure_options(self._filesystem_args)
        self._tokenize.setup()

    def process(self, unit):
        for item in self._read.process(unit):
            if isinstance(item, beam.pvalue.TaggedOutput):  # a done entry or a ReadError
                yield item.value
                continue
            for tb in self._tokenize.process(item):
                yield from self._write.process(tb)


class WriteRunManifest(beam.PTransform):
    """Shard entries and ``ReadError`` elements (one PCollection or a tuple of them) -> the
    run manifest (``.corpustok/manifest.json``), written once every shard is done (the
    COMPLETED marker); outputs the manifest dict. ``errors``: read errors known when the
    pipeline is built (inputs whose plan failed). The shards of an input that failed part
    way which reach past its verified rows (``ReadError.verified_rows``: a corrupt compressed
    file's lines after its last verified member) are left out of the manifest and removed
    with the superseded ones; a rerun makes and removes them again, to the same folder.

    One terminal step on a single input: every element goes to one key of a GroupByKey (with
    a start element, so an empty run still writes its manifest), and no side input, which
    Beam's DaskRunner would compute a second time."""

    def __init__(self, out_dir, tokenizer_sha256, config, run_id=None, inputs=(), errors=()):
        super().__init__()
        self._out_dir = out_dir
        self._meta = (tokenizer_sha256, config)
        self._run_id = run_id
        self._inputs = list(inputs)
        self._errors = list(errors)

    def expand(self, pcolls):
        pcolls = tuple(pcolls) if isinstance(pcolls, (tuple, list)) else (pcolls,)
        out_dir = self._out_dir
        meta = self._meta
        run_id = self._run_id
        inputs = self._inputs
        planned = self._errors
        config_id = config_hash(meta[1])
        filesystem_args = files.filesystem_args()

        def write(_, items):
            files.ensure_options(filesystem_args)  # on a Dask worker, as in ShardUnits
            entry_list = [x for x in items if isinstance(x, dict)]
            error_list = planned + [x for x in items if isinstance(x, ReadError)]
            unverified = unverified_entries(entry_list, error_list)
            dropped = {x["shard"] for x in unverified}
            entry_list = [x for x in entry_list if x["shard"] not in dropped]
            # The manifest first: a crash between the two leaves the stale (or unverified)
            # shards' entries, which the next run removes in turn.
            stale = stale_entries(out_dir, entry_list, config_id, inputs, error_list,
                                  meta[1].get("columns"), meta[1].get("sources"))
            manifest = run_manifest(entry_list, error_list, *meta, superseded=stale)
            files.makedirs(files.join(out_dir, META_DIR))
            write_json(files.join(out_dir, RUN_MANIFEST), manifest, run_id)
            remove_shards(out_dir, stale + unverified)
            return manifest

        start = pcolls[0].pipeline | "Start" >> beam.Create([None])
        return ((*pcolls, start)
                | "Results" >> beam.Flatten()
                | "OneKey" >> beam.Map(lambda x: (None, x))
                | "Gather" >> beam.GroupByKey()
                | "WriteManifest" >> beam.MapTuple(write))


def tokenize_to_shards(pbegin, paths, out_dir, tokenizer, config: TokenizeConfig, *,
                       max_doc_bytes=DEFAULT_MAX_DOC_BYTES, run_id=None, threads=1,
                       split_among=None):
    """The whole tokenize job on a pipeline: ``Create`` of the planned units, one
    :class:`ShardUnits` step (read, tokenize, write shards), then the run manifest: a shape
    every runner computes whole (a single terminal step that depends on every shard).
    ``tokenizer``: what :class:`Tokenize` builds its tokenizer from, the one ``config``
    names; ``threads``: kernel threads per batch; ``split_among``: the workers a local runner
    splits the units among by position (:func:`unit_order.spread_over`), None for a runner
    that hands them out itself. Returns the PCollection holding the run
    manifest dict."""
    c = config
    spec = job_read_spec(c)
    units, errors = plan_inputs(paths, spec, c.columns)
    shards = ShardUnits(ReadUnit(spec, c.columns, out_dir, c.id, c.sources),
                        Tokenize(tokenizer, c.bos, c.eos, max_doc_bytes, threads,
                                 c.tokenizer_sha256, c.sources),
                        WriteShard(out_dir, c.tokenizer_sha256, c.id, c.write_rejects, run_id,
                                   c.columns),
                        files.filesystem_args())
    # Output type declared (what Beam infers anyway): inferring it walks the bytecode of
    # every process() the step chains, 0.05 s of each job's start (measured 2026-12-07).
    results = pbegin | "Units" >> beam.Create(spread_over(units, split_among)) | \
        "Shards" >> beam.ParDo(shards).with_output_types(typing.Any)
    return results | "WriteRunManifest" >> WriteRunManifest(
        out_dir, c.tokenizer_sha256, c.to_dict(), run_id, paths, errors)
