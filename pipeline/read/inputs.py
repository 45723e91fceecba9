"""A job's inputs as they are named: paths or globs, each optionally with its own columns.

``INPUT:id=COL,text=COL`` reads the files ``INPUT`` matches with those id and text columns
(Parquet) or fields (JSONL); either key may be left out (the job's ``--id-column`` /
``--text-column`` then apply) and ``no-id`` says the input has no ids. The mapping is the
text after a ``:`` that starts with ``id=``, ``text=`` or ``no-id`` and runs to the end
(items separated by ``,``, so a mapped name holds no ``,``): a URL's scheme is followed by
``//``, so ``gs://b/x.jsonl:text=body`` is the file ``gs://b/x.jsonl`` read with
``body``, and a name without a mapping is taken whole. (A file whose name itself ends in
``:text=...`` is named with a glob, ``x.jsonl[:]text=...``.)

A mapping is part of its input's identity: the tokenize job records it per input (canonical
name) in its configuration (``columns``; the job's record and manifests) and hashes it into
that input's shard names, as it does the file's size and time
(``output.layout.shard_name``), not into
the configuration's hash. So a rerun with another mapping of a file replaces that file's
shards (``superseded`` in the run manifest) and keeps the others, and ``--append`` adds a
mapped input to a job.
"""
import hashlib
import json
import os
import re
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa

from corpustok.pipeline import files
from corpustok.pipeline.files.compression import strip_compression
from corpustok.pipeline.read.errors import READ_ERRORS
from corpustok.pipeline.read.units import input_kind

ID_PEEK_LINES = 1000  # JSONL lines looked at for the first id, which gives the file's id kind
_ITEM = r"(?:id=[^,]+|text=[^,]+|no-id)"
_MAPPED = re.compile(rf"(?P<pattern>.+?):(?P<mapping>{_ITEM}(?:,{_ITEM})*)", re.S)


STDIN = "-"  # an input read from standard input
STDIN_NAME = "<stdin>"  # its name in the shards' source column
STDIN_FORMATS = {"jsonl": ".jsonl", "txt": ".txt"}


def spool_stdin(args, fmt, stream):
    """``(args, path)``: the input arguments with standard input (``-``, or ``-:text=COL``)
    replaced by a local file holding what ``stream`` gives (a binary stream, read to its end)
    in format ``fmt`` (:data:`STDIN_FORMATS`), and that file's path (None when no argument
    reads standard input; the caller removes it). The file is named by its content's sha256
    and dated 1970-01-01, so the same input piped again is the same input file, and a rerun
    resumes."""
    if not any(parse_input(a)[0] == STDIN for a in args):
        return list(args), None
    if fmt not in STDIN_FORMATS:
        raise ValueError(f"--stdin-format must be one of {', '.join(STDIN_FORMATS)}, got {fmt!r}")
    fd, tmp = tempfile.mkstemp(prefix="corpustok-stdin-", suffix=".part")
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as f:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
                f.write(block)
        path = os.path.join(os.path.dirname(tmp), f"corpustok-stdin-{digest.hexdigest()[:16]}"
                            f"{STDIN_FORMATS[fmt]}")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.utime(path, (0, 0))
    out = []
    for arg in args:
        pattern, _ = parse_input(arg)
        out.append(path + arg[len(pattern):] if pattern == STDIN else arg)
    return out, path


@contextmanager
def stdin_spooled(args, fmt, stream):
    """A context manager around :func:`spool_stdin`: the input arguments to use inside, the
    spooled file removed when it ends."""
    args, path = spool_stdin(args, fmt, stream)
    try:
        yield args, path
    finally:
        if path is not None and os.path.exists(path):
            os.remove(path)


