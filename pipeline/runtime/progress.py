"""Progress of a tokenize job: input bytes read against the inputs' total size, with the
shards, documents and tokens written so far.

Bytes travel through a side channel because Beam's metrics reach the driver only when a bundle
ends (with 64 MB shards one bundle can be the whole job) and local worker processes share
nothing with the driver. The readers call :func:`report` with the input bytes they consumed,
the shard writer :func:`shard_written`; each call appends one short line to the local file
named by :data:`ENV` (an ``O_APPEND`` write, whole between processes), which the driver reads
(a temporary file, registered with ``cleanup`` so that a signal ending the run removes it).
Without the variable (a remote runner's workers) both do nothing and the line shows the shards
written (polled from the output folder, as rarely as a log file on an object store).

Bytes done: a process reads a shard whole, then tokenizes and writes it (one fused step, one
kernel call), so what it read since its last shard written is the shard in hand. Those bytes
count half until the shard is written: reading is the cheap part, and half is the estimate
that is at most half a shard off either way (counted whole, a one-shard job showed a full bar
through its whole tokenization; counted at the write only, an empty one).

Unit: bytes of the input files as stored, what ``ls -l`` shows (a compressed JSONL file counts
its compressed bytes; a Parquet file counts each row's share of the file). The time until the
first byte is read is the job's start-up (Beam, worker processes, tokenizer), reported apart
from the throughput.
"""
import io
import json
import os
import sys
import threading
import time

from corpustok.pipeline import files
from corpustok.pipeline.files import cleanup
from corpustok.pipeline.output.layout import entry_names, entry_path

ENV = "CORPUSTOK_PROGRESS"
_channel = [None, -1]  # this process's open channel: path, fd
# Worker threads of one process share the channel: one of them swaps it when a new job names
# a new file, and none may write to, or close again, an fd number another thread has since
# been given for a file of its own (an input being read, a shard being written).
_channel_lock = threading.Lock()


def active():
    """Whether a driver is listening (so readers need not compute what they would report)."""
    return bool(os.environ.get(ENV))


def report(nbytes):
    """Count ``nbytes`` of input as read (a no-op unless a local driver listens)."""
    if nbytes > 0:
        _send(b"R %d" % int(nbytes))


def shard_written():
    """The shard this process read last is written (a no-op unless a driver listens)."""
    _send(b"W 0")


def _send(what):
    path = os.environ.get(ENV)
    if not path:
        return
    line = b"%s %.3f %d\n" % (what, time.time(), os.getpid())
    with _channel_lock:
        if _channel[0] != path:
            if _channel[1] >= 0:
                os.close(_channel[1])
            try:
                _channel[:] = [path, os.open(path, os.O_WRONLY | os.O_APPEND)]
            except OSError:  # the driver has ended and removed it
                _channel[:] = [None, -1]
                return
        try:
            os.write(_channel[1], line)
        except OSError:
            pass


def reporter():
    """What a worker passes its readers as ``on_bytes``: :func:`report` while a local
    driver listens, else None (so that readers count nothing)."""
    return report if active() else None


def input_size(paths):
    """Total stored size of ``paths`` (files that cannot be sized count 0)."""
    total = 0
    for p in paths:
        try:
            total += files.size(p)
        except OSError:
            pass
    return total


