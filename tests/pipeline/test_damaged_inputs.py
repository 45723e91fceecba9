"""Damaged compressed inputs keep only what was verified; text files lose a leading byte order
mark; JSONL ids keep their text (string jobs) or fail their file (integer jobs).

A gzip member, an xz stream and a zstd frame are each checked at their end, so the lines
decompressed after the last member that passed its check are unknown when the file fails
later: the job keeps the shards that end by then, removes the others and says so. Expected
values come from the lines each test writes, never from the reader.
"""
import gzip
import json
import lzma
import os
import pickle
import random
import re
import struct

import pyarrow.parquet as pq
import pytest
import zstandard

from corpustok.pipeline.cli import main
from corpustok.pipeline.files.compression import open_binary, verified
from corpustok.pipeline.jobs.tokenize import tokenize
from corpustok.pipeline.output.layout import ENTRIES_DIR, RUN_MANIFEST
from corpustok.pipeline.output.verify import check_folder
from corpustok.pipeline.read.errors import ReadFailure
from corpustok.pipeline.read.text import line_ranges
from corpustok.pipeline.read.units import read_documents
from corpustok.pipeline.runtime import progress
from corpustok.schemas import InputFormatError
from tests.conftest import shard_files

ROWS = 100  # --shard-rows of these tests (line ranges cut by rows alone)
UNITS = {"gz": "gzip member", "xz": "xz stream", "zst": "zstd frame"}


WORDS = ["tea", "river", "stone", "quiet", "market", "lamp", "seven", "north", "paper",
         "garden", "window", "salt", "thunder", "violet", "copper", "bread"]


def _lines(n, prefix, start=0, words=0):
    """``n`` JSONL lines (bytes), ids ``<prefix><i>``, texts of ``words`` more words (drawn
    at random: text that compresses as text does)."""
    return [json.dumps({"id": f"{prefix}{i}", "text": f"document {i} of {prefix} " + " ".join(
        random.Random(i).choices(WORDS, k=words))}).encode() + b"\n"
        for i in range(start, start + n)]


def _member(fmt, data, level=None):
    """``data`` as one member of ``fmt`` (zstd frames with their content checksum)."""
    if fmt == "gz":
        return gzip.compress(data, 9 if level is None else level)
    if fmt == "xz":
        return lzma.compress(data, preset=0)
    return zstandard.ZstdCompressor(write_checksum=True).compress(data)


def _flip(member, at):
    """``member`` with its byte ``at`` inverted."""
    b = bytearray(member)
    b[at] ^= 0xFF
    return bytes(b)


def _read(path, shard_rows=ROWS):
    """``(ranges, failure)``: the ``(start, stop)`` ranges ``line_ranges`` yields for
    ``path`` and the ReadFailure it ends with."""
    ranges = []
    with pytest.raises(ReadFailure) as failure:
        for start, stop, _ in line_ranges(str(path), 1 << 40, shard_rows):
            ranges.append((start, stop))
    return ranges, failure.value


# ---- the reader -----------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["gz", "xz", "zst"])
def test_members_read_whole_and_all_verified(tmp_path, fmt):
    parts = [b"".join(_lines(n, "p", 1000 * k)) for k, n in enumerate((3, 0, 250, 7))]
    members = [_member(fmt, p) for p in parts]
    if fmt == "zst":  # a skippable frame between two frames decodes to nothing
        members.insert(1, struct.pack("<II", 0x184D2A50, 5) + b"12345")
    else:  # zero padding after a member, as gzip and xz allow
        members.append(b"\0" * 8)
    path = tmp_path / f"in.jsonl.{fmt}"
    path.write_bytes(b"".join(members))
    with open_binary(str(path)) as f:
        assert f.read() == b"".join(parts)
        assert verified(f).lines == 260 and verified(f).unit == UNITS[fmt]
    empty = tmp_path / f"empty.jsonl.{fmt}"
    empty.write_bytes(b"")
    with open_binary(str(empty)) as f:
        assert f.read() == b"" and verified(f).lines == 0
    plain = tmp_path / "plain.jsonl"
    plain.write_bytes(parts[2])
    with open_binary(str(plain)) as f:
        assert f.read() == parts[2] and verified(f) is None  # read as stored


