"""Running the tokenize job: arguments, the output folder's claim, progress, the result.

The runner and its options come from :mod:`corpustok.pipeline.runners`; what a run did (shards
written and kept, bytes) is read from the run manifest and the folder, never from Beam's
metrics, which some runners (Dask) do not report.
"""
import json
import re
import time
from dataclasses import dataclass, field
from typing import Optional

from corpustok.threads import check_threads

from corpustok.pipeline import files
from corpustok.pipeline.config import TokenizeConfig
from corpustok.pipeline.inputs import job_id_type, resolve_inputs
from corpustok.pipeline.outdir import (LAYOUT, RUN_MANIFEST, OutputClaim, check_out_dir,
                                       entry_names, job_record, not_writable)
from corpustok.pipeline.progress import Progress
from corpustok.pipeline.read import DEFAULT_SHARD_BYTES, DEFAULT_SHARD_ROWS, input_kind
from corpustok.pipeline.runners import beam_options, dask_cluster, runs_here, wait
from corpustok.pipeline.shards import load_entry
from corpustok.pipeline.tokenize import DEFAULT_MAX_DOC_BYTES, load_tokenizer
from corpustok.pipeline.workers import DEFAULT_LOCAL_MODE, available_cores, local_workers_env

DEFAULT_MAX_REJECT_FRACTION = 0.5


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
        t = self.manifest["totals"]
        rejected = sum(t["rejects"].values())
        return rejected / max(1, rejected + t["documents"])


