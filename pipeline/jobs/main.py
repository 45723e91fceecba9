"""The main job (``corpustok main``, what ``./run_local.sh`` runs): train a UBE BPE tokenizer
on the embedded UDHR sample, tokenize the sample into Parquet shards, verify that every shard
decodes back to its documents, print the summary, then the substrate codec's round trip and
encoding floor per language on the same sample (corpustok.pipeline.jobs.demo)."""
import os
import time

import corpustok

from corpustok.pipeline.jobs import demo
from corpustok.pipeline.jobs.tokenize import summary, tokenize
from corpustok.pipeline.jobs.train import train
from corpustok.pipeline.output.verify import verify_shards
from corpustok.pipeline.runtime.workers import DEFAULT_LOCAL_MODE


def run_main(out_dir="out", vocab_size=2048, workers=None, say=print, worker_log=None,
             local_mode=DEFAULT_LOCAL_MODE):
    """Run the job; returns the exit code (0 when every shard verifies). ``workers``: local
    workers, threads or processes (``local_mode``); ``worker_log``: a file for the local
    worker processes' output (default: the caller's stderr)."""
    sample = demo.sample_path()
    os.makedirs(out_dir, exist_ok=True)
    tok_file = os.path.join(out_dir, f"udhr-ube-bpe-{vocab_size}.json")
    # The demo's own tokenizer file, trained anew each run (deterministically: the same bytes).
    info = train([sample], tok_file, vocab_size=vocab_size, substrate="ube", workers=workers,
                 local_mode=local_mode, worker_log=worker_log, overwrite=True, progress=True)
    tok = corpustok.load(tok_file)
    say(f"corpustok main: trained a UBE BPE tokenizer ({tok.vocab_size:,} ids) on the embedded "
        f"UDHR sample ({info['documents']:,} documents, {info['bytes'] / 1e6:.2f} MB) in "
        f"{info['seconds']:.1f} s -> {tok_file}")
    shards = os.path.join(out_dir, "shards")
    result = tokenize([sample], shards, tok_file, shard_bytes=128 << 10, workers=workers,
                      local_mode=local_mode, progress=True, worker_log=worker_log)
    t0 = time.perf_counter()
    check = verify_shards(shards, tok)
    say(summary(result))
    say(f"  output     {shards}/ ({result.manifest['totals']['shards']} shards + .corpustok/)")
    if check.ok:
        say(f"  verified   {check.documents:,} documents in {check.shards} shards decode back "
            f"to their input text ({time.perf_counter() - t0:.1f} s)\n")
        codec_ok = demo.run(out=say) == 0
        return 0 if result.ok and codec_ok else 1
    for p in check.problems[:20]:
        say(f"  VERIFY FAILED {p}")
    return 1
