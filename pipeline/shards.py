"""Token shards on disk: atomic writes, per-shard manifest entries, the run manifest, resume.

Layout of an output folder::

    <name>.parquet         token rows (schema TOKENS), zstd
    <name>.manifest.json   the shard's entry; written last, so it marks the shard complete
    rejects/<name>.parquet rejected rows with reasons (only with --rejects, only if any)
    manifest.json          the run manifest; written after every shard: the COMPLETED marker

Every file is written under a temporary name and renamed, so a crash at any moment leaves
only whole files (plus temporaries that the next run deletes). Nothing written depends on
time, host or worker count, so a resumed run is byte-identical to an uninterrupted one.
"""
import hashlib
import json
import re

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpustok.schemas import (MANIFEST_FORMAT, MANIFEST_VERSION, REJECT_REASONS,
                               check_shard_entry)

from . import files
from .files import TMP_PREFIX
from .read import ReadError, shard_name
from .shard_parquet import token_parquet_parts
from .tokenize import TokenBatch

RUN_MANIFEST = "manifest.json"
ENTRY_SUFFIX = ".manifest.json"
REJECTED_LISTED = 1000  # rejected rows listed by row in an entry; all of them go to --rejects


def file_sha256(path, block=1 << 20) -> str:
    h = hashlib.sha256()
    with files.open_read(path) as f:
        for chunk in iter(lambda: f.read(block), b""):
            h.update(chunk)
    return h.hexdigest()


def config_hash(config: dict) -> str:
    """Hash of everything that changes a shard's bytes (tokenizer, markers, columns)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def write_json(path, obj):
    text = json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    files.write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def write_parquet(path, table: pa.Table):
    """Rejects (and empty token tables) through pyarrow: one row group, zstd level 1, no
    host/time metadata. Non-empty token tables go through :func:`write_tokens`."""
    files.write_atomic(path, lambda f: pq.write_table(
        table, f, compression="zstd", compression_level=1, row_group_size=max(1, table.num_rows),
        use_dictionary=[c for c in ("source", "reason") if c in table.schema.names]))


def write_tokens(path, table: pa.Table):
    """A token shard: written by ``shard_parquet`` (less than half the CPU of pyarrow's writer
    for the same Parquet schema, see there); an empty table by pyarrow."""
    if not table.num_rows:
        write_parquet(path, table)
        return
    parts = token_parquet_parts(table)

    def write(f):
        for part in parts:
            f.write(part)
    files.write_atomic(path, write)


def entry_path(out_dir, name):
    return files.join(out_dir, name + ENTRY_SUFFIX)


def load_entry(out_dir, name, config_id):
    """The entry of a complete shard made with ``config_id``, or None (absent, partial,
    unreadable or from another configuration)."""
    try:
        entry = json.loads(files.read_bytes(entry_path(out_dir, name)))
        check_shard_entry(entry)
    except (OSError, ValueError):
        return None
    if entry["config"] != config_id:
        return None
    try:
        if files.size(files.join(out_dir, entry["file"])) != entry["parquet_bytes"]:
            return None
    except OSError:
        return None
    return entry


def write_shard(out_dir, tb: TokenBatch, tokenizer_sha256, config_id, write_rejects=False):
    """Write one shard (Parquet, optional rejects, then the entry) and return its entry."""
    name = shard_name(tb.source, tb.start, tb.stop)
    file = name + ".parquet"
    path = files.join(out_dir, file)
    write_tokens(path, tb.tokens)
    if write_rejects and tb.rejects.num_rows:
        files.makedirs(files.join(out_dir, "rejects"))
        write_parquet(files.join(out_dir, "rejects", file), tb.rejects)
    t = tb.tokens
    reasons = tb.rejects.column("reason").to_pylist()
    listed = tb.rejects.slice(0, REJECTED_LISTED).select(["row", "id", "reason"]).to_pylist()
    entry = {
        "shard": name,
        "file": file,
        "source": tb.source,
        "rows": [tb.start, tb.stop],
        "documents": t.num_rows,
        "tokens": int(pc.sum(t.column("n_tokens")).as_py() or 0),
        "bytes": int(pc.sum(t.column("n_bytes")).as_py() or 0),
        "replaced": int(pc.sum(t.column("replaced")).as_py() or 0),
        "rejects": {r: reasons.count(r) for r in REJECT_REASONS if r in reasons},
        "rejected": listed,
        "input_sha256": tb.input_sha256,
        "parquet_bytes": files.size(path),
        "tokenizer_sha256": tokenizer_sha256,
        "config": config_id,
    }
    check_shard_entry(entry)
    write_json(entry_path(out_dir, name), entry)
    return entry


def prepare_out_dir(out_dir):
    """Create ``out_dir``, delete temporaries of killed runs and the old run manifest (so that
    it again appears only once this run completes)."""
    files.makedirs(out_dir)
    for folder in (out_dir, files.join(out_dir, "rejects")):
        files.remove(files.join(folder, f) for f in files.listdir(folder)
                     if f.startswith(TMP_PREFIX))
    if files.exists(files.join(out_dir, RUN_MANIFEST)):
        files.remove([files.join(out_dir, RUN_MANIFEST)])


SHARD_NAME = re.compile(r".+-[0-9a-f]{10}-[0-9]{10}-[0-9]{10}")  # see read.shard_name


def remove_stale(out_dir, entries):
    """Delete shard files and entries in ``out_dir`` that this run did not produce or keep
    (left by a run with other options, or over inputs that changed since), so the folder
    holds exactly the shards its manifest lists. Only names of the shard pattern are
    touched, never other files that happen to share the folder."""
    keep = {e["shard"] for e in entries}
    stale = []
    for folder, suffixes in ((out_dir, (".parquet", ENTRY_SUFFIX)),
                             (files.join(out_dir, "rejects"), (".parquet",))):
        for f in files.listdir(folder):
            for suffix in suffixes:
                name = f[:-len(suffix)]
                if f.endswith(suffix) and SHARD_NAME.fullmatch(name) and name not in keep:
                    stale.append(files.join(folder, f))
                    break
    files.remove(stale)


def run_manifest(entries, errors, tokenizer_sha256, config):
    """The run manifest dict: totals over ``entries`` (sorted by shard), errors by file."""
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
        "tokenizer_sha256": tokenizer_sha256,
        "config": config,
        "totals": totals,
        "errors": errors,
        "shards": entries,
    }
