"""Whole-corpus speed: files of real documents to tokens, corpustok's job against its peers.

    .venv/bin/python bench/corpus.py [--corpus DIR...] [--tokenizers gpt2,cl100k,o200k,wordpiece]
                                     [--rounds 3] [--mb LIMIT] [--skip NAME,...] [--only NAME,...]
                                     [--slow-mb 50] [--json OUT]
    .venv/bin/python bench/corpus.py --render OUT.json      # the Markdown for docs/benchmarks.md

The corpus is Parquet parts of real documents (``--corpus``; default ``../shared/data/corpus-b``,
268 MB of Debian documentation, source code and translations as web-page-sized documents,
plus ``/tmp/corpus-gb`` when ``bench/corpus_build.py`` has built it there); ``--mb`` takes the
first rows of the first files up to LIMIT MB of text (written once to a Parquet file in
``--work``). Every contender reads the same documents, with the same vocabulary and split
pattern, and its token total must equal the others' (a mismatch is printed and recorded).

Each contender runs in a fresh subprocess per round; rounds take turns (the contenders' order
rotates each round). The parent records the wall time, the CPU time (user + system of the child
and the processes it waited for, from ``os.wait4``), the peak RSS (the process tree's summed
RSS, sampled every 100 ms), the text bytes and the tokens.
Start-up (interpreter, imports, tokenizer load, Numba's cached code and a rank file's kept
tables loaded, Beam's set-up) is the same contender run on the first 8 documents, measured
apart and reported apart (the figures of the whole run include it). Before the rounds, every contender runs once on those 8
documents (warms the Numba cache and the page cache), and corpustok's modules are compiled to
bytecode as ``run_local.sh`` and pip do (an environment's PYTHONDONTWRITEBYTECODE would make
every corpustok process compile them again, the peers' installed modules not). Contenders:

- ``job-1w``, ``job-2w``: ``corpustok tokenize FILES --tokenizer T --out DIR --workers 1|2``
  (the console script beside this interpreter): its own Parquet reading, shards on disk; the
  token total is the run manifest's.
- ``kernel``: pyarrow reads batches of 1,024 rows, ``corpustok.load(T).encode_batch(column)``
  (one thread); ids counted, then dropped (no disk).
- ``giga-parquet-1t``, ``giga-parquet-2t``: gigatoken ``Tokenizer.encode_files(
  ParquetFileSource(files, column="text"))``, ``parallel=False`` (1 thread) or rayon with
  ``RAYON_NUM_THREADS=2``; tokens in memory.
- ``giga-text-1t``: ``encode_files(TextFileSource([txt], separator=SEP))`` over the same
  documents written once to a text file joined by a separator (its README's fastest path).
- ``giga-bytes-1t``: that file read into one buffer, ``encode_batch(BytesSource(buf,
  separator=SEP), parallel=False)``.
- ``script``: a pyarrow + gigatoken job of ~60 lines: pyarrow reads batches of 1,024 rows,
  gigatoken ``encode_batch`` on one thread over the Arrow buffers (an awkward string array, no
  per-document Python object), pyarrow writes ``id, tokens list<int32>`` shards (zstd) of 8
  batches each.
- ``datatrove``: ``LocalPipelineExecutor([ParquetReader, DocumentTokenizer(shuffle_documents=
  False)], tasks=1, workers=1)`` with HF ``tokenizers`` (``RAYON_NUM_THREADS=1``), its ``.ds``
  files on disk; on the first ``--slow-mb`` MB (it is slow), with its own reference total.
- ``hf-datasets``: ``Dataset.from_parquet(files, cache_dir=fresh)`` then
  ``map(batched=True, batch_size=1024)`` with ``tokenizers.Tokenizer.encode_batch_fast``
  (``add_special_tokens=False``, ``RAYON_NUM_THREADS=1``), one process; its Arrow cache on disk;
  on the first ``--slow-mb`` MB too.
- WordPiece (bert-base-uncased, ``tests/data``): the corpustok contenders, ``nanotoken-text-1t``
  and ``-2t`` (nanotoken's file path: ``encode_files(TextFileSource([txt], separator=SEP),
  add_special_tokens=False)``), datatrove and HF (the tokenizer.json without its [CLS]/[SEP]
  post-processor, so no contender adds tokens).

Tokenizers: GPT-2 (``tests/data/gpt2``; its HF ``tokenizer.json`` for the peers is
``corpustok.load(...).to_hf()``), cl100k and o200k (``../shared/data/vocab/modern/*.tiktoken``:
gigatoken's ``Tokenizer.from_tiktoken`` takes the pattern from the file's name, HF gets
``to_hf()``), WordPiece. Printed: a table per tokenizer with medians, MB per CPU-second (the
cost per core), MB/s of wall time, and the per-core ratio to the pyarrow + gigatoken script and
to gigatoken's ``encode_files`` (Parquet, one thread; for WordPiece nanotoken's, one thread).
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import tree_rss  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
CORPUS_B = SHARED / "corpus-b"
CORPUS_GB = Path("/tmp/corpus-gb")
MODERN = SHARED / "vocab" / "modern"
CORPUSTOK = Path(sys.executable).parent / "corpustok"
SEP = "\x1e\n"  # between documents in the text file (checked absent from every document)
BATCH_ROWS = 1024
TINY_DOCS = 8

TOKENIZERS = {
    "gpt2": {"corpustok": str(REPO / "tests" / "data" / "gpt2"), "kind": "bpe"},
    "cl100k": {"corpustok": str(MODERN / "cl100k_base.tiktoken"), "kind": "bpe"},
    "o200k": {"corpustok": str(MODERN / "o200k_base.tiktoken"), "kind": "bpe"},
    "wordpiece": {"corpustok": str(REPO / "tests" / "data" / "bert-base-uncased" /
                                   "tokenizer.json"), "kind": "wp"},
}

# name: (tokenizer kinds, label); the order is the table's
CONTENDERS = {
    "job-1w": ("bpe wp", "corpustok tokenize, --workers 1 (shards on disk)"),
    "job-2w": ("bpe wp", "corpustok tokenize, --workers 2 (shards on disk)"),
    "kernel": ("bpe wp", "corpustok encode_batch over pyarrow batches (1 thread, in memory)"),
    "script": ("bpe", "pyarrow + gigatoken script, 1 thread (shards on disk)"),
    "giga-parquet-1t": ("bpe", "gigatoken encode_files(ParquetFileSource), 1 thread"),
    "giga-parquet-2t": ("bpe", "gigatoken encode_files(ParquetFileSource), 2 threads"),
    "giga-text-1t": ("bpe", "gigatoken encode_files(TextFileSource + separator), 1 thread"),
    "giga-bytes-1t": ("bpe", "gigatoken encode_batch(BytesSource + separator), 1 thread"),
    "nanotoken-text-1t": ("wp", "nanotoken encode_files(TextFileSource + separator), 1 thread"),
    "nanotoken-text-2t": ("wp", "nanotoken encode_files(TextFileSource + separator), 2 threads"),
    "hf-datasets": ("bpe wp", "HF datasets.map(batched) + tokenizers, 1 process, 1 thread"),
    "datatrove": ("bpe wp", "datatrove DocumentTokenizer (HF tokenizers), 1 task, 1 thread"),
}
SCRIPT_REF, GIGA_REF = "script", "giga-parquet-1t"
SLOW = {"datatrove", "hf-datasets"}  # run on the first --slow-mb MB


# ----------------------------------------------------------------------------- children
# Each runs in a fresh interpreter (``--child NAME SPEC``) and prints one JSON line:
# {"tokens": N, "docs": N}. They import only what they use.

def _ak_strings(col):
    """An awkward string array over a pyarrow string array's buffers (no copy of the text)."""
    import awkward as ak
    import numpy as np
    offsets = np.frombuffer(col.buffers()[1], np.int32)[col.offset:col.offset + len(col) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(col.buffers()[2], np.uint8) if col.buffers()[2] is not None \
        else np.zeros(0, np.uint8)
    content = ak.contents.NumpyArray(data, parameters={"__array__": "char"})
    return ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(offsets), content,
                                                parameters={"__array__": "string"}))


