"""The ``corpustok`` command line: train, tokenize, encode, decode, main, report.

Exit codes (decided here, by exception type): 0 success; 1 the job completed but some input
could not be read, or more rows were rejected than ``--max-reject-fraction`` allows (named in
the summary and in manifest.json); 2 bad arguments or input, a tokenizer file that cannot be
used, an output folder in use or holding another job (one line on stderr); 3 the job failed (a
Beam worker or an unexpected error: traceback on stderr); 4 the output cannot be written
(read-only, no permission, disk or quota full: one line); 130/143 interrupted by SIGINT/SIGTERM
(one line; rerunning the same command resumes). Beam is imported only by the commands that run
a pipeline, so ``encode``/``decode``/``--help`` start fast.
"""
import argparse
import gc
import json
import logging
import os
import signal
import sys
import tempfile
import textwrap
import traceback
from contextlib import contextmanager

from corpustok.pipeline import files
from corpustok.pipeline.workers import keep_freed_memory

EXIT_OK, EXIT_INPUT_ERRORS, EXIT_USAGE, EXIT_FAILED, EXIT_NOT_WRITABLE = 0, 1, 2, 3, 4

BEAM_EPILOG = """\
Any option not listed above is passed to Apache Beam unchanged. Without --runner the job runs
locally on the FnApiRunner (Beam's DirectRunner would first try to download the Prism runner).
Examples: --direct_running_mode multi_processing --direct_num_workers 4 (what --workers 4
does); --runner DataflowRunner --project P --region R --temp_location gs://B/tmp; --runner
FlinkRunner --flink_master HOST:8081 --environment_type LOOPBACK. Inputs, --out and
--tokenizer may be local paths or gs://, s3://, hdfs://, azfs:// paths (install the matching
extra, e.g. apache-beam[gcp]); on a cluster, local paths must be a mount every worker shares."""


def _sub(sub, name, help, description, epilog=None):
    """A subcommand whose description is wrapped here and whose epilog keeps its lines."""
    return sub.add_parser(name, help=help, description=textwrap.fill(description, 88),
                          epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_read_options(p, ids=True):
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="Parquet (.parquet) or JSONL (.jsonl, .jsonl.gz, .jsonl.xz, .jsonl.zst) "
                        "files or globs (quote globs; ** matches folders)")
    p.add_argument("--text-column", default="text",
                   help="column (Parquet) or field (JSONL) holding the text; string or binary "
                        "(binary is read as UTF-8, invalid bytes become U+FFFD and are "
                        "counted) (default: %(default)s)")
    if ids:
        p.add_argument("--id-column", default="id",
                       help="column or field holding the document id, string or integer "
                            "(default: %(default)s)")
        p.add_argument("--no-id", action="store_true",
                       help="the input has no id column or field: shard rows get a null id "
                            "and are known by their source file and row")
    p.add_argument("--workers", type=_positive(int), default=None,
                   help="local worker processes (Beam multi_processing mode); default: one "
                        "in-process worker")


_PRETOKENIZERS = "gpt2, cl100k (llama3), o200k (llama4), qwen2, qwen3_5, tekken or a regex"


def _add_tokenizer_options(p):
    p.add_argument("--tokenizer", required=True, metavar="FILE|DIR",
                   help="a corpustok file (from `corpustok train` or .save()), an HF "
                        "tokenizer.json (WordPiece or BPE), a tiktoken rank file (cl100k, o200k, "
                        "Llama 3/4, Qwen), a Mistral Tekken JSON, GPT-2's vocab.json (with "
                        "--merges), a WordPiece vocab.txt, or a folder holding tokenizer.json "
                        "or vocab.json + merges.txt")
    p.add_argument("--merges", metavar="FILE",
                   help="GPT-2 merges.txt of the vocab.json given as --tokenizer")
    p.add_argument("--pretokenizer", metavar="NAME",
                   help="split of a tiktoken rank file that is not one of the known six, or of "
                        f"GPT-2 files: {_PRETOKENIZERS}")