def tokenizer_identity(spec):
    """``(sha256, tokenizer)``: the file's hash, or that of the tokenizer's ``to_dict()`` for
    a factory and for any WordPiece (its casing, detected when a vocab.txt loads, is then
    part of the job: a rule that decides otherwise makes another job, not a mixed one);
    loading here first turns a malformed tokenizer file into one clear error before Beam
    starts."""
    from corpustok.wordpiece import WordPiece
    tok = load_tokenizer(spec)
    if callable(spec) or isinstance(tok, WordPiece):
        import hashlib
        blob = json.dumps(tok.to_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest(), tok
    return files.sha256_of(spec), tok


def tokenizer_name(spec, sha256):
    """A label for the tokenizer a job's ids are of (manifests, export metadata): a known
    rank file's name (``cl100k_base``, ...), else the file's or folder's name."""
    from corpustok.tiktoken_files import known_rank_file
    known = known_rank_file(sha256) if isinstance(spec, str) else None
    if known:
        return known["name"]
    path = getattr(spec, "path", spec)
    if not isinstance(path, str):
        return type(spec).__name__
    return files.shown(path.rstrip("/").rsplit("/", 1)[-1])


def resolve_marker(tok, value, name):
    """A BOS/EOS id from an int, a decimal string or a token string of ``tok`` (or None)."""
    if value is None:
        return None
    if isinstance(value, str):
        i = int(value) if value.lstrip("-").isdigit() else tok.token_to_id(value)
        if i is None:
            raise ValueError(f"--{name} {value!r} is not a token of this tokenizer; give an "
                             "id or a token string from its vocabulary")
        value = i
    if not 0 <= value < tok.vocab_size:
        raise ValueError(f"--{name} {value} is outside the tokenizer's ids "
                         f"0..{tok.vocab_size - 1}")
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


def tokenize(inputs, out_dir, tokenizer, *, id_column="id", text_column="text", bos=None,
             eos=None, shard_bytes=DEFAULT_SHARD_BYTES, shard_rows=DEFAULT_SHARD_ROWS,
             max_doc_bytes=DEFAULT_MAX_DOC_BYTES, write_rejects=False, txt_docs="line",
             beam_args=(), workers=None, local_mode=DEFAULT_LOCAL_MODE, threads=1,
             progress=False, mode=None, worker_log=None, on_remove=None,
             on_tokenizer=None) -> RunResult:
    """Tokenize ``inputs`` (files or globs, each optionally with its columns:
    ``INPUT:id=COL,text=COL``, see ``inputs``) into shards in ``out_dir`` and return the
    result. ``txt_docs``: a document per line (``"line"``) or per paragraph
    (``"paragraph"``) of ``.txt`` inputs.

    ``bos``/``eos``: ids or token strings put around every document. Complete shards of an
    earlier run of the same job (inputs, tokenizer, options) are kept, not redone; a folder
    holding another job refuses unless ``mode`` is ``"overwrite"`` (remove that job's files)
    or ``"append"`` (the same tokenizer and options, more inputs): see ``outdir``. Raises
    ValueError for bad arguments (no matching input, malformed tokenizer, unknown BOS/EOS
    token, a folder in use or holding another job) and ``outdir.OutputNotWritable`` when the
    folder cannot be written. ``worker_log``: a file that local worker processes write their
    output to (default: the caller's stderr); ``on_remove(path)`` is called for each file of a
    previous job that ``overwrite`` deletes, as it goes; ``on_tokenizer(tok)`` once the
    tokenizer is loaded, before the job starts. ``workers``: local workers, as threads or
    processes (``local_mode``); ``threads``: kernel threads of each batch call.
    """
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter

    from corpustok.pipeline.transforms import NAMESPACE, tokenize_to_shards

    check_threads(threads)  # here, not as a worker's failure
    options, runner = beam_options(beam_args, workers, local_mode)
    files.use_options(options)  # remote paths are read below, before the pipeline exists
    resolved = resolve_inputs(inputs, id_column, text_column)
    paths, duplicates = resolved.paths, resolved.duplicates
    check_out_dir(out_dir, resolved.patterns, paths)
    job_paths, columns, txt_docs, names = _job_inputs(out_dir, mode, resolved, txt_docs)
    tok_sha, tok = tokenizer_identity(tokenizer)
    if on_tokenizer is not None:
        on_tokenizer(tok)
    bos = resolve_marker(tok, bos, "bos")
    eos = resolve_marker(tok, eos, "eos")
    # Everything that changes what a shard holds or which shards exist: a rerun with other
    # values redoes the shards (and the stale ones are removed when the run completes).
    config = TokenizeConfig(tok_sha, bos, eos, id_column, text_column, shard_bytes, shard_rows,
                            bool(write_rejects), job_id_type(job_paths, id_column, columns),
                            columns, txt_docs, vocab_size=int(tok.vocab_size),
                            tokenizer_name=tokenizer_name(tokenizer, tok_sha), sources=names,
                            layout=LAYOUT)
    t0 = time.perf_counter()
    wall0 = time.time()  # the workers stamp their first read with the wall clock
    with OutputClaim(out_dir, config.to_dict(), config.id, paths, mode, on_remove) as claim:
        before = _complete_shards(out_dir, config.id)
        try:
            with local_workers_env(worker_log), \
                    Progress(out_dir, paths, show=progress,
                             local=runs_here(options, runner)) as prog, \
                    dask_cluster(options, runner, workers):  # its workers see the two above
                p = beam.Pipeline(runner=runner, options=options)  # after: Dask's address
                tokenize_to_shards(p, claim.inputs, out_dir, tokenizer, config,
                                   max_doc_bytes=max_doc_bytes, run_id=claim.run_id,
                                   threads=threads)
                result = p.run()
                wait(result)
        except Exception as e:
            full = not_writable(e, out_dir) or _not_writable_in(e, out_dir)
            if full is not None:
                raise full from e
            # The arguments were checked above: what fails now is the job (exit 3), whatever
            # the type (Beam re-raises a worker's error with that error's type).
            raise JobFailed(f"the tokenize job failed: {type(e).__name__}: {e}") from e
        seconds = time.perf_counter() - t0
        manifest = json.loads(files.read_bytes(files.join(out_dir, RUN_MANIFEST)))
    counters = {}
    try:
        query = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
        for c in query["counters"]:
            counters[c.key.metric.name] = counters.get(c.key.metric.name, 0) + c.committed
    except (NotImplementedError, AttributeError, KeyError):
        pass  # some runners report no metrics
    startup = None if prog.first_read is None else max(0.0, prog.first_read - wall0)
    kept = frozenset(e["shard"] for e in manifest["shards"]) & before
    return RunResult(manifest, counters, seconds, duplicates, claim.removed, startup, kept)


def _complete_shards(out_dir, config_id):
    """Names of the shards of ``config_id`` complete in ``out_dir`` (what a run keeps)."""
    return frozenset(name for name in entry_names(out_dir)
                     if load_entry(out_dir, name, config_id) is not None)


def _not_writable_in(e, out_dir):
    """An :class:`~outdir.OutputNotWritable` from the text of a worker's error (Beam's
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
    """Wall time with the start-up apart: the throughput is that of the work after it."""
    if result.startup is None or not nbytes:
        return f"  time       {result.seconds:.1f} s, Beam start-up included"
    work = max(result.seconds - result.startup, 1e-3)
    return (f"  time       {result.seconds:.1f} s: {result.startup:.1f} s start-up (Beam, "
            f"workers, tokenizer), then {nbytes / 1e6:,.2f} MB in {work:.1f} s "
            f"({nbytes / 1e6 / work:,.1f} MB/s)")


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