class Progress:
    """Context manager around a running job: collects the bytes read (``read_bytes``, and
    ``first_read``, the wall-clock time of the first report, or None), the bytes of shards
    written (``written_bytes``, see above) and, with ``show``,
    draws a tqdm bar on a terminal or prints a plain line every 10 s to a log. ``local``: the
    workers run on this machine and can write the channel."""

    def __init__(self, out_dir, paths, show=True, local=True, stream=None, label="tokenize"):
        self._out = out_dir  # None: a job that writes no shards (train)
        self._label = label
        self._paths = paths
        self._show_it = show
        self._stream = stream or sys.stderr
        self._tty = self._stream.isatty()
        self._interval = 0.25 if self._tty and not files.is_remote(out_dir) else 10.0
        self._seen = set() if out_dir is None else entry_names(out_dir)
        self.shards = self.documents = self.tokens = self.text_bytes = 0
        self.read_bytes = self.written_bytes = 0
        self._pending = {}  # pid: bytes read since its last shard written
        self.first_read = None
        self._total = None
        self._channel = None
        self._local = local
        self._offset = 0
        self._bar = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._t0 = time.perf_counter()

    def __enter__(self):
        if self._local:
            self._channel = cleanup.make("corpustok-progress-")
            os.environ[ENV] = self._channel
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        try:
            self._thread.join()
            self._poll()
        finally:
            if self._channel is not None:
                os.environ.pop(ENV, None)
                cleanup.release(self._channel)
        if self._show_it:
            self._draw(final=True)
        return False

    def _poll(self):
        if self._channel is not None:
            with open(self._channel, "rb") as f:
                f.seek(self._offset)
                data = f.read()
            whole = data[:data.rfind(b"\n") + 1]  # a line being written waits for next time
            self._offset += len(whole)
            for line in whole.splitlines():
                kind, n, t, pid = line.split()
                if kind == b"W":
                    self.written_bytes += self._pending.pop(pid, 0)
                    continue
                self.read_bytes += int(n)
                self._pending[pid] = self._pending.get(pid, 0) + int(n)
                if self.first_read is None:
                    self.first_read = float(t)
        if not self._show_it or self._out is None:
            return
        for name in entry_names(self._out) - self._seen:
            try:
                e = json.loads(files.read_bytes(entry_path(self._out, name)))
            except (OSError, ValueError):
                continue
            self._seen.add(name)
            self.shards += 1
            self.documents += e["documents"]
            self.tokens += e["tokens"]
            self.text_bytes += int(e.get("bytes", 0))

    def _postfix(self):
        if self._out is None:
            return "counting chunks"
        line = (f"{self.shards} shard{'s' * (self.shards != 1)}, {self.documents:,} docs, "
                f"{self.tokens:,} tokens")
        if self._channel is None and self.text_bytes:  # a remote runner: no bar of bytes
            seconds = max(time.perf_counter() - self._t0, 1e-3)
            line += (f", {self.text_bytes / 1e6:,.1f} MB of text "
                     f"({self.text_bytes / 1e6 / seconds:,.1f} MB/s)")
        return line

    def done_bytes(self, final=False):
        """Input bytes done: the shards written, and half of those being worked on (all
        of them once the job has ended)."""
        if final:
            return self.read_bytes
        return self.written_bytes + sum(self._pending.values()) // 2

    def _draw(self, final=False):
        from tqdm import tqdm  # here: only where a line is drawn
        total = self._total or None
        done = self.done_bytes(final)
        done = min(done, total) if total else done
        if self.first_read is None:
            # Nothing read yet (Beam is starting: no rate to show), or a remote runner's
            # workers, which report shards only.
            remote = self._channel is None
            elapsed = f"{time.perf_counter() - self._t0:.0f} s"
            line = f"  {self._postfix()} | {elapsed}" if remote else \
                f"  starting (output folder, Beam, workers) {elapsed}"
            if self._tty:
                keep = not final or remote
                self._stream.write("\r\x1b[K" + (line if keep else "") +
                                   ("\n" if final and remote else ""))
            elif not final:
                self._stream.write(line + "\n")
            self._stream.flush()
            return
        if self._tty:
            if self._bar is None:
                self._stream.write("\r\x1b[K")
                sized = _sized(self._stream)  # a terminal may report no size (0 x 0)
                # Rate and ETA: the average since the first byte read (start-up apart).
                self._bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1000,
                                 desc=f"  {self._label}", file=self._stream,
                                 dynamic_ncols=sized,
                                 ncols=None if sized else 100, nrows=None if sized else 20,
                                 mininterval=0, smoothing=0)
                self._bar.start_t = self.first_read
            self._bar.set_postfix_str(self._postfix(), refresh=False)
            if done > self._bar.n:
                self._bar.update(done - self._bar.n)
            self._bar.refresh()
            if final:
                self._bar.close()
        elif not final:
            self._stream.write(tqdm.format_meter(
                done, total, time.time() - self.first_read, prefix=f"  {self._label}", unit="B",
                unit_scale=True, unit_divisor=1000, postfix=self._postfix(), ncols=100) + "\n")
        self._stream.flush()

    def _loop(self):
        if self._show_it:
            self._total = input_size(self._paths)
        while not self._stop.wait(self._interval):
            self._poll()
            if self._show_it:
                self._draw()


def _sized(stream):
    try:
        return min(os.get_terminal_size(stream.fileno())) > 0
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