def _ak_count(arr):
    """Tokens and rows of an awkward list array (from its offsets)."""
    import numpy as np
    offsets = np.asarray(arr.layout.offsets)
    return int(offsets[-1] - offsets[0]), len(offsets) - 1


def _giga(spec):
    import gigatoken as gt
    if spec["giga_tiktoken"]:
        return gt.Tokenizer.from_tiktoken(spec["giga_tiktoken"])
    return gt.Tokenizer(spec["hf_json"])


def child_kernel(spec):
    import pyarrow.parquet as pq
    import corpustok
    tok = corpustok.load(spec["corpustok"])
    tokens = docs = 0
    for path in spec["files"]:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=["text"]):
            ids = tok.encode_batch(batch.column(0))
            tokens += ids.offsets[-1].as_py() - ids.offsets[0].as_py()
            docs += len(ids)
    return {"tokens": tokens, "docs": docs}


def child_giga_parquet(spec):
    import gigatoken as gt
    tok = _giga(spec)
    out = tok.encode_files(gt.ParquetFileSource(spec["files"], column="text"),
                           parallel=spec["threads"] > 1)
    tokens, docs = _ak_count(out)
    return {"tokens": tokens, "docs": docs}


def child_giga_text(spec):
    import gigatoken as gt
    tok = _giga(spec)
    out = tok.encode_files(gt.TextFileSource([spec["txt"]], separator=SEP),
                           parallel=spec["threads"] > 1)
    tokens, docs = _ak_count(out)
    return {"tokens": tokens, "docs": docs}


