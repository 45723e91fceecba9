"""End-to-end tests of the Beam pipeline: FnApiRunner, multi_processing with 2 workers, rerun,
bad input, TestStream, SIGKILL. One corpus and one run per runner are shared by many assertions
(Beam start-up is slow). The tokenizer is GPT-2's byte-level BPE (tests/data/gpt2) saved as a
corpustok file; expected ids come from HF ``tokenizers`` on texts computed here with Python's
codecs from the corpus as built, never from the pipeline's own output.
"""
import functools
import gzip
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from corpustok.pipeline.demo import sample_path
from corpustok.pipeline.config import config_hash
from corpustok.pipeline.read import shard_name
from corpustok.pipeline.run import RunResult, tokenize
from corpustok.pipeline.verify import verify_shards
from corpustok.pipeline.outdir import ENTRIES_DIR, REJECTS_DIR
from corpustok.schemas import REJECTS, TOKENS, check_run_manifest, check_table
from conftest import TEST_DATA, shard_files

SAMPLE = sample_path()
GPT2 = TEST_DATA / "gpt2"
EOS = 50256  # <|endoftext|>
SHARD_BYTES = 20_000


@pytest.fixture(scope="module")
def hf_ids():
    """ids of a text by HF's GPT-2 byte-level BPE (the reference)."""
    from tokenizers import ByteLevelBPETokenizer
    hf = ByteLevelBPETokenizer(str(GPT2 / "vocab.json"), str(GPT2 / "merges.txt"),
                               add_prefix_space=False)
    return lambda text: hf.encode(text).ids


def _sample_texts():
    with open(SAMPLE, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def _replacement_count(raw: bytes) -> int:
    return raw.decode("utf-8", "replace").count("\ufffd") - raw.count(b"\xef\xbf\xbd")


def build_corpus(folder):
    """Input files plus the expected outcome of every input row:
    ``{(source, row): ("keep", text, replaced) | ("reject", reason)}``."""
    texts = _sample_texts()
    expect = {}
    files = []

    # Parquet, string text, int ids, 4 row groups; a null and an empty text.
    a = os.path.join(folder, "a.parquet")
    at = texts[:300]
    at[7] = None
    at[8] = ""
    pq.write_table(pa.table({"id": pa.array(range(1000, 1300), pa.int64()),
                             "text": pa.array(at, pa.string()),
                             "other": pa.array(range(300))}), a, row_group_size=80)
    for i, t in enumerate(at):
        expect[(a, i)] = ("reject", "null_text") if t is None else \
            ("reject", "empty_text") if t == "" else ("keep", t, 0)
    files.append(a)

    # Parquet, binary text with invalid UTF-8 (counted recovery), custom column names.
    b = os.path.join(folder, "b.parquet")
    raws = [t.encode() for t in texts[300:360]]
    raws[3] = b"caf\xc3 au lait \xff\xfe ok"
    raws[4] = b"\xed\xa0\x80 lone surrogate bytes, truncated \xe2\x82"
    pq.write_table(pa.table({"body": pa.array(raws, pa.binary()),  # text before id
                             "doc": [f"b{i}" for i in range(len(raws))]}), b)
    for i, r in enumerate(raws):
        expect[(b, i)] = ("keep", r.decode("utf-8", "replace"), _replacement_count(r))
    files.append(b)

    # JSONL.gz with bad lines, a lone surrogate escape, blank lines, invalid UTF-8.
    c = os.path.join(folder, "c.jsonl.gz")
    lines = [json.dumps({"id": f"c{i}", "text": t}).encode() for i, t in enumerate(texts[360:460])]
    lines[5] = b'{"id": "c5", "text": "broken'
    lines[6] = b'{"id": "c6", "text": "lone \\ud800 surrogate"}'
    lines[7] = b''
    lines[8] = b'[1, 2]'
    lines[9] = b'{"id": "c9"}'
    lines[10] = b'{"id": "c10", "text": null}'
    lines[11] = b'{"id": "c11", "text": "bad \xff byte"}'
    lines[12] = b'{"id": "c12", "text": 42}'
    with gzip.open(c, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    for i, raw in enumerate(lines):
        if i in (5,):
            expect[(c, i)] = ("reject", "bad_json")
        elif i in (8, 9, 12):
            expect[(c, i)] = ("reject", "bad_record")
        elif i == 10:
            expect[(c, i)] = ("reject", "null_text")
        elif i == 6:
            expect[(c, i)] = ("keep", "lone \ufffd surrogate", 1)
        elif i == 11:
            expect[(c, i)] = ("keep", "bad \ufffd byte", 1)
        elif raw:
            expect[(c, i)] = ("keep", json.loads(raw)["text"], 0)
    files.append(c)

    # JSONL.zst
    d = os.path.join(folder, "d.jsonl.zst")
    body = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts[460:520]))
    with open(d, "wb") as f:
        f.write(zstandard.ZstdCompressor().compress(body.encode()))
    for i, t in enumerate(texts[460:520]):
        expect[(d, i)] = ("keep", t, 0)
    files.append(d)
    return files, expect


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_corpus(str(tmp_path_factory.mktemp("corpus")))


