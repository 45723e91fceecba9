"""`corpustok export`: Megatron, datatrove and dolma layouts read back by small readers written
from the formats' specs (and by the real readers where they are installed), every shard row
once, in order or shuffled by a seed; id types switched by the vocabulary."""
import csv
import gzip
import json
import struct
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from corpustok.pipeline.cli import main
from tests.conftest import TEST_DATA as DATA



# ---- readers written from the formats' specs ---------------------------------------------

def read_megatron(prefix):
    """Documents of a Megatron-Core indexed dataset: ``(dtype, [ids per sequence], doc
    indices)``."""
    idx = Path(prefix + ".idx").read_bytes()
    assert idx[:9] == b"MMIDIDX\x00\x00" and struct.unpack("<Q", idx[9:17])[0] == 1
    dtype = {8: np.uint16, 4: np.int32}[idx[17]]
    nseq, ndoc = struct.unpack("<QQ", idx[18:34])
    at = 34
    lengths = np.frombuffer(idx, np.int32, nseq, at)
    at += 4 * nseq
    pointers = np.frombuffer(idx, np.int64, nseq, at)
    at += 8 * nseq
    doc_index = np.frombuffer(idx, np.int64, ndoc, at)
    assert at + 8 * ndoc == len(idx)
    data = Path(prefix + ".bin").read_bytes()
    seqs = [np.frombuffer(data, dtype, n, p).astype(np.int64).tolist()
            for n, p in zip(lengths, pointers)]
    assert sum(lengths) * np.dtype(dtype).itemsize == len(data)
    return np.dtype(dtype), seqs, doc_index.tolist()


def read_datatrove(prefix, token_bytes):
    data = np.frombuffer(Path(prefix + ".ds").read_bytes(), {2: "<u2", 4: "<u4"}[token_bytes])
    ends = np.frombuffer(Path(prefix + ".ds.index").read_bytes(), "<u8")
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    assert (ends[-1] if len(ends) else 0) == len(data)
    return [data[a:b].astype(np.int64).tolist() for a, b in zip(starts, ends.astype(np.int64))]


def read_numpy(prefix, dtype):
    data = np.fromfile(prefix + ".npy", dtype)  # a raw memmap: no header
    with gzip.open(prefix + ".csv.gz", "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    return [(data[int(a):int(b)].astype(np.int64).tolist(), i, s, int(r))
            for a, b, i, s, r in rows], data


def shard_rows(folder):
    """Every shard row ``(ids, id, source, row)`` in the run manifest's order."""
    m = json.loads((Path(folder) / ".corpustok" / "manifest.json").read_text())
    out = []
    for e in m["shards"]:
        t = pq.read_table(Path(folder) / e["file"])
        for ids, i, s, r in zip(*(t.column(c).to_pylist() for c in
                                  ("tokens", "id", "source", "row"))):
            out.append((ids, i, s, r))
    return out


# ---- fixtures ----------------------------------------------------------------------------

def _tokenize(tmp, inp, tokenizer, *extra):
    out = tmp / "shards"
    assert main(["tokenize", str(inp), "--out", str(out), "--tokenizer", str(tokenizer),
                 "--shard-mb", "0.05", "--no-progress", *extra]) == 0
    return out


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    """A JSONL input of ~300 documents, ids with commas and quotes."""
    lines = (DATA / "bpe_sample.txt").read_text().splitlines()
    path = tmp_path_factory.mktemp("export_in") / "docs.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for k in range(300):
            text = " ".join(lines[(7 * k + j) % len(lines)] for j in range(1 + k % 5))
            f.write(json.dumps({"id": f'doc,{k} "q"', "text": text}) + "\n")
    return path


@pytest.fixture(scope="module")
def shards(documents, gpt2_file, tmp_path_factory):
    return _tokenize(tmp_path_factory.mktemp("export"), documents, gpt2_file, "--eos", "50256")


@pytest.fixture(scope="module")
def big_vocab_file(tmp_path_factory):
    """A byte-level BPE tokenizer of 65,556 ids (every pair of byte symbols merged, in
    order, until there are that many): past uint16 for Megatron and for datatrove."""
    from corpustok import BytePairTokenizer
    from corpustok.substrate import bytes_to_unicode
    alphabet = [bytes_to_unicode()[b] for b in range(256)]
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges = []
    for k in range(65556 - 256):
        a, b = alphabet[k // 256], alphabet[k % 256]
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append(f"{a} {b}")
    folder = tmp_path_factory.mktemp("bigvocab")
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n",
                                       encoding="utf-8")
    path = folder / "big.json"
    BytePairTokenizer.from_hf(folder / "vocab.json", folder / "merges.txt").save(str(path))
    return path, len(vocab)


# ---- tests -------------------------------------------------------------------------------

def test_megatron_export_holds_every_shard_row_once_in_order(shards, tmp_path):
    prefix = str(tmp_path / "mg")
    assert main(["export", str(shards), "--format", "megatron", "--out", prefix]) == 0
    dtype, seqs, doc_index = read_megatron(prefix)
    rows = shard_rows(shards)
    assert dtype == np.uint16 and seqs == [r[0] for r in rows]
    assert doc_index == list(range(len(rows) + 1))
    m = json.loads(Path(prefix + ".export.json").read_text())
    assert m["documents"] == len(rows) and m["tokens"] == sum(map(len, seqs))
    assert [s["file"] for s in m["shards"]] == \
        [e["file"] for e in json.loads((shards / ".corpustok/manifest.json").read_text())
         ["shards"]]
    import hashlib
    assert all(s["sha256"] == hashlib.sha256((shards / s["file"]).read_bytes()).hexdigest()
               for s in m["shards"])