def parse_input(arg: str):
    """``(pattern, mapping)``: the path or glob, and its columns (a dict with ``id``, None for
    ``no-id``, and/or ``text``; empty without a mapping). ValueError on a key given twice."""
    m = _MAPPED.fullmatch(arg)
    if m is None:
        return arg, {}
    mapping = {}
    for item in m.group("mapping").split(","):
        key, _, value = item.partition("=")
        key, value = ("id", None) if key == "no-id" else (key, value)
        if key in mapping:
            raise ValueError(f"input {files.shown(arg)!r}: the {key} column is given twice")
        mapping[key] = value
    return m.group("pattern"), mapping


@dataclass
class Inputs:
    """A job's inputs resolved: ``patterns`` as given (mappings cut off), ``paths`` the
    distinct files they match (canonical names, sorted), ``duplicates`` how many matched
    paths named a file already listed, ``columns`` the inputs whose columns differ from the
    job's (``{shown file: {"id": COL or None, "text": COL}}``) and ``names`` each input's
    name as the user gave it (``{shown file: name}``: the glob's match or the path as typed,
    normalized), what its shards' ``source`` column says."""

    patterns: list  # a folder given as an input: the glob of everything below it
    paths: list
    duplicates: int
    columns: dict
    names: dict


# What a folder given as an input holds that is read: every file of a known input type
# below it (hidden ones and those in hidden folders aside), but ``.json`` files, which name
# configuration and metadata more often than JSON Lines (name them, or a glob, to read them).
FOLDER_SKIPS = (".json",)


def folder_pattern(folder):
    """The glob a folder given as an input stands for: everything below it."""
    return files.join(folder.rstrip("/") or "/", "**", "*")


def _matched(pattern):
    """The files ``pattern`` names: a folder's input files (see :data:`FOLDER_SKIPS`), else
    the path or glob's matches; ValueError when there are none."""
    if files.is_dir(pattern):
        found = [f for f in files.match(folder_pattern(pattern)) if _input_file(f)]
        if not found:
            raise ValueError(f"the folder {files.shown(pattern)!r} holds no input file "
                             "(.parquet, .jsonl, .ndjson or .txt, the last three also .gz, .xz "
                             "or .zst)")
        return found
    matched = files.match(pattern)
    if not matched:
        raise ValueError(f"no input file matches {files.shown(pattern)!r}")
    return matched


def _input_file(path):
    try:
        input_kind(path)
    except ValueError:
        return False
    return not strip_compression(path).endswith(FOLDER_SKIPS)


def _expand(patterns):
    """``(paths, duplicates, names)`` of :func:`expand_inputs`, with each file's name as
    given (the shortest spelling that matched it)."""
    spellings = {}
    given = {}
    matched_count = 0
    for pat in patterns:
        matched = _matched(pat)
        matched_count += len(matched)
        for f in matched:
            key = files.file_key(f)
            spellings.setdefault(key, []).append(files.canonical(f))
            given.setdefault(key, []).append(f if files.is_remote(f) else os.path.normpath(f))
    chosen = {key: min(names, key=lambda f: (f.count(os.sep), len(f), f))
              for key, names in spellings.items()}
    out = sorted(chosen.values())
    for f in out:
        input_kind(f)
    names = {files.shown(chosen[key]): files.shown(min(g, key=lambda f: (len(f), f)))
             for key, g in given.items()}
    return out, matched_count - len(out), names


def expand_inputs(patterns):
    """``(files, duplicates)``: the distinct files matched by ``patterns`` (paths or globs,
    without mappings), sorted, and how many matched paths named a file already listed (``x``
    and ``./x``, hard or symbolic links), which are read once. A local file is known by
    device and inode and named by its shortest canonical spelling (``files.canonical``;
    ``**`` does not enter symbolic links to folders).

    Raises ValueError naming a pattern that matches nothing, or a file of unknown type.
    """
    paths, duplicates, _ = _expand(patterns)
    return paths, duplicates