def _tokenizer_spec(args):
    """What the pipeline loads: the path, or a factory when options or a folder need one."""
    from corpustok.pipeline.tokenize import TokenizerFiles
    if args.merges or args.pretokenizer or os.path.isdir(args.tokenizer):
        return TokenizerFiles(args.tokenizer, args.merges, args.pretokenizer)
    return args.tokenizer


def _fraction(text):
    """argparse type: a number from 0 to 1."""
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def _positive(kind):
    """argparse type: a number of ``kind`` above zero."""
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def _parser():
    parser = argparse.ArgumentParser(
        prog="corpustok",
        description="Tokenize pretraining corpora into Parquet token shards with Numba "
                    "kernels (Fast WordPiece, UBE byte-level BPE) in an Apache Beam pipeline.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    tr = _sub(
        sub, "train", help="train a byte-level BPE tokenizer on a corpus",
        description="Count pre-tokenized chunks of the corpus with a Beam combine, then learn "
                    "BPE merges on the chosen substrate and save the tokenizer file.",
        epilog=BEAM_EPILOG)
    _add_read_options(tr, ids=False)  # training reads texts only
    tr.add_argument("--substrate", choices=("ube", "utf8", "utf16"), default="ube",
                    help="base symbols the merges start from: ube (UTF-8 for 1-2 byte "
                         "characters, UTF-16LE bytes as a second alphabet otherwise), utf8 "
                         "bytes, or utf16 (UTF-16LE bytes) (default: %(default)s)")
    tr.add_argument("--vocab-size", type=_positive(int), required=True,
                    help="size of the vocabulary to learn, base symbols included")
    tr.add_argument("--special-token", action="append", default=[], metavar="TOKEN",
                    dest="special_tokens",
                    help="a special token to reserve (first ids, never learned from the text, "
                         "usable as --bos/--eos later), e.g. '<|endoftext|>'; repeat for more")
    tr.add_argument("--pretokenizer", default="gpt2", metavar="NAME",
                    help="split before merging: " + _PRETOKENIZERS + " (default: %(default)s)")
    tr.add_argument("--out", "-o", required=True, metavar="TOKENIZER_FILE",
                    help="where to write the tokenizer (corpustok JSON)")

    tk = _sub(
        sub, "tokenize", help="tokenize a corpus into Parquet token shards",
        description="Read documents, tokenize them in batches (one kernel call per batch) and "
                    "write zstd Parquet shards with one row per document (id, tokens, "
                    "n_tokens, n_bytes, replaced, source, row), a <shard>.manifest.json per "
                    "shard and manifest.json last. Rerunning with the same options keeps "
                    "complete shards; an interrupted run resumed gives byte-identical output.",
        epilog=BEAM_EPILOG)
    _add_read_options(tk)
    _add_tokenizer_options(tk)
    tk.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    tk.add_argument("--bos", metavar="ID|TOKEN",
                    help="id (or token string) put before every document")
    tk.add_argument("--eos", metavar="ID|TOKEN",
                    help="id (or token string) put after every document")
    tk.add_argument("--shard-mb", type=_positive(float), default=64,
                    help="target input text per shard in MB; a shard is a row range of one "
                         "input file (default: %(default)s)")
    tk.add_argument("--shard-rows", type=_positive(int), default=1 << 20,
                    help="most documents per shard (default: %(default)s)")
    tk.add_argument("--max-doc-mb", type=_positive(float), default=8,
                    help="documents longer than this are tokenized by streaming in 1 MB "
                         "slices (same ids, bounded memory) (default: %(default)s)")
    tk.add_argument("--rejects", action="store_true",
                    help="also write rejected rows with reasons to DIR/rejects/<shard>.parquet")
    tk.add_argument("--max-reject-fraction", type=_fraction, default=0.5, metavar="F",
                    help="exit 1 when more than this fraction of the rows read were rejected "
                         "(the shards are still written) (default: %(default)s)")
    mode = tk.add_mutually_exclusive_group()
    mode.add_argument("--overwrite", action="store_const", const="overwrite", dest="mode",
                      help="DIR holds another job (other inputs, tokenizer or options): remove "
                           "that job's files (each is listed) and run this one")
    mode.add_argument("--append", action="store_const", const="append", dest="mode",
                      help="add these inputs to the job in DIR (same tokenizer and options); "
                           "its earlier inputs are kept")
    tk.add_argument("--no-progress", action="store_true",
                    help="no progress line on stderr")

    for name, what in (("encode", "text to ids"), ("decode", "ids to text")):
        ed = _sub(sub, name, help=f"{what} with a tokenizer file",
                  description=f"Convert {what}: the arguments, or each line of standard input "
                              "when there are none. Ids are printed and read as "
                              "space-separated integers.")
        _add_tokenizer_options(ed)
        if name == "encode":
            ed.add_argument("--special", action="store_true",
                            help="match the tokenizer's special tokens written in the text "
                                 "(default: they are plain text)")
        ed.add_argument("items", nargs="*", metavar="TEXT" if name == "encode" else "ID",
                        help="texts to encode" if name == "encode" else "ids to decode")

    ex = _sub(sub, "export-tokenizer", help="write a utf8 BPE tokenizer as an HF tokenizer.json",
              description="Write the tokenizer as an HF tokenizer.json that gives the same ids "
                          "in `tokenizers` and `transformers` (PreTrainedTokenizerFast). Only "
                          "the utf8 substrate has an HF form: HF's ByteLevel maps UTF-8 bytes, "
                          "and the ube and utf16 symbols have no HF pre-tokenizer or decoder.")
    _add_tokenizer_options(ex)
    ex.add_argument("--out", "-o", required=True, metavar="FILE",
                    help="the tokenizer.json to write (an existing file is kept: exit 2)")

    mn = _sub(
        sub, "main", help="the demo job: train, tokenize and verify the embedded UDHR sample",
        description="Train a UBE BPE tokenizer on the embedded UDHR sample, tokenize the "
                    "sample to Parquet shards, check that every shard decodes back to its "
                    "documents and print the summary (what ./run_local.sh runs).")
    mn.add_argument("--out", "-o", default="out", metavar="DIR",
                    help="output folder (default: %(default)s)")
    mn.add_argument("--vocab-size", type=_positive(int), default=2048,
                    help="vocabulary size to train (default: %(default)s)")
    mn.add_argument("--workers", type=_positive(int), default=None,
                    help="local worker processes (default: one in-process worker)")

    from corpustok.pipeline.report import add_report_parser
    add_report_parser(sub)
    return parser