@pytest.mark.parametrize("fmt", ["gz", "xz", "zst"])
def test_stored_bytes_are_counted_and_a_given_stream_stays_open(tmp_path, monkeypatch, fmt):
    """With ``on_bytes`` (a progress line), every stored byte read is reported once; a stream the
    caller opened (a remote file) is read through and left to the caller to close."""
    data = b"".join(_lines(3000, "r"))
    path = tmp_path / f"in.jsonl.{fmt}"
    path.write_bytes(_member(fmt, data[:1000]) + _member(fmt, data[1000:]))
    channel = tmp_path / "channel"
    channel.write_bytes(b"")
    monkeypatch.setenv(progress.ENV, str(channel))
    with open(path, "rb") as raw:
        with open_binary(str(path), raw, progress.report) as f:
            assert f.read() == data and verified(f).lines == 3000
        assert not raw.closed
    with open_binary(str(path), on_bytes=progress.report) as f:
        assert f.read() == data
    reported = [int(line.split()[1]) for line in channel.read_bytes().splitlines()
                if line.startswith(b"R ")]
    assert sum(reported) == 2 * path.stat().st_size


# A member's check is at its end: flipping its last byte leaves every byte before it
# decodable, so the reader hands out most of the member (over a MiB: more than one read) before
# the check fails. Those lines were read, and are not kept.
BIG = 40_000  # lines of a member read in several pieces


@pytest.mark.parametrize("fmt", ["gz", "xz", "zst"])
def test_a_second_member_failing_its_check_keeps_the_first_members_lines(tmp_path, fmt):
    path = tmp_path / f"two.jsonl.{fmt}"
    path.write_bytes(_member(fmt, b"".join(_lines(250, "a")))
                     + _flip(_member(fmt, b"".join(_lines(BIG, "a", 250))), -1))
    ranges, failure = _read(path)
    assert ranges[-1][1] > 300  # lines of the second member were read
    assert failure.verified_rows == 250
    assert f"({UNITS[fmt]} 2: " in str(failure)
    assert f"lines 0-199 are in the shards (the shards that end by line 249: its lines 0-249 " \
           f"passed the checks of its {UNITS[fmt]}s); the rest of the file is not" \
           in str(failure)
    assert pickle.loads(pickle.dumps(failure)).verified_rows == 250


@pytest.mark.parametrize("fmt", ["gz", "xz", "zst"])
def test_a_second_member_failing_at_its_start_keeps_every_line_before(tmp_path, fmt):
    path = tmp_path / f"two.jsonl.{fmt}"
    path.write_bytes(_member(fmt, b"".join(_lines(250, "b")))
                     + _flip(_member(fmt, b"".join(_lines(50, "b", 250))), 0))
    ranges, failure = _read(path)
    assert ranges == [(0, 100), (100, 200), (200, 250)]  # the last one read whole and sound
    assert failure.verified_rows == 250
    assert str(failure).startswith(f"unreadable after line 249 ({UNITS[fmt]} 2: ")
    assert str(failure).endswith("lines 0-249 are in the shards; the rest of the file is not")


def test_a_line_cut_by_a_member_boundary_is_not_verified(tmp_path):
    lines = _lines(BIG, "c")
    data = b"".join(lines)
    cut = len(b"".join(lines[:120])) + 10  # inside line 120
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(gzip.compress(data[:cut]) + _flip(gzip.compress(data[cut:]), -1))
    _, failure = _read(path, shard_rows=40)
    assert failure.verified_rows == 120
    assert "lines 0-119 are in the shards (its lines 0-119 passed the checks of its gzip " \
           "members)" in str(failure)