def child_giga_bytes(spec):
    import gigatoken as gt
    tok = _giga(spec)
    with open(spec["txt"], "rb") as f:
        data = f.read()
    out = tok.encode_batch(gt.BytesSource(data, separator=SEP.encode()),
                           parallel=spec["threads"] > 1)
    tokens, docs = _ak_count(out)
    return {"tokens": tokens, "docs": docs}


def child_script(spec):
    """The pyarrow + gigatoken job: Parquet batches in, list<int32> shards (zstd) out."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    tok = _giga(spec)
    schema = pa.schema([("id", pa.int64()), ("tokens", pa.list_(pa.int32()))])
    os.makedirs(spec["out"], exist_ok=True)
    tokens = docs = shard = 0
    writer, batches_in_shard = None, 0
    for path in spec["files"]:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS,
                                                       columns=["id", "text"]):
            ids = tok.encode_batch(_ak_strings(batch.column(1)), parallel=False)
            offsets = np.asarray(ids.layout.offsets)
            values = np.asarray(ids.layout.content.data)[offsets[0]:offsets[-1]]
            lists = pa.ListArray.from_arrays(pa.array((offsets - offsets[0]).astype(np.int32)),
                                             pa.array(values.view(np.int32)))
            if writer is None:
                writer = pq.ParquetWriter(os.path.join(spec["out"], f"shard-{shard:05d}.parquet"),
                                          schema, compression="zstd")
            writer.write_table(pa.table([batch.column(0), lists], schema=schema))
            tokens += int(offsets[-1] - offsets[0])
            docs += len(lists)
            batches_in_shard += 1
            if batches_in_shard == 8:
                writer.close()
                writer, batches_in_shard, shard = None, 0, shard + 1
    if writer is not None:
        writer.close()
    return {"tokens": tokens, "docs": docs}


def child_nanotoken_text(spec):
    import nanotoken as nt
    tok = nt.Tokenizer(spec["corpustok"])  # the same tokenizer.json
    out = tok.encode_files(nt.TextFileSource([spec["txt"]], separator=SEP),
                           add_special_tokens=False, parallel=spec["threads"] > 1)
    return {"tokens": int(out.num_tokens), "docs": len(out)}


def child_hf_datasets(spec):
    import datasets
    import pyarrow.compute as pc
    import tokenizers
    datasets.disable_progress_bars()
    tok = tokenizers.Tokenizer.from_file(spec["hf_json"])
    ds = datasets.Dataset.from_parquet(spec["files"], cache_dir=spec["out"])

    def encode(batch):
        return {"input_ids": [e.ids for e in tok.encode_batch_fast(batch["text"],
                                                                   add_special_tokens=False)]}

    out = ds.map(encode, batched=True, batch_size=BATCH_ROWS, remove_columns=ds.column_names)
    lengths = pc.list_value_length(out.data.column("input_ids"))
    return {"tokens": int(pc.sum(lengths).as_py()), "docs": len(out)}


def child_datatrove(spec):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.tokens import DocumentTokenizer
    out = Path(spec["out"])
    step = DocumentTokenizer(output_folder=str(out / "tokens"),
                             tokenizer_name_or_path=spec["hf_json"], eos_token=None,
                             shuffle_documents=False)
    LocalPipelineExecutor([ParquetReader(spec["links"], glob_pattern="*.parquet",
                                         text_key="text", id_key="id"), step],
                          tasks=1, workers=1, logging_dir=str(out / "logs")).run()
    size = sum(p.stat().st_size for p in (out / "tokens").glob("*.ds"))
    return {"tokens": size // step.token_size, "docs": None}


CHILDREN = {"kernel": child_kernel, "giga-parquet-1t": child_giga_parquet,
            "giga-parquet-2t": child_giga_parquet, "giga-text-1t": child_giga_text,
            "giga-bytes-1t": child_giga_bytes, "script": child_script,
            "nanotoken-text-1t": child_nanotoken_text, "nanotoken-text-2t": child_nanotoken_text,
            "hf-datasets": child_hf_datasets, "datatrove": child_datatrove}


def child_env(name):
    """Environment of a contender's process: its thread count."""
    env = dict(os.environ)
    threads = 2 if name.endswith("-2t") else 1
    env["RAYON_NUM_THREADS"] = str(threads)
    env["TOKENIZERS_PARALLELISM"] = "false"
    env["PYTHONWARNINGS"] = "ignore"
    return env, threads


