"""Output folders of the older layout, whose metadata lay beside the shards.

Until the ``.corpustok/`` layout (see ``output.layout``), a folder held ``<shard>.manifest.json``
entries, ``manifest.json``, ``_job.json``, ``_corpustok.lock`` and ``rejects/`` next to the
shards, which broke folder reads in pyarrow, polars, DuckDB and Hugging Face ``datasets``;
its shards also held string ids and may hold other ``source`` spellings. Such a folder is
not resumed: a run refuses it, naming ``--overwrite``, which removes the old files it can
prove are corpustok's (those its manifests list, its manifests, job record, lock and the
temporaries of a killed run) and nothing else. A folder of the older layout without shards
is cleared without asking: nothing of it is lost.
"""
import json
from dataclasses import dataclass, field

from corpustok.schemas import LISTED_ENTRY_KEYS, MANIFEST_FORMAT, check_shard_entry

from corpustok.pipeline import files

ENTRY_SUFFIX = ".manifest.json"
RUN_MANIFEST = "manifest.json"
JOB_FILE = "_job.json"
LOCK_FILE = "_corpustok.lock"
REJECTS_DIR = "rejects"


@dataclass
class OldFolder:
    """What the older layout left in a folder: ``shards`` (names of the shards its entries
    and manifest list), ``paths`` (our files, to remove in this order: data first, the
    records naming them last) and ``lock`` (the old lock's content, None if absent)."""

    shards: set = field(default_factory=set)
    paths: list = field(default_factory=list)
    lock: dict = None


def _json(out_dir, name):
    try:
        value = json.loads(files.read_bytes(files.join(out_dir, name)))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def find(out_dir) -> OldFolder:
    """The older layout's files in ``out_dir`` (an empty ``OldFolder`` when none)."""
    old = OldFolder()
    present = set(files.listdir(out_dir))
    entries = []
    for f in sorted(present):
        if f.endswith(ENTRY_SUFFIX) and f != RUN_MANIFEST:
            e = _json(out_dir, f)
            try:
                check_shard_entry(e, keys=LISTED_ENTRY_KEYS)
            except (ValueError, TypeError, KeyError):
                continue
            if e["shard"] + ENTRY_SUFFIX == f:
                entries.append(e)
    records = [f for f in (RUN_MANIFEST, JOB_FILE) if f in present]
    manifest = _json(out_dir, RUN_MANIFEST) if RUN_MANIFEST in records else None
    if manifest and manifest.get("format") == MANIFEST_FORMAT:
        entries += [e for e in manifest.get("shards", []) if isinstance(e, dict)]
    else:
        records = [f for f in records if f != RUN_MANIFEST]
    if JOB_FILE in records and (_json(out_dir, JOB_FILE) or {}).get("format") != "corpustok-job":
        records.remove(JOB_FILE)
    if LOCK_FILE in present:
        old.lock = _json(out_dir, LOCK_FILE) or {}
    rejected = set(files.listdir(files.join(out_dir, REJECTS_DIR)))
    data, named = [], []
    for e in entries:
        name, file = e.get("shard"), e.get("file")
        if not isinstance(name, str) or file != f"{name}.parquet" or name in old.shards:
            continue
        old.shards.add(name)
        data += [files.join(out_dir, file)] if file in present else []
        data += [files.join(out_dir, REJECTS_DIR, file)] if file in rejected else []
        named += [files.join(out_dir, name + ENTRY_SUFFIX)] if name + ENTRY_SUFFIX in present \
            else []
    run_id = (old.lock or {}).get("run_id")
    if isinstance(run_id, str) and run_id:
        prefix = files.temp_prefix(run_id)
        data += [files.join(out_dir, f) for f in sorted(present) if f.startswith(prefix)]
        data += [files.join(out_dir, REJECTS_DIR, f) for f in sorted(rejected)
                 if f.startswith(prefix)]
    old.paths = data + named + [files.join(out_dir, f) for f in records]
    if old.lock is not None and (old.paths or run_id):
        old.paths.append(files.join(out_dir, LOCK_FILE))
    return old


def refusal(out_dir, old: OldFolder) -> str:
    return (f"{files.shown(out_dir)} holds {len(old.shards)} shard(s) written by an older "
            "corpustok, with its manifests beside the shards (manifest.json, "
            "<shard>.manifest.json), a layout that folder readers fail on and that is not "
            "resumed; rerun with --overwrite to redo the job in the current layout (the old "
            "files removed are listed), or choose another --out")
