"""Training a byte-level BPE tokenizer from corpus files with Beam.

The inputs' reading units (``transforms.plan_inputs``) are counted one per step (one kernel
call per table into a ``ChunkCounts``, with the documents, bytes and read errors: a
:class:`TrainPart`), the parts are merged across workers (a ``CombineGlobally``, pre-combined
where the runner lifts it), and one final step learns the merges from the merged counts with
``train_from_counts`` and writes the tokenizer file. Counting is the distributed part; merge
learning runs once, on the (much smaller) table of unique chunks. No side inputs and one
terminal step: every runner computes all of it (Beam's DaskRunner computes only the last step
and recomputes a side input's producers).
"""
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Optional

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.bpe.train import ChunkCounts, train_from_counts
from corpustok.pretokenize.patterns import resolve
from corpustok.substrate import alphabet, substrate_code

from corpustok.pipeline import files
from corpustok.pipeline.encode import COMPILE_NOTICE_AFTER, WARM_UP_TEXTS
from corpustok.pipeline.jobs.count import ChunkCountFn
from corpustok.pipeline.output.shards import write_json
from corpustok.pipeline.read.inputs import resolve_inputs, stdin_spooled
from corpustok.pipeline.read.spec import DEFAULT_SHARD_BYTES, ReadSpec
from corpustok.pipeline.runtime import progress
from corpustok.pipeline.runtime.progress import Progress
from corpustok.pipeline.runtime.runners import beam_options, dask_cluster, runs_here, wait
from corpustok.pipeline.runtime.transforms import ReadUnit, plan_inputs
from corpustok.pipeline.runtime.workers import DEFAULT_LOCAL_MODE, local_workers_env


def _sizes(batch):
    """(documents, UTF-8 bytes) of one DocBatch's non-empty texts."""
    text = batch.table.column("text")
    lengths = pc.binary_length(text)
    return (int(pc.sum(pc.greater(lengths, 0)).as_py() or 0), int(pc.sum(lengths).as_py() or 0))


@dataclass
class TrainPart:
    """Chunk counts of some reading units, with their documents, bytes and read errors."""

    counts: ChunkCounts
    documents: int = 0
    bytes: int = 0
    errors: list = field(default_factory=list)

    def merge(self, other):
        self.counts.merge(other.counts)
        self.documents += other.documents
        self.bytes += other.bytes
        self.errors += other.errors
        return self


class _CountUnit(beam.DoFn):
    """A reading unit -> its :class:`TrainPart`."""

    def __init__(self, read, pretokenizer):
        self._read = read
        self._pretokenizer = pretokenizer

    def process(self, unit):
        part = TrainPart(ChunkCounts(self._pretokenizer))
        for item in self._read.process(unit):
            if isinstance(item, beam.pvalue.TaggedOutput):  # a ReadError
                part.errors.append(item.value)
                continue
            docs, nbytes = _sizes(item)
            part.documents += docs
            part.bytes += nbytes
            part.counts.add(item.table.column("text"))
        yield part


class _MergeParts(ChunkCountFn):
    """:class:`TrainPart` elements (and None, the start element) -> one; merged as
    ``ChunkCountFn`` merges its counts."""

    def __init__(self, pretokenizer):
        super().__init__(pretokenizer=pretokenizer)

    def create_accumulator(self):
        return TrainPart(super().create_accumulator())

    def add_input(self, acc, part):
        return acc if part is None else acc.merge(part)


