"""The ``corpustok`` command line: train, tokenize, encode, decode, main, report.

Exit codes (decided here, by exception type): 0 success; 1 the job completed but some input
could not be read, or more rows were rejected than ``--max-reject-fraction`` allows (named in
the summary and in manifest.json); 2 bad arguments (an option given twice included) or
input, a tokenizer file that cannot be used, an output folder in use or holding another job (one line on stderr); 3 the job failed (a
Beam worker or an unexpected error: traceback on stderr); 4 the output cannot be written
(read-only, no permission, disk or quota full: one line); 130/143 interrupted by SIGINT/SIGTERM
(one line; rerunning the same command resumes). Beam is imported only by the commands that run
a pipeline, so ``encode``/``decode``/``--help`` start fast. The parser is in ``cli_args``.
"""
import gc
import io
import json
import logging
import os
import signal
import sys
import threading
import traceback
from contextlib import contextmanager

from corpustok.pipeline import cleanup, files
from corpustok.pipeline.cli_args import GIVEN, build_parser
from corpustok.pipeline.workers import (available_cores, default_workers, keep_freed_memory,
                                       quiet_optional_deps)

EXIT_OK, EXIT_INPUT_ERRORS, EXIT_USAGE, EXIT_FAILED, EXIT_NOT_WRITABLE = 0, 1, 2, 3, 4

def _tokenizer_spec(args):
    """What the pipeline loads: the path, or a factory when options or a folder need one."""
    from corpustok.pipeline.tokenize import TokenizerFiles
    if args.merges or args.pretokenizer or args.lowercase is not None or \
            os.path.isdir(args.tokenizer):
        return TokenizerFiles(args.tokenizer, args.merges, args.pretokenizer, args.lowercase)
    return args.tokenizer


def _say_casing(command, args, tok):
    """One line on stderr saying whether a WordPiece lower-cases the text, and why."""
    from corpustok.wordpiece import WordPiece, cased_token
    if not isinstance(tok, WordPiece):
        return
    lower = tok.options["lowercase"]
    example = cased_token(tok.to_dict()["vocab"])
    if args.lowercase is not None:
        why = "--lowercase" if lower else "--no-lowercase"
    elif not lower and example is not None:
        why = (f"the vocabulary holds upper-case tokens such as {example!r}; --lowercase to "
               "lower-case the text")
    elif lower and example is None:
        why = "no token of the vocabulary has an upper-case letter; --no-lowercase to keep it"
    else:
        why = "as the tokenizer file sets"
    print(f"corpustok {command}: WordPiece {'lower-cases' if lower else 'keeps the case of'} "
          f"the text ({why})", file=sys.stderr, flush=True)


def _choose_workers(command, args, shard_bytes):
    """``--workers`` as given (a warning above the cores), or one per core but no more than
    the shards the inputs give."""
    from corpustok.pipeline.inputs import STDIN, expand_inputs, parse_input
    if args.workers is None:
        patterns = [parse_input(a)[0] for a in args.inputs]
        paths, _ = expand_inputs([p for p in patterns if p != STDIN])
        sizes = [files.size(p) for p in paths] + [shard_bytes] * patterns.count(STDIN)
        return default_workers(sizes, shard_bytes, available_cores())
    _warn_workers(command, args.workers)
    return args.workers


def _warn_workers(command, workers):
    cores = available_cores()
    if workers and workers > cores:
        print(f"corpustok {command}: warning: --workers {workers} is more than the {cores} "
              f"core(s) this process may use: the workers take turns on them and each adds "
              f"start-up and memory; --workers {cores} is the most that helps",
              file=sys.stderr, flush=True)


def _cmd_tokenize(args, beam_args):
    from corpustok.pipeline.run import summary, tokenize
    shard_bytes = int(args.shard_mb * 1e6)
    workers = _choose_workers("tokenize", args, shard_bytes)
    with _beam_log(args.verbose), _worker_log(workers, args.local_mode, args.verbose) as log:
        result = tokenize(args.inputs, args.out, _tokenizer_spec(args),
                          id_column=None if args.no_id else args.id_column,
                          text_column=args.text_column, bos=args.bos, eos=args.eos,
                          shard_bytes=shard_bytes, shard_rows=args.shard_rows,
                          max_doc_bytes=int(args.max_doc_mb * 1e6),
                          write_rejects=args.rejects, txt_docs=args.txt_docs,
                          beam_args=_with_dask_address(args, beam_args),
                          workers=workers, local_mode=args.local_mode,
                          progress=not args.no_progress, mode=args.mode,
                          worker_log=log, on_remove=_say_removed,
                          on_tokenizer=lambda tok: _say_casing("tokenize", args, tok),
                          max_reject_fraction=args.max_reject_fraction,
                          stdin_format=args.stdin_format, id_type=args.id_type,
                          keep_columns=args.keep_columns)
    print(summary(result))
    from corpustok.pipeline.outdir import RUN_MANIFEST
    print(f"  output     {files.shown(files.join(args.out, RUN_MANIFEST))}")
    code = EXIT_OK if result.ok else EXIT_INPUT_ERRORS
    if args.export and result.ok:
        _export(args.out, args.export, args.export_out or _export_prefix(args.out, args.export))
    elif args.export:
        print(f"corpustok tokenize: not exported ({result.manifest['status']}): export a "
              "COMPLETED run", file=sys.stderr)
    if result.reject_fraction > args.max_reject_fraction:
        print(f"corpustok tokenize: {result.reject_fraction:.1%} of the rows read were "
              f"rejected, above --max-reject-fraction {args.max_reject_fraction:g}: check the "
              "input format and columns (reasons above; --rejects keeps the rows)",
              file=sys.stderr)
        code = EXIT_INPUT_ERRORS
    return code


