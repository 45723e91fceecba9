"""``corpustok stats FOLDER``: what a shard folder holds, from its run manifest alone (no shard
is read): the run's status and tokenizer, documents, tokens, text bytes, rejects, and the same
per input (by the name its shards' ``source`` column gives it)."""
from corpustok.pipeline import files
from corpustok.pipeline.output.layout import RUN_MANIFEST, read_run_manifest


def folder_stats(out_dir) -> str:
    """The stats of ``out_dir`` as text; ValueError when it has no run manifest."""
    m = read_run_manifest(out_dir)
    if m is None:
        raise ValueError(f"{files.shown(files.join(out_dir, RUN_MANIFEST))} is missing: no run "
                         "of this folder has finished (rerun its `corpustok tokenize` command)")
    t = m["totals"]
    tok = m.get("tokenizer") or {"sha256": m.get("tokenizer_sha256")}
    inputs = {}
    for e in m["shards"]:
        row = inputs.setdefault(e.get("name", e["source"]), [0, 0, 0, 0])
        for i, key in enumerate(("documents", "tokens", "bytes")):
            row[i] += e[key]
        row[3] += 1
    size = f"{tok['vocab_size']:,} ids, " if tok.get("vocab_size") else ""
    lines = [f"corpustok stats: {files.shown(out_dir)}",
             f"  status     {m['status']}",
             f"  tokenizer  {tok.get('name') or '?'} ({size}sha256 {str(tok['sha256'])[:12]})",
             f"  documents  {t['documents']:,} in {t['shards']:,} shards from {len(inputs):,} "
             "input(s)",
             f"  tokens     {t['tokens']:,}" + _ratios(t["documents"], t["tokens"], t["bytes"]),
             f"  text       {t['bytes'] / 1e6:,.2f} MB ({t['replaced']:,} U+FFFD replacements)",
             "  rejects    " + (", ".join(f"{r}: {n:,}" for r, n in t["rejects"].items())
                                or "none")]
    for e in m["errors"]:
        lines.append(f"  ERROR {e['source']}: {e['error']}")
    if inputs:
        width = min(60, max(len(n) for n in inputs))
        lines.append(f"  {'input':<{width}}  {'shards':>7}  {'documents':>12}  {'tokens':>15}  "
                     f"{'MB of text':>11}  {'bytes/token':>11}")
        for name, (docs, tokens, nbytes, shards) in sorted(inputs.items()):
            per = f"{nbytes / tokens:.2f}" if tokens else "-"
            lines.append(f"  {name:<{width}}  {shards:>7,}  {docs:>12,}  {tokens:>15,}  "
                         f"{nbytes / 1e6:>11,.2f}  {per:>11}")
    return "\n".join(lines)


def _ratios(documents, tokens, nbytes):
    if not tokens:
        return ""
    return (f" ({tokens / max(1, documents):,.1f} per document, {nbytes / tokens:.2f} bytes of "
            "text per token)")
