"""Token shards on disk: atomic writes, per-shard manifest entries, the run manifest, resume.

Layout of an output folder (``output.layout``): the shards alone in ``data/``, every other file in
``.corpustok/`` (which pyarrow, Hugging Face ``datasets`` and Spark skip)::

    data/<name>.parquet                token rows (schema TOKENS), zstd
    .corpustok/entries/<name>.json     the shard's entry: its size and sha256, counts
    .corpustok/rejects/<name>.parquet  rejected rows with reasons (--rejects, only if any)
    .corpustok/manifest.json           the run manifest, written after every shard: the
                                       COMPLETED marker
    .corpustok/job.json                the job the folder belongs to (see ``output.layout``)
    .corpustok/tmp/                    shards being written (temporaries of this run)
    .corpustok/lock                    present while a run holds the folder

A shard is written under a temporary name in ``.corpustok/tmp/`` and synced to disk; then
its rejects, then its entry (which records the shard's size and sha256), then it is renamed
into ``data/`` and the folder synced. So ``data/`` only ever holds whole shards, and every
shard file there has an entry written before it: no kill leaves a shard that no record names
(an entry whose shard never arrived is redone by the rerun). A shard is complete when its
file has the size and sha256 its entry records (checked on resume: a damaged or swapped shard
is redone, never kept). Nothing written depends on time, host or worker count, so a resumed
run is byte-identical to an uninterrupted one.
"""
import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpustok.arrow import one_array
from corpustok.schemas import (MANIFEST_FORMAT, MANIFEST_VERSION, REJECT_REASONS, TOKENS,
                               check_shard_entry, check_table)

from corpustok.pipeline import files
from corpustok.pipeline.batches import ReadError, TokenBatch
from corpustok.pipeline.output.layout import (DATA_DIR, ENTRIES_DIR, REJECTS_DIR, TMP_DIR,
                                              entry_path, job_entries, listed_files, rejects_path,
                                              shard_file, shard_name)
from corpustok.pipeline.read.inputs import mapping_of, source_name

# Called with the name of each step of write_shard as it ends ("staged", "rejects", "entry",
# "published"): tests kill a run at every step through it.
_STEP_HOOK = None
REJECTED_LISTED = 1000  # rejected rows listed by row in an entry; all of them go to --rejects
# How token shards are written (decision 0022): ids
# BYTE_STREAM_SPLIT then zstd level 1, no dictionary, min/max statistics on every column but
# the ids (nobody filters on them), values handed to the column writer 65,536 at a time
# (pyarrow's 1,024 spent a fifth of the ids' encoding in per-batch work: 64 -> 75 M ids per
# CPU-second on a real shard, decision 0040).
TOKEN_PARQUET = dict(compression="zstd", compression_level=1, use_dictionary=False,
                     column_encoding={"tokens.list.element": "BYTE_STREAM_SPLIT"},
                     write_statistics=[n for n in TOKENS.names if n != "tokens"],
                     write_batch_size=65_536)


def write_json(path, obj, run_id=None):
    text = json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    files.write_atomic(path, lambda f: f.write(text.encode("utf-8")), run_id)


def write_parquet(path, table: pa.Table, run_id=None):
    """Rejects through pyarrow: one row group, zstd level 1, no host/time metadata."""
    files.write_atomic(path, lambda f: pq.write_table(
        table, f, compression="zstd", compression_level=1, row_group_size=max(1, table.num_rows),
        use_dictionary=[c for c in ("source", "reason") if c in table.schema.names]), run_id)


def stage_tokens(path, table: pa.Table, run_id=None, tmp_dir=None) -> files.Staged:
    """A token shard (schema TOKENS, ``tokens`` list or large_list of int32) written whole
    under a temporary name (in ``tmp_dir``), not yet at ``path``: one row group, written with
    ``TOKEN_PARQUET``. Each column goes in as one chunk, so the file's bytes depend on the
    rows alone, not on how the table was put together."""
    check_table(table, TOKENS, files.shown(path), extra=None)  # kept columns after them
    table = pa.Table.from_arrays([one_array(c) for c in table.columns], schema=table.schema)
    return files.stage(path, lambda f: pq.write_table(
        table, f, row_group_size=max(1, table.num_rows), **TOKEN_PARQUET), run_id, tmp_dir)


def write_tokens(path, table: pa.Table, run_id=None) -> files.Staged:
    """A token shard written whole at ``path`` (:func:`stage_tokens`, then published)."""
    return files.published(stage_tokens(path, table, run_id))


def load_entry(out_dir, name, config_id, source_name=None):
    """The entry of a complete shard made with ``config_id`` (and, when given, whose rows
    name their input ``source_name``), or None: absent, unreadable, from another
    configuration, or a shard file that is missing or does not have the size and sha256 its
    entry records (a damaged or swapped shard is redone, never kept)."""
    try:
        entry = json.loads(files.read_bytes(entry_path(out_dir, name)))
        check_shard_entry(entry)
    except (OSError, ValueError):
        return None
    if entry["config"] != config_id or entry["file"] != shard_file(name) or \
            (source_name is not None and entry["name"] != source_name):
        return None
    path = files.join(out_dir, *entry["file"].split("/"))
    try:
        if files.size(path) != entry["parquet_bytes"] or files.sha256_of(path) != entry["sha256"]:
            return None
    except OSError:
        return None
    return entry


