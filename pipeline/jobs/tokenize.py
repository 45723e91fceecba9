"""Running the tokenize job: arguments, the output folder's claim, progress, the result.

The runner and its options come from :mod:`~corpustok.pipeline.runtime.runners`; what a run
did (shards written and kept, bytes) is read from the run manifest and the folder, never
from Beam's metrics, which some runners (Dask) do not report.
"""
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from corpustok.schemas import DOCUMENTS, ID_KINDS, TOKENS
from corpustok.parallel import check_threads
from corpustok.formats.tiktoken import known_rank_file
from corpustok.wordpiece.tokenizer import WordPiece

from corpustok.pipeline import files
from corpustok.pipeline.config import TokenizeConfig
from corpustok.pipeline.encode import (COMPILE_NOTICE_AFTER, DEFAULT_MAX_DOC_BYTES,
                                       keep_tokenizer, load_tokenizer, tokenizer_spec, warm_up)
from corpustok.pipeline.output.layout import (LAYOUT, RUN_MANIFEST, OutputClaim, check_out_dir,
                                              entry_names, job_record, not_writable)
from corpustok.pipeline.output.shards import load_entry, write_json
from corpustok.pipeline.read.inputs import STDIN_NAME, job_id_type, resolve_inputs, spool_stdin
from corpustok.pipeline.read.spec import DEFAULT_SHARD_BYTES, DEFAULT_SHARD_ROWS, KeepColumn
from corpustok.pipeline.read.units import input_kind
from corpustok.pipeline.runtime.progress import Progress
from corpustok.pipeline.runtime.runners import (beam_options, dask_cluster, positional_split,
                                                runs_here, wait, where_it_runs)
from corpustok.pipeline.runtime.startup import process_began
from corpustok.pipeline.runtime.workers import (DEFAULT_LOCAL_MODE, available_cores,
                                                local_workers_env)

DEFAULT_MAX_REJECT_FRACTION = 0.5
# The run manifest's status when more rows were rejected than the job allows: the shards are
# written, but the run is not a job done (an input of another format than its name says).
TOO_MANY_REJECTS = "COMPLETED_WITH_TOO_MANY_REJECTS"


@dataclass
class RunTimes:
    """Where a run's wall time went: ``total``, of which ``preparing`` (inputs matched, the
    tokenizer loaded, the configuration found), ``compiling`` (the kernels' warm-up: their
    first compilation on this machine, else a fraction of a second), ``startup`` (from then
    to the first input byte read: the output folder claimed, Beam and its workers started;
    None when unknown, as on a remote runner) and the work after it; ``stored_bytes``: the
    input bytes read as stored (compressed files count compressed bytes), what the progress
    line counts; ``starting``: the seconds the process ran before the job began (Python's
    start and the imports), known where the console script noted the process's start
    (``runtime.startup.process_began``), else 0, and not part of ``total``."""

    total: float
    preparing: float
    compiling: float
    startup: Optional[float]
    stored_bytes: int
    starting: float = 0.0

    @property
    def work(self):
        """Seconds from the first input byte read to the end, or None when unknown."""
        if self.startup is None:
            return None
        return max(self.total - self.preparing - self.compiling - self.startup, 1e-3)


class JobFailed(RuntimeError):
    """The pipeline itself failed (a bug, a worker that died): not an input or an argument."""


@dataclass
class RunResult:
    """What a finished run produced: the run manifest, Beam counters (where the runner
    reports them), wall time, the input paths that named a file already read
    (``duplicates``), the files of a previous job that ``overwrite`` removed, the seconds
    until the first input byte was read (``startup``: Beam, workers, tokenizer; None when
    unknown, as on a remote runner) and the names of the manifest's shards that were already
    complete when the run began (``kept``: not written again)."""

    manifest: dict
    counters: dict = field(default_factory=dict)
    seconds: float = 0.0
    duplicates: int = 0
    removed: list = field(default_factory=list)
    startup: Optional[float] = None
    kept: frozenset = frozenset()
    times: Optional["RunTimes"] = None

    @property
    def written(self):
        """The manifest's shards this run wrote."""
        return [e for e in self.manifest["shards"] if e["shard"] not in self.kept]

    @property
    def ok(self):
        return self.manifest["status"] == "COMPLETED"

    @property
    def reject_fraction(self):
        """Rejected rows over all rows read."""
        return _rejected_fraction(self.manifest)


