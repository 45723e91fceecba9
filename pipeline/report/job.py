"""``corpustok report``: the token-budget report as a Beam job, and its command line.

The Beam form reads JSONL files (one file per reading task), counts tokens and base symbols
per ``(tokenizer, lang, unit)`` in batches (one kernel call per tokenizer and batch) and sums
them with a CombinePerKey; the characters of each language (for its script) are combined the
same way. The small per-unit table then goes through the same
``corpustok.pipeline.report.metrics.metrics`` as the in-process form, so both give the same
numbers.

The command (:func:`run_report`) decides what is evaluated and what is compared: ``--train``
holds out half the aligned sections for evaluation unless ``--train-text`` names training files
(the training text is never the evaluated text by default), and a UBE-vs-BBPE comparison is
made only between the BBPE and UBE it trained on one text at one size, or the two tokenizers
``--pair`` names.
"""
import argparse
import functools
import os
import sys
import textwrap
import time

import corpustok

from corpustok.pipeline.report.metrics import (BATCH_RECORDS, DEFAULT_REF, HELDOUT, TRAINED,
                                               TRAINED_PAIR, UNK_FLAG, Fields, Training,
                                               holdout_units, keep_units, make_pair, metrics,
                                               read_records, read_texts, report, text_lines,
                                               tokenizer_info, train_substrates, unit_texts,
                                               units_of, watch_training)
from corpustok.pipeline.report.output import write_report

__all__ = ["beam_report", "add_report_parser", "train_for_report", "run_report"]


def _spec(tok):
    """A picklable factory rebuilding ``tok`` from its ``to_dict()`` on the workers."""
    d = tok.to_dict()
    cls = corpustok.WordPiece if d.get("type") == "wordpiece" else corpustok.BytePairTokenizer
    return functools.partial(cls.from_dict, d)


def beam_report(tokenizers, paths, *, ref_lang=DEFAULT_REF, include_ref=False, flds=Fields(),
                batch_size=BATCH_RECORDS, runner=None, options=None, units=None,
                unk_flag=UNK_FLAG):
    """The :class:`corpustok.pipeline.report.metrics.Report` of ``paths`` computed by the Beam
    job; ``tokenizers`` ``{name: tokenizer}`` (shipped to the workers as their
    ``to_dict()``); ``units`` and ``unk_flag`` as in ``report.metrics.report``."""
    from corpustok.pipeline.report.beam import beam_counts  # here: Beam loads only for --beam
    specs = {name: _spec(tok) for name, tok in tokenizers.items()}
    counts, chars = beam_counts(specs, paths, flds, batch_size, runner, options, units)
    if not counts:
        raise ValueError("no records")
    return metrics(counts, chars, tokenizer_info(tokenizers), ref_lang, include_ref, unk_flag)


# ---- command line --------------------------------------------------------------------------
DESCRIPTION = """\
Token-budget report of one or more tokenizers on an aligned multilingual corpus: per language
the aligned units, tokens, unknown tokens ([UNK]: their count, rate and the bytes they cover),
token premium (the language's tokens / the reference language's tokens over the units both
have, each [UNK] charged one token per byte of the word it replaced, so that text a tokenizer
cannot encode never looks cheap) and encoding floor (base symbols before any merge); per
tokenizer the Gini coefficient of the premiums, G = sum_i sum_j |x_i - x_j| / (2 n^2 mean),
population form, reference language excluded unless --include-ref. --train trains on text
disjoint from the evaluated text: half the aligned sections (--heldout) unless --train-text
names training files. The UBE-vs-BBPE comparison pairs only the BBPE and UBE that --train
trained on one text at one size, or the two tokenizers --pair names. Writes
DIR/languages.csv, summary.csv, comparison.csv (with a comparison), summary.md and PNG plots
(when matplotlib is installed)."""

EPILOG = """\
examples:
  corpustok report udhr.jsonl.xz --tokenizer bert=vocab.txt --tokenizer gpt4=cl100k.tiktoken \\
      --out rep/
  corpustok report udhr.jsonl.xz --train --vocab-size 32000 --out rep/
                      # trains BBPE (utf8), BBPE16 (utf16) and UBE on half the sections
                      # (all languages), reports on the other half, compares UBE with BBPE
  corpustok report udhr.jsonl.xz --train --vocab-size 32000 --train-text corpus/*.txt.xz \\
      --out rep/      # trains on the files, reports how many evaluated lines they hold
  corpustok report udhr.jsonl.xz --tokenizer bbpe.json --tokenizer ube.json \\
      --pair bbpe,ube --out rep/   # your own BBPE and UBE, same text and size"""


