"""``corpustok report``: the token-budget report as a Beam job, and its command line.

The Beam form reads JSONL files (one file per reading task), counts tokens and base symbols
per ``(tokenizer, lang, unit)`` in batches (one kernel call per tokenizer and batch) and sums
them with a CombinePerKey; the characters of each language (for its script) are combined the
same way. The small per-unit table then goes through the same ``corpustok.pipeline.report_metrics.metrics`` as
the in-process form, so both give the same numbers.
"""
import functools
import json
import os
import tempfile
import textwrap
import time

from corpustok.pipeline.report_metrics import (BATCH_RECORDS, DEFAULT_REF, TRAINED, Fields,
                                               add_counts, batch_counts, lang_chars, metrics,
                                               read_records, read_texts, report, tokenizer_info,
                                               train_substrates)
from corpustok.pipeline.report_output import write_report

from corpustok.pipeline.tokenize import load_tokenizer

__all__ = ["CountUnitTokens", "beam_counts", "beam_report", "add_report_parser", "run_report"]


def _record_batches(path, batch_size):
    batch = []
    for rec in read_records(path):
        batch.append(rec)
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def _merge_counters(counters):
    from collections import Counter
    out = Counter()
    for c in counters:
        out.update(c)
    return out


def _sum_counts(values):
    return functools.reduce(add_counts, values)


@functools.lru_cache(maxsize=None)
def _beam_classes():
    """``(CountBatch, CountUnitTokens)``, defined on first use so that importing this module
    (the CLI's ``--help``) does not import Beam."""
    import apache_beam as beam

    class CountBatch(beam.DoFn):
        """Builds the tokenizers from plain specs (paths or picklable factories) once per
        worker in ``setup``; ``process`` counts one batch of records."""

        def __init__(self, specs, flds):
            self._specs = specs
            self._flds = flds
            self._toks = None

        def setup(self):
            self._toks = {name: load_tokenizer(spec) for name, spec in self._specs.items()}

        def process(self, batch):
            yield from batch_counts(self._toks, batch, self._flds)

    class CountUnitTokens(beam.PTransform):
        """Batches of records (lists of dicts) -> ``(counts, chars)`` PCollections:
        ``((name, lang, unit), (tokens, floor))`` and ``(lang, Counter of characters)``, each
        combined per key."""

        def __init__(self, specs, flds=Fields()):
            super().__init__()
            self._specs = specs
            self._flds = flds

        def expand(self, batches):
            counts = (batches
                      | "Count" >> beam.ParDo(CountBatch(self._specs, self._flds))
                      | "SumCounts" >> beam.CombinePerKey(_sum_counts))
            chars = (batches
                     | "Chars" >> beam.FlatMap(lang_chars, self._flds)
                     | "SumChars" >> beam.CombinePerKey(_merge_counters))
            return counts, chars

    return CountBatch, CountUnitTokens


def __getattr__(name):
    if name == "CountUnitTokens":
        return _beam_classes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _spec(tok):
    """A picklable factory rebuilding ``tok`` from its ``to_dict()`` on the workers."""
    import corpustok
    d = tok.to_dict()
    cls = corpustok.WordPiece if d.get("type") == "wordpiece" else corpustok.BytePairTokenizer
    return functools.partial(cls.from_dict, d)


def beam_counts(specs, paths, flds=Fields(), batch_size=BATCH_RECORDS, runner=None,
                options=None):
    """Run the counting job on ``paths`` (JSONL files); ``specs`` maps tokenizer names to
    files or zero-argument factories. Returns ``(counts, chars)`` as the in-process
    ``count_units`` does. ``runner`` defaults to the FnApiRunner."""
    import apache_beam as beam
    from collections import Counter

    from corpustok.pipeline.runners import beam_options
    if runner is None and options is None:
        options, runner = beam_options()
    with tempfile.TemporaryDirectory(prefix="corpustok-report-") as tmp:
        counts_prefix = os.path.join(tmp, "counts")
        chars_prefix = os.path.join(tmp, "chars")
        with beam.Pipeline(runner=runner, options=options) as p:
            batches = (p
                       | "Files" >> beam.Create(sorted(os.fspath(x) for x in paths))
                       | "Read" >> beam.FlatMap(_record_batches, batch_size))
            counts, chars = batches | "CountUnitTokens" >> _beam_classes()[1](specs, flds)
            (counts | "CountsJson" >> beam.Map(lambda kv: json.dumps([list(kv[0]), kv[1]]))
             | "WriteCounts" >> beam.io.WriteToText(counts_prefix))
            (chars | "CharsJson" >> beam.Map(lambda kv: json.dumps([kv[0], dict(kv[1])]))
             | "WriteChars" >> beam.io.WriteToText(chars_prefix))
        out_counts, out_chars = {}, {}
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), encoding="utf-8") as f:
                for line in f:
                    a, b = json.loads(line)
                    if name.startswith("counts"):
                        out_counts[tuple(a)] = tuple(b)
                    else:
                        out_chars[a] = Counter(b)
    return out_counts, out_chars


