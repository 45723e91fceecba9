"""Checking an output folder: its files against its records (:func:`check_folder`, what
``corpustok verify`` runs: every shard the run manifest lists is there with the size and
sha256 its entry records, and ``data/`` holds those shards and nothing else), and its shards
against its inputs (:func:`verify_shards`: every input row is in exactly one shard or counted
as a reject, and every shard decodes back to its documents' text).

Decoding is exact only for lossless tokenizers (byte-level BPE); for WordPiece, which
normalizes, compare ids with a reference tokenizer instead.
"""
import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpustok.arrow import one_array
from corpustok.schemas import TOKENS, check_run_manifest, check_table

from corpustok.pipeline import files
from corpustok.pipeline.output.export import MANIFEST_SUFFIX, recover
from corpustok.pipeline.output.layout import (DATA_DIR, META_DIR, RUN_MANIFEST, TMP_DIR,
                                              FolderHold, entry_names, foreign_files,
                                              read_run_manifest, shard_file)
from corpustok.pipeline.read.inputs import columns_for
from corpustok.pipeline.read.units import read_documents


@dataclass
class Verification:
    documents: int = 0
    shards: int = 0
    problems: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.problems


def check_folder(out_dir) -> Verification:
    """Check an output folder against its own records, holding it (no run may change it
    meanwhile): a COMPLETED run manifest; each shard it lists present in ``data/`` with the
    size and sha256 its entry records (a damaged or swapped shard is named); ``data/``
    holding exactly those shards (no shard the manifest does not list, no foreign file);
    no temporaries of a killed run left (named: the next run of the job removes them)."""
    v = Verification()
    with FolderHold(out_dir, "verify"):
        manifest = read_run_manifest(out_dir)
        where = files.shown(files.join(out_dir, RUN_MANIFEST))
        if manifest is None:
            v.problems.append(f"{where} is missing: no run of this folder has finished "
                              "(rerun the same `corpustok tokenize` command)")
            return v
        try:
            check_run_manifest(manifest)
        except (ValueError, TypeError, KeyError) as e:
            v.problems.append(f"{where}: {e}")
            return v
        if manifest["status"] != "COMPLETED":
            v.problems.append(f"{where}: status {manifest['status']} "
                              f"({len(manifest['errors'])} input(s) unreadable, named there)")
        shards = manifest["shards"]
        for e in shards:
            v.shards += 1
            v.documents += e["documents"]
            problem = _shard_problem(out_dir, e)
            if problem:
                v.problems.append(problem)
        for path in foreign_files(out_dir, shards):
            v.problems.append(f"{files.shown(path)}: not a shard the run manifest lists")
        unlisted = entry_names(out_dir) - {e["shard"] for e in shards}
        for name in sorted(unlisted):
            v.problems.append(f"{name}: an entry of a shard the run manifest does not list "
                              "(a run that did not finish: rerun the same command)")
        tmp = [n for d in (META_DIR, TMP_DIR, DATA_DIR) for n in
               files.listdir(files.join(out_dir, d)) if n.startswith(files.TMP_PREFIX)]
        if tmp:
            v.problems.append(f"{len(tmp)} temporary file(s) of a killed run (first: {tmp[0]}; "
                              "the next run of the job removes them)")
    return v


def check_export(prefix) -> Verification:
    """Check an export at ``prefix``: an export killed after its commit point is completed
    first (``export.recover``); then every file its ``PREFIX.export.json`` lists must have
    the size and sha256 recorded there."""
    v = Verification()
    recover(prefix)
    where = prefix + MANIFEST_SUFFIX
    try:
        manifest = json.loads(files.read_bytes(where))
    except (OSError, ValueError) as e:
        v.problems.append(f"{where}: {e}")
        return v
    recorded = manifest.get("file_sha256")
    if not isinstance(recorded, dict):
        v.problems.append(f"{where}: written by an earlier corpustok (no checksums of its "
                          "files): export again")
        return v
    v.documents = manifest.get("documents", 0)
    folder = files.split(prefix)[0]
    for name, sha in sorted(recorded.items()):
        path = files.join(folder, name)
        try:
            size = files.size(path)
        except OSError:
            v.problems.append(f"{name}: missing")
            continue
        if size != manifest["file_bytes"][name]:
            v.problems.append(f"{name}: {size} bytes, {where} records "
                              f"{manifest['file_bytes'][name]} (damaged or replaced: export "
                              "again)")
        elif files.sha256_of(path) != sha:
            v.problems.append(f"{name}: sha256 differs from {where}'s (damaged or replaced: "
                              "export again)")
    return v