def test_datatrove_and_numpy_exports_hold_every_row_in_order(shards, tmp_path):
    rows = shard_rows(shards)
    dt = str(tmp_path / "dt")
    assert main(["export", str(shards), "--format", "datatrove", "--out", dt]) == 0
    assert read_datatrove(dt, 2) == [r[0] for r in rows]
    meta = Path(dt + ".ds.metadata").read_text().splitlines()
    assert meta[0].endswith("|2") and int(meta[1]) == sum(len(r[0]) for r in rows)
    npf = str(tmp_path / "np")
    assert main(["export", str(shards), "--format", "numpy", "--out", npf]) == 0
    docs, flat = read_numpy(npf, np.uint16)
    assert docs == rows and len(flat) == sum(len(r[0]) for r in rows)


def test_a_seed_shuffles_every_document_once_and_the_same_seed_repeats(shards, tmp_path,
                                                                      monkeypatch):
    from corpustok.pipeline.output import export as ex
    monkeypatch.setattr(ex, "BUCKET_BYTES", 4000)  # many buckets for this small folder
    rows = shard_rows(shards)
    outs = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        prefix = str(tmp_path / name)
        ex.export(str(shards), "numpy", prefix, seed=seed)
        outs[name] = read_numpy(prefix, np.uint16)[0]
    assert outs["a"] == outs["b"]
    assert outs["a"] != outs["c"] and outs["a"] != rows
    key = [json.dumps(r) for r in rows]
    for name in outs:
        assert sorted(json.dumps(list(r)) for r in outs[name]) == sorted(key)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


def test_large_vocabularies_switch_the_id_types(documents, big_vocab_file, tmp_path):
    path, size = big_vocab_file
    out = _tokenize(tmp_path, documents, path, "--eos", str(size - 1))
    rows = shard_rows(out)
    assert max(max(r[0]) for r in rows) == size - 1 >= 65536
    mg = str(tmp_path / "mg")
    assert main(["export", str(out), "--format", "megatron", "--out", mg]) == 0
    dtype, seqs, _ = read_megatron(mg)
    assert dtype == np.int32 and seqs == [r[0] for r in rows]
    dt = str(tmp_path / "dt")
    assert main(["export", str(out), "--format", "datatrove", "--out", dt]) == 0
    assert read_datatrove(dt, 4) == [r[0] for r in rows]
    # By the vocabulary when given: 65,500 ids is int32 for Megatron, uint16 for datatrove.
    from corpustok.pipeline.output.export import token_dtype
    assert token_dtype("megatron", 65499) == np.uint16 and \
        token_dtype("megatron", 65500) == np.int32
    assert token_dtype("datatrove", 65536) == np.uint16 and \
        token_dtype("datatrove", 65537) == np.uint32


def test_export_refuses_unfinished_folders_and_files_it_did_not_write(shards, tmp_path, capsys):
    empty = tmp_path / "nothing"
    empty.mkdir()
    assert main(["export", str(empty), "--format", "megatron", "--out",
                 str(tmp_path / "x")]) == 2
    assert "no finished tokenize run" in capsys.readouterr().err
    theirs = tmp_path / "mine.idx"
    theirs.write_bytes(b"someone else's")
    assert main(["export", str(shards), "--format", "megatron", "--out",
                 str(tmp_path / "mine")]) == 2
    assert theirs.read_bytes() == b"someone else's" and not (tmp_path / "mine.bin").exists()
    # An earlier export of ours is replaced by the same bytes.
    prefix = str(tmp_path / "again")
    for _ in range(2):
        assert main(["export", str(shards), "--format", "megatron", "--out", prefix]) == 0
    assert read_megatron(prefix)[1] == [r[0] for r in shard_rows(shards)]


def test_export_refuses_a_run_completed_with_errors(documents, gpt2_file, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b not gzip at all")
    out = tmp_path / "shards"
    assert main(["tokenize", str(documents), str(bad), "--out", str(out), "--tokenizer",
                 str(gpt2_file), "--no-progress"]) == 1
    capsys.readouterr()
    assert main(["export", str(out), "--format", "numpy", "--out", str(tmp_path / "n")]) == 2
    assert "COMPLETED_WITH_ERRORS" in capsys.readouterr().err


def test_tokenize_export_writes_beside_the_folder(documents, gpt2_file, tmp_path):
    out = _tokenize(tmp_path, documents, gpt2_file, "--eos", "50256", "--export", "megatron")
    _, seqs, _ = read_megatron(str(out) + ".megatron")
    assert seqs == [r[0] for r in shard_rows(out)]


@pytest.mark.readers
def test_megatron_cores_indexed_dataset_reads_the_export(shards, tmp_path):
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    rows = [r[0] for r in shard_rows(shards)]
    prefix = str(tmp_path / "mg")
    assert main(["export", str(shards), "--format", "megatron", "--out", prefix]) == 0
    ds = IndexedDataset(prefix)
    assert len(ds) == len(rows) and [ds[i].tolist() for i in range(len(ds))] == rows


@pytest.mark.readers
def test_datatroves_folder_dataset_reads_the_export(shards, tmp_path):
    from datatrove.utils.dataset import DatatroveFolderDataset

    from corpustok.data import PackedSequences
    folder = tmp_path / "dt"
    folder.mkdir()
    assert main(["export", str(shards), "--format", "datatrove", "--out",
                 str(folder / "part")]) == 0
    ds = DatatroveFolderDataset(str(folder), seq_len=64, token_size=2, shuffle=False)
    ours = [w.tolist() for w, _ in PackedSequences(shards, 64)]  # the same windows
    assert [ds[i]["input_ids"].tolist() for i in range(len(ds))] == ours
