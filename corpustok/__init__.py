"""corpustok: streaming corpus tokenization to Parquet token shards.

Public objects: :class:`WordPiece` (Fast WordPiece, equal to HF ``BertTokenizerFast``),
:class:`BytePairTokenizer` (byte-level BPE on the ``ube``, ``utf8`` or ``utf16`` substrate),
:func:`load` for any tokenizer file, :mod:`corpustok.substrate` (the substrate codec), the
:class:`Tokenizer` protocol both classes satisfy, and :class:`Utf8Batch` (a batch of UTF-8
documents as flat arrays, what ``encode_arrays`` takes). ``corpustok.reference`` holds the
readable pure-Python versions of the kernels that the tests compare against.
"""
import importlib
import os

from corpustok.moved import keep_old_names

__version__ = "0.1.0"
__all__ = ["WordPiece", "BytePairTokenizer", "SentencePieceTokenizer", "Tokenizer", "Utf8Batch",
           "load", "ube", "__version__"]

# The repository's top-level kernels/, schemas/ and pipeline/ folders are the subpackages
# corpustok.kernels, corpustok.schemas and corpustok.pipeline. A built install holds them inside
# this folder (setup.py package_dir); a source checkout (also when installed editable) has them
# beside it, so the checkout's root joins this package's search path: a checkout imports its
# own kernels, whichever checkout the environment was installed from (decision 0004).
_HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(_HERE, "kernels")):
    __path__.append(os.path.dirname(_HERE))

# Old module name -> the module it is now (corpustok/moved.py): names the docs gave users.
MOVED = {"ube": "substrate", "bpe_train": "bpe.train", "hf_export": "formats.hf_export"}
keep_old_names(__name__, MOVED)


def __getattr__(name):
    # Lazy so that `import corpustok` (and the CLI) does not pay for every kernel module.
    if name == "WordPiece":
        from corpustok.wordpiece.tokenizer import WordPiece
        return WordPiece
    if name == "BytePairTokenizer":
        from corpustok.bpe.tokenizer import BytePairTokenizer
        return BytePairTokenizer
    if name == "SentencePieceTokenizer":
        from corpustok.sentencepiece import SentencePieceTokenizer
        return SentencePieceTokenizer
    if name == "FILE_FORMAT":  # the "format" of corpustok tokenizer files
        from corpustok.tokenizer import FILE_FORMAT
        return FILE_FORMAT
    if name == "Tokenizer":
        from corpustok.tokenizer import Tokenizer
        return Tokenizer
    if name == "Utf8Batch":
        from corpustok.arrow import Utf8Batch
        return Utf8Batch
    if name == "ube":
        return importlib.import_module("corpustok.substrate")
    raise AttributeError(f"module 'corpustok' has no attribute {name!r}")


def _folder_files(folder, merges):
    """The file(s) to load from a folder: its tokenizer.json, else vocab.json + merges.txt."""
    names = set(os.listdir(folder))
    if merges is None and "tokenizer.json" in names:
        return os.path.join(folder, "tokenizer.json"), None
    if merges is None and {"vocab.json", "merges.txt"} <= names:
        return os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt")
    raise ValueError(f"{folder}: a tokenizer folder holds tokenizer.json, or vocab.json and "
                     f"merges.txt (GPT-2); found {', '.join(sorted(names)[:8]) or 'nothing'}")


def _no_pretokenizer(path, pretokenizer):
    if pretokenizer is not None:
        raise ValueError(f"{path}: this file defines its own pre-tokenizer; a pretokenizer "
                         "is given only with a tiktoken rank file or GPT-2 vocab.json + "
                         "merges.txt")


def _no_lowercase(path, lowercase):
    if lowercase is not None:
        raise ValueError(f"{path}: this file sets its own casing; lowercase is chosen only "
                         "for a WordPiece vocab.txt")