def _shard_problem(out_dir, entry):
    """What is wrong with one listed shard's file, or None."""
    file = entry["file"]
    if file != shard_file(entry["shard"]):
        return f"{file}: not where this layout keeps shard {entry['shard']}"
    path = files.join(out_dir, *file.split("/"))
    try:
        size = files.size(path)
    except OSError:
        return f"{file}: missing"
    if size != entry["parquet_bytes"]:
        return f"{file}: {size} bytes, its entry records {entry['parquet_bytes']} (damaged " \
               "or replaced: rerun the same command to redo it)"
    if files.sha256_of(path) != entry["sha256"]:
        return f"{file}: sha256 differs from its entry's (damaged or replaced: rerun the " \
               "same command to redo it)"
    return None


def strip_markers(tokens: pa.ListArray, nb: int, ne: int) -> pa.ListArray:
    """Drop ``nb`` leading and ``ne`` trailing ids (BOS/EOS) from every list, vectorized."""
    off = np.asarray(tokens.offsets, np.int64)
    values = tokens.values.to_numpy(zero_copy_only=False)[off[0]:off[-1]]
    off = off - off[0]
    keep = np.ones(len(values), bool)
    if nb:
        keep[off[:-1]] = False
    if ne:
        keep[off[1:] - 1] = False
    new_off = off - np.arange(len(off)) * (nb + ne)
    return pa.ListArray.from_arrays(pa.array(new_off.astype(np.int32)), pa.array(values[keep]))


def _input_rows(source, id_column, text_column, id_type, txt_docs):
    """``(rows, texts as str, reader-rejected row count)`` of one input file."""
    tables, rejected = [], 0
    for b in read_documents(source, id_column, text_column, id_type=id_type,
                            txt_docs=txt_docs):
        tables.append(b.table.select(["row", "text"]))
        rejected += b.rejects.num_rows
    t = pa.concat_tables(tables) if tables else pa.table({"row": pa.array([], pa.int64()),
                                                          "text": pa.array([], pa.string())})
    text = t.column("text")
    if pa.types.is_binary(text.type) or pa.types.is_large_binary(text.type):
        texts = [None if x is None else x.decode("utf-8", "replace") for x in text.to_pylist()]
    else:
        texts = text.to_pylist()
    return t.column("row").to_numpy(), texts, rejected


def verify_shards(out_dir, tokenizer, decode=True):
    """Check ``out_dir``'s run manifest and shards against the inputs it names, read with the
    columns (per input) and text documents the run used (from the manifest's config)."""
    v = Verification()
    manifest = json.loads(files.read_bytes(files.join(out_dir, RUN_MANIFEST)))
    check_run_manifest(manifest)
    cfg = manifest["config"]
    id_column, text_column, id_type = cfg["id_column"], cfg["text_column"], cfg["id_type"]
    kept_columns = [k.rpartition(":")[0] for k in cfg.get("keep_columns") or ()]
    nb = 0 if cfg["bos"] is None else 1
    ne = 0 if cfg["eos"] is None else 1
    by_source = {}
    for e in manifest["shards"]:
        by_source.setdefault(e["source"], []).append(e)
    for source, entries in sorted(by_source.items()):
        path = files.unshown(source)
        rows, texts, reader_rejects = _input_rows(
            path, *columns_for(path, id_column, text_column, cfg.get("columns")), id_type,
            cfg.get("txt_docs") or "line")
        position = {int(r): i for i, r in enumerate(rows)}
        kept = 0
        seen = np.zeros(len(rows), bool)
        for e in entries:
            with files.parquet_file(files.join(out_dir, e["file"])) as pf:
                t = pf.read()
            check_table(t, TOKENS, e["file"], extra=kept_columns)
            v.shards += 1
            kept += t.num_rows
            idx = np.array([position.get(int(r), -1) for r in t.column("row").to_numpy()],
                           np.int64)
            if (idx < 0).any() or seen[idx].any():
                v.problems.append(f"{e['file']}: rows missing from or repeated in the input")
                continue
            seen[idx] = True
            if not decode:
                continue
            tokens = one_array(t.column("tokens"))
            lengths = pc.list_value_length(tokens).to_numpy()
            if (lengths < nb + ne).any():
                v.problems.append(f"{e['file']}: a row lacks its BOS/EOS ids")
                continue
            if nb or ne:
                tokens = strip_markers(tokens, nb, ne)
            decoded = tokenizer.decode_batch(tokens)
            for i, got in zip(idx, decoded):
                if got != texts[i]:
                    v.problems.append(f"{e['file']}: row {rows[i]} decodes to different text")
                    break
            v.documents += t.num_rows
        unkept = [texts[i] for i in np.flatnonzero(~seen)]
        if any(x for x in unkept):
            v.problems.append(f"{source}: a row with text is in no shard")
        rejected = sum(sum(e["rejects"].values()) for e in entries)
        if kept + rejected != len(rows) + reader_rejects:
            v.problems.append(f"{source}: {kept} kept + {rejected} rejected rows, but the "
                              f"input has {len(rows) + reader_rejects}")
    return v
