"""Checking an output folder against its inputs: every input row is in exactly one shard or
counted as a reject, and every shard decodes back to its documents' text.

Decoding is exact only for lossless tokenizers (byte-level BPE); for WordPiece, which
normalizes, compare ids with a reference tokenizer instead.
"""
import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from corpustok._arrow import one_array
from corpustok.schemas import TOKENS, check_run_manifest, check_table

from corpustok.pipeline import files
from corpustok.pipeline.inputs import columns_for
from corpustok.pipeline.read import read_documents
from corpustok.pipeline.outdir import RUN_MANIFEST


@dataclass
class Verification:
    documents: int = 0
    shards: int = 0
    problems: list = field(default_factory=list)

    @property
    def ok(self):
        return not self.problems


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
            check_table(t, TOKENS, e["file"])
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