def _learn_and_save(part, planned, out, vocab_size, substrate, specials, info_path):
    """Runs on one worker: learn the merges from the merged :class:`TrainPart`, write the
    tokenizer to ``out`` (local or remote; not when no document was read) and the run's
    numbers to ``info_path`` beside it, for the driver to read; ``planned``: the read errors
    of inputs whose plan failed."""
    counts = part.counts
    errors = list(planned) + part.errors
    if part.documents and progress.active():  # a local run: the driver's stderr
        print(f"\ncorpustok train: learning the merges from {len(counts):,} distinct chunks "
              f"of {part.documents:,} documents ...", file=sys.stderr, flush=True)
    if part.documents:
        vocab, merges = train_from_counts(counts, vocab_size, substrate=substrate,
                                          special_tokens=specials)
        with tempfile.TemporaryDirectory(prefix="corpustok-train-") as tmp:
            local = os.path.join(tmp, "tokenizer.json")
            BytePairTokenizer(vocab, merges, substrate=substrate, special_tokens=specials,
                              pretokenizer=counts.pretokenizer).save(local)
            with open(local, "rb") as f:
                data = f.read()
        files.write_atomic(out, lambda f: f.write(data))
    write_json(info_path,
               {"documents": part.documents, "bytes": part.bytes, "chunks": len(counts),
                "errors": sorted(f"{e.source}: {e.error}" for e in errors)})


def warm_up_training(pretokenizer, substrate, specials, notice=None):
    """Count and learn on two small documents as the job will (``ChunkCounts``, then
    ``train_from_counts``, then a tokenizer built from the result), so that the training
    kernels compile here, once, before the job; returns the seconds it took.
    ``notice(seconds)``: as ``encode.warm_up``'s."""
    done = threading.Event()
    if notice is not None:
        threading.Thread(target=lambda: done.wait(COMPILE_NOTICE_AFTER) or
                         notice(COMPILE_NOTICE_AFTER), daemon=True).start()
    t0 = time.perf_counter()
    try:
        counts = ChunkCounts(pretokenizer)
        counts.add(pa.array(WARM_UP_TEXTS, pa.string()))
        size = len(alphabet(substrate)) + len(specials) + 8
        vocab, merges = train_from_counts(counts, size, substrate=substrate,
                                          special_tokens=specials)
        BytePairTokenizer(vocab, merges, substrate=substrate, special_tokens=specials,
                          pretokenizer=counts.pretokenizer).encode(WARM_UP_TEXTS[0])
    finally:
        done.set()
    return time.perf_counter() - t0


@dataclass(frozen=True)
class TrainOptions:
    """What :func:`train` takes besides its inputs, output file and vocabulary size; each field
    is a flag of ``corpustok train`` (``docs/cli.md``).

    The tokenizer: ``substrate`` (``ube``, ``utf8`` or ``utf16``), ``special_tokens`` (e.g.
    ``<|endoftext|>``: the first ids, never learned from the text), ``pretokenizer`` (a name
    of :mod:`corpustok.pretokenize.patterns` or a pattern the split kernel runs). The texts:
    ``text_column``; ``txt_docs``: a document per line (``"line"``) or paragraph
    (``"paragraph"``) of ``.txt`` inputs; ``stdin_format``/``stdin`` for an input ``-``
    (default: standard input); ``shard_bytes``: the size of a unit of work. The run:
    ``beam_args``, ``workers`` (local workers, threads or processes: ``local_mode``),
    ``worker_log`` (a file for the local worker processes' output; default: the caller's
    stderr), ``overwrite`` (replace an existing output file, else ValueError), ``progress``
    (say on stderr when the kernels compile, draw the bytes read while chunks are counted,
    say when the merges are learned).
    """

    substrate: str = "ube"
    special_tokens: tuple = ()
    pretokenizer: str = "gpt2"
    text_column: str = "text"
    txt_docs: str = "line"
    stdin_format: str = "jsonl"
    stdin: object = None
    shard_bytes: int = DEFAULT_SHARD_BYTES
    beam_args: tuple = ()
    workers: Optional[int] = None
    local_mode: str = DEFAULT_LOCAL_MODE
    worker_log: Optional[str] = None
    overwrite: bool = False
    progress: bool = False


