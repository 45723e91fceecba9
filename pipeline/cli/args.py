"""The ``corpustok`` argument parser: subcommands, options, their help.

Every option that takes one value may be given once: argparse would keep the last of two
(``--tokenizer a --tokenizer b`` ran with ``b``), so a repeat is an error (exit 2) naming
both. Options that collect (``--special-token``, ``report --tokenizer``) repeat freely.
"""
import argparse
import math
import textwrap

import corpustok
from corpustok.pipeline.cli import commands
from corpustok.pipeline.config import EXPORT_FORMATS
from corpustok.pipeline.read.spec import TXT_DOCS
from corpustok.pipeline.report.job import add_report_parser
from corpustok.pipeline.runtime.workers import DEFAULT_LOCAL_MODE, LOCAL_MODES

GIVEN = "_given"  # namespace attribute: the single-valued options met so far, removed after

BEAM_EPILOG = """\
Any option not listed above is passed to Apache Beam unchanged. Without --runner the job runs
locally on the FnApiRunner (Beam's DirectRunner would first try to download the Prism runner);
--runner dask runs it on Dask (pip install 'corpustok[dask]'; see --dask-address).
Examples: --direct_running_mode multi_processing --direct_num_workers 4 (what --workers 4
does); --runner DataflowRunner --project P --region R --temp_location gs://B/tmp; --runner
FlinkRunner --flink_master HOST:8081 --environment_type LOOPBACK. Inputs, --out and
--tokenizer may be local paths or gs://, s3://, hdfs://, azfs:// paths (install the matching
extra, e.g. apache-beam[gcp]); on a cluster, local paths must be a mount every worker shares."""


# Each subcommand's function: its subparser's ``func`` default, which ``entry.main`` calls.
COMMANDS = {"train": commands.cmd_train, "tokenize": commands.cmd_tokenize,
            "export": commands.cmd_export, "verify": commands.cmd_verify,
            "stats": commands.cmd_stats, "encode": commands.cmd_encode,
            "decode": commands.cmd_decode, "export-tokenizer": commands.cmd_export_tokenizer,
            "main": commands.cmd_main, "report": commands.cmd_report}
BEAM_COMMANDS = ("tokenize", "train")  # the commands that pass unknown options to Beam


def _sub(sub, name, help, description, epilog=None):
    """A subcommand whose description is wrapped here and whose epilog keeps its lines; its
    defaults: ``func``, the function of ``commands`` that runs it, and ``beam_args``, whether
    it takes options it does not know (Beam's)."""
    p = sub.add_parser(name, help=help, description=textwrap.fill(description, 88),
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=COMMANDS[name], beam_args=name in BEAM_COMMANDS)
    return p


def _add_read_options(p, ids=True):
    mapping = "id=COL,text=COL" if ids else "text=COL"
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="Parquet (.parquet), JSONL (.jsonl) or text (.txt) files or globs, "
                        "JSONL and text also .gz, .xz or .zst (quote globs; ** matches "
                        "folders), folders (every such file below one, but .json), or - for "
                        f"standard input (--stdin-format); INPUT:{mapping} reads that input "
                        "with its own columns or fields" +
                        (" (no-id: it has no ids)" if ids else ""))
    p.add_argument("--text-column", default="text",
                   help="column (Parquet) or field (JSONL) holding the text of inputs without "
                        "a mapping; string or binary (binary is read as UTF-8, invalid bytes "
                        "become U+FFFD and are counted) (default: %(default)s)")
    p.add_argument("--stdin-format", choices=("jsonl", "txt"), default="jsonl",
                   help="the format of the input - (standard input), read whole into a "
                        "temporary file first (default: %(default)s)")
    p.add_argument("--txt-docs", choices=TXT_DOCS, default="line",
                   help="a document of a .txt input: each non-blank line, or each paragraph "
                        "(lines up to a blank line); text files have no ids (null, rows known "
                        "by source file and line) (default: %(default)s)")
    if ids:
        p.add_argument("--id-column", default="id",
                       help="column or field holding the document id of inputs without a "
                            "mapping, string or integer (default: %(default)s)")
        p.add_argument("--id-type", choices=("auto", "string", "int64"), default="auto",
                       help="the type of the shards' id column: int64 when every input's "
                            "first ids are integers (auto), or as given; in a job of integer "
                            "ids an input with an id that is not one fails (default: "
                            "%(default)s)")
        p.add_argument("--no-id", action="store_true",
                       help="the inputs have no id column or field (one input: INPUT:no-id): "
                            "shard rows get a null id and are known by their source file and "
                            "row")
    p.add_argument("--workers", type=_positive(int), default=None,
                   help="local workers, threads or processes (--local-mode); default: the "
                        "cores this process may use, but no more than the shards the inputs "
                        "give (one shard: one in-process worker); a warning above the cores")
    _add_local_mode(p)
    p.add_argument("--dask-address", metavar="tcp://HOST:PORT", default=None,
                   help="with --runner dask: the Dask scheduler whose workers run the job "
                        "(default: a local cluster of --workers processes, one thread each, "
                        "started for the job and closed after it)")
    _add_verbose(p)


