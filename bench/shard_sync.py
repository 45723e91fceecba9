"""What writing a shard durably costs: ``files.write_atomic`` (a temporary in another folder,
hashed as written, fsynced, renamed, the folder fsynced) against a plain write of the same
bytes, in one process, rounds in turns. Prints the milliseconds a shard of each way and the
difference (the cost of the sync and the hash, what layout 3 added to every shard).

    .venv/bin/python bench/shard_sync.py [--mb 2] [--shards 40] [--rounds 3]
"""
import argparse
import os
import tempfile
import time

from corpustok.pipeline import files


def _timed(write, n):
    t = time.perf_counter()
    for i in range(n):
        write(i)
    return (time.perf_counter() - t) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=2.0, help="shard size (default: %(default)s)")
    ap.add_argument("--shards", type=int, default=40, help="shards a round (%(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (%(default)s)")
    args = ap.parse_args()
    blob = os.urandom(int(args.mb * 1e6))
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as work:
        tmp, data = os.path.join(work, "tmp"), os.path.join(work, "data")
        os.makedirs(tmp)
        os.makedirs(data)

        def durable(i):
            files.write_atomic(os.path.join(data, f"s{i}"), lambda f: f.write(blob), "r", tmp)

        def plain(i):
            with open(os.path.join(data, f"p{i}"), "wb") as f:
                f.write(blob)

        for _ in range(args.rounds):
            a, b = _timed(durable, args.shards), _timed(plain, args.shards)
            print(f"{args.mb:g} MB shard: durable {a * 1e3:.1f} ms, plain {b * 1e3:.1f} ms, "
                  f"cost {(a - b) * 1e3:.1f} ms a shard")


if __name__ == "__main__":
    main()