def _run(files, out, tok, **kw):
    return tokenize(files, out, tok, eos=EOS, shard_bytes=SHARD_BYTES, write_rejects=True, **kw)


def _run_by_columns(files, out, tok, **kw):
    """Files with the default columns, and b.parquet (doc/body) separately into out-b."""
    default = [f for f in files if not f.endswith("b.parquet")]
    other = [f for f in files if f.endswith("b.parquet")]
    return (_run(default, out, tok, **kw),
            _run(other, out + "-b", tok, id_column="doc", text_column="body", **kw))


@pytest.fixture(scope="module")
def inmemory(corpus, gpt2_file, tmp_path_factory):
    files, _ = corpus
    out = str(tmp_path_factory.mktemp("inmemory"))
    return out, _run_by_columns(files, out, gpt2_file)


def _folder_bytes(folder):
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = f.read()
    return out


def _shard_rows(folder):
    """{(source, row): (tokens, replaced)} over every shard, asserting each row appears once."""
    rows = {}
    for name in shard_files(folder):
        t = pq.read_table(os.path.join(folder, name))
        check_table(t, TOKENS, name)
        for src, row, toks, rep in zip(t.column("source").to_pylist(), t.column("row").to_pylist(),
                                       t.column("tokens").to_pylist(),
                                       t.column("replaced").to_pylist()):
            assert (src, row) not in rows, f"{src} row {row} is in two shards"
            rows[(src, row)] = (toks, rep)
    return rows


def _reject_rows(folder):
    rows = {}
    rej = os.path.join(folder, REJECTS_DIR)
    for name in sorted(os.listdir(rej)) if os.path.isdir(rej) else []:
        t = pq.read_table(os.path.join(rej, name))
        assert t.schema == REJECTS
        for r in t.to_pylist():
            assert (r["source"], r["row"]) not in rows
            rows[(r["source"], r["row"])] = r["reason"]
    return rows


def test_every_document_once_in_shards_or_rejects(corpus, inmemory, hf_ids):
    files, expect = corpus
    out, results = inmemory
    got = {}
    rejected = {}
    for folder in (out, out + "-b"):
        got.update(_shard_rows(folder))
        rejected.update(_reject_rows(folder))
    assert not set(got) & set(rejected)
    assert set(got) | set(rejected) == set(expect)
    for key, want in expect.items():
        if want[0] == "reject":
            assert rejected[key] == want[1], key
        else:
            toks, rep = got[key]
            assert toks == hf_ids(want[1]) + [EOS], key
            assert rep == want[2], key


def test_shards_decode_to_input_and_manifest(corpus, inmemory, gpt2_file, hf_ids):
    import corpustok
    files, expect = corpus
    out, results = inmemory
    tok = corpustok.load(gpt2_file)
    for r, folder in zip(results, (out, out + "-b")):
        assert isinstance(r, RunResult) and r.ok
        check_run_manifest(r.manifest)
        v = verify_shards(folder, tok)  # with the columns the manifest names (id/text, doc/body)
        assert v.ok, v.problems
        kept = [k for k, w in expect.items() if w[0] == "keep" and
                (k[0].endswith("b.parquet") == folder.endswith("b"))]
        assert v.documents == r.manifest["totals"]["documents"] == len(kept)
        assert r.counters["documents"] == len(kept)
        assert r.manifest["totals"]["tokens"] == sum(len(hf_ids(expect[k][1])) + 1
                                                     for k in kept)
        for e in r.manifest["shards"]:  # deterministic names from input file and row range
            assert e["shard"] == shard_name(e["source"], *e["rows"],
                                            config_hash(r.manifest["config"]), name=e["name"])
            assert os.path.exists(os.path.join(folder, e["file"]))
    totals = results[0].manifest["totals"]
    assert totals["rejects"] == {"bad_json": 1, "bad_record": 3, "empty_text": 1, "null_text": 2}
    shards = results[0].manifest["shards"]
    assert totals["shards"] == len(shards) > 4
    assert len({e["shard"] for e in shards}) == len(shards)