def _add_local_mode(p):
    p.add_argument("--local-mode", choices=tuple(LOCAL_MODES), default=DEFAULT_LOCAL_MODE,
                   help="how more than one local worker of the default runner (the "
                        "FnApiRunner; Dask's are processes) runs: as threads of this process "
                        "(Beam's multi_threading; the kernels release the GIL: as fast or "
                        "faster end to end, and 2 s quicker to start) or as worker processes "
                        "(multi_processing: a crash stays in its process) (default: "
                        "%(default)s)")


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
    p.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                   help="lower-case the text before a WordPiece vocab.txt (a vocab.txt does "
                        "not say; default: detected, cased when the vocabulary holds a token "
                        "with an upper-case letter; the choice is printed and is part of the "
                        "job); other tokenizer files set their own casing")


def _add_verbose(p):
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show Beam's log lines and the worker processes' output (by default "
                        "hidden: start-up chatter that breaks the progress line; kept in a "
                        "file named when a job fails)")


def _fraction(text):
    """argparse type: a number from 0 to 1."""
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def _positive(kind):
    """argparse type: a finite number of ``kind`` above zero."""
    def parse(text):
        value = kind(text)
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def _megabytes(least, most):
    """argparse type: a finite number of MB from ``least`` to ``most``."""
    def parse(text):
        value = float(text)
        if not math.isfinite(value) or not least <= value <= most:
            raise argparse.ArgumentTypeError(f"must be a number of MB from {least:g} to "
                                             f"{most:g}, got {text}")
        return value
    parse.__name__ = "float"
    return parse