# ----------------------------------------------------------------------------- measuring

@dataclass(frozen=True)
class Measured:
    """One process tree's run: wall, user and system CPU seconds (its children's included),
    peak RSS in bytes, its output and exit code. System time is reported apart: on a VM whose
    memory is handed back to the host, first touches of memory cost system time that varies
    run to run (0.55-2.25 s for the same 268 MB job, 2026-12-06)."""
    wall: float
    user: float
    sys: float
    peak: int
    stdout: str
    stderr: str
    returncode: int

    @property
    def cpu(self):
        return self.user + self.sys


def measure(cmd, env=None) -> Measured:
    """Run ``cmd`` and measure it (:class:`Measured`)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
        peak = 0
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.1)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    # ru_maxrss is not used: a child started by fork + exec keeps this process's high-water mark
    return Measured(wall, ru.ru_utime, ru.ru_stime, peak, stdout, stderr,
                    os.waitstatus_to_exitcode(status))


def job_tokens(out):
    """The token total of a corpustok output folder, from its run manifest."""
    with open(os.path.join(out, ".corpustok", "manifest.json"), encoding="utf-8") as f:
        man = json.load(f)
    return int(man["totals"]["tokens"]), int(man["totals"].get("documents", 0)) or None


def run_contender(name, tk, inp, work):
    """One run of contender ``name`` with tokenizer spec ``tk`` over input ``inp``."""
    out = os.path.join(work, "out", name)
    shutil.rmtree(out, ignore_errors=True)
    if name.startswith("job-"):
        cmd = [str(CORPUSTOK), "tokenize", *inp["files"], "--tokenizer", tk["corpustok"],
               "--out", out, "--workers", name[4], "--no-progress"]
        m = measure(cmd)
        if m.returncode:
            sys.exit(f"{name} failed ({m.returncode}):\n{m.stderr[-3000:]}")
        tokens, docs = job_tokens(out)
    else:
        env, threads = child_env(name)
        spec = {**tk, **inp, "out": out, "threads": threads}
        cmd = [sys.executable, __file__, "--child", name, json.dumps(spec)]
        m = measure(cmd, env)
        if m.returncode:
            sys.exit(f"{name} failed ({m.returncode}):\n{m.stderr[-3000:]}")
        res = json.loads(m.stdout.strip().splitlines()[-1])
        tokens, docs = res["tokens"], res["docs"]
    shutil.rmtree(out, ignore_errors=True)
    return {"wall_s": m.wall, "cpu_s": m.cpu, "user_s": m.user, "sys_s": m.sys,
            "peak_rss": m.peak, "tokens": tokens, "docs": docs}


# ----------------------------------------------------------------------------- inputs

def corpus_files(dirs):
    files = []
    for d in dirs:
        found = sorted(Path(d).glob("part-*.parquet"))
        if not found:
            sys.exit(f"no part-*.parquet in {d}")
        files += [str(p) for p in found]
    return files


def prepare_input(files, mb, folder, docs_limit=None):
    """The input of a run: the files themselves, or the first rows up to ``mb`` MB of text
    (or ``docs_limit`` documents) written to one Parquet file in ``folder``; plus the same
    documents as a separator-joined text file and a folder of links (datatrove's reader)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    os.makedirs(folder, exist_ok=True)
    meta = os.path.join(folder, "input.json")
    if os.path.exists(meta):
        with open(meta) as f:
            got = json.load(f)
        if got["sources"] == files and got["mb"] == mb and got["docs_limit"] == docs_limit:
            return got
    limit = mb * 1e6 if mb else None
    subset = bool(limit or docs_limit)
    writer = None
    nbytes = ndocs = 0
    txt = os.path.join(folder, "corpus.txt")
    with open(txt, "wb") as t:
        done = False
        for path in files:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS):
                text = batch.column("text")
                lengths = pc.binary_length(text).to_numpy()
                take = len(lengths)
                if limit:
                    cum = nbytes + lengths.cumsum()
                    take = min(take, int((cum < limit).sum()) + 1)
                if docs_limit:
                    take = min(take, docs_limit - ndocs)
                batch = batch.slice(0, take)
                for s in batch.column("text").to_pylist():
                    if not s or SEP in s:
                        sys.exit(f"a document is empty or holds the separator {SEP!r}")
                    t.write(s.encode())
                    t.write(SEP.encode())
                nbytes += int(lengths[:take].sum())
                ndocs += take
                if subset:
                    if writer is None:
                        writer = pq.ParquetWriter(os.path.join(folder, "part-00000.parquet"),
                                                  batch.schema, compression="zstd")
                    writer.write_table(pa.Table.from_batches([batch]), row_group_size=10000)
                if (limit and nbytes >= limit) or (docs_limit and ndocs >= docs_limit):
                    done = True
                    break
            if done:
                break
    if writer is not None:
        writer.close()
    used = [os.path.join(folder, "part-00000.parquet")] if subset else list(files)
    links = os.path.join(folder, "links")
    shutil.rmtree(links, ignore_errors=True)
    os.makedirs(links)
    for i, p in enumerate(used):
        os.symlink(os.path.abspath(p), os.path.join(links, f"part-{i:05d}.parquet"))
    got = {"sources": files, "mb": mb, "docs_limit": docs_limit, "files": used, "txt": txt,
           "links": links, "bytes": nbytes, "docs": ndocs}
    with open(meta, "w") as f:
        json.dump(got, f)
    return got