def beam_report(tokenizers, paths, *, ref_lang=DEFAULT_REF, include_ref=False, flds=Fields(),
                batch_size=BATCH_RECORDS, runner=None, options=None):
    """The :class:`corpustok.pipeline.report_metrics.Report` of ``paths`` computed by the Beam job;
    ``tokenizers`` ``{name: tokenizer}`` (shipped to the workers as their ``to_dict()``)."""
    specs = {name: _spec(tok) for name, tok in tokenizers.items()}
    counts, chars = beam_counts(specs, paths, flds, batch_size, runner, options)
    if not counts:
        raise ValueError("no records")
    return metrics(counts, chars, tokenizer_info(tokenizers), ref_lang, include_ref)


# ---- command line --------------------------------------------------------------------------
DESCRIPTION = """\
Token-budget report of one or more tokenizers on an aligned multilingual corpus: per language
the aligned units, tokens, mean tokens per unit, token premium (sum of the language's tokens /
sum of the reference language's tokens over the units both have) and encoding floor (base
symbols before any merge); per tokenizer the Gini coefficient of the premiums, G = sum_i sum_j
|x_i - x_j| / (2 n^2 mean), population form, reference language excluded unless
--include-ref. Writes DIR/languages.csv, summary.csv, comparison.csv (UBE vs BBPE, when both
substrates are present), summary.md and PNG plots (when matplotlib is installed)."""

EPILOG = """\
examples:
  corpustok report udhr.jsonl.xz --tokenizer BBPE=bbpe.json --tokenizer UBE=ube.json --out rep/
  corpustok report udhr.jsonl.xz --train --vocab-size 32000 --train-text corpus/*.txt.xz \\
      --out rep/          # trains BBPE (utf8), BBPE16 (utf16) and UBE on the same text first"""