def _cmd_tokenize(args, beam_args):
    from corpustok.pipeline.run import summary, tokenize
    with _worker_log(args.workers) as log:
        result = tokenize(args.inputs, args.out, _tokenizer_spec(args),
                          id_column=None if args.no_id else args.id_column,
                          text_column=args.text_column, bos=args.bos, eos=args.eos,
                          shard_bytes=int(args.shard_mb * 1e6), shard_rows=args.shard_rows,
                          max_doc_bytes=int(args.max_doc_mb * 1e6),
                          write_rejects=args.rejects, beam_args=beam_args,
                          workers=args.workers, progress=not args.no_progress, mode=args.mode,
                          worker_log=log, on_remove=_say_removed)
    print(summary(result))
    print(f"  output     {files.shown(files.join(args.out, 'manifest.json'))}")
    code = EXIT_OK if result.ok else EXIT_INPUT_ERRORS
    if result.reject_fraction > args.max_reject_fraction:
        print(f"corpustok tokenize: {result.reject_fraction:.1%} of the rows read were "
              f"rejected, above --max-reject-fraction {args.max_reject_fraction:g}: check the "
              "input format and columns (reasons above; --rejects keeps the rows)",
              file=sys.stderr)
        code = EXIT_INPUT_ERRORS
    return code


_TEMPORARY = []  # files of this process to remove if a signal ends it


def _say_removed(path):
    print(f"corpustok tokenize: removed {files.shown(path)} (previous job, --overwrite)",
          file=sys.stderr, flush=True)