def write_shard(out_dir, tb: TokenBatch, tokenizer_sha256, config_id, write_rejects=False,
                run_id=None, mapping=None):
    """Write one shard and return its entry: the shard staged (``.corpustok/tmp/``), the
    optional rejects, the entry (recording the shard's size and sha256), then the shard
    renamed into ``data/``; ``mapping``: its input's own columns (``output.layout.shard_name``)."""
    name = shard_name(tb.source, tb.start, tb.stop, config_id, mapping, tb.name)
    file = shard_file(name)
    for folder in (TMP_DIR, DATA_DIR, ENTRIES_DIR):
        files.makedirs(files.join(out_dir, folder))
    staged = stage_tokens(files.join(out_dir, *file.split("/")), tb.tokens, run_id,
                          files.join(out_dir, TMP_DIR))
    try:
        _step("staged")
        if write_rejects and tb.rejects.num_rows:
            files.makedirs(files.join(out_dir, REJECTS_DIR))
            write_parquet(rejects_path(out_dir, name), tb.rejects, run_id)
            _step("rejects")
        t = tb.tokens
        reasons = tb.rejects.column("reason").to_pylist()
        listed = tb.rejects.slice(0, REJECTED_LISTED).select(["row", "id", "reason"]).to_pylist()
        entry = {
            "shard": name,
            "file": file,
            "source": files.shown(tb.source),
            "name": tb.name,
            "rows": [tb.start, tb.stop],
            "documents": t.num_rows,
            "tokens": int(pc.sum(t.column("n_tokens")).as_py() or 0),
            "bytes": int(pc.sum(t.column("n_bytes")).as_py() or 0),
            "replaced": int(pc.sum(t.column("replaced")).as_py() or 0),
            "rejects": {r: reasons.count(r) for r in REJECT_REASONS if r in reasons},
            "rejected": listed,
            "input_sha256": tb.input_sha256,
            "max_id": _max_id(t.column("tokens")),
            "parquet_bytes": staged.size,
            "sha256": staged.sha256,
            "tokenizer_sha256": tokenizer_sha256,
            "config": config_id,
        }
        check_shard_entry(entry)
        write_json(entry_path(out_dir, name), entry, run_id)
        _step("entry")
        staged.publish()
        _step("published")
    except BaseException:
        staged.discard()
        raise
    return entry


def _step(name):
    if _STEP_HOOK is not None:
        _STEP_HOOK(name)


def _max_id(tokens):
    """The largest token id of a shard's token lists, -1 for none: what an export needs to
    choose its id type without reading the shard again."""
    m = pc.max(pc.list_flatten(tokens)).as_py()
    return -1 if m is None else m


def stale_entries(out_dir, entries, config_id, inputs, errors, columns=None, sources=None):
    """The entries this run supersedes: shards of this job (its configuration, one of its
    ``inputs``) whose input changed since (a shard name carries its input's identity, its
    own columns, from ``columns``, and the name its rows give it, from ``sources``) and that
    this run did not produce or keep. An input
    that failed to read this run (named in ``errors``) keeps its shards, and so does anything
    else in the folder. Removed once the run manifest is written, the folder then holds
    exactly the shards it lists."""
    keep = {e["shard"] for e in entries}
    sources = {files.shown(p): p for p in inputs}
    failed = {e.source if isinstance(e, ReadError) else e["source"] for e in errors}
    stale = []
    for name, e in sorted(job_entries(out_dir).items()):
        source = sources.get(e.get("source"))
        if name in keep or e.get("config") != config_id or source is None or \
                e["source"] in failed:
            continue
        try:
            rows = [int(r) for r in e["rows"]]
        except (TypeError, ValueError):
            continue
        if name != shard_name(source, *rows, config_id, mapping_of(source, columns),
                              source_name(source, sources)):
            stale.append(e)  # its input, the columns it is read with or its name changed
    return stale


def unverified_entries(entries, errors):
    """The ``entries`` of shards that reach past the verified rows of their input, an input
    that failed part way (``ReadError.verified_rows``: a corrupt or truncated compressed file
    is known sound only up to the end of its last member that passed its check). They are
    not kept: the run manifest leaves them out and they are removed with the stale ones."""
    verified = {}
    for e in errors:
        if isinstance(e, ReadError) and e.verified_rows is not None:
            verified[e.source] = min(e.verified_rows, verified.get(e.source, e.verified_rows))
    return [e for e in entries
            if e["source"] in verified and e["rows"][1] > verified[e["source"]]]


def remove_shards(out_dir, entries):
    """Delete the shard, rejects and entry files of ``entries`` (the entry last: a crash
    leaves it, and so the knowledge of what to delete)."""
    files.remove(listed_files(out_dir, entries))


def run_manifest(entries, errors, tokenizer_sha256, config, superseded=()):
    """The run manifest dict: the tokenizer (sha256, name, vocabulary size), totals over
    ``entries`` (sorted by shard), errors by file, and the names of the shards of changed
    inputs this run replaced (``superseded``)."""
    entries = sorted(entries, key=lambda e: e["shard"])
    errors = sorted(({"source": e.source, "error": e.error} if isinstance(e, ReadError) else e
                     for e in errors), key=lambda e: (e["source"], e["error"]))
    rejects = {}
    for e in entries:
        for r, n in e["rejects"].items():
            rejects[r] = rejects.get(r, 0) + n
    totals = {k: sum(e[k] for e in entries) for k in ("documents", "tokens", "bytes", "replaced")}
    totals["rejects"] = dict(sorted(rejects.items()))
    totals["shards"] = len(entries)
    totals["errors"] = len(errors)
    return {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "status": "COMPLETED_WITH_ERRORS" if errors else "COMPLETED",
        "tokenizer": {"sha256": tokenizer_sha256, "name": config.get("tokenizer_name"),
                      "vocab_size": config.get("vocab_size")},
        "tokenizer_sha256": tokenizer_sha256,
        "config": config,
        "totals": totals,
        "errors": errors,
        "shards": entries,
        "superseded": sorted(e["shard"] for e in superseded),
    }