def _with_dask_address(args, beam_args):
    """The Beam arguments with ``--dask-address`` as Beam's DaskRunner names it."""
    if args.dask_address is None:
        return beam_args
    return [*beam_args, f"--dask_client_address={args.dask_address}"]


def _export_prefix(out, fmt):
    """``--export``'s default prefix: beside the shard folder, named after it."""
    if files.is_remote(out):
        raise ValueError("--export of a remote --out needs a local --export-out PREFIX")
    return os.path.normpath(os.path.abspath(out)) + "." + fmt


def _export(folder, fmt, prefix, seed=None, vocab_size=None):
    from corpustok.pipeline.export import export
    m = export(folder, fmt, prefix, seed=seed, vocab_size=vocab_size)
    print(f"corpustok: exported {m['documents']:,} documents, {m['tokens']:,} tokens "
          f"({m['dtype']}) as {fmt}: " + ", ".join(prefix + f[len(os.path.basename(prefix)):]
                                                   for f in m["files"]))
    if m["config"].get("bos") is None and m["config"].get("eos") is None and fmt != "megatron":
        print(f"corpustok: warning: the job put no --bos or --eos around documents: in the "
              f"{fmt} stream they touch, and only the index tells them apart",
              file=sys.stderr)
    return EXIT_OK


def _say_removed(path):
    print(f"corpustok tokenize: removed {files.shown(path)} (previous job, --overwrite)",
          file=sys.stderr, flush=True)


BEAM_LOGGERS = ("apache_beam", "distributed")  # the runners' loggers: tracebacks of workers


@contextmanager
def _beam_log(verbose=False):
    """Beam's and Dask's log records (a worker's failure is logged with its traceback, then
    raised again, which the one-line messages explain) go to a temporary file unless
    ``verbose``: kept and named when the job fails in a way those messages do not explain
    (exit 3), removed otherwise."""
    if verbose:
        yield
        return
    path = cleanup.make("corpustok-beam-", ".log")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    loggers = [logging.getLogger(name) for name in BEAM_LOGGERS]
    saved = [lg.propagate for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
    stderr = sys.stderr
    sys.stderr = _WorkerTracebacks(stderr, handler.stream)
    keep = False
    try:
        yield
    except Exception as e:
        handler.flush()
        keep = not _explained(e) and os.path.getsize(path) > 0
        if keep:
            print(f"corpustok: Beam's log of the failed job is in {path}", file=stderr)
        raise
    finally:
        sys.stderr = stderr
        for lg, propagate in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.propagate = propagate
        handler.close()
        cleanup.release(path, keep)


class _WorkerTracebacks(io.TextIOBase):
    """stderr, but for the tracebacks Beam's worker threads print there themselves
    (``sdk_worker`` prints a failed bundle's before raising it to the driver): those go to
    ``log``, with the line break printed after them."""

    def __init__(self, stream, log):
        self._stream = stream
        self._log = log
        self._diverted = threading.local()

    def write(self, text):
        worker = threading.current_thread() is not threading.main_thread()
        if worker and (text.startswith("Traceback (most recent call last)") or
                       (text == "\n" and getattr(self._diverted, "last", False))):
            self._diverted.last = text != "\n"
            return self._log.write(text)
        self._diverted.last = False
        return self._stream.write(text)

    def flush(self):
        self._stream.flush()

    def isatty(self):
        return self._stream.isatty()

    def fileno(self):
        return self._stream.fileno()


@contextmanager
def _worker_log(workers, local_mode, verbose=False):
    """A temporary file for the output of local worker processes (None without any, or with
    ``--verbose``: their output then goes to stderr): kept and named when the job fails in a
    way the one-line messages do not explain (exit 3), removed otherwise."""
    if not workers or workers < 2 or local_mode != "processes" or verbose:
        yield None
        return
    path = cleanup.make("corpustok-workers-", ".log")
    keep = False
    try:
        yield path
    except Exception as e:
        keep = not _explained(e) and os.path.getsize(path) > 0
        if keep:
            print(f"corpustok: the worker processes' output is in {path}", file=sys.stderr)
        raise
    finally:
        cleanup.release(path, keep)


def _entries(out_dir):
    from corpustok.pipeline.outdir import entry_names
    try:
        return entry_names(out_dir)
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
        cleanup.remove_registered()  # the progress channel, the worker log
        os._exit(128 + signum)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)


