"""Where a BPE encode's time goes, function by function and instruction by instruction, from
``perf`` samples of the Numba kernels (which have no symbols perf could read).

    .venv/bin/python tools/nbperf.py TOKENIZER [--mb 8] [--reps 6] [--corpus mix]
        [--annotate NAME] [--same | --distinct | --files PARQUET ...]

Runs ``perf record -e cpu-clock`` (a software clock: it works on VMs without hardware
counters) on a child process that loads TOKENIZER, warms it on 1 MB of the shared corpus, then
encodes ``--reps`` different ``--mb`` MB samples of it (fresh text, as in a real run; with
``--same``, one sample again and again through a cache that holds all of it: the hit path). The
child compiles its kernels into an empty Numba cache, so that every function's code address
is known. With ``--distinct``, only the chunks of those samples not seen before (in the
warm-up text or earlier in them), a hundred a line, each rep through a new cache: the miss
path, as fresh text meets it. With ``--files``, the ``text`` column of those Parquet files,
row group by row group as a job hands them over, through one cache (the warm-up is one short
text): the mix of hits and misses of a real corpus. After the timed window the child writes
each function's address and code bytes. Samples inside the window are assigned to the
function whose code holds them (the others are listed by the symbol perf gives them: the OS
kernel's page zeroing, Arrow's UTF-8 check); ``--annotate`` prints one function's
disassembly (objdump) with each instruction's share of its samples: a load that waits for
memory shows as a large share on the instruction after it.

Needs Linux ``perf`` (Debian's linux-perf) and binutils' ``objdump``.
"""
import argparse
import bisect
import collections
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def child(args, out):
    """The profiled process: encode, then record the window and every function's code."""
    sys.path.insert(0, str(REPO / "bench"))
    import bpe
    import corpustok
    from _row_groups import new_chunk_cache, row_group_texts
    bpe.CORPUS[0] = args.corpus
    from bpe import corpus_sample
    from corpustok.arrow import utf8_batch
    from numba.core.registry import CPUDispatcher

    tok = corpustok.load(args.tokenizer)
    if args.distinct:  # the miss path: first sightings only, a new cache each rep
        from corpustok.pretokenize.patterns import split
        warm = corpus_sample(1)
        seen = {c for line in warm for c in split(line, tok.pretokenizer)}
        firsts = []
        for line in corpus_sample(args.mb, skip_mb=1):
            for c in split(line, tok.pretokenizer):
                word = c[1:] if c[:1] == " " else c  # kept: what "\n"-joined splits again
                if word and not any(x.isspace() for x in word) and c not in seen:
                    seen.add(c)
                    firsts.append(c)
        batch = utf8_batch(["\n".join(firsts[k:k + 100]) for k in range(0, len(firsts), 100)])
        batches = [batch] * args.reps
        tok.encode_arrays(utf8_batch(warm))

        def encode(b):
            new_chunk_cache(tok)
            tok.encode_arrays(b)
    elif args.files:  # a job's batches: whole row groups of real documents
        batches = [b for f in args.files for b in row_group_texts(f)]
        tok.encode_batch(["warm the kernels up"])
        encode = tok.encode_arrays
    elif args.same:  # the hit path: one text again and again, a cache that holds all of it
        from corpustok.kernels.bpe.cache import chunk_cache
        tok._caches.use(chunk_cache(1 << 16))
        batches = [utf8_batch(corpus_sample(args.mb))] * args.reps
        tok.encode_arrays(batches[0])
        encode = tok.encode_arrays
    else:
        batches = [utf8_batch(corpus_sample(args.mb, skip_mb=1 + args.mb * k))
                   for k in range(args.reps)]
        tok.encode_arrays(utf8_batch(corpus_sample(1)))
        encode = tok.encode_arrays
    t0 = time.clock_gettime(time.CLOCK_MONOTONIC)
    for b in batches:
        encode(b)
    t1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    import gc
    funcs = {}
    for obj in gc.get_objects():
        if isinstance(obj, CPUDispatcher):
            for cres in obj.overloads.values():
                module = getattr(cres.library, "_final_module", None)
                for fn in module.functions if module is not None else ():
                    if not fn.is_declaration:
                        address = cres.library.get_pointer_to_function(fn.name)
                        if address:
                            funcs[address] = fn.name
    starts = sorted(funcs)
    for k, a in enumerate(starts):
        size = min(starts[k + 1] - a if k + 1 < len(starts) else 65536, 65536,
                   _mapped_end(a) - a)  # never read past the mapping: the next may be absent
        (out / f"{a}.bin").write_bytes(ctypes.string_at(a, size))
    mb = sum(len(b.data) for b in batches) / 1e6
    (out / "run.json").write_text(json.dumps({"window": [t0, t1], "mb_per_s": mb / (t1 - t0),
                                              "functions": {str(a): funcs[a] for a in starts}}))


