"""Who owns an output folder, what a run may delete in it, and where its files lie.

The folder holds the token shards and nothing else readers see: everything else is in
``.corpustok/`` (job record, lock, run manifest, shard entries, rejects), a name that
pyarrow, Hugging Face ``datasets`` and Spark skip when they read a folder; temporaries start
with ``.`` and end with a random suffix, so no ``*.parquet`` glob matches them (layout:
``shards``; folders of the older layout: ``old_layout``).

An output folder belongs to one job: its configuration (the tokenizer and every option that
changes a shard's bytes or which shards exist) and its inputs, recorded in
``.corpustok/job.json`` by the first run. The rules a run follows:

* One run at a time. ``.corpustok/lock`` is held with an exclusive ``flock`` for the whole run
  and says who holds it (pid, host, start time, run id). The kernel drops a flock when its
  process dies, so the lock of a killed run is stale by construction and the next run takes it
  over; a second run while one is alive refuses, naming the holder. On object stores, which
  have no locks, the lock is an object created only if absent (``s3://``: a conditional
  write; elsewhere advisory, with a warning): a lock of this host whose process is gone is
  stale, any other one refuses until it is deleted (decision 0036).
* A run deletes only files it can prove are its own job's: temporaries named with its run id
  or with the id of the killed run whose lock it took over, and the shard files, entries and
  rejects listed in this folder's manifests (``.corpustok/manifest.json``,
  ``.corpustok/entries/<shard>.json``). Nothing is deleted by name pattern alone.
* Another job refuses, unless ``overwrite`` (the old job's listed files are removed, and
  named) or ``append`` (the same configuration with more inputs). A job that has no shards
  yet is replaced without asking: nothing of it is lost. Within a job, the shards of
  inputs that changed since are replaced when the run completes (see ``shards.remove_stale``).
* ``--out`` equal to or inside a folder the inputs are searched in is refused: a later run
  would read the job's own files as input.
"""
import errno
import glob
import hashlib
import json
import os
import socket
import sys
import time
import uuid

from corpustok.schemas import LISTED_ENTRY_KEYS, MANIFEST_FORMAT, check_shard_entry

from corpustok.pipeline import files
from corpustok.pipeline.files.held import Busy, HeldFile
from corpustok.pipeline.config import config_hash
from corpustok.pipeline.output import old_layout

# Paths relative to the output folder ("/"-separated: files.join takes them locally and remotely).
DATA_DIR = "data"  # the shards, and nothing else: every reader opens it as it is
META_DIR = ".corpustok"
JOB_FILE = f"{META_DIR}/job.json"
LOCK_FILE = f"{META_DIR}/lock"
RUN_MANIFEST = f"{META_DIR}/manifest.json"
ENTRIES_DIR = f"{META_DIR}/entries"  # <shard>.json
ENTRY_SUFFIX = ".json"
REJECTS_DIR = f"{META_DIR}/rejects"  # <shard>.parquet
TMP_DIR = f"{META_DIR}/tmp"  # shards being written: renamed into data/ when whole
# Where a run's temporaries may be ("": the top level, where the previous layout wrote them).
FOLDERS = ("", DATA_DIR, META_DIR, ENTRIES_DIR, REJECTS_DIR, TMP_DIR)
JOB_FORMAT = "corpustok-job"
# The folder's layout, a key of every job's configuration: 3 is data/ + .corpustok/ (2 had
# the shards beside .corpustok/, named after their inputs; 1 is ``old_layout``).
LAYOUT = 3
# What makes a folder unwritable for a whole run, rather than one bad input.
NOT_WRITABLE = (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT)


class OutputInUse(ValueError):
    """Another live run holds the output folder."""


class OtherJob(ValueError):
    """The output folder holds another job's shards."""


class OutputNotWritable(OSError):
    """The output folder cannot be written (read-only, no permission, disk or quota full)."""