def test_an_altered_document_of_a_single_member_gzip_is_not_kept(tmp_path):
    """The issue's case: a byte changed inside a stored gzip member decodes to another
    document; only the member's CRC at its end says so, after that document was read."""
    data = b"".join(_lines(BIG, "s"))
    member = bytearray(gzip.compress(data, 0))  # stored blocks: the text as it is
    at = member.index(b"document 300 of s")
    member[at] = ord("D")
    path = tmp_path / "one.jsonl.gz"
    path.write_bytes(bytes(member))
    seen = []
    with pytest.raises(ReadFailure) as failure:
        for _, _, items in line_ranges(str(path), 1 << 40, ROWS):
            seen += [raw for _, raw in items]
    assert any(b"Document 300 of s" in raw for raw in seen)  # it was read...
    assert failure.value.verified_rows == 0  # ...and is not kept, nor anything of the file
    assert "no line of it is in the shards (no gzip member of it passed its check); the " \
           "rest of the file is not" in str(failure.value)


def test_a_truncated_zstd_file(tmp_path):
    whole = _member("zst", b"".join(_lines(300, "t")))
    one = tmp_path / "one.jsonl.zst"
    one.write_bytes(whole[:len(whole) * 6 // 10])
    _, failure = _read(one)
    assert failure.verified_rows == 0
    assert "(Truncated file: it ends inside zstd frame 1): no line of it is in the shards" \
        in str(failure)
    two = tmp_path / "two.jsonl.zst"
    second = _member("zst", b"".join(_lines(300, "t", 300)))
    two.write_bytes(whole + second[:-2])  # the end of the second frame's checksum missing
    _, failure = _read(two)
    assert failure.verified_rows == 300
    assert "(Truncated file: it ends inside zstd frame 2): lines 0-299 are in the shards" \
        in str(failure)


def test_trailing_bytes_after_the_last_member_keep_every_line(tmp_path):
    path = tmp_path / "tail.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(_lines(150, "g"))) + b"not gzip")
    ranges, failure = _read(path)
    assert failure.verified_rows == 150 and ranges == [(0, 100), (100, 150)]
    assert "lines 0-149 are in the shards; the rest of the file is not" in str(failure)


# ---- the job --------------------------------------------------------------------------------
def _damaged_job_inputs(folder):
    """``{key: (path, what its shards must hold: ids, or rows of a text file)}``: a sound
    file and damaged ones, each a sound first member and a damaged second."""
    good = folder / "good.jsonl"
    good.write_bytes(b"".join(_lines(50, "g")))
    made = {"good": (str(good), {f"g{i}" for i in range(50)})}
    # gzip: a document altered inside a stored member, read before its CRC fails.
    second = bytearray(_member("gz", b"".join(_lines(300, "gz", 250, words=100)), level=0))
    second[second.index(b"document 300 of gz")] = ord("D")
    path = folder / "two.jsonl.gz"
    path.write_bytes(_member("gz", b"".join(_lines(250, "gz"))) + bytes(second))
    made["gz"] = (str(path), {f"gz{i}" for i in range(200)})  # the shards that end by 250
    # zstd: a frame whose checksum fails, its first 128 KiB block read before.
    path = folder / "two.jsonl.zst"
    path.write_bytes(_member("zst", b"".join(_lines(130, "zst")))
                     + _flip(_member("zst", b"".join(_lines(300, "zst", 130, words=100))), -1))
    made["zst"] = (str(path), {f"zst{i}" for i in range(100)})
    # xz, a text file (rows are lines): a second stream failing at its start, so the lines
    # read up to there are all sound, the last range too.
    text = folder / "two.txt.xz"
    lines = [f"line {i} of the text\n".encode() for i in range(330)]
    text.write_bytes(_member("xz", b"".join(lines[:120]))
                     + _flip(_member("xz", b"".join(lines[120:])), 0))
    made["txt"] = (str(text), set(range(120)))
    return made


def _folder_bytes(out):
    found = {}
    for root, _, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                found[os.path.relpath(p, out)] = f.read()
    return found


def test_a_job_keeps_only_verified_shards_and_reruns_the_same(gpt2_file, tmp_path):
    made = _damaged_job_inputs(tmp_path)
    out = str(tmp_path / "out")
    args = ["tokenize", *(p for p, _ in made.values()), "--tokenizer", gpt2_file, "--out",
            out, "--shard-rows", str(ROWS), "--no-progress"]
    assert main(args) == 1
    with open(os.path.join(out, RUN_MANIFEST)) as f:
        manifest = json.load(f)
    assert manifest["status"] == "COMPLETED_WITH_ERRORS"
    errors = {os.path.basename(e["source"]): e["error"] for e in manifest["errors"]}
    assert set(errors) == {"two.jsonl.gz", "two.jsonl.zst", "two.txt.xz"}
    for name, key in (("two.jsonl.gz", "gz"), ("two.jsonl.zst", "zst"), ("two.txt.xz", "txt")):
        kept = len(made[key][1])
        assert f"lines 0-{kept - 1} are in the shards" in errors[name], errors[name]
    for name, verified_rows in (("two.jsonl.gz", 250), ("two.jsonl.zst", 130)):
        # Read past a whole range after the last verified member: its shard was written,
        # then removed.
        read = int(re.search(r"unreadable after line (\d+)", errors[name]).group(1))
        assert read >= verified_rows // ROWS * ROWS + 2 * ROWS, errors[name]
    # The shards: each input's rows from 0 up to what it keeps, nothing past.
    by_source = {}
    for e in manifest["shards"]:
        by_source.setdefault(os.path.basename(e["source"]), []).append(tuple(e["rows"]))
    for path, expected in made.values():
        ranges = sorted(by_source[os.path.basename(path)])
        assert ranges == [(a, min(a + ROWS, len(expected))) for a in range(0, len(expected),
                                                                            ROWS)]
    table = pq.read_table(os.path.join(out, "data"))
    rows = {}
    for r in table.select(["id", "source", "row"]).to_pylist():
        rows.setdefault(os.path.basename(r["source"]), set()).add(
            r["row"] if r["id"] is None else r["id"])
    assert rows == {os.path.basename(p): expected for p, expected in made.values()}
    # The folder holds exactly the manifest's shards and entries.
    assert shard_files(out) == sorted(e["file"] for e in manifest["shards"])
    assert sorted(n[:-len(".json")] for n in os.listdir(os.path.join(out, ENTRIES_DIR))) == \
        sorted(e["shard"] for e in manifest["shards"])
    # Its records check out: what `corpustok verify` checks finds only the run's status (it
    # fails any folder whose run had unreadable inputs, so it exits 1 here).
    [problem] = check_folder(out).problems
    assert "COMPLETED_WITH_ERRORS" in problem
    before = _folder_bytes(out)
    assert main(args) == 1
    assert _folder_bytes(out) == before


# ---- text files: a leading byte order mark ----------------------------------------------------
def _texts(path, **kw):
    return [(r, t) for b in read_documents(str(path), **kw)
            for r, t in zip(b.table.column("row").to_pylist(), b.table.column("text").to_pylist())]


def test_a_text_files_leading_byte_order_mark_is_not_text(tmp_path):
    plain = tmp_path / "bom.txt"
    plain.write_bytes(b"\xef\xbb\xbfhello world\nsecond\n\xef\xbb\xbfthird keeps its mark\n")
    assert _texts(plain) == [(0, "hello world"), (1, "second"), (2, "\ufeffthird keeps its mark")]
    alone = tmp_path / "alone.txt"
    alone.write_bytes(b"\xef\xbb\xbf\nnext\n")
    assert _texts(alone) == [(1, "next")]
    para = tmp_path / "para.txt.gz"
    para.write_bytes(gzip.compress("\ufeffpara one\nline two\n\npara two\n".encode()))
    assert _texts(para, txt_docs="paragraph") == [(0, "para one\nline two"), (3, "para two")]
    jsonl = tmp_path / "bom.jsonl"  # JSON's parser skips it, as before
    jsonl.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "x"}\n')
    [b] = read_documents(str(jsonl))
    assert b.table.column("id").to_pylist() == ["a"] and b.rejects.num_rows == 0


# ---- JSONL ids ----------------------------------------------------------------------------------
STRING_IDS = ['"first"', "17", "-5", "1e2", "7.0", "1E400", "2.50", "true", "false",
              "123456789012345678901234567890", "-0.0", '"x"', "NaN"]


def _id_file(path, literals):
    """A JSONL file whose record ``i`` has the id written as ``literals[i]``."""
    path.write_text("".join(f'{{"id": {lit}, "text": "document {i}"}}\n'
                            for i, lit in enumerate(literals)))
    return str(path)


def _ids(path, **kw):
    return [i for b in read_documents(path, **kw) for i in b.table.column("id").to_pylist()]


def test_a_string_jobs_json_ids_keep_their_text(tmp_path):
    src = _id_file(tmp_path / "ids.jsonl", STRING_IDS)
    expected = [json.loads(x) if x.startswith('"') else x for x in STRING_IDS]
    assert _ids(src, id_type="string") == expected


def test_a_job_of_string_ids_writes_them_as_written(gpt2_file, tmp_path):
    src = _id_file(tmp_path / "ids.jsonl", STRING_IDS)
    r = tokenize([src], str(tmp_path / "out"), gpt2_file)
    assert r.ok and r.manifest["config"]["id_type"] == "string"
    t = pq.read_table(str(tmp_path / "out")).sort_by("row")
    assert t.column("id").to_pylist() == [json.loads(x) if x.startswith('"') else x
                                          for x in STRING_IDS]


def test_a_lone_surrogate_id_is_still_a_bad_id_reject(tmp_path):
    src = _id_file(tmp_path / "ids.jsonl", ['"ok"', '"x\\udc80"', "3"])
    [b] = read_documents(src)
    assert b.table.column("id").to_pylist() == ["ok", "3"]
    assert b.rejects.select(["row", "reason"]).to_pylist() == [{"row": 1, "reason": "bad_id"}]


def test_an_integer_jobs_ids_are_exact_integers(tmp_path):
    literals = ["1", "7.0", "1e2", "5E0", "-0.0", "9223372036854775807",
                "-9223372036854775808", "9223372036854775807.0E0"]
    src = _id_file(tmp_path / "ids.jsonl", literals)
    assert _ids(src, id_type="int64") == [1, 7, 100, 5, 0, 2 ** 63 - 1, -2 ** 63, 2 ** 63 - 1]


@pytest.mark.parametrize("bad,what", [('"n3"', "not an integer"), ("7.5", "not an integer"),
                                      ("true", "not an integer"), ("1e-3", "not an integer"),
                                      ("9223372036854775808", "past int64's range"),
                                      ("1e19", "past int64's range")])
def test_an_id_an_integer_job_cannot_hold_fails_its_file(tmp_path, bad, what):
    literals = [str(i) for i in range(20)]
    literals[12] = bad
    src = _id_file(tmp_path / "ids.jsonl", literals)
    with pytest.raises(InputFormatError) as e:
        list(read_documents(src, id_type="int64", shard_rows=10))
    assert f"line 12: id {bad} (field 'id') is {what}, but this job's ids are integers " \
           "(decided from the first ids of its inputs): rerun with --id-type string (and " \
           "--overwrite); lines 0-9 are in the shards, the rest of the file is not" in str(e.value)


def test_a_job_of_integer_ids_fails_the_file_with_a_string_id(gpt2_file, tmp_path):
    literals = [str(i) for i in range(30)]
    literals[12] = '"n3"'
    src = _id_file(tmp_path / "ids.jsonl", literals)
    good = _id_file(tmp_path / "good.jsonl", [str(100 + i) for i in range(5)])
    out = str(tmp_path / "out")
    assert main(["tokenize", src, good, "--tokenizer", gpt2_file, "--out", out,
                 "--shard-rows", "10", "--no-progress"]) == 1
    with open(os.path.join(out, RUN_MANIFEST)) as f:
        manifest = json.load(f)
    [error] = manifest["errors"]
    assert error["source"].endswith("ids.jsonl")
    assert 'line 12: id "n3"' in error["error"] and "--id-type string" in error["error"]
    assert manifest["totals"]["rejects"] == {}
    t = pq.read_table(os.path.join(out, "data"))
    assert sorted(t.column("id").to_pylist()) == list(range(10)) + list(range(100, 105))
