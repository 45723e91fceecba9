"""What each ``corpustok`` subcommand does: ``tokenize``, ``train``, ``encode``, ``decode``,
``export-tokenizer``, ``export``, ``verify``, ``stats``, ``report`` and ``main``, one function
each (``args.py`` sets it as its subparser's ``func``), returning the exit code.

The train and main jobs are imported inside the command that runs them: they import Beam,
which ``encode``, ``decode`` and ``--help`` start without (the tokenize job imports it when it
runs).
"""
import json
import os
import signal
import sys
import traceback

from corpustok.substrate import alphabet
from corpustok.wordpiece.tokenizer import WordPiece, cased_token

from corpustok.pipeline import files
from corpustok.pipeline.cli.logs import beam_log, worker_log
from corpustok.pipeline.encode import COMPILE_NOTICE_AFTER, TokenizerFiles, load_tokenizer
from corpustok.pipeline.files import cleanup
from corpustok.pipeline.jobs import tokenize as tokenize_job
from corpustok.pipeline.output import stats
from corpustok.pipeline.output.export import JOURNAL_SUFFIX, MANIFEST_SUFFIX, export
from corpustok.pipeline.output.layout import RUN_MANIFEST, entry_names, not_writable
from corpustok.pipeline.output.verify import check_export, check_folder, verify_shards
from corpustok.pipeline.read.inputs import STDIN, expand_inputs, parse_input
from corpustok.pipeline.read.spec import DEFAULT_SHARD_BYTES
from corpustok.pipeline.report import job as report_job
from corpustok.pipeline.runtime.startup import started
from corpustok.pipeline.runtime.workers import available_cores, default_workers

EXIT_OK, EXIT_INPUT_ERRORS, EXIT_USAGE, EXIT_FAILED, EXIT_NOT_WRITABLE = 0, 1, 2, 3, 4


def _tokenizer_spec(args):
    """What the pipeline loads: the path, or a factory when options or a folder need one."""
    if args.merges or args.pretokenizer or args.lowercase is not None or \
            os.path.isdir(args.tokenizer):
        return TokenizerFiles(args.tokenizer, args.merges, args.pretokenizer, args.lowercase)
    return args.tokenizer


def _tokenizer_loaded(args, tok):
    """A tokenize job has loaded its tokenizer (after Beam's import): its start-up is over."""
    started()
    _say_casing("tokenize", args, tok)


def _say_casing(command, args, tok):
    """One line on stderr saying whether a WordPiece lower-cases the text, and why."""
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


def cmd_tokenize(args, beam_args=()):
    shard_bytes = int(args.shard_mb * 1e6)
    workers = _choose_workers("tokenize", args, shard_bytes)
    with beam_log(args.verbose), worker_log(workers, args.local_mode, args.verbose) as log:
        result = tokenize_job.tokenize(args.inputs, args.out, _tokenizer_spec(args),
                          id_column=None if args.no_id else args.id_column,
                          text_column=args.text_column, bos=args.bos, eos=args.eos,
                          shard_bytes=shard_bytes, shard_rows=args.shard_rows,
                          max_doc_bytes=int(args.max_doc_mb * 1e6),
                          write_rejects=args.rejects, txt_docs=args.txt_docs,
                          beam_args=_with_dask_address(args, beam_args),
                          workers=workers, local_mode=args.local_mode,
                          progress=not args.no_progress, mode=args.mode,
                          worker_log=log, on_remove=_say_removed,
                          on_tokenizer=lambda tok: _tokenizer_loaded(args, tok),
                          max_reject_fraction=args.max_reject_fraction,
                          stdin_format=args.stdin_format, id_type=args.id_type,
                          keep_columns=args.keep_columns)
    print(tokenize_job.summary(result))
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


def cmd_train(args, beam_args=()):
    from corpustok.pipeline.jobs.train import train  # here: it imports Beam
    workers = _choose_workers("train", args, DEFAULT_SHARD_BYTES)
    with beam_log(args.verbose), worker_log(workers, args.local_mode, args.verbose) as log:
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


def cmd_encode(args, beam_args=()):
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


def cmd_decode(args, beam_args=()):
    tok = load_tokenizer(_tokenizer_spec(args))
    groups = [args.items] if args.items else (line.split() for line in sys.stdin)
    for group in groups:
        try:
            ids = [int(x) for x in group]
        except ValueError as e:
            raise ValueError(f"decode: ids must be integers ({e})") from None
        print(tok.decode(ids))
    return EXIT_OK


def cmd_export_tokenizer(args, beam_args=()):
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


def cmd_export(args, beam_args=()):
    return _export(args.folder, args.format, args.out, args.seed, args.vocab_size)


def cmd_verify(args, beam_args=()):
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
            tok = load_tokenizer(args.tokenizer)
        v = verify_shards(args.folder, tok, decode=tok is not None)
    for problem in v.problems:
        print(f"  PROBLEM {problem}")
    print(f"corpustok verify: {files.shown(args.folder)}: {v.shards} shard(s), "
          f"{v.documents:,} documents: " + ("OK" if v.ok else f"{len(v.problems)} problem(s)"))
    return EXIT_OK if v.ok else EXIT_INPUT_ERRORS


def cmd_main(args, beam_args=()):
    from corpustok.pipeline.jobs.main import run_main  # here: it imports Beam
    _warn_workers("main", args.workers)
    with beam_log(args.verbose), \
            worker_log(args.workers, args.local_mode, args.verbose) as log:
        return run_main(args.out, vocab_size=args.vocab_size, workers=args.workers,
                        local_mode=args.local_mode, worker_log=log)


def cmd_stats(args, beam_args=()):
    print(stats.folder_stats(args.folder))
    return EXIT_OK


def cmd_report(args, beam_args=()):
    return report_job.run_report(args)


def exit_code(command, e):
    """Say what went wrong in one line (a traceback for our own failures) and return the
    exit code for ``e``. Only :class:`~output.layout.OutputNotWritable` (raised for the
    output folder) and full or read-only file systems give 4; any other OSError is a bad
    argument or input (2)."""
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


def _entries(out_dir):
    try:
        return entry_names(out_dir)
    except OSError:
        return set()


def on_interrupt(command, out_dir=None):
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
