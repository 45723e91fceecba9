"""`corpustok export` made safe and exact: the id type follows the tokenizer's vocabulary, a
shard that changed after its run is refused with nothing published, exports exclude tokenize
runs and each other, a kill at any step leaves the old export or the new one (never a mix)
and the next export removes what the killed one left, exports are byte-reproducible, and a
prefix inside a shard folder is refused. Every folder exported here is real tokenize output."""
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from corpustok.pipeline.cli import main
from corpustok.pipeline.output import export as ex
from corpustok.pipeline.output.layout import FolderHold, OutputInUse

from tests.pipeline.test_export import (_tokenize, big_vocab_file, documents, read_datatrove,  # noqa: F401
                         read_megatron, read_numpy, shard_rows)

FORMATS = ("megatron", "datatrove", "numpy")


@pytest.fixture(scope="module")
def shards(documents, gpt2_file, tmp_path_factory):  # noqa: F811 - the fixture imported
    """GPT-2 shards (50,257 ids) of ~300 documents, several shards."""
    out = _tokenize(tmp_path_factory.mktemp("safety"), documents, gpt2_file, "--eos", "50256")
    assert len(_manifest(out)["shards"]) >= 3
    return out


def _manifest(folder):
    return json.loads((Path(folder) / ".corpustok" / "manifest.json").read_text())


def _copy(folder, tmp_path):
    """A copy of a shard folder, to damage."""
    dest = tmp_path / "copy"
    shutil.copytree(folder, dest)
    return dest


def _files(folder):
    """Every entry of ``folder``: file name -> bytes (a folder -> "<folder>")."""
    return {p.name: "<folder>" if p.is_dir() else p.read_bytes()
            for p in sorted(Path(folder).iterdir())}


def _restore(folder, content):
    """Make ``folder`` hold exactly ``content`` (as :func:`_files` gives it)."""
    for p in Path(folder).iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    for name, blob in content.items():
        (Path(folder) / name).write_bytes(blob)


def _export(shards_dir, fmt, prefix, *extra):
    return main(["export", str(shards_dir), "--format", fmt, "--out", str(prefix), *extra])


# ---- the id type follows the tokenizer ---------------------------------------------------

def test_gpt2_exports_uint16_everywhere_and_names_the_tokenizer(shards, tmp_path):
    rows = shard_rows(shards)
    tokenizer = _manifest(shards)["tokenizer"]
    assert tokenizer["vocab_size"] == 50257
    for fmt in FORMATS:
        prefix = str(tmp_path / fmt)
        assert _export(shards, fmt, prefix) == 0
        m = json.loads(Path(prefix + ".export.json").read_text())
        assert m["dtype"] == "uint16" and m["raw_memmap"] is True
        assert m["vocab_size"] == 50257 and m["vocab_size_from"] == "tokenizer"
        assert m["tokenizer"] == {"name": tokenizer["name"], "vocab_size": 50257,
                                  "sha256": tokenizer["sha256"]}
    assert read_megatron(str(tmp_path / "megatron"))[0] == np.uint16
    assert read_datatrove(str(tmp_path / "datatrove"), 2) == [r[0] for r in rows]
    meta = Path(str(tmp_path / "datatrove") + ".ds.metadata").read_text().splitlines()
    assert meta[0] == f"{tokenizer['name']}|2" and not meta[0].startswith("corpustok:")
    # The numpy layout's .npy is a raw memmap of the stated dtype, read as the docstring says.
    flat = np.memmap(str(tmp_path / "numpy") + ".npy", np.uint16, mode="r")
    assert flat.tolist() == [t for r in rows for t in r[0]]