def _rejected_fraction(manifest):
    t = manifest["totals"]
    rejected = sum(t["rejects"].values())
    return rejected / max(1, rejected + t["documents"])


def tokenizer_identity(spec):
    """``(sha256, tokenizer)``: the file's hash, or that of the tokenizer's ``to_dict()`` for
    a factory and for any WordPiece (its casing, detected when a vocab.txt loads, is then
    part of the job: a rule that decides otherwise makes another job, not a mixed one);
    loading here first turns a malformed tokenizer file into one clear error before Beam
    starts."""
    tok = load_tokenizer(spec)
    if callable(spec) or isinstance(tok, WordPiece):
        blob = json.dumps(tok.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest(), tok
    return files.sha256_of(spec), tok


def tokenizer_name(spec, sha256):
    """A label for the tokenizer a job's ids are of (manifests, export metadata): a known
    rank file's name (``cl100k_base``, ...), else the file's or folder's name."""
    known = known_rank_file(sha256) if isinstance(spec, str) else None
    if known:
        return known["name"]
    path = getattr(spec, "path", spec)
    if not isinstance(path, str):
        return getattr(spec, "cls", type(spec)).__name__
    return files.shown(path.rstrip("/").rsplit("/", 1)[-1])


def resolve_marker(tok, value, name):
    """A BOS/EOS id from an int, a decimal string or a special token of ``tok`` (or None).
    A token string must be one of the tokenizer's special tokens: an ordinary token (``the``)
    would be taken for text; its id, given as a number, is used as asked."""
    if value is None:
        return None
    if isinstance(value, str):
        i = int(value) if value.lstrip("-").isdigit() else tok.token_to_id(value)
        if i is None:
            raise ValueError(f"--{name} {value!r} is not a token of this tokenizer; give an "
                             "id or a token string from its vocabulary")
        specials = list(getattr(tok, "special_tokens", ()) or ())
        if not value.lstrip("-").isdigit() and value not in specials:
            shown = ", ".join(repr(t) for t in specials[:6]) or "none"
            raise ValueError(f"--{name} {value!r} is an ordinary token of the vocabulary (id "
                             f"{i}), not a special token (this tokenizer's: {shown}): a "
                             f"document would end or begin with text; give its id (--{name} "
                             f"{i}) to use it anyway")
        value = i
    if not 0 <= value < tok.vocab_size:
        raise ValueError(f"--{name} {value} is outside the tokenizer's ids "
                         f"0..{tok.vocab_size - 1}")
    if tok.id_to_token(int(value)) is None:
        raise ValueError(f"--{name} {value} is an unused id of this tokenizer (no token has "
                         "it)")
    return int(value)


def _job_inputs(out_dir, mode, resolved, txt_docs):
    """``(paths, columns, txt_docs, names)`` the job's configuration is found from: with
    ``append``, the job's earlier inputs (in its record) join ``paths`` and keep the columns
    it gives them unless given again; ``txt_docs`` only when the job has a text input;
    ``names``: each input's name in the shards (:class:`~inputs.Inputs`), an input the
    folder's job already has keeping the name it was given first (unless ``overwrite``), so
    that a rerun from another folder or with other spellings names it as before."""
    paths, columns, names = resolved.paths, resolved.columns, dict(resolved.names)
    record = job_record(out_dir) or {}
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    if mode == "append":
        shown = {files.shown(p) for p in paths}
        earlier = config.get("columns") or {}
        columns = {**{k: v for k, v in earlier.items() if k not in shown}, **columns}
        paths = paths + [files.unshown(p) for p in record.get("inputs", [])
                         if isinstance(p, str) and p not in shown]
    if mode != "overwrite" and config.get("layout") == LAYOUT:
        kept = config.get("sources") or {}
        names.update({k: v for k, v in kept.items() if isinstance(v, str)})
    names = {files.shown(p): names.get(files.shown(p), files.shown(p)) for p in paths}
    txt = any(input_kind(p) == "txt" for p in paths)
    return paths, columns or None, txt_docs if txt else None, names


@dataclass(frozen=True)
class RunOptions:
    """What :func:`tokenize` takes besides its inputs, output folder and tokenizer; each field
    is a flag of ``corpustok tokenize`` (``docs/cli.md``).

    What a document is and which rows are kept:
    ``id_column`` (None: the inputs have no ids), ``text_column``; ``txt_docs``: a document per
    line (``"line"``) or per paragraph (``"paragraph"``) of ``.txt`` inputs; ``id_type``:
    ``auto`` (integers when every input's first ids are, else strings), ``string`` or
    ``int64``; ``keep_columns``: columns or nested fields carried into the shards
    (``NAME[:TYPE]`` strings or :class:`~read.spec.KeepColumn`, see ``read.spec``);
    ``stdin_format`` (``jsonl`` or ``txt``) and ``stdin`` (default: the process's standard
    input) for an input ``-``, spooled to a temporary file named by its content.

    What the shards hold: ``bos``/``eos`` (ids or special-token strings put around every
    document), ``shard_bytes``/``shard_rows`` (a shard's size), ``write_rejects`` (rejected
    rows kept in ``rejects/``), ``max_doc_bytes`` (longer documents are streamed; never changes
    an id), ``max_reject_fraction`` (more rejected rows than this fraction of those read make
    the run manifest's status :data:`TOO_MANY_REJECTS`, not COMPLETED).

    How it runs: ``beam_args`` (Beam's own options), ``workers`` (local workers, threads or
    processes: ``local_mode``), ``threads`` (kernel threads of each batch call), ``progress``
    (a progress line on stderr), ``mode`` (None, ``"overwrite"`` or ``"append"``),
    ``worker_log`` (a file the local worker processes write their output to; default: the
    caller's stderr), ``on_remove(path)`` (called for each file of a previous job that
    ``overwrite`` deletes, as it goes), ``on_tokenizer(tok)`` (once the tokenizer is loaded,
    before the job starts).
    """

    id_column: Optional[str] = "id"
    text_column: str = "text"
    txt_docs: str = "line"
    id_type: str = "auto"
    keep_columns: tuple = ()
    stdin_format: str = "jsonl"
    stdin: object = None
    bos: object = None
    eos: object = None
    shard_bytes: int = DEFAULT_SHARD_BYTES
    shard_rows: int = DEFAULT_SHARD_ROWS
    write_rejects: bool = False
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES
    max_reject_fraction: float = DEFAULT_MAX_REJECT_FRACTION
    beam_args: tuple = ()
    workers: Optional[int] = None
    local_mode: str = DEFAULT_LOCAL_MODE
    threads: int = 1
    progress: bool = False
    mode: Optional[str] = None
    worker_log: Optional[str] = None
    on_remove: Optional[Callable] = None
    on_tokenizer: Optional[Callable] = None


def tokenize(inputs, out_dir, tokenizer, options: Optional[RunOptions] = None,
             **fields) -> RunResult:
    """Tokenize ``inputs`` (a file or glob, or a list of them, each optionally with its
    columns: ``INPUT:id=COL,text=COL``, see ``inputs``) into shards in ``out_dir`` and return
    the result. ``tokenizer``: a tokenizer file or folder (what ``--tokenizer`` takes), a
    corpustok tokenizer object, or a factory returning one. The options are a
    :class:`RunOptions`, given whole (``options``) or as its fields by name
    (``tokenize(inputs, out, tok, eos=50256, workers=2)``); a name that is not a field is a
    TypeError.

    Complete shards of an earlier run of the same job (inputs, tokenizer, options) are kept,
    not redone; a folder holding another job refuses unless ``mode`` is ``"overwrite"``
    (remove that job's files) or ``"append"`` (the same tokenizer and options, more inputs):
    see ``output.layout``. Raises ValueError for bad arguments (no matching input, malformed
    tokenizer, unknown BOS/EOS token, a folder in use or holding another job) and
    ``output.layout.OutputNotWritable`` when the folder cannot be written.
    """
    begin = time.perf_counter()
    o = replace(options or RunOptions(), **fields)
    o = replace(o, beam_args=tuple(o.beam_args), keep_columns=_keep_columns(o.keep_columns))
    inputs = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    inputs, spooled = spool_stdin([os.fspath(i) for i in inputs], o.stdin_format,
                                  o.stdin or sys.stdin.buffer)
    try:
        return _tokenize(inputs, os.fspath(out_dir), tokenizer_spec(tokenizer), spooled, begin,
                         o)
    finally:
        if spooled is not None:
            os.remove(spooled)


def _tokenize(inputs, out_dir, tokenizer, spooled, begin, o: RunOptions):
    """:func:`tokenize` once its arguments are normalized (standard input spooled to the
    file ``spooled``, named :data:`~inputs.STDIN_NAME`); ``begin``: when it started."""
    # Here, not at the top: Beam (and the transforms, which import it) load when a job runs,
    # not when the CLI or a caller imports this module.
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter
    from corpustok.pipeline.runtime.transforms import NAMESPACE, tokenize_to_shards

    check_threads(o.threads)  # here, not as a worker's failure
    options, runner = beam_options(o.beam_args, o.workers, o.local_mode)
    files.use_options(options)  # remote paths are read below, before the pipeline exists
    resolved = resolve_inputs(inputs, o.id_column, o.text_column)
    if spooled is not None:
        resolved.names[files.shown(files.canonical(spooled))] = STDIN_NAME
    paths, duplicates = resolved.paths, resolved.duplicates
    check_out_dir(out_dir, resolved.patterns, paths)
    job_paths, columns, txt_docs, names = _job_inputs(out_dir, o.mode, resolved, o.txt_docs)
    tok_sha, tok = tokenizer_identity(tokenizer)
    keep_tokenizer(tok_sha, tok)  # in-process workers use it: no second load
    if o.on_tokenizer is not None:
        o.on_tokenizer(tok)
    bos = resolve_marker(tok, o.bos, "bos")
    eos = resolve_marker(tok, o.eos, "eos")
    # Everything that changes what a shard holds or which shards exist: a rerun with other
    # values redoes the shards (and the stale ones are removed when the run completes).
    config = TokenizeConfig(tok_sha, bos, eos, o.id_column, o.text_column, o.shard_bytes,
                            o.shard_rows, bool(o.write_rejects),
                            _id_type(o.id_type, job_paths, o.id_column, columns), columns,
                            txt_docs,
                            vocab_size=int(tok.vocab_size),
                            tokenizer_name=tokenizer_name(tokenizer, tok_sha), sources=names,
                            layout=LAYOUT,
                            keep_columns=[str(k) for k in o.keep_columns] or None)
    compiling = warm_up(tok, o.threads, _compile_notice if o.progress else None) \
        if runs_here(options, runner) else 0.0
    if o.progress and compiling > COMPILE_NOTICE_AFTER:
        _say(f"compiled in {compiling:.1f} s (cached for later runs)")
    t0 = time.perf_counter()
    wall0 = time.time()  # the workers stamp their first read with the wall clock
    elsewhere = where_it_runs(options, runner, out_dir)
    if o.progress and elsewhere:
        _say(elsewhere)
    with OutputClaim(out_dir, config.to_dict(), config.id, paths, o.mode, o.on_remove) as claim:
        before = _complete_shards(out_dir, config.id)
        try:
            with local_workers_env(o.worker_log), \
                    Progress(out_dir, paths, show=o.progress,
                             local=runs_here(options, runner)) as prog, \
                    dask_cluster(options, runner, o.workers):  # its workers see the two above
                p = beam.Pipeline(runner=runner, options=options)  # after: Dask's address
                tokenize_to_shards(p, claim.inputs, out_dir, tokenizer, config,
                                   max_doc_bytes=o.max_doc_bytes, run_id=claim.run_id,
                                   threads=o.threads,
                                   split_among=positional_split(options, runner))
                result = p.run()
                wait(result)
        except Exception as e:
            full = not_writable(e, out_dir) or _not_writable_in(e, out_dir)
            if full is not None:
                raise full from e
            # The arguments were checked above: what fails now is the job (exit 3), whatever
            # the type (Beam re-raises a worker's error with that error's type).
            raise JobFailed(f"the tokenize job failed: {type(e).__name__}: {e}") from e
        manifest = json.loads(files.read_bytes(files.join(out_dir, RUN_MANIFEST)))
        if manifest["status"] == "COMPLETED" and \
                _rejected_fraction(manifest) > o.max_reject_fraction:
            # Not a job done: exports and PackedSequences take COMPLETED folders only.
            manifest["status"] = TOO_MANY_REJECTS
            write_json(files.join(out_dir, RUN_MANIFEST), manifest, claim.run_id)
        seconds = time.perf_counter() - begin
    counters = {}
    try:
        query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
        for c in query["counters"]:
            counters[c.key.metric.name] = counters.get(c.key.metric.name, 0) + c.committed
    except (NotImplementedError, AttributeError, KeyError):
        pass  # some runners report no metrics
    startup = None if prog.first_read is None else max(0.0, prog.first_read - wall0)
    kept = frozenset(e["shard"] for e in manifest["shards"]) & before
    began = process_began()  # the console script's: its start and imports came before
    times = RunTimes(total=seconds, preparing=t0 - begin - compiling, compiling=compiling,
                     startup=startup, stored_bytes=prog.read_bytes,
                     starting=0.0 if began is None else max(0.0, begin - began))
    return RunResult(manifest, counters, seconds, duplicates, claim.removed, startup, kept,
                     times)


def _say(line):
    print(f"corpustok tokenize: {line}", file=sys.stderr, flush=True)


def _compile_notice(after):
    _say("compiling the kernels for this tokenizer (the first run of its family on this "
         "machine; Numba caches them for later runs) ...")


def _keep_columns(given):
    """The kept columns (``NAME[:TYPE]`` strings or ``KeepColumn``s) as ``KeepColumn``s;
    ValueError for a name given twice or one the shards' own columns have."""
    keep = tuple(k if isinstance(k, KeepColumn) else KeepColumn.parse(k) for k in given)
    names = [k.name for k in keep]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"--keep-column {name!r} is given twice")
        if name in TOKENS.names or name in DOCUMENTS.names:
            raise ValueError(f"--keep-column {name!r}: the shards have a column of that name; "
                             "keep another")
    return keep


