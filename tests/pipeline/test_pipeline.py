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

from corpustok.pipeline.batches import Unit
from corpustok.pipeline.config import config_hash
from corpustok.pipeline.jobs.demo import sample_path
from corpustok.pipeline.jobs.tokenize import RunResult, tokenize
from corpustok.pipeline.output.layout import ENTRIES_DIR, REJECTS_DIR, RUN_MANIFEST
from corpustok.pipeline.output.layout import shard_name
from corpustok.pipeline.output.verify import verify_shards
from corpustok.pipeline.read.spec import ReadSpec
from corpustok.pipeline.runtime.transforms import plan_inputs
from corpustok.pipeline.runtime.unit_order import largest_first
from corpustok.schemas import REJECTS, TOKENS, check_run_manifest, check_table
from tests.conftest import GPT2, shard_files

SAMPLE = sample_path()
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


def test_units_are_taken_largest_first_and_the_order_changes_no_byte(corpus, inmemory,
                                                                    gpt2_file, tmp_path,
                                                                    monkeypatch):
    """Whole JSONL and text files first, then Parquet row groups by their text's size from the
    footer, largest first (ties in input order); a job whose units run in the opposite order
    writes the same bytes."""
    rows = [{"id": str(k), "text": "word " * (1 + (k * 37) % 400)} for k in range(600)]
    path = tmp_path / "groups.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=100)
    groups, _ = plan_inputs([str(path)], ReadSpec())
    sizes = [pq.ParquetFile(path).metadata.row_group(u.row_group).column(1)
             .total_uncompressed_size for u in groups]
    assert [u.text_bytes for u in groups] == sizes and len(set(sizes)) > 1
    whole = [Unit("a.jsonl", "jsonl"), Unit("b.txt", "txt")]
    got = largest_first(groups + whole)
    assert got[:2] == whole
    assert [u.text_bytes for u in got[2:]] == sorted(sizes, reverse=True)

    files, _ = corpus
    out, _ = inmemory
    default = [f for f in files if not f.endswith("b.parquet")]
    monkeypatch.setattr("corpustok.pipeline.runtime.transforms.spread_over",
                        lambda units, workers: list(reversed(largest_first(units))))
    r = _run(default, str(tmp_path / "reversed"), gpt2_file)
    assert r.ok
    want = {k: v for k, v in _folder_bytes(out).items() if not k.startswith("b" + os.sep)}
    assert _folder_bytes(tmp_path / "reversed") == want


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

    from corpustok.pipeline.read.units import read_documents
    from corpustok.pipeline.runtime.transforms import Tokenize, WriteShard

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
                | beam.ParDo(WriteShard(out, "test", config_hash({})))
                | beam.Map(lambda e: (e["shard"], e["documents"])))
        assert_that(docs, equal_to([(shard_name(b.source, b.start, b.stop, config_hash({})),
                                     b.table.num_rows) for b in batches]))
    rows = _shard_rows(out)
    assert {k: v[0] for k, v in rows.items()} == {
        k: hf_ids(w[1]) for k, w in expect.items() if k[0] == files[3]}


