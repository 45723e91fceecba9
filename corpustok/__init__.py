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
from corpustok.numba_cache import refresh as _refresh_numba_cache

__version__ = "0.1.0"
__all__ = ["WordPiece", "BytePairTokenizer", "SentencePieceTokenizer", "Tokenizer", "Utf8Batch",
           "load", "ube", "__version__"]

# The repository's top-level kernels/, schemas/ and pipeline/ folders are the subpackages
# corpustok.kernels, corpustok.schemas and corpustok.pipeline. A built install holds them inside
# this folder (setup.py package_dir); a source checkout (also when installed editable) has them
# beside it, so the checkout's root joins this package's search path: a checkout imports its
# own kernels, whichever checkout the environment was installed from (decision 0004).
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = _HERE if os.path.isdir(os.path.join(_HERE, "kernels")) else os.path.dirname(_HERE)
if _ROOT != _HERE:
    __path__.append(_ROOT)

# Numba's cache of the kernels is emptied when a kernel's source changed: Numba checks only a
# function's own file, not those of the kernels compiled into it (corpustok/numba_cache.py).
_refresh_numba_cache(os.path.join(_ROOT, "kernels"), os.environ.get("NUMBA_CACHE_DIR"))

# Old module name -> the module it is now (corpustok/moved.py): names the docs gave users.
MOVED = {"ube": "substrate", "bpe_train": "bpe.train", "hf_export": "formats.hf_export"}
keep_old_names(__name__, MOVED)


def __getattr__(name):
    # Lazy so that `import corpustok` (and the CLI) does not pay for every kernel module.
    if name == "WordPiece":
        from corpustok.wordpiece.tokenizer import WordPiece  # lazy: see above
        return WordPiece
    if name == "BytePairTokenizer":
        from corpustok.bpe.tokenizer import BytePairTokenizer  # lazy: see above
        return BytePairTokenizer
    if name == "SentencePieceTokenizer":
        from corpustok.sentencepiece import SentencePieceTokenizer  # lazy: see above
        return SentencePieceTokenizer
    if name == "FILE_FORMAT":  # the "format" of corpustok tokenizer files
        from corpustok.tokenizer import FILE_FORMAT  # lazy: see above
        return FILE_FORMAT
    if name == "Tokenizer":
        from corpustok.tokenizer import Tokenizer  # lazy: see above
        return Tokenizer
    if name == "Utf8Batch":
        from corpustok.arrow import Utf8Batch  # lazy: see above
        return Utf8Batch
    if name == "ube":
        return importlib.import_module("corpustok.substrate")
    raise AttributeError(f"module 'corpustok' has no attribute {name!r}")


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
    from corpustok.formats.load import load_file  # here: `import corpustok` stays light
    return load_file(path, merges=merges, pretokenizer=pretokenizer, lowercase=lowercase)