@pytest.mark.parametrize("workers,local_mode,threads", [(2, "threads", 1), (2, "processes", 1),
                                                        (1, "threads", 2)])
def test_two_workers_are_byte_identical(corpus, inmemory, gpt2_file, tmp_path, workers,
                                        local_mode, threads):
    """Two workers as threads or processes, or one worker whose batches run on two kernel
    threads: the shards of one in-process worker."""
    files, _ = corpus
    out, _ = inmemory
    mp_out = str(tmp_path / "mp")
    default = [f for f in files if not f.endswith("b.parquet")]
    r = _run(default, mp_out, gpt2_file, workers=workers, local_mode=local_mode,
             threads=threads)
    assert r.ok, r.manifest["errors"]
    assert r.counters["shards_written"] == r.manifest["totals"]["shards"]
    want = {k: v for k, v in _folder_bytes(out).items() if not k.startswith("b" + os.sep)}
    assert _folder_bytes(mp_out) == want


def test_bad_thread_count_or_local_mode_refused_before_the_job(corpus, gpt2_file, tmp_path):
    files, _ = corpus
    out = tmp_path / "o"
    with pytest.raises(ValueError, match="threads must be a positive int"):
        _run(files[:1], str(out), gpt2_file, threads=0)
    with pytest.raises(ValueError, match="local mode 'fibers': one of threads, processes"):
        _run(files[:1], str(out), gpt2_file, workers=2, local_mode="fibers")
    assert not out.exists()  # nothing claimed, nothing written


def test_rerun_skips_complete_shards(corpus, inmemory, gpt2_file):
    files, _ = corpus
    out, _ = inmemory
    before = _folder_bytes(out)
    # Damage one shard's entry: only that shard is redone.
    victim = sorted(os.listdir(os.path.join(out, ENTRIES_DIR)))[0]
    os.remove(os.path.join(out, ENTRIES_DIR, victim))
    default = [f for f in files if not f.endswith("b.parquet")]
    r = _run(default, out, gpt2_file)
    assert r.counters.get("shards_written") == 1
    assert r.counters.get("shards_skipped") == r.manifest["totals"]["shards"] - 1
    assert _folder_bytes(out) == before