def _cmd_train(args, beam_args):
    from corpustok.ube import alphabet

    from corpustok.pipeline.tokenize import COMPILE_NOTICE_AFTER, load_tokenizer
    from corpustok.pipeline.train import train
    from corpustok.pipeline.read import DEFAULT_SHARD_BYTES
    workers = _choose_workers("train", args, DEFAULT_SHARD_BYTES)
    with _beam_log(args.verbose), _worker_log(workers, args.local_mode, args.verbose) as log:
        info = train(args.inputs, args.out, vocab_size=args.vocab_size,
                     substrate=args.substrate, text_column=args.text_column,
                     beam_args=_with_dask_address(args, beam_args), workers=workers,
                     local_mode=args.local_mode,
                     special_tokens=args.special_tokens,
                     pretokenizer=args.pretokenizer, worker_log=log, txt_docs=args.txt_docs,
                     overwrite=args.overwrite, progress=not args.no_progress,
                     stdin_format=args.stdin_format)
    tok = load_tokenizer(args.out)
    print(f"corpustok: trained a {args.substrate} BPE tokenizer with {tok.vocab_size:,} ids "
          f"on {info['documents']:,} documents ({info['bytes'] / 1e6:,.2f} MB, "
          f"{info['chunks']:,} distinct chunks) in {info['seconds']:.1f} s" +
          (f" ({info['compiling']:.1f} s of it compiling the kernels, first run only)"
           if info["compiling"] > COMPILE_NOTICE_AFTER else "") + f" -> {args.out}")
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
    _say_casing("encode", args, tok)
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


def _cmd_verify(args):
    from corpustok.pipeline.export import JOURNAL_SUFFIX, MANIFEST_SUFFIX
    from corpustok.pipeline.verify import check_export, check_folder, verify_shards
    path = args.folder
    if not files.is_dir(path) and any(files.exists(path + s)
                                      for s in (MANIFEST_SUFFIX, JOURNAL_SUFFIX)):
        v = check_export(path)
        for problem in v.problems:
            print(f"  PROBLEM {problem}")
        print(f"corpustok verify: export {files.shown(path)}: {v.documents:,} documents: " +
              ("OK" if v.ok else f"{len(v.problems)} problem(s)"))
        return EXIT_OK if v.ok else EXIT_INPUT_ERRORS
    v = check_folder(path)
    if args.inputs and v.ok:
        tok = None
        if args.tokenizer is not None:
            from corpustok.pipeline.tokenize import load_tokenizer
            tok = load_tokenizer(args.tokenizer)
        v = verify_shards(args.folder, tok, decode=tok is not None)
    for problem in v.problems:
        print(f"  PROBLEM {problem}")
    print(f"corpustok verify: {files.shown(args.folder)}: {v.shards} shard(s), "
          f"{v.documents:,} documents: " + ("OK" if v.ok else f"{len(v.problems)} problem(s)"))
    return EXIT_OK if v.ok else EXIT_INPUT_ERRORS


def _cmd_main(args):
    from corpustok.pipeline.main_job import run_main
    _warn_workers("main", args.workers)
    with _beam_log(args.verbose), \
            _worker_log(args.workers, args.local_mode, args.verbose) as log:
        return run_main(args.out, vocab_size=args.vocab_size, workers=args.workers,
                        local_mode=args.local_mode, worker_log=log)


def main(argv=None, handle_signals=False):
    """Entry point of the ``corpustok`` command; returns the exit code. ``handle_signals``:
    SIGINT and SIGTERM end the process with one line (the console script; not for callers
    that run it inside their own process)."""
    keep_freed_memory()  # before anything loads pyarrow: see corpustok.pipeline.workers
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    vars(args).pop(GIVEN, None)
    if getattr(args, "verbose", False):
        logging.basicConfig(level=logging.INFO)
    else:
        quiet_optional_deps()
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
        if args.command == "export":
            return _export(args.folder, args.format, args.out, args.seed, args.vocab_size)
        if args.command == "verify":
            return _cmd_verify(args)
        if args.command == "stats":
            from corpustok.pipeline.stats import folder_stats
            print(folder_stats(args.folder))
            return EXIT_OK
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