@contextmanager
def _worker_log(workers):
    """A temporary file for the output of local worker processes (None without any): kept and
    named when the job fails in a way the one-line messages do not explain (exit 3), removed
    otherwise."""
    if not workers or workers < 2:
        yield None
        return
    fd, path = tempfile.mkstemp(prefix="corpustok-workers-", suffix=".log")
    os.close(fd)
    _TEMPORARY.append(path)
    keep = False
    try:
        yield path
    except Exception as e:
        keep = not _explained(e) and os.path.getsize(path) > 0
        if keep:
            print(f"corpustok: the worker processes' output is in {path}", file=sys.stderr)
        raise
    finally:
        _TEMPORARY.remove(path)
        if not keep:
            os.remove(path)


def _entries(out_dir):
    from corpustok.pipeline.outdir import ENTRY_SUFFIX
    try:
        return {f for f in files.listdir(out_dir) if f.endswith(ENTRY_SUFFIX)}
    except OSError:
        return set()


def _on_interrupt(command, out_dir=None):
    """On SIGINT/SIGTERM: one line (for ``tokenize``, how many shards this run finished),
    then exit 130/143 at once. Every file is written atomically and the workers end with this
    process, so what is left is whole files and temporaries the next run deletes; a rerun of
    the same command resumes."""
    if out_dir is not None and files.is_remote(out_dir):
        out_dir = None  # no listing of an object store inside a signal handler
    before = _entries(out_dir) if out_dir is not None else set()

    def stop(signum, frame):
        name = signal.Signals(signum).name
        done = "" if out_dir is None else \
            f" after {len(_entries(out_dir) - before)} new shard(s)"
        # os.write, not sys.stderr: the handler may run while the main thread is writing.
        os.write(2, f"\ncorpustok {command}: interrupted ({name}){done}; rerun the same "
                    "command to resume\n".encode())
        for path in _TEMPORARY:
            try:
                os.remove(path)
            except OSError:
                pass
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _cmd_train(args, beam_args):
    from corpustok.ube import alphabet

    from corpustok.pipeline.tokenize import load_tokenizer
    from corpustok.pipeline.train import train
    info = train(args.inputs, args.out, vocab_size=args.vocab_size, substrate=args.substrate,
                 text_column=args.text_column, beam_args=beam_args,
                 workers=args.workers, special_tokens=args.special_tokens,
                 pretokenizer=args.pretokenizer)
    tok = load_tokenizer(args.out)
    print(f"corpustok: trained a {args.substrate} BPE tokenizer with {tok.vocab_size:,} ids "
          f"on {info['documents']:,} documents ({info['bytes'] / 1e6:,.2f} MB, "
          f"{info['chunks']:,} distinct chunks) in {info['seconds']:.1f} s -> {args.out}")
    base = len(tok.special_tokens) + len(alphabet(args.substrate))
    if tok.vocab_size != args.vocab_size:
        print(f"  asked for {args.vocab_size:,} ids: " + (
            f"the base symbols and special tokens alone take {base:,}"
            if args.vocab_size <= base else "the corpus has no more pairs worth merging"))
    for e in info["errors"]:
        print(f"  ERROR {e}")
    return EXIT_INPUT_ERRORS if info["errors"] else EXIT_OK


def _lines(items):
    return items if items else (line.rstrip("\n") for line in sys.stdin)


def _cmd_encode(args):
    from corpustok.pipeline.tokenize import load_tokenizer
    tok = load_tokenizer(_tokenizer_spec(args))
    encode = tok.encode
    if args.special:
        if not tok.special_tokens:
            raise ValueError("encode --special: this tokenizer has no special tokens")
        if hasattr(tok, "recognize_special_tokens"):  # WordPiece builds its matcher in
            tok = type(tok).from_dict({**tok.to_dict(), "recognize_special_tokens": True})
            encode = tok.encode
        else:
            def encode(text):
                return tok.encode(text, recognize_special=True)
    for text in _lines(args.items):
        print(" ".join(map(str, encode(text))))
    return EXIT_OK