def _id_type(chosen, paths, id_column, columns):
    """The job's id type: ``chosen`` (``string`` or ``int64``), or with ``auto`` the one the
    inputs' first ids give (``read.inputs.job_id_type``)."""
    if chosen == "auto":
        return job_id_type(paths, id_column, columns)
    if chosen not in ID_KINDS:
        raise ValueError(f"--id-type must be auto, {' or '.join(ID_KINDS)}, got {chosen!r}")
    return chosen


def _complete_shards(out_dir, config_id):
    """Names of the shards of ``config_id`` complete in ``out_dir`` (what a run keeps)."""
    return frozenset(name for name in entry_names(out_dir)
                     if load_entry(out_dir, name, config_id) is not None)


def _not_writable_in(e, out_dir):
    """An :class:`~output.layout.OutputNotWritable` from the text of a worker's error (Beam's
    multi-process runner passes a worker's exception on as text only), or None."""
    for m in re.finditer(r"\[Errno (\d+)\] ([^:'\n]+)(?:: '([^'\n]*)')?", str(e)):
        found = not_writable(OSError(int(m.group(1)), m.group(2), m.group(3)), out_dir)
        if found is not None:
            return found
    return None


def summary(result: RunResult) -> str:
    """A human-readable summary of a run."""
    t = result.manifest["totals"]
    written = result.written
    mb = t["bytes"] / 1e6
    superseded = result.manifest.get("superseded", [])
    lines = [f"corpustok: {result.manifest['status']}",
             f"  documents  {t['documents']:,}",
             f"  tokens     {t['tokens']:,}"
             + (f" ({t['tokens'] / t['documents']:.1f} per document)" if t["documents"] else ""),
             f"  text       {mb:,.2f} MB ({t['replaced']:,} U+FFFD replacements)",
             f"  shards     {t['shards']} ({len(written)} written, "
             f"{t['shards'] - len(written)} already complete"
             + (f", {len(superseded)} of inputs changed since replaced" if superseded else "")
             + ")",
             "  rejects    " + (", ".join(f"{r}: {n:,}" for r, n in t["rejects"].items())
                                or "none"),
             _time_line(result, sum(e["bytes"] for e in written))]
    hint = _shard_hint(t["shards"], t["bytes"])
    if hint:
        lines.append(hint)
    if result.duplicates:
        lines.append(f"  inputs     {result.duplicates} path(s) named a file already read "
                     "(links, ./x and x, a symlink loop): read once")
    for e in result.manifest["errors"]:
        lines.append(f"  ERROR {e['source']}: {e['error']}")
    return "\n".join(lines)