def prepare_tokenizer(key, work):
    """Paths each contender loads for ``key``: corpustok's file, an HF tokenizer.json with the
    same vocabulary and pattern (no post-processor), gigatoken's rank file when there is one."""
    import corpustok
    spec = dict(TOKENIZERS[key])
    os.makedirs(os.path.join(work, "tok"), exist_ok=True)
    hf_json = os.path.join(work, "tok", f"{key}.json")
    if spec["kind"] == "bpe":
        hf = corpustok.load(spec["corpustok"]).to_hf()
    else:
        with open(spec["corpustok"], encoding="utf-8") as f:
            hf = json.load(f)
        hf["post_processor"] = None  # no [CLS]/[SEP]: corpustok adds none either
    hf["truncation"] = hf["padding"] = None  # bert-base-uncased's file truncates at 128
    with open(hf_json, "w", encoding="utf-8") as f:
        json.dump(hf, f)
    spec["hf_json"] = hf_json
    spec["giga_tiktoken"] = spec["corpustok"] if spec["corpustok"].endswith(".tiktoken") \
        else None
    return spec


# ----------------------------------------------------------------------------- report

def versions():
    out = {"python": platform.python_version()}
    for name in ("corpustok", "gigatoken", "nanotoken", "tokenizers", "datasets", "datatrove",
                 "pyarrow", "numba", "apache_beam", "awkward"):
        try:
            from importlib.metadata import version
            out[name] = version(name.replace("_", "-"))
        except Exception:
            out[name] = None
    return out


def machine():
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def summarise(runs, startups, mb):
    s = {"mb": mb, "rounds": len(runs),
         "wall_s": statistics.median(r["wall_s"] for r in runs),
         "cpu_s": statistics.median(r["cpu_s"] for r in runs),
         "user_s": statistics.median(r["user_s"] for r in runs),
         "sys_s": statistics.median(r["sys_s"] for r in runs),
         "peak_rss_mib": max(r["peak_rss"] for r in runs) / 2**20,
         "tokens": runs[0]["tokens"], "docs": runs[0]["docs"],
         "startup_wall_s": statistics.median(r["wall_s"] for r in startups),
         "startup_cpu_s": statistics.median(r["cpu_s"] for r in startups),
         "runs": [{k: v for k, v in r.items()} for r in runs]}
    s["mb_per_cpu_s"] = mb / s["cpu_s"]
    s["mb_per_s"] = mb / s["wall_s"]
    net = s["cpu_s"] - s["startup_cpu_s"]
    s["mb_per_cpu_s_net"] = mb / net if net > 0 else None
    return s