def test_a_vocabulary_past_uint16_gives_wide_ids_even_when_every_id_is_small(
        documents, big_vocab_file, tmp_path):  # noqa: F811 - the fixtures imported
    """The synthetic 65,556-id byte-level BPE of test_export; no --eos, so every id present
    is below 65,500 (the old rule, by the largest id, gave uint16 here)."""
    path, size = big_vocab_file
    out = _tokenize(tmp_path, documents, path)
    rows = shard_rows(out)
    assert max(max(r[0]) for r in rows) < 65500 < 65536 < size
    assert _manifest(out)["tokenizer"]["vocab_size"] == size
    _check_wide(out, rows, tmp_path)


def test_tekken_exports_wide_ids_for_a_folder_of_small_ids(tmp_path, modern_vocab):
    """The issue's case: Mistral's Tekken (131,072 ids) on text whose ids all fit uint16.
    The Tekken file is mistral-common's (the test extra), so this runs on a fresh clone."""
    tekken = modern_vocab("tekken")
    inp = tmp_path / "small.jsonl"
    inp.write_text("".join(json.dumps({"id": f"d{k}", "text": f"Hello world, document {k}."}) + "\n"
                           for k in range(20)))
    out = _tokenize(tmp_path, inp, tekken)
    rows = shard_rows(out)
    assert max(max(r[0]) for r in rows) < 65500
    assert _manifest(out)["tokenizer"]["vocab_size"] == 131072
    _check_wide(out, rows, tmp_path)


def _check_wide(out, rows, tmp_path):
    mg, dt, npf = (str(tmp_path / f) for f in FORMATS)
    for fmt, prefix in zip(FORMATS, (mg, dt, npf)):
        assert _export(out, fmt, prefix) == 0
    dtype, seqs, _ = read_megatron(mg)
    assert dtype == np.int32 and seqs == [r[0] for r in rows]
    assert read_datatrove(dt, 4) == [r[0] for r in rows]
    assert Path(dt + ".ds.metadata").read_text().splitlines()[0] == \
        f"{_manifest(out)['tokenizer']['name']}|4"
    assert read_numpy(npf, np.uint32)[0] == rows
    assert [json.loads(Path(p + ".export.json").read_text())["dtype"]
            for p in (mg, dt, npf)] == ["int32", "uint32", "uint32"]


def test_vocab_size_overrides_and_refuses_ids_past_it(shards, tmp_path, capsys):
    prefix = str(tmp_path / "wide")
    assert _export(shards, "datatrove", prefix, "--vocab-size", "70000") == 0
    m = json.loads(Path(prefix + ".export.json").read_text())
    assert (m["dtype"], m["vocab_size"], m["vocab_size_from"]) == \
        ("uint32", 70000, "--vocab-size")
    assert read_datatrove(prefix, 4) == [r[0] for r in shard_rows(shards)]
    capsys.readouterr()
    assert _export(shards, "megatron", tmp_path / "small", "--vocab-size", "1000") == 2
    err = capsys.readouterr().err
    assert "not below the vocabulary size 1,000 (--vocab-size)" in err and err.count("\n") == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("small", ".tmp", ".small"))]


# ---- shards that changed -----------------------------------------------------------------