def _cmd_decode(args):
    from corpustok.pipeline.tokenize import load_tokenizer
    tok = load_tokenizer(_tokenizer_spec(args))
    groups = [args.items] if args.items else (line.split() for line in sys.stdin)
    for group in groups:
        try:
            ids = [int(x) for x in group]
        except ValueError as e:
            raise ValueError(f"decode: ids must be integers ({e})") from None
        print(tok.decode(ids))
    return EXIT_OK


def _cmd_export_tokenizer(args):
    from corpustok.pipeline.tokenize import load_tokenizer
    if files.exists(args.out):
        raise ValueError(f"export-tokenizer: {args.out} exists; remove it or choose another "
                         "--out (corpustok does not overwrite files it did not write)")
    tok = load_tokenizer(_tokenizer_spec(args))
    if not hasattr(tok, "to_hf"):
        raise ValueError("export-tokenizer: only byte-level BPE tokenizers are exported (a "
                         "WordPiece file is already HF's or a vocab.txt)")
    doc = json.dumps(tok.to_hf(), ensure_ascii=False).encode("utf-8")
    files.write_atomic(args.out, lambda f: f.write(doc))
    print(f"corpustok: wrote {args.out} (HF tokenizer.json, {tok.vocab_size:,} ids)")
    return EXIT_OK


def _cmd_main(args):
    from corpustok.pipeline.main_job import run_main
    return run_main(args.out, vocab_size=args.vocab_size, workers=args.workers)


class _QuietOptionalDeps(logging.Filter):
    """Drops Beam's import-time notice that its optional GCP clients are missing: local runs
    do not need them, and the line reads like an error to a user."""

    def filter(self, record):
        return "apitools not found" not in record.getMessage()


def main(argv=None, handle_signals=False):
    """Entry point of the ``corpustok`` command; returns the exit code. ``handle_signals``:
    SIGINT and SIGTERM end the process with one line (the console script; not for callers
    that run it inside their own process)."""
    keep_freed_memory()  # before anything loads pyarrow: see corpustok.pipeline.workers
    logging.getLogger().addFilter(_QuietOptionalDeps())
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command not in ("tokenize", "train"):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if handle_signals:
        _on_interrupt(args.command, args.out if args.command == "tokenize" else None)
    try:
        if args.command == "tokenize":
            return _cmd_tokenize(args, extra)
        if args.command == "train":
            return _cmd_train(args, extra)
        if args.command == "encode":
            return _cmd_encode(args)
        if args.command == "decode":
            return _cmd_decode(args)
        if args.command == "export-tokenizer":
            return _cmd_export_tokenizer(args)
        if args.command == "report":
            from corpustok.pipeline.report import run_report
            return run_report(args)
        return _cmd_main(args)
    except Exception as e:  # noqa: BLE001 - the one place that maps errors to exit codes
        return _exit_code(args.command, e)


def _explained(e):
    """Whether ``e`` gets a one-line message (exit 2 or 4) rather than a traceback."""
    from corpustok.pipeline.outdir import not_writable
    return not_writable(e) is not None or isinstance(e, (ValueError, TypeError, OSError))


def _exit_code(command, e):
    """Say what went wrong in one line (a traceback for our own failures) and return the
    exit code for ``e``. Only :class:`~outdir.OutputNotWritable` (raised for the output
    folder) and full or read-only file systems give 4; any other OSError is a bad argument
    or input (2)."""
    from corpustok.pipeline.outdir import not_writable
    full = not_writable(e)
    if full is not None:
        where = f" ({files.shown(full.filename)})" if full.filename else ""
        print(f"corpustok {command}: error: cannot write the output{where}: "
              f"{full.strerror or full}; free space or choose a writable --out, then rerun "
              "the same command (finished shards are kept)", file=sys.stderr)
        return EXIT_NOT_WRITABLE
    if isinstance(e, (ValueError, TypeError, OSError)):
        print(f"corpustok {command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    traceback.print_exception(e)
    print(f"corpustok {command}: failed (traceback above)", file=sys.stderr)
    return EXIT_FAILED


def run():
    """The console script: :func:`main`, then ``gc.freeze()`` as the process is about to end,
    so that Python's exit skips walking every Beam and Numba object once more (0.1-0.25 s)."""
    code = main(handle_signals=True)
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(run())