def add_report_parser(subparsers):
    """Add the ``report`` subcommand to an argparse ``subparsers`` object; returns it."""
    import argparse
    p = subparsers.add_parser(
        "report", help="token premium, Gini and encoding floor per language and tokenizer",
        description=textwrap.fill(DESCRIPTION.replace("\n", " "), 88), epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("parallel", nargs="+", metavar="PARALLEL",
                   help="aligned corpus: JSONL files (.jsonl, .jsonl.gz, .jsonl.xz, .jsonl.zst), "
                        "one record per unit and language")
    p.add_argument("--tokenizer", action="append", default=[], metavar="[NAME=]FILE",
                   help="tokenizer file to report on (corpustok file, HF tokenizer.json or "
                        "WordPiece vocab.txt); repeat for several; NAME defaults to the file "
                        "name without extension")
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    p.add_argument("--train", action="store_true",
                   help="first train BBPE (utf8), BBPE16 (utf16) and UBE at --vocab-size on the "
                        "same text (chunks counted once), save them to DIR/tokenizers/ and "
                        "report on them (with any --tokenizer given too)")
    p.add_argument("--vocab-size", type=int, metavar="N",
                   help="vocabulary size for --train (base symbols included)")
    p.add_argument("--train-text", nargs="+", metavar="FILE",
                   help="plain-text training files for --train (.txt, .gz, .xz, .zst); "
                        "default: the texts of the PARALLEL files")
    p.add_argument("--train-max-mb", type=float, metavar="MB",
                   help="train on the first MB x 10^6 characters of the training text only, "
                        "cut at a line end (default: all of it)")
    p.add_argument("--ref-lang", default=DEFAULT_REF,
                   help="reference language of the premiums (default: %(default)s)")
    p.add_argument("--include-ref", action="store_true",
                   help="count the reference language (premium 1) in the Gini and the means")
    for name, default, what in (("unit", "id", "the alignment unit (the embedded sample "
                                                 "corpustok/data/udhr_sample.jsonl uses unit)"),
                                ("lang", "lang", "the language"), ("text", "text", "the text")):
        p.add_argument(f"--{name}-field", default=default,
                       help=f"record field holding {what} (default: %(default)s)")
    p.add_argument("--beam", action="store_true",
                   help="count with the Beam job (FnApiRunner, for large corpora) instead of "
                        "in-process; same numbers")
    p.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    p.add_argument("--title", default="Token-budget report", help="title of summary.md")
    return p


def _named(items):
    import corpustok
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = os.path.splitext(os.path.basename(item))[0], item
        if name in out:
            raise ValueError(f"--tokenizer {item}: name {name!r} is used twice; write "
                             "NAME=FILE")
        out[name] = corpustok.load(path)
    return out


def run_report(args):
    """Run ``corpustok report`` for parsed ``args``; returns the exit code (0). Raises
    ValueError for bad arguments, including fields under which no language aligns with the
    reference (nothing is written then)."""
    flds = Fields(args.unit_field, args.lang_field, args.text_field)
    missing = [p for p in args.parallel + (args.train_text or []) if not os.path.exists(p)]
    if missing:
        raise ValueError(f"no such file: {missing[0]}")
    if args.train and not args.vocab_size:
        raise ValueError("--train needs --vocab-size N")
    if not args.train and not args.tokenizer:
        raise ValueError("give at least one --tokenizer FILE, or --train --vocab-size N")
    t0 = time.perf_counter()
    toks = {}
    if args.train:
        max_chars = None if args.train_max_mb is None else int(args.train_max_mb * 1e6)
        if args.train_text:
            texts = read_texts(args.train_text, max_chars)
        else:
            texts = (r.get(flds.text) for r in read_records(args.parallel))
        toks = train_substrates(texts, args.vocab_size)
        tok_dir = os.path.join(args.out, "tokenizers")
        os.makedirs(tok_dir, exist_ok=True)
        for name, tok in toks.items():
            tok.save(os.path.join(tok_dir, f"{name.lower()}.json"))
        print(f"corpustok report: trained {', '.join(n for n, _ in TRAINED)} at "
              f"{args.vocab_size} in {time.perf_counter() - t0:.1f} s -> {tok_dir}")
    for name, tok in _named(args.tokenizer).items():
        if name in toks:
            raise ValueError(f"--tokenizer name {name!r} clashes with a --train tokenizer")
        toks[name] = tok
    if args.beam:
        rep = beam_report(toks, args.parallel, ref_lang=args.ref_lang,
                          include_ref=args.include_ref, flds=flds)
    else:
        rep = report(toks, read_records(args.parallel), ref_lang=args.ref_lang,
                     include_ref=args.include_ref, flds=flds)
    if not any(s.languages for s in rep.summary):
        raise ValueError(f"no language shares an aligned unit with {args.ref_lang!r}: check "
                         f"--unit-field ({args.unit_field!r}), --lang-field ({args.lang_field!r})"
                         f" and --ref-lang (the embedded sample needs --unit-field unit)")
    paths = write_report(rep, args.out, plots=not args.no_plots, title=args.title)
    for s in rep.summary:
        gini = "n/a" if s.gini is None else f"{s.gini:.4f}"
        print(f"  {s.tokenizer:<12} languages {s.languages:>4}  Gini {gini}  "
              f"{args.ref_lang} tokens {s.ref_tokens}")
    for n in rep.notes:
        print(f"  note: {n}")
    print(f"  wrote {len(paths)} files to {args.out} in {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv=None):
    """``python -m corpustok.pipeline.report ...``: the report command on its own (the same
    options as ``corpustok report``); returns the exit code (2 on bad arguments or input)."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="corpustok")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run_report(args)
    except (ValueError, TypeError, OSError) as e:
        print(f"corpustok report: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