def build_parser():
    """The whole parser; single-valued options refuse a second occurrence (see above)."""
    parser = _Parser(
        prog="corpustok",
        description="Tokenize pretraining corpora into Parquet token shards with Numba "
                    "kernels (Fast WordPiece, UBE byte-level BPE) in an Apache Beam pipeline.")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {corpustok.__version__}",
                        help="print the version and exit")
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
                    help="where to write the tokenizer (corpustok JSON); an existing file is "
                         "kept (exit 2) unless --overwrite")
    tr.add_argument("--no-progress", action="store_true",
                    help="no progress line on stderr")
    tr.add_argument("--overwrite", action="store_true",
                    help="replace an existing --out file (shard folders name the tokenizer "
                         "they were made with by its sha256: replacing it orphans them)")

    tk = _sub(
        sub, "tokenize", help="tokenize a corpus into Parquet token shards",
        description="Read documents, tokenize them in batches (one kernel call per batch) and "
                    "write zstd Parquet shards with one row per document (id, tokens, "
                    "n_tokens, n_bytes, replaced, source, row); the manifests (an entry per "
                    "shard, the run manifest last) go to DIR/.corpustok/. Rerunning with the "
                    "same options keeps complete shards; an interrupted run resumed gives "
                    "byte-identical output.",
        epilog=BEAM_EPILOG)
    _add_read_options(tk)
    _add_tokenizer_options(tk)
    tk.add_argument("--out", "-o", required=True, metavar="DIR", help="output folder")
    tk.add_argument("--keep-column", action="append", default=[], metavar="NAME[:TYPE]",
                    dest="keep_columns",
                    help="a column (Parquet) or field (JSONL) to carry into the shards beside "
                         "the tokens, e.g. lang, url, quality:float64; a.b is field b of "
                         "struct/object a; TYPE string (default: JSON values as written), "
                         "int64, float64 or bool; missing: null; repeat for more")
    tk.add_argument("--bos", metavar="ID|TOKEN",
                    help="id (or token string) put before every document")
    tk.add_argument("--eos", metavar="ID|TOKEN",
                    help="id (or token string) put after every document")
    tk.add_argument("--shard-mb", type=_megabytes(1e-6, 1e6), default=64,
                    help="target input text per shard in MB; a shard is a row range of one "
                         "input file (default: %(default)s)")
    tk.add_argument("--shard-rows", type=_positive(int), default=1 << 20,
                    help="most documents per shard (default: %(default)s)")
    tk.add_argument("--max-doc-mb", type=_megabytes(1e-6, 1e6), default=8,
                    help="documents longer than this are tokenized by streaming in 1 MB "
                         "slices (same ids, bounded memory) (default: %(default)s)")
    tk.add_argument("--rejects", action="store_true",
                    help="also write rejected rows with reasons to "
                         "DIR/.corpustok/rejects/<shard>.parquet")
    tk.add_argument("--max-reject-fraction", type=_fraction, default=0.5, metavar="F",
                    help="exit 1 when more than this fraction of the rows read were rejected "
                         "(the shards are still written) (default: %(default)s)")
    mode = tk.add_mutually_exclusive_group()  # a group's add_argument is not the parser's
    _add_single(mode, "--overwrite", action="store_const", const="overwrite", dest="mode",
                help="DIR holds another job (other inputs, tokenizer or options): remove "
                     "that job's files (each is listed) and run this one")
    _add_single(mode, "--append", action="store_const", const="append", dest="mode",
                help="add these inputs to the job in DIR (same tokenizer and options); "
                     "its earlier inputs are kept")
    tk.add_argument("--no-progress", action="store_true",
                    help="no progress line on stderr")
    tk.add_argument("--export", choices=EXPORT_FORMATS, metavar="FORMAT",
                    help="when the run is COMPLETED, also export the shards as "
                         f"{'|'.join(EXPORT_FORMATS)} (see `corpustok export --help`)")
    tk.add_argument("--export-out", metavar="PREFIX",
                    help="where --export writes (default: beside DIR, DIR.FORMAT, e.g. "
                         "shards.megatron.bin and .idx; a local path)")

    xp = _sub(sub, "export", help="export a shard folder for Megatron, datatrove or OLMo",
              description="Write the documents of a COMPLETED shard folder as a flat token "
                          "stream with document boundaries: megatron (PREFIX.bin + .idx, "
                          "Megatron-Core's indexed dataset, one sequence a document; uint16 "
                          "when the tokenizer has fewer than 65,500 ids, else int32), "
                          "datatrove (PREFIX.ds + .ds.index + .ds.metadata; uint16 up to "
                          "65,536 ids, else uint32) or numpy (dolma's PREFIX.npy, a raw memmap "
                          "without a header: np.memmap, not np.load; + PREFIX.csv.gz of "
                          "start,end,id,source,row). Each shard's size and sha256 are checked "
                          "against the run manifest (a changed shard is refused, exit 2); the "
                          "folder is held against tokenize runs meanwhile. Files are published "
                          "all together or not at all, PREFIX.export.json last; an export "
                          "killed after its commit point is completed, and its temporaries "
                          "removed, by the next export to PREFIX (or `corpustok verify "
                          "PREFIX`).")
    xp.add_argument("folder", metavar="SHARDS_DIR", help="output folder of a tokenize run")
    xp.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                    help="the layout to write (see above)")
    xp.add_argument("--out", "-o", required=True, metavar="PREFIX",
                    help="path prefix of the files to write (local, outside any shard "
                         "folder; files of an earlier export of the same layout are replaced, "
                         "any other file is kept: exit 2)")
    xp.add_argument("--seed", type=int, default=None,
                    help="shuffle the documents (uniformly, in bounded memory); the same seed "
                         "gives the same order (default: the manifest's order)")
    xp.add_argument("--vocab-size", type=_positive(int), default=None,
                    help="the vocabulary the id type is chosen for (default: the "
                         "tokenizer's, from the run manifest); ids must be below it")

    vf = _sub(sub, "verify", help="check a shard folder or an export against its records",
              description="Check a tokenize output folder while holding it (no run may change "
                          "it meanwhile): a COMPLETED run manifest; every shard it lists in "
                          "data/ with the size and sha256 its entry records (a damaged or "
                          "swapped shard is named); data/ holding those shards and nothing "
                          "else. With --inputs, also read the inputs the manifest names: every "
                          "row in exactly one shard or counted as a reject, and (with "
                          "--tokenizer, a lossless byte-level BPE) every shard decoding back "
                          "to its documents. Given an export's PREFIX instead: an export killed "
                          "after its commit point is completed, then every file is checked "
                          "against the size and sha256 in PREFIX.export.json. Exit 0 when all "
                          "holds, 1 naming each problem.")
    vf.add_argument("folder", metavar="SHARDS_DIR|PREFIX",
                    help="output folder of a tokenize run, or the prefix of an export")
    vf.add_argument("--inputs", action="store_true",
                    help="also check the shards against the inputs (reads them all)")
    vf.add_argument("--tokenizer", default=None,
                    help="with --inputs: the job's tokenizer file, to decode every shard "
                         "back to its documents (byte-level BPE only)")

    st = _sub(sub, "stats", help="what a shard folder holds, from its run manifest",
              description="Print a tokenize output folder's status, tokenizer, documents, "
                          "tokens, text bytes and rejects, in total and per input, from its run "
                          "manifest (no shard is read; `corpustok verify` checks the shards).")
    st.add_argument("folder", metavar="SHARDS_DIR", help="output folder of a tokenize run")

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
                    help="local workers (default: one in-process worker)")
    _add_local_mode(mn)
    _add_verbose(mn)

    report = add_report_parser(sub)
    report.set_defaults(func=COMMANDS["report"], beam_args=False)
    return parser


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser (and its subparsers) whose single-valued options refuse a second
    occurrence: each option added is given a :class:`_Once` action (see :func:`_single`)."""

    def add_argument(self, *names, **kw):
        return super().add_argument(*names, **_single(names, kw))


def _add_single(group, *names, **kw):
    """``group.add_argument`` as :class:`_Parser`'s (an argument group's is its own)."""
    return group.add_argument(*names, **_single(names, kw))


_STORED_CONST = {"store_const": None, "store_true": True, "store_false": False}


def _single(names, kw):
    """``add_argument``'s keywords with an action that refuses a second occurrence, for an
    option that keeps one value: argparse's ``store`` and ``store_const``/``true``/``false``
    (done by :class:`_Once` itself) or an action class (:class:`_Once` mixed in). Positional
    arguments and the actions that collect or end (``append``, ``count``, ``help``,
    ``version``) are left as they are."""
    action = kw.get("action", "store")
    if not names or not names[0].startswith("-"):
        return kw
    if action == "store":
        return {**kw, "action": _Once}
    if action in _STORED_CONST:
        const = kw["const"] if action == "store_const" else _STORED_CONST[action]
        default = kw.get("default", None if action == "store_const" else not const)
        return {**kw, "action": _Once, "nargs": 0, "const": const, "default": default}
    if isinstance(action, type) and issubclass(action, argparse.Action):
        return {**kw, "action": _once(action)}
    return kw


def _refuse_repeat(action, parser, namespace, values, option_string):
    """Note ``action`` as given; a parser error if it was given before."""
    given = vars(namespace).setdefault(GIVEN, {})
    if action.dest in given and given[action.dest][0] is action:
        first = given[action.dest][1]
        parser.error(f"argument {'/'.join(action.option_strings)}: given twice ({first} "
                     f"and {_shown(option_string, values)}); it takes one value")
    given[action.dest] = (action, _shown(option_string, values))


class _Once(argparse.Action):
    """argparse's ``store`` (the value given) or, with ``nargs=0``, ``store_const`` (``const``),
    given once."""

    def __call__(self, parser, namespace, values, option_string=None):
        _refuse_repeat(self, parser, namespace, values, option_string)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


class _OnceMixin:
    """Mixed into an action class: its second occurrence is an error."""

    def __call__(self, parser, namespace, values, option_string=None):
        _refuse_repeat(self, parser, namespace, values, option_string)
        super().__call__(parser, namespace, values, option_string)


def _shown(option_string, values):
    return option_string if values is None or values == [] else f"{option_string} {values}"


_ONCE_CLASSES = {}


def _once(cls):
    """The action class ``cls`` with :class:`_OnceMixin` mixed in (one class per class)."""
    if cls not in _ONCE_CLASSES:
        _ONCE_CLASSES[cls] = type(f"Once{cls.__name__}", (_OnceMixin, cls), {})
    return _ONCE_CLASSES[cls]