def test_a_flipped_byte_a_swapped_or_missing_shard_is_refused_with_nothing_published(
        shards, tmp_path, capsys):
    folder = _copy(shards, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    assert _export(folder, "numpy", out / "x") == 0
    published = _files(out)
    files = [folder / e["file"] for e in _manifest(folder)["shards"]]
    last = files[-1]  # refused after the other shards were written to temporaries
    good = last.read_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0x01
    last.write_bytes(bytes(flipped))
    capsys.readouterr()
    assert _export(folder, "numpy", out / "x") == 2
    err = capsys.readouterr().err
    assert str(last) in err and "sha256" in err and "nothing was exported" in err
    assert err.count("\n") == 1 and _files(out) == published
    last.write_bytes(good)
    # Shards swapped for each other: their sizes (or hashes) disagree with their entries.
    a, b = files[0].read_bytes(), files[1].read_bytes()
    files[0].write_bytes(b)
    files[1].write_bytes(a)
    assert _export(folder, "numpy", out / "x") == 2
    err = capsys.readouterr().err
    assert str(files[0]) in err and "the shard changed" in err and _files(out) == published
    files[0].write_bytes(a)
    files[1].write_bytes(b)
    files[1].unlink()
    assert _export(folder, "numpy", out / "x") == 2
    err = capsys.readouterr().err
    assert f"{files[1]} is missing" in err and _files(out) == published
    files[1].write_bytes(b)
    assert _export(folder, "numpy", out / "x") == 0 and _files(out) == published


def test_a_manifest_of_an_earlier_corpustok_is_refused(shards, tmp_path, capsys):
    folder = _copy(shards, tmp_path)
    path = folder / ".corpustok" / "manifest.json"
    m = json.loads(path.read_text())
    m["version"] = 1
    del m["tokenizer"]
    for e in m["shards"]:
        del e["sha256"]
    path.write_text(json.dumps(m))
    assert _export(folder, "megatron", tmp_path / "x") == 2
    err = capsys.readouterr().err
    assert "written by an earlier corpustok" in err and "--overwrite" in err
    assert not list(tmp_path.glob("x*"))


# ---- exclusion ---------------------------------------------------------------------------

def test_a_running_tokenize_and_an_export_exclude_each_other(shards, documents, gpt2_file,
                                                             tmp_path, capsys,
                                                             monkeypatch):  # noqa: F811
    with FolderHold(str(shards), "tokenize"):  # what a tokenize run holds
        assert _export(shards, "megatron", tmp_path / "x") == 2
    assert "in use" in capsys.readouterr().err and not list(tmp_path.iterdir())
    tried = []

    def tokenize_meanwhile(step):
        if step == "written" and not tried:  # a real tokenize run into the exported folder
            tried.append(main(["tokenize", str(documents), "--out", str(shards), "--tokenizer",
                               str(gpt2_file), "--shard-mb", "0.05", "--no-progress",
                               "--eos", "50256"]))
    monkeypatch.setattr(ex, "_STEP_HOOK", tokenize_meanwhile)
    before = _files(shards / "data")
    assert _export(shards, "megatron", tmp_path / "x") == 0
    assert tried == [2] and "in use" in capsys.readouterr().err
    assert _files(shards / "data") == before
    assert read_megatron(str(tmp_path / "x"))[1] == [r[0] for r in shard_rows(shards)]


def test_two_exports_to_one_prefix_do_not_interleave(shards, tmp_path, monkeypatch):
    prefix = str(tmp_path / "x")
    refused = []

    def second(step):
        if step == "committed":
            for call in (lambda: ex.export(str(shards), "datatrove", prefix),
                         lambda: ex.recover(prefix)):
                with pytest.raises(OutputInUse, match="another corpustok export"):
                    call()
                refused.append(step)
    monkeypatch.setattr(ex, "_STEP_HOOK", second)
    ex.export(str(shards), "datatrove", prefix)
    assert len(refused) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["x.ds", "x.ds.index", "x.ds.metadata", "x.export.json"]


# ---- kills -------------------------------------------------------------------------------

KILLED = r"""
import json, os, signal, sys
from corpustok.pipeline.output import export as ex
a = json.loads(sys.argv[1])
ex.BUCKET_BYTES = a["bucket_bytes"]
calls = [0]
def hook(step):
    calls[0] += 1
    if calls[0] == a["at"]:
        os.kill(os.getpid(), signal.SIGKILL)
ex._STEP_HOOK = hook
if a["what"] == "export":
    ex.export(a["folder"], a["fmt"], a["prefix"], seed=a["seed"])
else:
    ex.recover(a["prefix"])
"""
BUCKET = 6000  # bytes of ids a shuffle bucket: several buckets for this folder


def _killed(**args):
    """Run an export (or a recovery) in a process killed (SIGKILL) at its step ``at``;
    its exit status."""
    done = subprocess.run([sys.executable, "-c", KILLED, json.dumps(args)],
                          capture_output=True, timeout=300)
    assert done.returncode in (0, -signal.SIGKILL), done.stderr.decode()
    return done.returncode


def test_a_kill_at_any_step_leaves_the_old_export_or_the_new_one(shards, tmp_path,
                                                                 monkeypatch):
    """Kill an export at every step of its write and publish (one of the shard reads and
    bucket reads), and then again its recovery; after recovery the prefix holds exactly the
    old export or exactly the new one (old before the commit point, new after), and after
    the next export nothing but the new export's files."""
    monkeypatch.setattr(ex, "BUCKET_BYTES", BUCKET)
    fmt = "datatrove"
    steps = []
    monkeypatch.setattr(ex, "_STEP_HOOK", steps.append)
    for name, seed in (("new", 2), ("old", 1)):  # same names, sizes; other bytes
        (tmp_path / name).mkdir()
        ex.export(str(shards), fmt, str(tmp_path / name / "x"), seed=seed)
        if name == "new":
            monkeypatch.setattr(ex, "_STEP_HOOK", None)
    new, old = _files(tmp_path / "new"), _files(tmp_path / "old")
    assert new.keys() == old.keys() and new != old
    assert {"read", "bucket", "written", "journal written", "committed",
            "old manifest removed", "renamed x.export.json", "journal removed"} <= set(steps)
    at = tmp_path / "at"
    at.mkdir()
    prefix = str(at / "x")
    commit = steps.index("committed") + 1  # the calls are counted from 1
    done = steps.index("journal removed") + 1
    chosen = [n for n, s in enumerate(steps, 1) if s not in steps[:n - 1]]
    for n in chosen:
        _restore(at, old)
        assert _killed(what="export", at=n, folder=str(shards), fmt=fmt, prefix=prefix, seed=2,
                       bucket_bytes=BUCKET) == -signal.SIGKILL
        left = _files(at)
        assert (at / "x.export.journal").exists() == (commit <= n < done), steps[n - 1]
        # Before any recovery, an export manifest present vouches for every file beside it:
        # corpustok's readers need it, so they never read a mix.
        for whole in (old, new):
            if left.get("x.export.json") == whole["x.export.json"]:
                assert {k: left[k] for k in whole} == whole, steps[n - 1]
        if n < commit:  # not committed: the old export is untouched, temporaries beside it
            assert {k: left[k] for k in old} == old
            hidden = left.keys() - old.keys()  # and matched by no reader's glob
            assert all(k.startswith(".") and not k.endswith((".ds", ".ds.index", ".json"))
                       for k in hidden)
        else:  # a kill during the recovery as well
            _killed(what="recover", at=1, prefix=prefix, bucket_bytes=BUCKET)
        pending = (at / "x.export.journal").exists()
        assert ex.recover(prefix) == pending
        assert _files(at) == (new if n >= commit else old), steps[n - 1]
        ex.export(str(shards), fmt, prefix, seed=2)
        assert _files(at) == new, steps[n - 1]


def test_only_the_temporaries_a_dead_export_named_are_removed(shards, tmp_path, monkeypatch):
    """A killed export's temporaries (named with its tag, which its stale lock holds) go at
    the next export; a file that merely looks like one (another tag, another prefix, no
    tag) stays."""
    at = tmp_path / "at"
    at.mkdir()
    prefix = str(at / "x")
    steps = []
    monkeypatch.setattr(ex, "_STEP_HOOK", steps.append)
    ex.export(str(shards), "numpy", str(tmp_path / "x"))
    monkeypatch.setattr(ex, "_STEP_HOOK", None)
    assert _killed(what="export", at=steps.index("written") + 1, folder=str(shards),
                   fmt="numpy", prefix=prefix, seed=None, bucket_bytes=ex.BUCKET_BYTES) == \
        -signal.SIGKILL
    lock = json.loads((at / ".x.export.lock").read_text())
    dead = [p.name for p in at.iterdir() if lock["tag"] in p.name]
    assert len(dead) == 3  # .npy, .csv.gz, .export.json
    strangers = [".tmp-corpustok-export-0123456789ab-x.npy.part", ".tmp-corpustok-run-x.npy",
                 f".tmp-corpustok-export-{lock['tag']}-y.npy.part", "x.npy.bak", ".x.npy"]
    for name in strangers:
        (at / name).write_bytes(b"not the export's")
    ex.export(str(shards), "numpy", prefix)
    assert sorted(p.name for p in at.iterdir()) == \
        sorted(strangers + ["x.npy", "x.csv.gz", "x.export.json"])
    assert all((at / n).read_bytes() == b"not the export's" for n in strangers)
    assert _files(at)["x.npy"] == (tmp_path / "x.npy").read_bytes()


def test_recover_on_a_clean_prefix_does_nothing(tmp_path):
    assert ex.recover(str(tmp_path / "x")) is False and not list(tmp_path.iterdir())


# ---- reproducibility and where exports may go ----------------------------------------------

def test_two_exports_of_one_folder_are_byte_identical(shards, tmp_path):
    for fmt in FORMATS:
        for seed in (None, 3):
            got = []
            for run in ("a", "b"):
                folder = tmp_path / f"{fmt}-{seed}-{run}"
                folder.mkdir()
                extra = [] if seed is None else ["--seed", str(seed)]
                assert _export(shards, fmt, folder / "x", *extra) == 0
                got.append(_files(folder))
            assert got[0] == got[1] and len(got[0]) == len(ex.SUFFIXES[fmt]) + 1, (fmt, seed)
            if fmt == "numpy":
                head = got[0]["x.csv.gz"][:10]  # no file name (FLG.FNAME), no time
                assert head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0"
                with gzip.open(folder / "x.csv.gz", "rt") as f:
                    assert f.readline()


def test_a_prefix_inside_a_shard_folder_is_refused(shards, tmp_path, capsys):
    before = {d: _files(d) for d in (shards, shards / "data", shards / ".corpustok")}
    for where in (shards, shards / "data", shards / ".corpustok"):
        assert _export(shards, "megatron", where / "x") == 2
        err = capsys.readouterr().err
        assert "inside the shard folder" in err and err.count("\n") == 1
    assert {d: _files(d) for d in before} == before
    # Any shard folder, not only the one exported.
    other = _copy(shards, tmp_path)
    assert _export(shards, "megatron", other / "data" / "x") == 2
    assert f"inside the shard folder {os.path.realpath(other)}" in capsys.readouterr().err


def test_verify_checks_an_export_and_completes_a_killed_one(shards, tmp_path, monkeypatch,
                                                           capsys):
    """``corpustok verify PREFIX``: every file against the size and sha256 its export.json
    records; an export killed after its commit point is completed first."""
    prefix = str(tmp_path / "x")
    assert main(["export", str(shards), "--format", "numpy", "--out", prefix]) == 0
    capsys.readouterr()
    assert main(["verify", prefix]) == 0
    data = bytearray(Path(prefix + ".npy").read_bytes())
    data[len(data) // 2] ^= 1  # one id changed, same size
    Path(prefix + ".npy").write_bytes(bytes(data))
    assert main(["verify", prefix]) == 1
    assert "x.npy: sha256 differs" in capsys.readouterr().out
    steps = []
    monkeypatch.setattr(ex, "_STEP_HOOK", steps.append)
    ex.export(str(shards), "numpy", str(tmp_path / "y"))
    commit = steps.index("committed") + 1
    assert _killed(what="export", at=commit, folder=str(shards), fmt="numpy", prefix=prefix,
                   seed=None, bucket_bytes=BUCKET) == -signal.SIGKILL
    assert Path(prefix + ".export.journal").exists()
    assert main(["verify", prefix]) == 0  # completed, then every file checked
    assert not Path(prefix + ".export.journal").exists()
    assert Path(prefix + ".npy").read_bytes() == Path(str(tmp_path / "y") + ".npy").read_bytes()