KILL_SEED = 20261205  # the kill moments' draws; a failure names the moments drawn


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_sigkill_at_random_moment_then_rerun_is_byte_identical(gpt2_file, tmp_path):
    """The CLI killed (SIGKILL, its process group) at a seeded random moment of a run, then
    again in the rerun that resumes it; a third run completes the folder, which is then byte
    for byte a clean run's. Each moment is a point of the job's progress, not a time, so it
    lands while the job runs on a loaded machine too, and each kill is checked to have ended
    a running job: the process was killed by the signal (-9, not an exit of its own), the
    folder has no run manifest (the job's last write), and shards were left to write."""
    import random
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
        return len([f for f in os.listdir(folder) if f.endswith(".json")]) \
            if os.path.isdir(folder) else 0

    def manifest(out):
        return os.path.join(out, RUN_MANIFEST)

    def wait_for(out, proc, shards, what):
        """Seconds until ``out`` holds ``shards`` complete shards; fails if the job ends."""
        t0 = time.perf_counter()
        while entries(out) < shards:
            assert proc.poll() is None, f"seed {KILL_SEED}: the job ended before {what}"
            time.sleep(0.005)
        return time.perf_counter() - t0

    def kill(out, proc, what):
        """SIGKILL the run's process group and check the kill ended a running job."""
        assert proc.poll() is None, f"seed {KILL_SEED}: the job ended before {what}"
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL, f"seed {KILL_SEED}: {what}"
        assert not os.path.exists(manifest(out)), \
            f"seed {KILL_SEED}: {what} landed after the job wrote its run manifest"
        left = entries(out)
        assert left < total, f"seed {KILL_SEED}: {what} landed after the last shard"
        return left

    clean = str(tmp_path / "clean")
    proc = start(clean)
    startup = wait_for(clean, proc, 1, "its first shard")
    writing = time.perf_counter()
    assert proc.wait(timeout=120) == 0
    writing = time.perf_counter() - writing
    total = json.loads(open(manifest(clean), encoding="utf-8").read())["totals"]["shards"]
    assert total == entries(clean) >= 40
    per_shard = writing / total

    rng = random.Random(KILL_SEED)
    resumed = str(tmp_path / "resumed")
    # First kill: in the start-up (a third of the draws; no shard is written yet, and the
    # writing that follows takes as long again) or after 1 to 2/3 of the shards, plus a
    # fraction of a shard's time so that it falls anywhere in the shard being written.
    proc = start(resumed)
    if rng.random() < 1 / 3:
        pause = rng.uniform(0, 0.8 * startup)
        what = f"the first kill, {pause:.2f} s into the start-up"
        time.sleep(pause)
    else:
        at = rng.randint(1, 2 * total // 3)
        what = f"the first kill, after shard {at} of {total}"
        wait_for(resumed, proc, at, what)
        time.sleep(rng.uniform(0, per_shard))
    done = kill(resumed, proc, what)
    # Second kill: in the rerun's writing, after 1 to half of the shards left to write.
    proc = start(resumed)
    at = done + rng.randint(1, max(1, (total - done) // 2))
    what = f"the second kill, after shard {at} of {total} ({done} done by the first run)"
    wait_for(resumed, proc, at, what)
    time.sleep(rng.uniform(0, per_shard))
    kill(resumed, proc, what)
    assert start(resumed).wait(timeout=120) == 0
    assert _folder_bytes(resumed) == _folder_bytes(clean), f"seed {KILL_SEED}: {what}"


# The peak RSS of a `corpustok tokenize` run, as a user runs it: the CLI is the child of a
# small wrapper process, whose RUSAGE_CHILDREN is the CLI's peak (and its workers', were there
# any). Not the child's own RUSAGE_SELF: Linux keeps ru_maxrss across fork and exec, so a
# process started by pytest reports at least pytest's RSS (over 1 GB in this suite).
_PEAK_RSS = ("import resource, subprocess, sys\n"
             "rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.exit(rc)\n")


def _peak_rss(inp, tokenizer, out, *options):
    """Peak RSS in bytes of ``corpustok tokenize INP --workers 1 OPTIONS`` into ``out``."""
    import subprocess
    res = subprocess.run([sys.executable, "-c", _PEAK_RSS, sys.executable, "-m",
                          "corpustok.pipeline.cli", "tokenize", str(inp), "--tokenizer",
                          tokenizer, "--out", str(out), "--no-progress", "--workers", "1",
                          *options], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    return int(res.stdout.split()[-1]) * 1024


def test_peak_memory_does_not_grow_with_the_corpus(gpt2_file, tmp_path):
    """docs/cli.md (long documents and memory): memory is bounded in the corpus's size. Two corpora of documents drawn
    from one set (the same size distribution), 6 MB and 24 MB of text in 0.5 MB shards: the
    larger run's peak RSS is within 40 MiB of the smaller's, where anything the job kept per
    document or per shard would grow 4 times. Measured (one worker, GPT-2, this corpus, peak
    about 460 MiB): +2 to +10 MiB alone on the machine, up to +26 MiB with another run beside
    it on its 2 cores; keeping 2.3 bytes per byte of the added text (the text itself and its
    ids, say) would be +40 MiB."""
    import random

    from corpustok.pipeline.output.layout import read_run_manifest
    texts = _sample_texts()
    rng = random.Random(11)

    def corpus(path, text_bytes):
        docs = size = 0
        with open(path, "w", encoding="utf-8") as f:
            while size < text_bytes:
                t = rng.choice(texts)
                f.write(json.dumps({"id": docs, "text": t}) + "\n")
                docs, size = docs + 1, size + len(t.encode())
        return docs

    peaks, runs = [], []
    for name, text_bytes in (("n", 6_000_000), ("4n", 24_000_000)):
        docs = corpus(tmp_path / f"{name}.jsonl", text_bytes)
        out = tmp_path / f"out-{name}"
        peaks.append(_peak_rss(tmp_path / f"{name}.jsonl", gpt2_file, out, "--shard-mb", "0.5"))
        totals = read_run_manifest(str(out))["totals"]
        assert totals["documents"] == docs
        runs.append((docs, totals["shards"]))
    (small_docs, small_shards), (large_docs, large_shards) = runs
    assert small_shards >= 10 and large_shards >= 4 * small_shards - 2
    assert large_docs > 3.9 * small_docs
    print(f"peak RSS {peaks[0] / 2**20:.0f} MiB ({small_docs} documents, {small_shards} "
          f"shards), {peaks[1] / 2**20:.0f} MiB ({large_docs}, {large_shards})")
    assert peaks[1] - peaks[0] < 40 * 2**20


@pytest.mark.slow
def test_one_big_documents_memory_grows_with_it(gpt2_file, tmp_path):
    """The other side of the memory claim: the reader holds a document whole, so peak RSS
    grows with the largest document. docs/cli.md says "by 12 to 17.5 times its size";
    measured here (this multilingual text, 0.57 GPT-2 tokens a byte; one worker, --max-doc-mb
    1): 15.0x at 100 MB, 15.2x at 27 MB, 17.5x at 50 MB (English text, 0.35 tokens a byte:
    11.8x to 15.3x); the bound is that measurement, 18 times the document plus 64 MiB, above
    a tiny run. The 100 MB document goes through the stream path in 1 MB slices, and its
    shard decodes back to it."""
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

    base = _peak_rss(tiny_file, gpt2_file, tmp_path / "tiny", "--max-doc-mb", "1")
    peak = _peak_rss(big_file, gpt2_file, tmp_path / "out", "--max-doc-mb", "1")
    size = len(big.encode())
    grown = peak - base
    print(f"100 MB document: peak RSS {peak / 2**20:.0f} MiB, {grown / 2**20:.0f} MiB above a "
          f"tiny run's {base / 2**20:.0f} MiB ({grown / size:.1f}x the document)")
    assert grown < 18 * size + 64 * 2**20
    rows = {}
    for name in shard_files(tmp_path / "out"):
        for r in pq.read_table(tmp_path / "out" / name).to_pylist():
            rows[r["id"]] = r
    tok = corpustok.load(gpt2_file)
    assert rows["big"]["n_bytes"] == size
    assert tok.decode(rows["big"]["tokens"]) == big


def test_other_options_refuse_or_overwrite_and_changed_inputs_are_replaced(gpt2_file, hf_ids,
                                                                          tmp_path):
    from corpustok.pipeline.output.layout import OtherJob
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