def load(path, *, merges=None, pretokenizer=None, lowercase=None):
    """Load any tokenizer file, recognized by its content: a corpustok file written by
    ``.save()``, an HF ``tokenizer.json`` (WordPiece or byte-level BPE model), a tiktoken rank
    file, a Mistral Tekken JSON or a WordPiece ``vocab.txt``; or a folder holding a
    ``tokenizer.json``, or GPT-2's ``vocab.json`` + ``merges.txt``.

    ``merges``: the ``merges.txt`` of a GPT-2 style ``vocab.json`` given as ``path``.
    ``pretokenizer``: the split (a name of :data:`corpustok.pretokenize.patterns.PATTERNS` or a
    pattern) of a tiktoken rank file or GPT-2 files; files that define their own split refuse
    it. ``lowercase``: the casing of a WordPiece ``vocab.txt`` (None: detected from the
    vocabulary, see ``WordPiece.from_vocab``); other files set their own and refuse it.

    Any other file is a ValueError of one line saying what the file looks like and what
    would load it: a merges.txt or a vocab.json given alone, a SentencePiece model of a
    kind corpustok does not run (WORD, CHAR, treat_whitespace_as_suffix...), a Parquet or
    compressed file, an HF tokenizer.json whose model corpustok does not run (Unigram,
    WordLevel, SentencePiece-style BPE), a text file that is no WordPiece
    vocabulary (see ``wordpiece.vocab_txt_problem``), JSON nested too deep."""
    from corpustok.formats.recognize import HEAD_BYTES, binary_problem, is_sentencepiece_model

    path = os.fspath(path)
    if os.path.isdir(path):
        path, merges = _folder_files(path, merges)
    if merges is not None:
        _no_lowercase(path, lowercase)
        from corpustok.bpe.tokenizer import BytePairTokenizer
        return BytePairTokenizer._from_gpt2_files(path, os.fspath(merges),
                                                  pretokenizer or "gpt2")
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if is_sentencepiece_model(head):
        _no_pretokenizer(path, pretokenizer)
        _no_lowercase(path, lowercase)
        from corpustok.sentencepiece import SentencePieceTokenizer
        return SentencePieceTokenizer.from_file(path)
    problem = binary_problem(head)
    if problem:
        raise ValueError(f"{path}: {problem}")
    if head.lstrip().startswith(b"{"):
        _no_pretokenizer(path, pretokenizer)
        _no_lowercase(path, lowercase)
        return _load_json(path)
    return _load_text(path, head.lstrip(), pretokenizer, lowercase)


def _load_text(path, head, pretokenizer, lowercase):
    """A tiktoken rank file or a WordPiece vocab.txt (``head``: the first bytes, stripped);
    a merges.txt given alone is named."""
    from corpustok.formats.tiktoken import is_rank_file
    from corpustok.formats.recognize import MERGES_FILE, is_merges_file

    if is_rank_file(head):
        _no_lowercase(path, lowercase)
        from corpustok.bpe.tokenizer import BytePairTokenizer
        return BytePairTokenizer.from_tiktoken(path, pretokenizer=pretokenizer)
    if is_merges_file(head):
        raise ValueError(f"{path}: {MERGES_FILE}")
    _no_pretokenizer(path, pretokenizer)
    from corpustok.wordpiece.tokenizer import WordPiece
    return WordPiece.from_vocab(path, lowercase=lowercase)


def _load_json(path):
    """The tokenizer of a JSON file (see :func:`_from_doc`)."""
    from corpustok.formats.json_file import read_json, too_deep

    doc = read_json(path, "not a tokenizer file")
    try:
        return _from_doc(path, doc)
    except RecursionError:  # a document deep enough to parse but not to walk
        raise ValueError(f"{path}: {too_deep()}") from None


def _from_doc(path, doc):
    """The tokenizer of a parsed JSON file: a corpustok file, a Tekken file or an HF
    tokenizer.json; a ValueError names anything else."""
    from corpustok.tokenizer import FILE_FORMAT
    from corpustok.formats.recognize import FORMATS, hf_model_problem, json_problem

    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a tokenizer file holds a JSON object, found "
                         f"{type(doc).__name__}")
    if doc.get("format") == FILE_FORMAT:
        kind = doc.get("type")
        if kind == "wordpiece":
            from corpustok.wordpiece.tokenizer import WordPiece as cls
        elif kind == "bpe":
            from corpustok.bpe.tokenizer import BytePairTokenizer as cls
        elif kind == "sentencepiece":
            from corpustok.sentencepiece import SentencePieceTokenizer as cls
        else:
            raise ValueError(f"{path}: unknown corpustok tokenizer type {kind!r} "
                             "(expected 'wordpiece', 'bpe' or 'sentencepiece')")
        try:
            return cls.from_dict(doc)
        except (ValueError, TypeError) as e:  # the dict knows no path: name the file
            raise ValueError(f"{path}: {e}") from None
    from corpustok.formats.tiktoken import is_tekken
    if is_tekken(doc):
        from corpustok.bpe.tokenizer import BytePairTokenizer
        return BytePairTokenizer._from_tekken_doc(path, doc)
    problem = hf_model_problem(doc) or json_problem(doc)
    if problem:
        raise ValueError(f"{path}: {problem}")
    model = doc.get("model")
    if isinstance(model, dict) and model.get("type") == "WordPiece":
        from corpustok.wordpiece.tokenizer import WordPiece
        return WordPiece._from_hf_doc(path, doc)
    if isinstance(model, dict) and model.get("type") == "BPE":
        from corpustok.bpe.tokenizer import BytePairTokenizer
        return BytePairTokenizer._from_hf_doc(path, doc)  # parsed once
    raise ValueError(f"{path}: neither a corpustok tokenizer file (no \"format\": "
                     f"\"{FILE_FORMAT}\") nor an HF tokenizer.json with a WordPiece or BPE "
                     f"model; expected {FORMATS}")