def not_writable(e: BaseException, out_dir=None):
    """The :class:`OutputNotWritable` that ``e`` (or an error it was raised from) stands for,
    or None: a full disk or quota or a read-only file system anywhere, a permission error
    only on a path inside ``out_dir`` (an unreadable input or tokenizer is not the output)."""
    while e is not None:
        if isinstance(e, OutputNotWritable):
            return e
        if isinstance(e, OSError) and e.errno in NOT_WRITABLE and (
                e.errno not in (errno.EACCES, errno.EPERM) or _inside(e.filename, out_dir)):
            return OutputNotWritable(e.errno, e.strerror, e.filename)
        e = e.__cause__ or e.__context__
    return None


def _real(path):
    return path if files.is_remote(path) else os.path.realpath(path)


def _inside(path, folder):
    if not isinstance(path, str) or folder is None:
        return False
    if files.is_remote(folder):
        return path.startswith(folder)
    folder = os.path.abspath(folder)
    return os.path.abspath(path) == folder or os.path.abspath(path).startswith(folder + os.sep)


def check_out_dir(out_dir, patterns, paths):
    """Raise ValueError when ``out_dir`` is equal to or inside a folder the input patterns
    search (a glob's fixed folder; any folder below it for ``**``), or holds an input."""
    if files.is_remote(out_dir):
        return
    out = os.path.realpath(out_dir)

    def inside(folder, deep):
        folder = os.path.realpath(folder or ".")
        return out == folder or (deep and out.startswith(folder.rstrip(os.sep) + os.sep))

    for pat in patterns:
        if files.is_remote(pat) or not glob.has_magic(pat) or os.path.isfile(pat):
            continue
        fixed = []
        for part in pat.split(os.sep):
            if glob.has_magic(part):
                break
            fixed.append(part)
        folder = os.sep.join(fixed) if fixed != [""] else os.sep
        deep = "**" in pat or any(glob.has_magic(p) for p in pat.split(os.sep)[len(fixed):-1])
        if inside(folder, deep):
            raise ValueError(f"--out {files.shown(out_dir)} is inside the folder the input "
                             f"{files.shown(pat)!r} searches: a later run would read the job's "
                             "own files as input; choose an output folder outside it")
    for p in paths:
        if not files.is_remote(p) and os.path.realpath(p).startswith(out.rstrip(os.sep) + os.sep):
            raise ValueError(f"input {files.shown(p)} is inside --out {files.shown(out_dir)}; "
                             "choose an output folder that holds no input")