def add_report_parser(subparsers):
    """Add the ``report`` subcommand to an argparse ``subparsers`` object; returns it."""
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
                        "same text (chunks counted once), save them to DIR/tokenizers/, report "
                        "on them (with any --tokenizer given too) and compare UBE with BBPE")
    p.add_argument("--vocab-size", type=int, metavar="N",
                   help="vocabulary size for --train (base symbols included)")
    p.add_argument("--train-text", nargs="+", metavar="FILE",
                   help="plain-text training files for --train (.txt, .gz, .xz, .zst); the "
                        "report says how many evaluated lines they hold verbatim. Default: "
                        "hold out (see --heldout), never the evaluated text")
    p.add_argument("--heldout", type=float, metavar="FRACTION",
                   help=f"--train without --train-text: the share of the aligned sections "
                        f"(a unit with the units nested in it, as udhr:art14 holds "
                        f"udhr:art14:p1) evaluated (default {HELDOUT}); the other sections' "
                        "texts, in every language, train. Sections are ordered by the SHA-256 "
                        "of their name, so the split is fixed and the two sets are disjoint")
    p.add_argument("--train-max-mb", type=float, metavar="MB",
                   help="train on the first MB x 10^6 characters of the training text only, "
                        "cut at a line end (held out: at a record) (default: all of it)")
    p.add_argument("--pair", metavar="BBPE,UBE",
                   help="compare these two tokenizers as UBE vs BBPE: a utf8 BPE, then a ube "
                        "BPE, of one vocabulary size; pair only tokenizers trained on the same "
                        "text (the report cannot check that). Default: the BBPE and UBE of "
                        "--train, otherwise no comparison")
    p.add_argument("--unk-flag", type=float, default=UNK_FLAG, metavar="SHARE",
                   help="flag a language whose bytes are more than SHARE under [UNK] (its "
                        "premium is then mostly the bytes charged for [UNK]); it stays in the "
                        "Gini (default: %(default)s)")
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


def _check_args(args):
    """ValueError for arguments that cannot make a report, before any work."""
    missing = [p for p in args.parallel + (args.train_text or []) if not os.path.exists(p)]
    if missing:
        raise ValueError(f"no such file: {missing[0]}")
    if args.train and not args.vocab_size:
        raise ValueError("--train needs --vocab-size N")
    if not args.train and not args.tokenizer:
        raise ValueError("give at least one --tokenizer FILE, or --train --vocab-size N")
    if args.heldout is not None and (not args.train or args.train_text):
        raise ValueError("--heldout splits the evaluation corpus for --train; it does not "
                         "apply " + ("with --train-text" if args.train else "without --train"))
    if args.pair is not None and len([x for x in args.pair.split(",") if x.strip()]) != 2:
        raise ValueError(f"--pair {args.pair}: expected two tokenizer names, BBPE,UBE")
    if not 0 <= args.unk_flag <= 1:
        raise ValueError(f"--unk-flag must be a share between 0 and 1, got {args.unk_flag}")


def train_for_report(args, flds):
    """``(tokenizers, Training)``: BBPE, BBPE16 and UBE trained at ``args.vocab_size`` on
    ``--train-text`` or, without it, on the texts of the units :func:`holdout_units` keeps
    out of the evaluation; the evaluated lines the training text holds verbatim are
    counted."""
    max_chars = None if args.train_max_mb is None else int(args.train_max_mb * 1e6)
    if args.train_text:
        training = Training("files", args.vocab_size, files=tuple(args.train_text))
        texts = read_texts(args.train_text, max_chars)
        evaluated = read_records(args.parallel)
    else:
        split = holdout_units(units_of(read_records(args.parallel), flds),
                              HELDOUT if args.heldout is None else args.heldout)
        training = Training("heldout", args.vocab_size, split=split)
        texts = unit_texts(read_records(args.parallel), flds, split.train, max_chars)
        evaluated = keep_units(read_records(args.parallel), flds, split.evaluate)
    lines = text_lines(t for t in (r.get(flds.text) for r in evaluated) if isinstance(t, str))
    toks = train_substrates(watch_training(texts, lines, training), args.vocab_size)
    return toks, training