def resolve_inputs(args, id_column="id", text_column="text") -> Inputs:
    """The :class:`Inputs` of input arguments that may carry mappings (``paths`` and
    ``duplicates`` as :func:`expand_inputs` gives them). A file two mappings name
    differently is a ValueError; a mapping wins over a pattern without one. A mapping of a
    text file (it has no columns) is a ValueError."""
    patterns, chosen = [], {}
    for arg in args:
        pattern, mapping = parse_input(arg)
        patterns.append(pattern)
        if not mapping:
            continue
        cols = {"id": mapping.get("id", id_column), "text": mapping.get("text", text_column)}
        for f in _matched(pattern):
            if input_kind(f) == "txt":
                raise ValueError(f"input {files.shown(arg)!r}: {files.shown(f)} is a text file, "
                                 "which has no columns to map")
            key = files.file_key(f)
            if chosen.setdefault(key, (cols, arg))[0] != cols:
                raise ValueError(f"{files.shown(f)} is mapped twice, differently: by "
                                 f"{files.shown(chosen[key][1])!r} and {files.shown(arg)!r}")
    paths, duplicates, names = _expand(patterns)
    default = {"id": id_column, "text": text_column}
    columns = {}
    for p in paths:
        cols = chosen.get(files.file_key(p), (default,))[0]
        if cols != default:
            columns[files.shown(p)] = cols
    searched = [folder_pattern(p) if files.is_dir(p) else p for p in patterns]
    return Inputs(searched, paths, duplicates, columns, names)


def mapping_of(path, columns=None):
    """The entry of input ``path`` in ``columns`` (:func:`resolve_inputs`), or None."""
    return (columns or {}).get(files.shown(path))


def source_name(path, sources=None):
    """The name input ``path`` is known by in its shards' ``source`` column: its entry in
    ``sources`` (``TokenizeConfig.sources``: the path as the user gave it), else its shown
    canonical name."""
    shown = files.shown(path)
    return (sources or {}).get(shown, shown)


def columns_for(path, id_column, text_column, columns=None):
    """``(id column or None, text column)`` that input ``path`` is read with: its entry in
    ``columns``, else the job's."""
    cols = mapping_of(path, columns)
    return (id_column, text_column) if cols is None else (cols["id"], cols["text"])


def _file_id_kind(path, id_column):
    """The id kind (``ID_KINDS`` key) of one input, or None when it cannot tell (no id
    column, a text file, no id in its first lines, unreadable: the pipeline reports those)."""
    kind = input_kind(path)
    if id_column is None or kind == "txt":
        return None
    if kind == "parquet":
        with files.parquet_file(path) as pf:
            schema = pf.schema_arrow
        if id_column not in schema.names:
            return None
        t = schema.field(id_column).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        return "int64" if pa.types.is_integer(t) else \
            "string" if pa.types.is_string(t) or pa.types.is_large_string(t) else None
    with files.open_lines(path) as f:
        for _, raw in zip(range(ID_PEEK_LINES), f):
            try:
                rec = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            value = rec.get(id_column) if isinstance(rec, dict) else None
            if isinstance(value, str):
                return "string"
            if isinstance(value, int) and not isinstance(value, bool):
                return "int64"
            if isinstance(value, float) and value.is_integer():  # 7.0 from pandas
                return "int64"
    return None


def job_id_type(paths, id_column, columns=None) -> str:
    """The id type of a job over ``paths`` (a key of ``ID_KINDS``): ``"int64"`` when every
    input's ids are integers (any Parquet integer column; JSON integers, judged by a JSONL
    file's first id), else ``"string"``: string ids, no ids, or inputs that mix both (one
    folder holds one schema; an integer id is then its decimal text, which loses nothing).
    Inputs without ids (``--no-id``, ``no-id``, text files) do not count."""
    kinds = set()
    for path in paths:
        try:
            kinds.add(_file_id_kind(path, columns_for(path, id_column, None, columns)[0]))
        except (*READ_ERRORS, ValueError):
            continue  # the pipeline reads it again and reports it against the file
    return "int64" if kinds - {None} == {"int64"} else "string"