def train(inputs, out, vocab_size, options: Optional[TrainOptions] = None, **fields):
    """Train a BPE tokenizer on ``inputs`` (files or globs, each optionally with its text
    column: ``INPUT:text=COL``, see ``inputs``) and save it to ``out``. The options are a
    :class:`TrainOptions`, whole (``options``) or as its fields by name.

    Returns ``info``: documents, bytes, unique chunks, ``seconds`` (the whole run's),
    ``compiling`` (the kernels' first compilation) and the errors of unreadable inputs (the
    rest is still used). Raises ValueError for bad arguments, an output folder that does not
    exist, an existing ``out`` without ``overwrite``, or inputs of which no document could be
    read (then no tokenizer is written).
    """
    o = replace(options or TrainOptions(), **fields)
    substrate, text_column, txt_docs = o.substrate, o.text_column, o.txt_docs
    beam_args, workers, progress = o.beam_args, o.workers, o.progress
    substrate_code(substrate)  # fail on bad arguments before reading a corpus
    pretokenizer = resolve(o.pretokenizer, "--pretokenizer", python=False)[2]
    specials = list(o.special_tokens)
    if not all(isinstance(t, str) and t for t in specials):
        raise ValueError(f"special tokens must be non-empty strings, got {specials!r}")
    folder = None if files.is_remote(out) else os.path.dirname(os.path.abspath(out))
    if folder is not None and not os.path.isdir(folder):
        raise ValueError(f"--out {out}: the folder {folder} does not exist")
    options, runner = beam_options(beam_args, workers, o.local_mode)
    files.use_options(options)  # remote inputs are matched before the pipeline exists
    with stdin_spooled(list(inputs), o.stdin_format, o.stdin or sys.stdin.buffer) as \
            (inputs, _):
        resolved = resolve_inputs(inputs, None, text_column)  # each file once
        paths, columns = resolved.paths, resolved.columns
        mapped_ids = sorted(p for p, c in columns.items() if c["id"] is not None)
        if mapped_ids:
            raise ValueError(f"train reads texts only: {mapped_ids[0]} maps an id column; "
                             "give its text column alone (INPUT:text=COL)")
        if files.exists(out) and not o.overwrite:
            raise ValueError(f"--out {files.shown(out)} exists; corpustok does not replace a "
                             "file unless told to (--overwrite; shard folders made with that "
                             "tokenizer name it by its sha256) or choose another --out")
        # Beside the output, so that workers of a remote runner can write it too.
        info_path = f"{out}.info-{uuid.uuid4().hex[:12]}.json"
        t0 = time.perf_counter()
        compiling = warm_up_training(pretokenizer, substrate, specials,
                                     _compile_notice if progress else None) \
            if runs_here(options, runner) else 0.0
        if progress and compiling > COMPILE_NOTICE_AFTER:
            _say(f"compiled in {compiling:.1f} s (cached for later runs)")
        try:
            spec = ReadSpec(id_column=None, text_column=text_column, txt_docs=txt_docs,
                            shard_bytes=o.shard_bytes)  # texts only
            units, planned = plan_inputs(paths, spec, columns)
            count = _CountUnit(ReadUnit(spec, columns), pretokenizer)
            with local_workers_env(o.worker_log), \
                    Progress(None, paths, show=progress, local=runs_here(options, runner),
                             label="train"), \
                    dask_cluster(options, runner, workers):
                p = beam.Pipeline(runner=runner, options=options)
                parts = (p
                         | "Units" >> beam.Create(units)
                         | "CountUnits" >> beam.ParDo(count))
                start = p | "Start" >> beam.Create([None])  # a part even with no unit
                ((parts, start)
                 | "Parts" >> beam.Flatten()
                 | "MergeParts" >> beam.CombineGlobally(_MergeParts(pretokenizer))
                 .without_defaults()
                 | "LearnMerges" >> beam.Map(_learn_and_save, planned, out, vocab_size,
                                             substrate, specials, info_path))
                wait(p.run())
            info = json.loads(files.read_bytes(info_path))
        finally:
            if files.exists(info_path):
                files.remove([info_path])
        if not info["documents"]:
            raise ValueError("no document with text could be read from the inputs, so no "
                             "tokenizer was written" +
                             "".join(f"\n  {e}" for e in info["errors"]))
        info["seconds"] = time.perf_counter() - t0
        info["compiling"] = compiling
        return info


def _say(line):
    print(f"corpustok train: {line}", file=sys.stderr, flush=True)


def _compile_notice(after):
    _say("compiling the training kernels (the first run on this machine; Numba caches them "
         "for later runs) ...")