def _mapped_end(address):
    """The end of this process's memory mapping that holds ``address``."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            if start <= address < end:
                return end
    return address


def short_name(mangled):
    """``module.function`` of a Numba symbol (``_ZN9corpustok7kernels9bpe_merge...``)."""
    m = re.match(r"(?:cfunc\.)?_ZN(.*)", mangled)
    rest, names = (m.group(1) if m else ""), []
    while (d := re.match(r"\d+", rest)):
        n = int(d.group())
        names.append(rest[d.end():d.end() + n])
        rest = rest[d.end() + n:]
    return ".".join(names[-2:]) or mangled[:60]


def samples(perf_data, window):
    """``(ips, where)`` of the samples taken inside ``window`` (CLOCK_MONOTONIC s): their
    instruction pointers, and each one's symbol and library as perf names them (``[unknown]``
    for the jitted code, which has no symbols)."""
    text = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "time,ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    ips, where = [], {}
    for line in text.splitlines():
        fields = line.split(None, 2)
        try:
            t, ip = float(fields[0].rstrip(":")), int(fields[1], 16)
        except (IndexError, ValueError):
            continue  # not a sample's line
        if window[0] <= t <= window[1]:
            ips.append(ip)
            where[ip] = fields[2].strip() if len(fields) == 3 else "?"
    return ips, where


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tokenizer")
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--corpus", default="mix", help="the bench corpus (bench/bpe.py --corpus)")
    ap.add_argument("--annotate", help="a function name (substring) to disassemble")
    ap.add_argument("--same", action="store_true",
                    help="encode one sample again and again, every chunk cached (the hit path)")
    ap.add_argument("--distinct", action="store_true",
                    help="encode only first sightings, a new cache each rep (the miss path)")
    ap.add_argument("--files", nargs="+", help="Parquet files whose text column is encoded, "
                    "row group by row group, through one cache (a job's mix)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args, Path(args.child))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        env = dict(os.environ, NUMBA_CACHE_DIR=str(out / "numba"))
        subprocess.run(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock",
                        "-F", "4000", "-o", str(out / "perf.data"), sys.executable, __file__,
                        args.tokenizer, "--mb", str(args.mb), "--reps", str(args.reps),
                        "--corpus", args.corpus, "--child", str(out)]
                       + ["--same"] * args.same + ["--distinct"] * args.distinct
                       + (["--files", *args.files] if args.files else []),
                       env=env, check=True)
        run = json.loads((out / "run.json").read_text())
        funcs = {int(a): name for a, name in run["functions"].items()}
        starts = sorted(funcs)
        ips, where = samples(out / "perf.data", run["window"])
        per_fn, per_ip, outside = (collections.Counter() for _ in range(3))
        for ip in ips:
            k = bisect.bisect_right(starts, ip) - 1
            name = funcs[starts[k]] if k >= 0 and ip - starts[k] < 65536 else "(not jitted)"
            per_fn[name] += 1
            per_ip[ip] += 1
            if name == "(not jitted)":
                outside[where[ip]] += 1
        print(f"{len(ips)} samples, {run['mb_per_s']:.1f} MB/s in the window")
        for name, n in per_fn.most_common(20):
            print(f"  {n / len(ips):6.1%}  {short_name(name)}")
        if outside:
            print("(not jitted), by symbol:")
        for name, n in outside.most_common(12):
            print(f"  {n / len(ips):6.1%}  {name}")
        if args.annotate:
            def window(k):  # a function's code: up to the next one's start
                return starts[k], starts[k + 1] if k + 1 < len(starts) else starts[k] + 65536

            def hits(k):
                a, stop = window(k)
                return sum(c for ip, c in per_ip.items() if a <= ip < stop)

            # a name may be compiled more than once (one per signature): the most sampled
            k = max((k for k, a in enumerate(starts) if args.annotate in funcs[a]), key=hits)
            (a, stop), n = window(k), hits(k)
            print(f"\n{short_name(funcs[a])}: {n} samples")
            dis = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64",
                                  f"--adjust-vma={a}", str(out / f"{a}.bin")],
                                 capture_output=True, text=True, check=True).stdout
            for line in dis.splitlines():
                m = re.match(r"\s*([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(.*)", line)
                if m:
                    ip = int(m.group(1), 16)
                    print(f"{per_ip.get(ip, 0) / max(n, 1):6.1%} {ip - a:6x}: {m.group(2)}")


if __name__ == "__main__":
    main()