def test_corrupt_inputs_are_named_and_the_rest_completes(corpus, gpt2_file, tmp_path):
    files, _ = corpus
    bad_pq = tmp_path / "corrupt.parquet"
    bad_pq.write_bytes(b"PAR1 this is not parquet at all")
    trunc = tmp_path / "trunc.jsonl.gz"
    body = gzip.compress("".join(json.dumps({"id": i, "text": f"doc {i} " * 50}) + "\n"
                                 for i in range(2000)).encode())
    trunc.write_bytes(body[: len(body) // 2])
    cut = tmp_path / "cut.parquet"  # a real Parquet file truncated (no footer)
    pq.write_table(pa.table({"id": [1, 2], "text": ["a", "b"]}), cut)
    cut.write_bytes(cut.read_bytes()[:-20])
    no_col = tmp_path / "nocol.parquet"
    pq.write_table(pa.table({"id": [1], "content": ["x"]}), no_col)
    good = files[0]
    r = tokenize([good, str(bad_pq), str(trunc), str(no_col), str(cut)], str(tmp_path / "out"),
                 gpt2_file, shard_bytes=SHARD_BYTES)
    assert not r.ok and r.manifest["status"] == "COMPLETED_WITH_ERRORS"
    errors = {os.path.basename(e["source"]): e["error"] for e in r.manifest["errors"]}
    assert set(errors) == {"corrupt.parquet", "trunc.jsonl.gz", "nocol.parquet", "cut.parquet"}
    assert "missing text column 'text'" in errors["nocol.parquet"]
    # One gzip member, cut: none of its lines passed the member's check, so none is kept.
    assert "unreadable after line" in errors["trunc.jsonl.gz"]
    assert "no line of it is in the shards (no gzip member of it passed its check)" in \
        errors["trunc.jsonl.gz"]
    sources = {e["source"] for e in r.manifest["shards"]}
    assert good in sources and str(trunc) not in sources


def test_long_documents_stream_in_bounded_slices(gpt2_file, hf_ids, tmp_path):
    texts = _sample_texts()
    big = "".join(texts[:400])  # multilingual, so slices cut inside multi-byte characters
    p = tmp_path / "long.parquet"
    pq.write_table(pa.table({"id": ["s", "big", "t"], "text": ["short", big, "tail"]}), p)
    r = tokenize([str(p)], str(tmp_path / "out"), gpt2_file, max_doc_bytes=1000)
    assert r.ok
    rows = _shard_rows(str(tmp_path / "out"))
    assert rows[(str(p), 1)][0] == hf_ids(big)
    assert rows[(str(p), 0)][0] == hf_ids("short")
    assert rows[(str(p), 2)][0] == hf_ids("tail")


def test_teststream_streaming_run(corpus, gpt2_file, hf_ids, tmp_path):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.testing.util import assert_that, equal_to

    import corpustok

    from corpustok.pipeline.read import read_documents
    from corpustok.pipeline.transforms import Tokenize, WriteTokenShards

    files, expect = corpus
    batches = list(read_documents(files[3], shard_bytes=5000))
    assert len(batches) > 3
    stream = TestStream()
    for i, b in enumerate(batches):
        stream = stream.add_elements([b]).advance_watermark_to(i + 1)
    stream = stream.advance_watermark_to_infinity()
    out = str(tmp_path)
    opts = PipelineOptions(["--streaming"])
    with beam.Pipeline(runner=BundleBasedDirectRunner(), options=opts) as p:
        docs = (p | stream
                | beam.ParDo(Tokenize(functools.partial(corpustok.load, gpt2_file)))  # a factory
                | WriteTokenShards(out, "test", config_hash({}))
                | beam.Map(lambda e: (e["shard"], e["documents"])))
        assert_that(docs, equal_to([(shard_name(b.source, b.start, b.stop, config_hash({})),
                                     b.table.num_rows) for b in batches]))
    rows = _shard_rows(out)
    assert {k: v[0] for k, v in rows.items()} == {
        k: hf_ids(w[1]) for k, w in expect.items() if k[0] == files[3]}


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_at_random_moment_then_rerun_is_byte_identical(gpt2_file, tmp_path):
    import random
    import shutil
    import signal
    import subprocess
    import time

    texts = _sample_texts()
    inp = tmp_path / "big.jsonl"
    with open(inp, "w", encoding="utf-8") as f:
        for i in range(6000):
            f.write(json.dumps({"id": i, "text": texts[i % len(texts)]}) + "\n")

    def start(out):  # the CLI, as a user runs it
        return subprocess.Popen([sys.executable, "-m", "corpustok.pipeline.cli", "tokenize",
                                 str(inp), "--tokenizer", gpt2_file, "--out", out, "--eos",
                                 "<|endoftext|>", "--shard-mb", "0.025", "--no-progress"],
                                start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)

    def entries(out):
        folder = os.path.join(out, ENTRIES_DIR)
        return {f for f in os.listdir(folder) if f.endswith(".json")} \
            if os.path.isdir(folder) else set()

    def kill(proc):
        """SIGKILL the run's process group; True when it was still running (a real crash)."""
        running = proc.poll() is None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it finished before the chosen moment
            running = False
        proc.wait()
        return running

    def first_shard_time(out, proc):
        """Seconds until a new shard entry appears in ``out`` (the writing phase)."""
        t0 = time.perf_counter()
        old = entries(out)
        while proc.poll() is None:
            if entries(out) - old:
                return time.perf_counter() - t0
            time.sleep(0.01)
        return time.perf_counter() - t0

    clean = str(tmp_path / "clean")
    t0 = time.perf_counter()
    proc = start(clean)
    writing_starts = first_shard_time(clean, proc)
    assert proc.wait(timeout=120) == 0
    writing = time.perf_counter() - t0 - writing_starts
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    resumed = str(tmp_path / "resumed")
    # First kill anywhere in the run (start-up included), drawn again on a fresh folder in the
    # rare case the run was already over; the second one inside the rerun's writing phase.
    for _ in range(5):
        shutil.rmtree(resumed, ignore_errors=True)
        proc = start(resumed)
        time.sleep(rng.uniform(0, 0.9 * (writing_starts + writing)))
        if kill(proc):
            break
    else:
        pytest.fail(f"seed {seed}: no kill landed while the job was running")
    proc = start(resumed)
    first_shard_time(resumed, proc)
    time.sleep(rng.uniform(0, writing / 2))  # earlier shards may be complete: less to write
    second = kill(proc)
    assert start(resumed).wait(timeout=120) == 0
    assert _folder_bytes(resumed) == _folder_bytes(clean), f"seed {seed}, second kill {second}"


@pytest.mark.slow
def test_100mb_document_is_tokenized_in_bounded_memory(gpt2_file, tmp_path):
    """A 100 MB document goes through the stream path; the run's peak RSS above a tiny run's
    stays within a fixed multiple of the document (ids, Arrow and Parquet buffers), and the
    shard decodes back to the document."""
    import subprocess

    import corpustok

    texts = _sample_texts()
    unit = "\n".join(texts)
    big = (unit * (100_000_000 // len(unit.encode()) + 1)).encode()[:100_000_000]
    big = big.decode("utf-8", "ignore")
    big_file = tmp_path / "big.parquet"
    pq.write_table(pa.table({"id": ["small", "big"], "text": ["tiny", big]}), big_file,
                   compression="zstd")
    tiny_file = tmp_path / "tiny.parquet"
    pq.write_table(pa.table({"id": ["small"], "text": ["tiny"]}), tiny_file)

    def peak_rss(path, out):
        code = ("import resource, sys\n"
                "from corpustok.pipeline.cli import main\n"
                "rc = main(['tokenize', sys.argv[1], '--tokenizer', sys.argv[2], '--out', "
                "sys.argv[3], '--no-progress'])\n"
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
                "sys.exit(rc)\n")
        res = subprocess.run([sys.executable, "-c", code, str(path), gpt2_file, str(out)],
                             capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-2000:]
        return int(res.stdout.split()[-1]) * 1024

    base = peak_rss(tiny_file, tmp_path / "tiny")
    peak = peak_rss(big_file, tmp_path / "out")
    grown = peak - base
    print(f"100 MB document: peak RSS {peak / 2**20:.0f} MiB, {grown / 2**20:.0f} MiB above a "
          f"tiny run")
    assert grown < 12 * len(big.encode())
    rows = {}
    for name in shard_files(tmp_path / "out"):
        for r in pq.read_table(tmp_path / "out" / name).to_pylist():
            rows[r["id"]] = r
    tok = corpustok.load(gpt2_file)
    assert rows["big"]["n_bytes"] == len(big.encode())
    assert tok.decode(rows["big"]["tokens"]) == big


def test_other_options_refuse_or_overwrite_and_changed_inputs_are_replaced(gpt2_file, hf_ids,
                                                                          tmp_path):
    from corpustok.pipeline.outdir import OtherJob
    src = tmp_path / "in.jsonl"
    texts = _sample_texts()[:40]
    src.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    out = str(tmp_path / "out")

    def rows_in_folder():
        files = shard_files(out)
        return files, sum(pq.read_table(os.path.join(out, f)).num_rows for f in files)

    first = tokenize([str(src)], out, gpt2_file, shard_bytes=2_000)
    assert first.manifest["totals"]["shards"] > 1
    before = sorted(os.listdir(out))
    with pytest.raises(OtherJob, match="--overwrite"):  # other shard size: another job
        tokenize([str(src)], out, gpt2_file, shard_bytes=1_000_000)
    assert sorted(os.listdir(out)) == before  # refused before touching anything
    second = tokenize([str(src)], out, gpt2_file, shard_bytes=1_000_000, mode="overwrite")
    old = {e["file"] for e in first.manifest["shards"]}
    assert {os.path.relpath(p, out) for p in second.removed} >= \
        old | {os.path.join(".corpustok", "manifest.json")}
    files, rows = rows_in_folder()
    assert len(files) == second.manifest["totals"]["shards"] == 1
    assert rows == second.manifest["totals"]["documents"] == len(texts)
    assert not os.path.isdir(os.path.join(out, REJECTS_DIR))
    third = tokenize([str(src)], out, gpt2_file, shard_bytes=1_000_000, write_rejects=True,
                     mode="overwrite")
    assert third.counters.get("shards_written") == 1  # --rejects changes the output: redone

    src.write_text(json.dumps({"id": 0, "text": "changed text"}) + "\n")  # same path, new rows
    fourth = tokenize([str(src)], out, gpt2_file, shard_bytes=1_000_000, write_rejects=True)
    assert fourth.manifest["superseded"] == [e["shard"] for e in third.manifest["shards"]]
    files, rows = rows_in_folder()
    assert len(files) == 1 and rows == fourth.manifest["totals"]["documents"] == 1
    table = pq.read_table(os.path.join(out, files[0]))
    assert table.column("tokens").to_pylist() == [hf_ids("changed text")]


def test_jsonl_with_other_field_names_is_a_file_error(gpt2_file, tmp_path):
    # Every object lacks the default fields: a named file error (exit 1), as a missing Parquet
    # column, not a silent run of bad_record rejects; naming the fields reads the file.
    src = tmp_path / "renamed.jsonl"
    src.write_text("".join(json.dumps({"doc_id": i, "body": f"text {i}"}) + "\n"
                           for i in range(30)))
    r = tokenize([str(src)], str(tmp_path / "out"), gpt2_file)
    assert r.manifest["status"] == "COMPLETED_WITH_ERRORS"
    assert r.manifest["totals"]["documents"] == 0
    [err] = r.manifest["errors"]
    assert "'id'" in err["error"] and "'text'" in err["error"] and "doc_id, body" in err["error"]
    r = tokenize([str(src)], str(tmp_path / "out2"), gpt2_file, id_column="doc_id",
                 text_column="body")
    assert r.ok and r.manifest["totals"]["documents"] == 30


def test_inputs_without_ids(gpt2_file, hf_ids, tmp_path):
    # Text-only corpora (The Pile, C4 style): --no-id gives null ids, rows known by source and
    # row; without it, the missing id is a named file error that points to --no-id.
    import corpustok
    texts = ["first document", "second one", "", "the fourth"]
    pq_src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": texts, "url": ["u"] * 4}), pq_src)
    js_src = tmp_path / "t.jsonl"
    js_src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    srcs = [str(pq_src), str(js_src)]
    r = tokenize(srcs, str(tmp_path / "out"), gpt2_file)
    assert r.manifest["status"] == "COMPLETED_WITH_ERRORS" and len(r.manifest["errors"]) == 2
    assert all("--no-id" in e["error"] for e in r.manifest["errors"])
    r = tokenize(srcs, str(tmp_path / "out"), gpt2_file, id_column=None)
    assert r.ok and r.manifest["totals"]["documents"] == 6
    assert r.manifest["totals"]["rejects"] == {"empty_text": 2}
    shards = shard_files(tmp_path / "out")
    assert len(shards) == 2
    for f in shards:
        rows = pq.read_table(tmp_path / "out" / f)
        assert rows.column("id").null_count == rows.num_rows
        assert rows.column("tokens").to_pylist() == [hf_ids(texts[i]) for i in
                                                      rows.column("row").to_pylist()]
    v = verify_shards(str(tmp_path / "out"), corpustok.load(gpt2_file))
    assert v.ok and v.documents == 6, v.problems


def test_dotted_column_name_and_null_ids(gpt2_file, hf_ids, tmp_path):
    src = str(tmp_path / "dots.parquet")
    pq.write_table(pa.table({"doc.id": pa.array(["a", None, "c"]),
                             "my.text": ["first text", "no id here", "third"]}), src)
    r = tokenize([src], str(tmp_path / "out"), gpt2_file, id_column="doc.id",
                 text_column="my.text")
    assert r.manifest["status"] == "COMPLETED"
    assert r.manifest["totals"]["documents"] == 2
    assert r.manifest["totals"]["rejects"] == {"bad_record": 1}
    files = shard_files(tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / files[0])
    assert table.column("id").to_pylist() == ["a", "c"]
    assert table.column("tokens").to_pylist() == [hf_ids("first text"), hf_ids("third")]