def _time_line(result, nbytes):
    """Wall time, all of it, and where it went: the throughput is that of the work after the
    start-up (compiling the kernels never counts as throughput), in text bytes (what the
    documents hold, as ``n_bytes`` counts them) and tokens; the progress line's rate is of
    input bytes as stored, given here too when they differ. The process's own start
    (``RunTimes.starting``) comes first where it is known."""
    t = result.times
    if t is None or t.work is None or not nbytes:
        total = result.seconds if t is None else t.total + t.starting
        return f"  time       {total:.1f} s, Beam start-up included"
    tokens = sum(e["tokens"] for e in result.written)
    parts = [f"{t.starting:.1f} s starting (Python, imports)"] if t.starting else []
    parts.append(f"{t.preparing:.1f} s preparing (inputs, tokenizer)")
    if t.compiling > COMPILE_NOTICE_AFTER:
        parts.append(f"{t.compiling:.1f} s compiling the kernels (first run only)")
    parts.append(f"{t.startup:.1f} s start-up (output folder, Beam, workers)")
    stored = ""
    if t.stored_bytes and abs(t.stored_bytes - nbytes) > 0.01 * nbytes:
        stored = f"; {t.stored_bytes / 1e6 / t.work:,.1f} MB/s of input as stored"
    return (f"  time       {t.total + t.starting:.1f} s: {', '.join(parts)}, then "
            f"{nbytes / 1e6:,.2f} MB of text in {t.work:.1f} s ({nbytes / 1e6 / t.work:,.1f} MB/s, "
            f"{tokens / t.work:,.0f} tokens/s{stored})")


HINT_MIN_BYTES = 8_000_000  # below this, another worker's start-up costs more than it saves


def _shard_hint(shards, nbytes):
    """A smaller ``--shard-mb`` when the job had fewer shards than cores (each shard is one
    worker's work), or None."""
    cores = available_cores()
    if shards >= cores or nbytes < HINT_MIN_BYTES:
        return None
    mb = max(0.1, int(nbytes / cores / 1e5) / 10)
    return (f"  hint       {shards} shard{'s' * (shards != 1)} for {cores} cores: at most "
            f"{shards} worker{'s' * (shards != 1)} had work; --shard-mb {mb:g} gives every "
            f"core a shard")