def table(result, key):
    """Markdown rows for tokenizer ``key`` of a result."""
    rows = result["results"][key]
    giga = GIGA_REF if GIGA_REF in rows else "nanotoken-text-1t"  # WordPiece: nanotoken's
    ref_s = rows.get(SCRIPT_REF, {}).get("mb_per_cpu_s")
    ref_g = rows.get(giga, {}).get("mb_per_cpu_s")
    lines = ["| contender | text MB | wall s | CPU s (system) | MB/s (wall) | MB per CPU-s | "
             "x script (per core) | x encode_files (per core) | MB per CPU-s without "
             "start-up | start-up wall / CPU s | peak RSS MiB | tokens |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        if "cpu_s" not in r:
            continue
        xs = f"{r['mb_per_cpu_s'] / ref_s:.2f}" if ref_s else "-"
        xg = f"{r['mb_per_cpu_s'] / ref_g:.2f}" if ref_g else "-"
        net = f"{r['mb_per_cpu_s_net']:.1f}" if r.get("mb_per_cpu_s_net") else "-"
        ok = "" if r.get("tokens_agree", True) else " **MISMATCH**"
        system = f" ({r['sys_s']:.2f})" if "sys_s" in r else ""  # results before 2026-12-06 lack it
        lines.append(f"| {CONTENDERS[name][1]} | {r['mb']:,.1f} | {r['wall_s']:.2f} | "
                     f"{r['cpu_s']:.2f}{system} | {r['mb_per_s']:.1f} | {r['mb_per_cpu_s']:.1f} | "
                     f"{xs} | {xg} | {net} | {r['startup_wall_s']:.2f} / "
                     f"{r['startup_cpu_s']:.2f} | {r['peak_rss_mib']:,.0f} | "
                     f"{r['tokens']:,}{ok} |")
    return "\n".join(lines)


def render(path):
    with open(path) as f:
        result = json.load(f)
    c = result["corpus"]
    first = f", first {c['mb']:g} MB" if c["mb"] else ""
    print(f"Measured {result['date']} on {result['machine']} (shared; CPU time is the cost per "
          f"core), median of {result['rounds']} rounds, each contender in a fresh process, "
          f"rounds in turns. Corpus: {c['bytes'] / 1e6:,.1f} MB of text, {c['docs']:,} "
          f"documents ({', '.join(os.path.basename(d.rstrip('/')) for d in c['dirs'])}"
          f"{first}). Versions: " +
          ", ".join(f"{k} {v}" for k, v in result["versions"].items() if v) + ".")
    if result.get("note"):
        print()
        print(f"Note: {result['note']}.")
    print()
    print(f"    {result['command']}")
    for key in result["results"]:
        print()
        print(f"**{key}**" + ("" if not result["mismatches"].get(key) else
                              f" (token totals disagree: {result['mismatches'][key]})"))
        print()
        print(table(result, key))


# ----------------------------------------------------------------------------- main

def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        res = CHILDREN[sys.argv[2]](json.loads(sys.argv[3]))
        print(json.dumps(res), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", nargs="+", help="corpus folders of part-*.parquet (default: "
                    "corpus-b, plus /tmp/corpus-gb when present)")
    ap.add_argument("--tokenizers", default="gpt2,cl100k,o200k,wordpiece")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mb", type=float, help="only the first rows up to this many MB of text")
    ap.add_argument("--skip", default="", help="contenders to leave out, comma-separated")
    ap.add_argument("--only", default="", help="only these contenders, comma-separated")
    ap.add_argument("--slow-mb", type=float, default=50,
                    help="datatrove and HF datasets (1-3 MB per CPU-second) run on the first "
                    "this many MB when the input is larger (0: on all of it)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "corpustok-bench-corpus"))
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--render", metavar="JSON", help="print the Markdown of a result and exit")
    args = ap.parse_args()
    if args.render:
        render(args.render)
        return
    dirs = args.corpus or [str(CORPUS_B)] + ([str(CORPUS_GB)] if
                                            list(CORPUS_GB.glob("part-*.parquet")) else [])
    files = corpus_files(dirs)
    keys = args.tokenizers.split(",")
    for k in keys:
        if k not in TOKENIZERS:
            sys.exit(f"unknown tokenizer {k!r}: one of {', '.join(TOKENIZERS)}")
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    for n in skip | only:
        if n not in CONTENDERS:
            sys.exit(f"unknown contender {n!r}: one of {', '.join(CONTENDERS)}")
    os.makedirs(args.work, exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", "corpustok", "kernels", "schemas",
                    "pipeline"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    tag = f"{args.mb or 'all'}MB-" + hashlib.sha256("\n".join(files).encode()).hexdigest()[:8]
    inp = prepare_input(files, args.mb, os.path.join(args.work, f"input-{tag}"))
    tiny = prepare_input(files, None, os.path.join(args.work, f"tiny-{tag}"), TINY_DOCS)
    dt_inp = inp
    if args.slow_mb and inp["bytes"] > args.slow_mb * 1e6 * 1.05:
        dt_inp = prepare_input(files, args.slow_mb,
                               os.path.join(args.work, f"input-{args.slow_mb:g}MB-{tag}"))
    cmd = "bench/corpus.py " + " ".join(sys.argv[1:])
    print(f"== whole-corpus benchmark: {machine()}")
    vers = versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in vers.items() if v))
    print(f"corpus: {', '.join(dirs)}: {len(inp['files'])} files, {inp['bytes'] / 1e6:,.1f} MB "
          f"of text, {inp['docs']:,} documents; {args.rounds} rounds, contenders in turns")
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    result = {"machine": machine(), "date": now,
              "versions": vers, "command": cmd, "rounds": args.rounds,
              "corpus": {"dirs": dirs, "files": inp["files"], "mb": args.mb,
                         "bytes": inp["bytes"], "docs": inp["docs"]},
              "slow_input": {"contenders": sorted(SLOW), "bytes": dt_inp["bytes"],
                             "docs": dt_inp["docs"]},
              "results": {}, "mismatches": {}}
    for key in keys:
        tk = prepare_tokenizer(key, args.work)
        names = [n for n in CONTENDERS if tk["kind"] in CONTENDERS[n][0].split()
                 and n not in skip and (not only or n in only)]
        print(f"\n-- {key}: {', '.join(names)}", flush=True)
        for n in names:  # warm-up: Numba cache, page cache
            run_contender(n, tk, tiny, args.work)
        runs = {n: [] for n in names}
        starts = {n: [] for n in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                starts[n].append(run_contender(n, tk, tiny, args.work))
                got = run_contender(n, tk, dt_inp if n in SLOW else inp, args.work)
                runs[n].append(got)
                print(f"  round {r + 1} {n:18s} wall {got['wall_s']:7.2f} s  CPU "
                      f"{got['cpu_s']:7.2f} s (system {got['sys_s']:5.2f})  RSS "
                      f"{got['peak_rss'] / 2**20:7,.0f} MiB  tokens {got['tokens']:,}",
                      flush=True)
        rows = {}
        for n in names:
            the_inp = dt_inp if n in SLOW else inp
            rows[n] = summarise(runs[n], starts[n], the_inp["bytes"] / 1e6)
        # token totals: every run of every contender on the same input must agree
        mism = []
        ref = next((rows[n]["tokens"] for n in ("kernel", "job-1w") if n in rows), None)
        dt_ref = ref if dt_inp is inp else None
        if SLOW & set(rows) and dt_inp is not inp:
            dt_ref = run_contender("kernel", tk, dt_inp, args.work)["tokens"]
            for n in SLOW & set(rows):
                rows[n]["reference_tokens"] = dt_ref
        for n in names:
            want = dt_ref if n in SLOW else ref
            seen = {x["tokens"] for x in runs[n]}
            agree = want is None or seen == {want}
            rows[n]["tokens_agree"] = agree
            if not agree:
                mism.append(f"{n}: {sorted(seen)} vs {want}")
        if mism:
            print("\n!!! TOKEN TOTALS DISAGREE (" + key + "): " + "; ".join(mism) + " !!!\n")
            result["mismatches"][key] = mism
        else:
            print(f"  token totals agree: {ref:,}" + (f" (on the --slow-mb input: {dt_ref:,})"
                                                     if dt_inp is not inp and dt_ref else ""))
        result["results"][key] = rows
        print()
        print(table(result, key), flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