def _process_start(pid):
    """Start time of process ``pid`` in clock ticks since boot (Linux), or None: tells a live
    process from a later one that reuses its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _alive(holder):
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int):
        return True  # cannot tell from here
    start = _process_start(pid)
    return start is not None and start == holder.get("pid_start", start)


def _busy(out_dir, holder, choose="; wait for it to end or choose another --out"):
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(holder.get("started", 0)))
    what = str(holder.get("run_id", "")).partition("-")[0]
    what = what if what in ("export", "verify") else "run"
    return OutputInUse(
        f"{files.shown(out_dir)} is in use by another corpustok {what} (pid "
        f"{holder.get('pid')} on {holder.get('host')}, started {started}){choose} (if no such "
        f"process exists, delete {files.join(out_dir, LOCK_FILE)})")


def json_object(blob):
    """The JSON object ``blob`` holds, or None (not JSON, not UTF-8, not an object)."""
    try:
        value = json.loads(blob)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


class _LocalLock:
    """The folder's lock on local disk: a :class:`~files.held.HeldFile` whose record names
    the holder."""

    def __init__(self, path):
        self.file = HeldFile(path)

    def acquire(self, out_dir, me, choose=None):
        """Take the lock; returns what the previous (dead) holder wrote, or None. ``choose``:
        the advice of the refusal when a live process holds it."""
        try:
            previous = self.file.take()
        except Busy as busy:
            holder = json_object(busy.record) or {}
            raise (_busy(out_dir, holder) if choose is None else
                   _busy(out_dir, holder, choose)) from None
        self.file.write(json.dumps(me).encode())
        return json_object(previous)

    def put_back(self, blob):
        """Write ``blob`` (a killed run's lock, kept for the next run) in place of ours."""
        if self.file.fd is not None:
            self.file.write(blob)
            self.file.release(keep=True)

    def release(self):
        self.file.release()


class _RemoteLock:
    """The lock object of a folder in an object store (decision 0036). Where the store has
    conditional writes (``s3://``: ``If-None-Match: *``, ``If-Match``) it is taken by a
    create that fails when the object exists, so of two runs starting together one wins;
    a holder on this host whose process is gone is taken over by a write conditional on the
    version read (two runs taking it over together: one wins), and any other holder refuses
    until it ends or the user deletes the object. Elsewhere (``gs://``, ``hdfs://``, ...)
    the lock is advisory: written after a look, read back, with a warning on stderr that
    two runs starting at the same moment can both proceed."""

    def __init__(self, path):
        self.path = path
        self.held = False
        self.run_id = None
        self.version = None

    def acquire(self, out_dir, me, choose=None):
        """Take the lock; returns what the previous (dead) holder wrote, or None."""
        self.run_id = me["run_id"]
        blob = json.dumps(me).encode()
        try:
            previous = self._take(out_dir, blob, choose)
        except files.NoConditionalWrites:
            previous = self._take_advisory(out_dir, blob, choose)
        self.held = True
        return previous

    def _refuse(self, out_dir, holder, choose):
        return _busy(out_dir, holder) if choose is None else _busy(out_dir, holder, choose)

    def _take(self, out_dir, blob, choose):
        for _ in range(5):  # a lock deleted between our looks: look again
            self.version = files.create_new(self.path, blob)
            if self.version is not None:
                if not self._ours():  # a store that ignored the condition, and a race lost
                    raise self._refuse(out_dir, json_object(files.read_bytes(self.path)) or {},
                                       choose)
                return None
            current = files.read_versioned(self.path)
            if current is None:
                continue
            holder = json_object(current[0]) or {}
            if _alive(holder):
                raise self._refuse(out_dir, holder, choose)
            self.version = files.replace_if(self.path, blob, current[1])
            if self.version is not None:
                return holder
        raise self._refuse(out_dir, json_object(files.read_bytes(self.path)) or {}, choose)

    def _take_advisory(self, out_dir, blob, choose):
        print(f"corpustok: warning: {files.shown(out_dir)} is on a store without conditional "
              "writes: the folder's lock is advisory, and two runs started at the same moment "
              "could both write it; start one run at a time", file=sys.stderr, flush=True)
        previous = None
        if files.exists(self.path):
            previous = json_object(files.read_bytes(self.path)) or {}
            if _alive(previous):
                raise self._refuse(out_dir, previous, choose)
        files.write_atomic(self.path, lambda f: f.write(blob), run_id=self.run_id)
        if not self._ours():  # another run wrote its lock at the same moment and won
            raise self._refuse(out_dir, json_object(files.read_bytes(self.path)) or {}, choose)
        return previous

    def _ours(self):
        try:
            holder = json_object(files.read_bytes(self.path)) or {}
            return holder.get("run_id") == self.run_id
        except OSError:
            return False

    def put_back(self, blob):
        """Write ``blob`` (a killed run's lock, kept for the next run) in place of ours."""
        if self.held and self.version is not None:
            files.replace_if(self.path, blob, self.version)
        elif self.held and self._ours():
            files.write_atomic(self.path, lambda f: f.write(blob))
        self.held = False

    def release(self):
        if self.held and self.version is not None:
            files.remove_if(self.path, self.version)  # ours only: never a later run's lock
        elif self.held and self._ours():
            files.remove([self.path])
        self.held = False


class FolderHold:
    """A context manager: the output folder's run lock held by a reader that must not see
    the shards change under it (``export``, ``verify``), so that no tokenize run starts in
    the folder meanwhile and none is running now (refused with :class:`OutputInUse`, naming
    the holder). A killed run's lock content is put back on release, so the next tokenize
    run still finds the killed run's id and removes its temporaries."""

    def __init__(self, out_dir, purpose):
        self.out_dir = out_dir
        self.purpose = purpose
        self._lock = None
        self._previous = None

    def __enter__(self):
        remote = files.is_remote(self.out_dir)
        meta = files.join(self.out_dir, META_DIR)
        if not (files.is_dir(meta) if remote else os.path.isdir(meta)):
            return self
        me = {"pid": os.getpid(), "pid_start": _process_start(os.getpid()),
              "host": socket.gethostname(), "started": time.time(),
              "run_id": f"{self.purpose}-{uuid.uuid4().hex[:12]}"}
        self._lock = (_RemoteLock if remote else _LocalLock)(files.join(self.out_dir, LOCK_FILE))
        self._previous = self._lock.acquire(
            self.out_dir, me, f"; {self.purpose} it when that has ended")
        return self

    def __exit__(self, *exc):
        lock, self._lock = self._lock, None
        if lock is None:
            return
        if self._previous:
            lock.put_back(json.dumps(self._previous).encode())
        else:
            lock.release()


def shard_name(source: str, start: int, stop: int, config_id: str, mapping=None,
               name=None) -> str:
    """Deterministic shard name ``part-<input>-<config>-<start>-<stop>``: a hash of the
    input's absolute path, size and modification time (so a changed input never reuses
    shards of its old content), of its own columns, ``mapping`` (``inputs.mapping_of``: the
    file read with other columns is another input) and of ``name``, what its rows' ``source``
    column says (``inputs.source_name``) when it is not the input's shown canonical name; the
    first 8 digits of the job's configuration hash
    (two jobs never share a name) and the row range. Hex digits and decimal numbers only:
    no reader takes such a name for hidden (``_``, ``.``) or for a split (``train``,
    ``test``, ``valid``, ``dev``, ``eval``: Hugging Face ``datasets`` infers splits from
    words in file names, so a name must not carry the input's own), and no filesystem reads
    it as a glob."""
    identity = files.identity(source)
    if mapping is not None:
        identity += "\0" + json.dumps(mapping, sort_keys=True)
    if name is not None and name != files.shown(source):
        identity += "\0name\0" + name
    digest = hashlib.sha1(identity.encode("utf-8", "surrogatepass")).hexdigest()
    return f"part-{digest[:10]}-{config_id[:8]}-{start:010d}-{stop:010d}"


def shard_file(name):
    """Where shard ``name`` lies, relative to the output folder (an entry's ``file``)."""
    return f"{DATA_DIR}/{name}.parquet"


def _shard_files(name):
    """What an entry of shard ``name`` may name as its file: this layout's, or the
    previous layout's (at the top level), which ``overwrite`` removes."""
    return (shard_file(name), f"{name}.parquet")


def rejects_path(out_dir, name):
    """Where the rejects of shard ``name`` lie (``--rejects``)."""
    return files.join(out_dir, REJECTS_DIR, name + ".parquet")


def entry_path(out_dir, name):
    """Where the entry of shard ``name`` lies."""
    return files.join(out_dir, ENTRIES_DIR, name + ENTRY_SUFFIX)


def entry_names(out_dir):
    """Names of the shards that have an entry file, of any job (complete, or being
    published: an entry is written just before its shard, see ``shards``)."""
    return {f[:-len(ENTRY_SUFFIX)] for f in files.listdir(files.join(out_dir, ENTRIES_DIR))
            if f.endswith(ENTRY_SUFFIX) and not f.startswith(".")}


def read_entries(out_dir):
    """Every valid shard entry in ``out_dir`` (``.corpustok/entries/<shard>.json``)."""
    found = []
    for name in sorted(entry_names(out_dir)):
        try:
            entry = json.loads(files.read_bytes(entry_path(out_dir, name)))
            check_shard_entry(entry, keys=LISTED_ENTRY_KEYS)
        except (OSError, ValueError, TypeError, KeyError):
            continue
        if entry["shard"] == name:
            found.append(entry)
    return found


def job_record(out_dir):
    """The folder's job record (``.corpustok/job.json``) as a dict, or None."""
    try:
        job = json_object(files.read_bytes(files.join(out_dir, JOB_FILE)))
    except OSError:
        return None
    return job if job and job.get("format") == JOB_FORMAT else None


def read_run_manifest(out_dir):
    """The folder's run manifest as a dict, or None (absent or not ours)."""
    try:
        m = json_object(files.read_bytes(files.join(out_dir, RUN_MANIFEST)))
    except OSError:
        return None
    return m if m and m.get("format") == MANIFEST_FORMAT else None


def listed_files(out_dir, entries):
    """Paths of the files ``entries`` name that exist: shard, rejects, entry (in that order
    for each entry: the entry last, so a crash while removing leaves the record of what is
    left to remove)."""
    present = {DATA_DIR: set(files.listdir(files.join(out_dir, DATA_DIR))),
               "": set(files.listdir(out_dir))}
    rejected = set(files.listdir(files.join(out_dir, REJECTS_DIR)))
    entered = entry_names(out_dir)
    paths = []
    for e in entries:
        name, file = e["shard"], e["file"]
        if file not in _shard_files(name):  # an entry names its own shard file, nothing else
            continue
        folder, _, base = file.rpartition("/")
        if base in present[folder]:
            paths.append(files.join(out_dir, *file.split("/")))
        if name + ".parquet" in rejected:
            paths.append(rejects_path(out_dir, name))
        if name in entered:
            paths.append(entry_path(out_dir, name))
    return paths


def foreign_files(out_dir, entries):
    """Paths in ``out_dir`` that no corpustok record accounts for: anything at the top level
    but ``.corpustok/``, ``data/``, hidden names (``.x``: every reader of the folder skips
    them) and shard files of the previous layout that ``entries`` list; and anything in
    ``data/`` that ``entries`` do not list, hidden or not (polars and DuckDB read hidden files
    of a folder they are given). A reader of the folder would read them as shards, and a run
    could replace one: a run refuses such a folder. (Object stores list objects, not
    folders: a foreign "folder" there is not seen.)"""
    listed = {e["file"] for e in entries
              if isinstance(e.get("shard"), str) and e.get("file") in _shard_files(e["shard"])}
    found = [files.join(out_dir, n) for n in files.listdir_all(out_dir)
             if n not in (META_DIR, DATA_DIR) and n not in listed and not n.startswith(".")]
    data = files.join(out_dir, DATA_DIR)
    if files.exists(data) and not files.is_dir(data):
        found.append(data)
    elif files.is_dir(data):
        found += [files.join(data, n) for n in files.listdir_all(data)
                  if f"{DATA_DIR}/{n}" not in listed]
    return sorted(found)


def job_entries(out_dir):
    """The shard entries this folder's manifests list (run manifest and entry files), by
    shard name."""
    by_name = {e["shard"]: e for e in read_entries(out_dir)}
    manifest = read_run_manifest(out_dir) or {}
    for e in manifest.get("shards", []):
        if isinstance(e, dict) and isinstance(e.get("shard"), str) and \
                isinstance(e.get("file"), str):
            by_name.setdefault(e["shard"], e)
    return by_name


class OutputClaim:
    """A run's hold on its output folder (a context manager): the lock, the job record and
    the cleanup a run may do at its start. After ``__enter__``: ``run_id``, ``inputs`` (the
    job's inputs: with ``append``, the earlier ones too) and ``removed`` (files of the
    previous job that ``overwrite`` deleted, each also passed to ``on_remove`` as it goes)."""

    def __init__(self, out_dir, config, config_id, inputs, mode=None, on_remove=None):
        if mode not in (None, "append", "overwrite"):
            raise ValueError(f"mode must be None, 'append' or 'overwrite', got {mode!r}")
        self.out_dir = out_dir
        self.config = config
        self.config_id = config_id
        self.inputs = list(inputs)
        self.mode = mode
        self.run_id = uuid.uuid4().hex[:12]
        self.removed = []
        self._on_remove = on_remove
        remote = files.is_remote(out_dir)
        self._lock = (_RemoteLock if remote else _LocalLock)(files.join(out_dir, LOCK_FILE))

    def __enter__(self):
        meta = files.join(self.out_dir, META_DIR)
        made = not files.is_remote(meta) and not os.path.isdir(meta)
        try:
            files.makedirs(meta)
            me = {"pid": os.getpid(), "pid_start": _process_start(os.getpid()),
                  "host": socket.gethostname(), "started": time.time(), "run_id": self.run_id}
            stale = self._lock.acquire(self.out_dir, me)
        except OSError as e:
            raise (not_writable(e, self.out_dir) or e) from e
        try:
            if stale and isinstance(stale.get("run_id"), str):
                self._remove_temporaries(stale["run_id"])
            old = old_layout.find(self.out_dir)
            self._refuse_foreign(old)
            self._clear_old_layout(old)
            self._settle_job()
        except BaseException:
            self._lock.release()
            if made and not os.listdir(meta):  # refused: the folder is left as it was
                os.rmdir(meta)
            raise
        return self

    def __exit__(self, *exc):
        self._remove_temporaries(self.run_id)
        self._lock.release()

    def _remove_temporaries(self, run_id):
        prefix = files.temp_prefix(run_id)
        for folder in (files.join(self.out_dir, d) if d else self.out_dir for d in FOLDERS):
            files.remove(files.join(folder, f) for f in files.listdir(folder)
                         if f.startswith(prefix))

    def _refuse_foreign(self, old):
        """Refuse a folder holding files no corpustok record accounts for (this layout's
        records, or those of the older layout ``old``), before anything is removed."""
        ours = set(old.paths)
        foreign = [p for p in foreign_files(self.out_dir, job_entries(self.out_dir).values())
                   if p not in ours]
        if old.paths:  # the older layout's rejects/ folder: ours if it holds only its files
            rejects = files.join(self.out_dir, old_layout.REJECTS_DIR)
            if rejects in foreign and all(files.join(rejects, n) in ours
                                          for n in files.listdir_all(rejects)):
                foreign.remove(rejects)
        if foreign:
            raise OtherJob(
                f"{files.shown(self.out_dir)} holds {len(foreign)} file(s) corpustok did not "
                f"write (first: {files.shown(foreign[0])}); readers of the folder would take "
                "them for shards, and a run could replace one: choose an empty or new --out, "
                "or move them away")

    def _clear_old_layout(self, old):
        """Refuse a folder of the older layout holding shards, unless ``overwrite``; remove
        that layout's files ``old`` (see ``old_layout``)."""
        if not old.paths:
            return
        if old.lock and _alive(old.lock) and not files.is_remote(self.out_dir) and \
                old.lock.get("host") == socket.gethostname():
            raise _busy(self.out_dir, old.lock)
        if old.shards and self.mode != "overwrite":
            raise OtherJob(old_layout.refusal(self.out_dir, old))
        for path in old.paths:
            files.remove([path])
            if old.shards and self._on_remove:
                self._on_remove(path)
        if old.shards:
            self.removed += old.paths
        rejects = files.join(self.out_dir, old_layout.REJECTS_DIR)
        if not files.is_remote(rejects) and os.path.isdir(rejects) and not os.listdir(rejects):
            os.rmdir(rejects)  # the old layout's folder, emptied

    def _read_own(self, name, fmt):
        """Our JSON file ``name`` in the folder (format ``fmt``), None if absent; OtherJob if
        a file of that name is someone else's (never replaced)."""
        path = files.join(self.out_dir, name)
        if not _present(self.out_dir, name):
            return None
        doc = json_object(files.read_bytes(path))
        if not doc or doc.get("format") != fmt:
            raise OtherJob(f"{files.shown(path)} is not a corpustok file: this folder is not a "
                           "corpustok output folder; choose another --out")
        return doc

    def _previous_job(self, entries):
        """``(config_id, inputs)`` of the job the folder holds, or None."""
        job = self._read_own(JOB_FILE, JOB_FORMAT)
        if job:
            return job.get("config_id"), job.get("inputs", [])
        manifest = self._read_own(RUN_MANIFEST, MANIFEST_FORMAT)
        if manifest:  # a job record lost
            sources = sorted({e.get("source") for e in manifest.get("shards", [])})
            return config_hash(manifest.get("config", {})), sources
        if entries:  # entries without a job record (it was deleted)
            configs = {e.get("config") for e in entries.values()}
            return (configs.pop() if len(configs) == 1 else None,
                    sorted({e.get("source") for e in entries.values()}))
        return None

    def _settle_job(self):
        entries = job_entries(self.out_dir)
        previous = self._previous_job(entries)
        if previous is not None:
            old_config, old_inputs = previous
            # By real path, not inode: a tool that rewrites an input by renaming a new file
            # over it gives it a new inode, and it is still this job's input (its shards are
            # then superseded).
            old_keys = {_real(files.unshown(p)): p for p in old_inputs}
            new_keys = {_real(p): p for p in self.inputs}
            same_config = old_config == self.config_id
            other = not same_config or old_keys.keys() != new_keys.keys()
            if other and (self.mode == "overwrite" or not entries):
                # Replaced on request, or silently when it has no shards: nothing is lost.
                self.removed += self._remove_job(entries, announce=bool(entries))
            elif not same_config and self._earlier_layout():
                raise OtherJob(
                    f"{files.shown(self.out_dir)} holds the shards of a job written by an "
                    "earlier corpustok (the shards beside .corpustok/, named after their "
                    "inputs); use --overwrite to redo it in this layout (shards in data/; the "
                    "files removed are listed) or choose another --out")
            elif not same_config:
                raise OtherJob(
                    f"{files.shown(self.out_dir)} holds the shards of a job with another "
                    f"tokenizer or other options{self._changed(old_config)}; use --overwrite "
                    "to replace them (the files removed are listed) or choose another --out")
            elif other:
                if self.mode != "append":
                    added = len(new_keys.keys() - old_keys.keys())
                    missing = len(old_keys.keys() - new_keys.keys())
                    raise OtherJob(
                        f"{files.shown(self.out_dir)} holds a job over other inputs ({added} "
                        f"new, {missing} of its inputs not given); --append adds inputs to "
                        "that job, --overwrite replaces it, or choose another --out")
                gone = [p for p in old_inputs if not files.exists(files.unshown(p))]
                if gone:
                    raise OtherJob(f"--append: {len(gone)} input(s) of the job in "
                                   f"{files.shown(self.out_dir)} no longer exist (first: "
                                   f"{gone[0]}); use --overwrite to start the job anew")
                extra = [files.unshown(p) for k, p in old_keys.items() if k not in new_keys]
                self.inputs = sorted(self.inputs + extra)
        job = {"format": JOB_FORMAT, "config_id": self.config_id, "config": self.config,
               "inputs": [files.shown(p) for p in self.inputs]}
        text = json.dumps(job, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        files.write_atomic(files.join(self.out_dir, JOB_FILE),
                           lambda f: f.write(text.encode("utf-8")), run_id=self.run_id)

    def _earlier_layout(self):
        """Whether the folder's job was written in the previous layout (its configuration
        has no ``layout``)."""
        job = self._read_own(JOB_FILE, JOB_FORMAT) or \
            self._read_own(RUN_MANIFEST, MANIFEST_FORMAT) or {}
        config = job.get("config")
        return isinstance(config, dict) and "layout" not in config

    def _changed(self, old_config_id):
        """`` (key: old -> new, ...)`` of the options the folder's job record differs in, or
        an empty string when it names none (an older record)."""
        job = self._read_own(JOB_FILE, JOB_FORMAT) or {}
        old = job.get("config") if job.get("config_id") == old_config_id else None
        if not isinstance(old, dict):
            return ""
        diff = [f"{k}: {old.get(k)} -> {v}" for k, v in sorted(self.config.items())
                if k != "tokenizer_sha256" and old.get(k) != v]
        if old.get("tokenizer_sha256") != self.config.get("tokenizer_sha256"):
            diff.insert(0, "another tokenizer")
        return f" ({', '.join(diff)})" if diff else ""

    def _remove_job(self, entries, announce):
        """Delete the previous job's listed files, its run manifest and its job record."""
        paths = listed_files(self.out_dir, entries.values())
        paths += [files.join(self.out_dir, n) for n in (RUN_MANIFEST, JOB_FILE)
                  if _present(self.out_dir, n)]
        for path in paths:
            files.remove([path])
            if announce and self._on_remove:
                self._on_remove(path)
        return paths if announce else []


def _present(out_dir, name):
    """Whether file ``name`` (relative to ``out_dir``) exists, by listing its folder."""
    folder, _, base = name.rpartition("/")
    return base in files.listdir(files.join(out_dir, folder) if folder else out_dir)
