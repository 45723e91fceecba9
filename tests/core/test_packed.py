"""`corpustok.data.PackedSequences` over real tokenize output (and exports of it): every token
once, in the shards' order or shuffled by a seed, document starts exact, ranks and DataLoader
workers splitting an epoch without overlap, exact resumption (main process, with workers, per
worker), bad states refused, and damaged or swapped shards detected before they are used."""
import itertools
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from corpustok import packed
from corpustok.data import PackedSequences
from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.output.export import export
from tests.conftest import TEST_DATA as DATA

EOS = 50256


def _write_documents(path, n, id_prefix, lines):
    with open(path, "w", encoding="utf-8") as f:
        for k in range(n):
            text = " ".join(lines[(7 * k + j) % len(lines)] for j in range(1 + k % 5))
            f.write(json.dumps({"id": f"{id_prefix}{k:03d}", "text": text}) + "\n")
    return path


@pytest.fixture(scope="module")
def lines():
    return (DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def folder(gpt2_file, lines, tmp_path_factory):
    """Tokenize output of two inputs (300 and 120 documents, an EOS after each) in shards of
    about 20 kB of text: 9 shards, about 50,000 tokens."""
    tmp = tmp_path_factory.mktemp("packed")
    inputs = [str(_write_documents(tmp / "a.jsonl", 300, "a", lines)),
              str(_write_documents(tmp / "b.jsonl", 120, "b", lines[::-1]))]
    tokenize(inputs, str(tmp / "out"), gpt2_file, eos=EOS, shard_bytes=20000)
    return tmp / "out"


def _manifest(folder):
    return json.loads((Path(folder) / ".corpustok" / "manifest.json").read_text())


def _stream(folder):
    """``(ids, document starts)`` of the shard rows read with pyarrow, in manifest order."""
    docs = [d for e in _manifest(folder)["shards"]
            for d in pq.read_table(Path(folder) / e["file"]).column("tokens").to_pylist()]
    starts = np.cumsum([0] + [len(d) for d in docs])[:-1]
    return np.array([t for d in docs for t in d], np.int32), starts, docs


def _listed(items):
    """Items as plain lists (numpy arrays or torch tensors; a batch's starts a list)."""
    def plain(x):
        return [plain(y) for y in x] if isinstance(x, list) else np.asarray(x).tolist()
    return [(plain(t), plain(s)) for t, s in items]


def _eos_documents(flat):
    """The documents of a stream whose documents each end with the EOS."""
    ends = np.flatnonzero(flat == EOS) + 1
    return [flat[a:b].tolist() for a, b in zip(np.concatenate([[0], ends]), ends)]


def _copy(folder, tmp_path):
    return Path(shutil.copytree(folder, tmp_path / "copy"))


# ---- windows -----------------------------------------------------------------------------

def test_windows_hold_every_token_once_in_order_with_their_document_starts(folder):
    flat, doc_starts, _ = _stream(folder)
    assert len(_manifest(folder)["shards"]) >= 6
    ps = PackedSequences(folder, 100, drop_last=False)
    windows = list(ps)
    assert len(windows) == len(ps) == -(-len(flat) // 101)
    assert all(len(w) == 101 and w.dtype == s.dtype == np.int32 for w, s in windows[:-1])
    assert np.concatenate([w for w, _ in windows]).tolist() == flat.tolist()
    mid_document, begins = 0, set(doc_starts.tolist())
    for k, (w, s) in enumerate(windows):
        lo = 101 * k
        inside = doc_starts[(doc_starts > lo) & (doc_starts < lo + len(w))] - lo
        assert s.tolist() == [0] + inside.tolist()  # cu_seqlens without its final length
        mid_document += lo not in begins
    assert mid_document > len(windows) // 2  # most windows begin inside a document
    kept = PackedSequences(folder, 100)  # drop_last: the partial window goes
    assert len(kept) == len(flat) // 101
    assert _listed(kept) == _listed(windows[:len(flat) // 101])


def test_batches_are_consecutive_windows_the_last_one_shorter(folder):
    windows = _listed(PackedSequences(folder, 64))
    ps = PackedSequences(folder, 64, batch_size=3)
    batches = list(ps)
    assert len(batches) == len(ps) == -(-len(windows) // 3) and len(windows) % 3
    assert [len(t) for t, _ in batches] == [3] * (len(batches) - 1) + [len(windows) % 3]
    assert all(t.shape[1] == 65 and t.dtype == np.int32 for t, _ in batches)
    assert [w for t, s in _listed(batches) for w in zip(t, s)] == windows
    with pytest.raises(ValueError, match="drop_last"):
        PackedSequences(folder, 64, batch_size=4, drop_last=False)


def test_a_seed_shuffles_documents_per_epoch_and_the_same_seed_repeats(folder):
    _, _, docs = _stream(folder)

    def run(seed, epoch=0):
        ps = PackedSequences(folder, 64, seed=seed, drop_last=False)
        ps.set_epoch(epoch)
        return list(ps)

    a, b, c = run(5), run(5), run(6)
    assert _listed(a) == _listed(b) and _listed(a) != _listed(c) != _listed(run(5, epoch=1))
    flat = np.concatenate([w for w, _ in a])
    shuffled = _eos_documents(flat)
    assert shuffled != docs and sorted(map(str, shuffled)) == sorted(map(str, docs))
    bounds = set(np.cumsum([len(d) for d in shuffled]).tolist()) | {0}
    at = 0
    for w, s in a:  # the starts are the shuffled documents' starts
        assert s.tolist() == [0] + [p for p in range(1, len(w)) if at + p in bounds]
        at += len(w)


def test_ranks_take_contiguous_shares_of_the_windows_and_the_batches(folder):
    whole = _listed(PackedSequences(folder, 50, seed=1))
    parts = [_listed(PackedSequences(folder, 50, seed=1, rank=r, world_size=3))
             for r in range(3)]
    assert parts[0] + parts[1] + parts[2] == whole and min(map(len, parts)) > 0
    batched = [_listed(PackedSequences(folder, 50, seed=1, rank=r, world_size=3, batch_size=8))
               for r in range(3)]
    assert [w for part in batched for t, s in part for w in zip(t, s)] == whole
    with pytest.raises(ValueError, match="rank 3 outside world_size 3"):
        PackedSequences(folder, 50, rank=3, world_size=3)


def test_exports_read_like_the_folder_and_are_checked(folder, tmp_path):
    want = _listed(PackedSequences(folder, 50))
    prints = {PackedSequences(folder, 50).fingerprint}
    for fmt in ("megatron", "datatrove", "numpy"):
        prefix = str(tmp_path / fmt)
        export(str(folder), fmt, prefix)
        ps = PackedSequences(prefix, 50)
        assert _listed(ps) == want, fmt
        prints.add(ps.fingerprint)
    assert len(prints) == 4
    prefix = str(tmp_path / "megatron")
    Path(prefix + ".export.journal").write_text("{}")
    with pytest.raises(ValueError, match="interrupted.*rerun `corpustok export`"):
        PackedSequences(prefix, 50)
    Path(prefix + ".export.journal").unlink()
    with open(prefix + ".bin", "ab") as f:
        f.write(b"\0\0")
    with pytest.raises(ValueError, match=r"megatron\.bin: \d+ bytes, .* tokens of 2 bytes"):
        PackedSequences(prefix, 50)


# ---- passes and states -------------------------------------------------------------------

def test_a_state_resumes_exactly_mid_epoch_and_survives_json(folder):
    for batch_size in (None, 4):
        full = _listed(PackedSequences(folder, 64, seed=5, batch_size=batch_size))
        ps = PackedSequences(folder, 64, seed=5, batch_size=batch_size)
        it = iter(ps)
        head = [next(it) for _ in range(7)]
        state = json.loads(json.dumps(ps.state_dict()))
        assert state["position"] == 7 and state["epoch"] == 0
        again = PackedSequences(folder, 64, seed=5, batch_size=batch_size)
        again.load_state_dict(state)
        assert _listed(head) + _listed(again) == full
        again.load_state_dict(again.state_dict())  # at the end: an empty rest of the epoch
        assert list(again) == []


def test_every_pass_starts_where_the_reader_is_positioned(folder):
    ps = PackedSequences(folder, 64, seed=2)
    first = _listed(ps)
    assert _listed(ps) == first and first  # a second pass without set_epoch: the same epoch
    ps.set_epoch(1)
    second = _listed(ps)
    assert second != first and len(second) == len(first)
    state = ps.state_dict()
    state["position"] = 10
    ps.load_state_dict(state)
    assert _listed(ps) == second[10:] == _listed(ps)
    ps.set_epoch(1)
    assert _listed(ps) == second


def test_a_pickled_reader_reopens_its_source_at_its_position(folder, tmp_path):
    """What a DataLoader worker started by spawn or forkserver gets."""
    ps = PackedSequences(folder, 64, seed=4, batch_size=2)
    state = ps.state_dict()
    ps.load_state_dict({**state, "epoch": 2, "position": 5})
    ps.set_epoch(2)
    full = _listed(ps)
    ps.load_state_dict({**state, "epoch": 2, "position": 5})
    assert _listed(pickle.loads(pickle.dumps(ps))) == full[5:]
    copy = _copy(folder, tmp_path)
    blob = pickle.dumps(PackedSequences(copy, 64))
    manifest = _manifest(copy)
    manifest["shards"][0]["sha256"] = "0" * 64
    (copy / ".corpustok" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="changed since the reader was made"):
        pickle.loads(blob)


def test_bad_states_are_refused_with_what_is_wrong(folder):
    ps = PackedSequences(folder, 64, seed=3)
    good = ps.state_dict()

    def refused(match, **change):
        state = {**good, **change}
        for key in [k for k, v in change.items() if v is KeyError]:
            del state[key]
        with pytest.raises(ValueError, match=match):
            ps.load_state_dict(state)

    refused("position must be at least 0, got -1", position=-1)
    refused(f"position {len(ps) + 1} is past the epoch's end \\({len(ps)} items\\)",
            position=len(ps) + 1)
    refused("state lacks fingerprint, position", position=KeyError, fingerprint=KeyError)
    refused("state position must be an int, got '3'", position="3")
    refused("state epoch must be an int, got True", epoch=True)
    refused("state epoch must be at least 0", epoch=-2)
    refused("state drop_last must be a bool", drop_last=1)
    refused("state of another dataset: fingerprint 'f00'", fingerprint="f00")
    refused("state of another reader: seq_len 65", seq_len=65)
    refused("state of another reader: seed 4", seed=4)
    refused("state of another reader: world_size 2", world_size=2)
    refused("state of another reader: batch_size 4", batch_size=4)
    refused("state version 1", version=1)
    refused("resumes only inside a worker of 2", workers=2)
    with pytest.raises(ValueError, match="earlier corpustok"):
        ps.load_state_dict({"seed": 3, "epoch": 0, "next_window": 4, "seq_len": 64,
                            "rank": 0, "world_size": 1})
    with pytest.raises(ValueError, match="must be a dict"):
        ps.load_state_dict([good])
    assert ps.state_dict() == good  # nothing refused changed the reader


def test_a_worker_state_resumes_that_worker_at_its_next_item(folder, monkeypatch):
    """What torchdata's StatefulDataLoader does with each worker, here without torch: worker
    ``k`` of 3 yields items ``k, k + 3, ...``; its state, loaded into worker ``k`` of a new
    reader, goes on with its next one, also once it has none left."""
    full = _listed(PackedSequences(folder, 64, seed=8, batch_size=2))
    for k, taken in ((0, 4), (1, 0), (2, len(full))):
        monkeypatch.setattr(packed, "_worker", lambda k=k: (k, 3))
        ps = PackedSequences(folder, 64, seed=8, batch_size=2)
        head = list(itertools.islice(iter(ps), taken))
        state = ps.state_dict()
        assert state["workers"] == 3 and state["position"] <= len(ps)
        again = PackedSequences(folder, 64, seed=8, batch_size=2)
        again.load_state_dict(state)
        assert _listed(head) + _listed(again) == full[k::3], k
    monkeypatch.setattr(packed, "_worker", lambda: (0, 2))
    with pytest.raises(ValueError, match="resumes only inside a worker of 3"):
        again.load_state_dict(state)


def test_a_state_of_a_changed_or_appended_folder_is_refused(folder, gpt2_file, lines,
                                                            tmp_path):
    copy = _copy(folder, tmp_path)
    state = PackedSequences(copy, 64).state_dict()
    more = _write_documents(tmp_path / "c.jsonl", 30, "c", lines[3:])
    tokenize([str(more)], str(copy), gpt2_file, eos=EOS, shard_bytes=20000, mode="append")
    appended = PackedSequences(copy, 64)
    assert len(_manifest(copy)["shards"]) > len(_manifest(folder)["shards"])
    with pytest.raises(ValueError, match="state of another dataset: fingerprint"):
        appended.load_state_dict(state)


# ---- damaged folders ---------------------------------------------------------------------

def test_a_flipped_byte_is_detected_before_the_shard_is_used(folder, tmp_path):
    copy = _copy(folder, tmp_path)
    entries = _manifest(copy)["shards"]
    path = copy / entries[2]["file"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    ps = PackedSequences(copy, 64)  # the size is right: found when read
    served = 0
    with pytest.raises(ValueError, match=rf"{entries[2]['file']}: damaged or replaced: sha256 "
                                         rf"[0-9a-f]{{64}}, expected {entries[2]['sha256']}"):
        for w, _ in ps:
            served += len(w)
    assert served <= sum(e["tokens"] for e in entries[:2])  # nothing of the damaged shard


def test_a_shard_swapped_for_another_is_refused(gpt2_file, lines, folder, tmp_path):
    entries = _manifest(folder)["shards"]
    copy = _copy(folder, tmp_path)
    shutil.copyfile(copy / entries[0]["file"], copy / entries[1]["file"])
    assert entries[0]["parquet_bytes"] != entries[1]["parquet_bytes"]
    with pytest.raises(ValueError, match=rf"{entries[1]['file']}: \d+ bytes, the run manifest "
                                         r"says \d+: damaged or replaced; .*corpustok verify"):
        PackedSequences(copy, 64)
    (copy / entries[1]["file"]).unlink()
    with pytest.raises(ValueError, match="missing, though the run manifest lists it"):
        PackedSequences(copy, 64)
    # Two inputs alike but for their ids' first letter: shards of other bytes, most often of
    # one size (compression may differ by a byte, so a few letter pairs are tried).
    for pair in ("xy", "pq", "mn", "uv", "jk"):
        twins = tmp_path / f"twins-{pair}"
        inputs = [str(_write_documents(tmp_path / f"{n}.jsonl", 40, n, lines)) for n in pair]
        tokenize(inputs, str(twins), gpt2_file, eos=EOS)
        x, y = _manifest(twins)["shards"]
        if x["parquet_bytes"] == y["parquet_bytes"]:
            break
    assert x["parquet_bytes"] == y["parquet_bytes"] and x["sha256"] != y["sha256"]
    shutil.copyfile(twins / x["file"], twins / y["file"])
    with pytest.raises(ValueError, match=f"{y['file']}: damaged or replaced: sha256 "
                                         f"{x['sha256']}, expected {y['sha256']}"):
        list(PackedSequences(twins, 64))


def test_unfinished_and_earlier_folders_are_refused(folder, tmp_path):
    copy = _copy(folder, tmp_path)
    run = copy / ".corpustok" / "manifest.json"
    manifest = _manifest(copy)

    def refused(match, m):
        run.write_text(json.dumps(m))
        with pytest.raises(ValueError, match=match):
            PackedSequences(copy, 64)

    refused("status COMPLETED_WITH_ERRORS, not COMPLETED",
            {**manifest, "status": "COMPLETED_WITH_ERRORS"})
    refused(r"earlier corpustok .* --overwrite", {**manifest, "version": 1})
    refused(r"earlier corpustok .* --overwrite",
            {**manifest, "shards": [{k: v for k, v in e.items() if k != "sha256"}
                                    for e in manifest["shards"]]})
    refused("manifest version 3", {**manifest, "version": 3})
    shutil.rmtree(copy / ".corpustok")
    with pytest.raises(ValueError, match="neither a tokenize output folder"):
        PackedSequences(copy, 64)


# ---- torch DataLoader (marked readers: .ci/run installs torch and torchdata for them) -----

def _loaded(ps, workers):
    from torch.utils.data import DataLoader
    return _listed(DataLoader(ps, batch_size=None, num_workers=workers))


@pytest.mark.readers
def test_dataloader_workers_yield_every_item_once_in_order(folder):
    import torch
    loader = torch.utils.data.DataLoader(PackedSequences(folder, 64, batch_size=4),
                                         batch_size=None, num_workers=2)
    tokens, starts = next(iter(loader))  # the default collate: tensors, a list of them
    assert tokens.dtype == torch.int32 and tuple(tokens.shape) == (4, 65)
    assert isinstance(starts, list) and [s.dtype for s in starts] == [torch.int32] * 4
    for batch_size in (None, 4):
        whole = _listed(PackedSequences(folder, 64, seed=7, batch_size=batch_size))
        for world_size in (1, 2):
            for workers in (0, 2):
                got = [item for r in range(world_size) for item in _loaded(
                    PackedSequences(folder, 64, seed=7, batch_size=batch_size, rank=r,
                                    world_size=world_size), workers)]
                assert got == whole, (batch_size, world_size, workers)


@pytest.mark.readers
def test_dataloader_resumes_from_the_items_consumed_and_repeats_or_reshuffles_epochs(folder):
    from torch.utils.data import DataLoader
    ps = PackedSequences(folder, 64, seed=7, batch_size=4)
    full = _listed(ps)
    loader = DataLoader(ps, batch_size=None, num_workers=2)
    for consumed in (5, 6):
        head = []
        for item in loader:
            head.append(item)
            if len(head) == consumed:
                break
        state = ps.state_dict(consumed=consumed)
        assert state["position"] == consumed and state["workers"] == 1
        again = PackedSequences(folder, 64, seed=7, batch_size=4)
        again.load_state_dict(state)
        assert _listed(head) + _loaded(again, 2) == full
    assert _loaded(ps, 2) == full  # a second epoch without set_epoch: the same items
    ps.set_epoch(1)
    other = _loaded(ps, 2)
    assert other != full and len(other) == len(full) and other == _listed(ps)
    with pytest.raises(ValueError, match="consumed"):
        ps.state_dict(consumed=len(ps) + 1)


@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated")
@pytest.mark.readers
def test_stateful_dataloader_resumes_each_worker_exactly(folder):
    from torchdata import stateful_dataloader as stateful
    full = _listed(PackedSequences(folder, 64, seed=9, batch_size=2))

    def loader(workers):
        return stateful.StatefulDataLoader(PackedSequences(folder, 64, seed=9, batch_size=2),
                                           batch_size=None, num_workers=workers)

    for workers, consumed in ((0, 3), (2, 3), (2, 4)):
        first, head = loader(workers), []
        for item in first:
            head.append(item)
            if len(head) == consumed:
                break
        resumed = loader(workers)
        resumed.load_state_dict(first.state_dict())
        assert _listed(head) + _listed(resumed) == full, (workers, consumed)