def _pair(args, toks, notes):
    """The :class:`Pair` of the UBE-vs-BBPE comparison: ``--pair`` (ValueError when it is not
    a utf8 and a ube BPE of one size), else the BBPE and UBE ``--train`` made, else None;
    ``notes`` says why there is none where a reader might expect one."""
    info = tokenizer_info(toks)
    if args.pair:
        bbpe, ube = (x.strip() for x in args.pair.split(","))
        return make_pair(info, bbpe, ube, origin="user")
    if args.train:
        try:
            return make_pair(info, *TRAINED_PAIR, origin="trained")
        except ValueError as e:  # one could not reach the size: the sizes differ
            notes.append(f"no UBE-vs-BBPE comparison: {e} (one did not reach "
                         f"{args.vocab_size} ids: too little training text, or a size below "
                         "UBE's 512-symbol alphabet)")
            return None
    subs = {name: sub for name, (sub, _) in info.items()}
    if "utf8" in subs.values() and "ube" in subs.values():
        notes.append("no UBE-vs-BBPE comparison: the tokenizers were not trained by this "
                     "report; name a BBPE and a UBE trained on the same text at the same size "
                     "with --pair BBPE,UBE")
    return None


def run_report(args):
    """Run ``corpustok report`` for parsed ``args``; returns the exit code (0). Raises
    ValueError for bad arguments, including fields under which no language aligns with the
    reference (nothing is written then)."""
    flds = Fields(args.unit_field, args.lang_field, args.text_field)
    _check_args(args)
    t0 = time.perf_counter()
    toks, training = {}, None
    if args.train:
        toks, training = train_for_report(args, flds)
        tok_dir = os.path.join(args.out, "tokenizers")
        os.makedirs(tok_dir, exist_ok=True)
        for name, tok in toks.items():
            tok.save(os.path.join(tok_dir, f"{name.lower()}.json"))
        print(f"corpustok report: trained {', '.join(n for n, _ in TRAINED)} at "
              f"{args.vocab_size} in {time.perf_counter() - t0:.1f} s -> {tok_dir}")
        for line in training.describe():
            print(f"  {line}")
    for name, tok in _named(args.tokenizer).items():
        if name in toks:
            raise ValueError(f"--tokenizer name {name!r} clashes with a --train tokenizer")
        toks[name] = tok
    notes = []
    pair = _pair(args, toks, notes)
    units = training.split.evaluate if training and training.split else None
    if args.beam:
        rep = beam_report(toks, args.parallel, ref_lang=args.ref_lang,
                          include_ref=args.include_ref, flds=flds, units=units,
                          unk_flag=args.unk_flag)
    else:
        rep = report(toks, read_records(args.parallel), ref_lang=args.ref_lang,
                     include_ref=args.include_ref, flds=flds, units=units,
                     unk_flag=args.unk_flag)
    if not any(s.languages for s in rep.summary):
        raise ValueError(f"no language shares an aligned unit with {args.ref_lang!r}: check "
                         f"--unit-field ({args.unit_field!r}), --lang-field ({args.lang_field!r})"
                         f" and --ref-lang (the embedded sample needs --unit-field unit)")
    rep.pair, rep.training = pair, training
    rep.notes.extend(notes)
    paths = write_report(rep, args.out, plots=not args.no_plots, title=args.title)
    for s in rep.summary:
        gini = "n/a" if s.gini is None else f"{s.gini:.4f}"
        print(f"  {s.tokenizer:<12} languages {s.languages:>4}  Gini {gini}  "
              f"{args.ref_lang} tokens {s.ref_tokens}  [UNK] {s.unk_tokens}")
    if pair:
        print(f"  UBE vs BBPE: {pair.provenance()}")
    for n in rep.notes:
        print(f"  note: {n}")
    print(f"  wrote {len(paths)} files to {args.out} in {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv=None):
    """``python -m corpustok.pipeline.report ...``: the report command on its own (the same
    options as ``corpustok report``); returns the exit code (2 on bad arguments or input)."""
    parser = argparse.ArgumentParser(prog="corpustok")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run_report(args)
    except (ValueError, TypeError, OSError) as e:
        print(f"corpustok report: error: {e}", file=sys.stderr)
        return 2

