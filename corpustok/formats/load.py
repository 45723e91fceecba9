"""Loading a tokenizer file: recognised by its content, then read by the reader a table names.

:func:`load_file` (what ``corpustok.load`` runs) looks at a file's first bytes: a SentencePiece
model, a binary file handed over by mistake (named in one line), JSON (then the document's
content picks the reader: :data:`JSON_READERS`), or text: a tiktoken rank file, a merges.txt
given alone (named), else a WordPiece vocab.txt. A folder is its tokenizer.json, or GPT-2's
vocab.json + merges.txt.
"""
import importlib
import os

from corpustok.formats.hf_spbpe import is_spbpe_doc
from corpustok.formats.hf_unigram import is_unigram_doc
from corpustok.formats.json_file import read_json, too_deep
from corpustok.formats.recognize import (FORMATS, HEAD_BYTES, MERGES_FILE, binary_problem,
                                         hf_model_problem, is_merges_file,
                                         is_sentencepiece_model, json_problem)
from corpustok.formats.tiktoken import is_rank_file, is_tekken
from corpustok.tokenizer import FILE_FORMAT

# The tokenizer classes, by the "type" a corpustok file records. Each is imported when a file
# of its family is read: a family's kernel modules take 0.1-0.2 s to import (measured
# 2026-12-05), and loading one tokenizer (the CLI's encode and decode) should not pay for all.
CLASSES = {
    "bpe": ("corpustok.bpe.tokenizer", "BytePairTokenizer"),
    "wordpiece": ("corpustok.wordpiece.tokenizer", "WordPiece"),
    "sentencepiece": ("corpustok.sentencepiece.tokenizer", "SentencePieceTokenizer"),
    "hf-sentencepiece": ("corpustok.sentencepiece.hf_json", "HfSentencePieceTokenizer"),
    "hf-unigram": ("corpustok.sentencepiece.hf_unigram", "HfUnigramTokenizer"),
}


def tokenizer_class(family):
    """The class of ``family`` (a key of :data:`CLASSES`), imported on first use."""
    module, name = CLASSES[family]
    return getattr(importlib.import_module(module), name)


def load_file(path, *, merges=None, pretokenizer=None, lowercase=None):
    """``corpustok.load`` (see there)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path, merges = _folder_files(path, merges)
    if merges is not None:
        _no_lowercase(path, lowercase)
        return tokenizer_class("bpe")._from_gpt2_files(path, os.fspath(merges),
                                                       pretokenizer or "gpt2")
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    if is_sentencepiece_model(head):
        _no_pretokenizer(path, pretokenizer)
        _no_lowercase(path, lowercase)
        return tokenizer_class("sentencepiece").from_file(path)
    problem = binary_problem(head)
    if problem:
        raise ValueError(f"{path}: {problem}")
    if head.lstrip().startswith(b"{"):
        _no_pretokenizer(path, pretokenizer)
        _no_lowercase(path, lowercase)
        return _load_json(path)
    return _load_text(path, head.lstrip(), pretokenizer, lowercase)


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

def _load_text(path, head, pretokenizer, lowercase):
    """A tiktoken rank file or a WordPiece vocab.txt (``head``: the first bytes, stripped);
    a merges.txt given alone is named."""
    if is_rank_file(head):
        _no_lowercase(path, lowercase)
        return tokenizer_class("bpe").from_tiktoken(path, pretokenizer=pretokenizer)
    if is_merges_file(head):
        raise ValueError(f"{path}: {MERGES_FILE}")
    _no_pretokenizer(path, pretokenizer)
    return tokenizer_class("wordpiece").from_vocab(path, lowercase=lowercase)


def _load_json(path):
    """The tokenizer of a JSON file (see :func:`_from_doc`)."""
    doc = read_json(path, "not a tokenizer file")
    try:
        return _from_doc(path, doc)
    except RecursionError:  # a document deep enough to parse but not to walk
        raise ValueError(f"{path}: {too_deep()}") from None


def _corpustok_file(path, doc):
    """A file written by a corpustok tokenizer's ``save()``: its class by ``type``."""
    kind = doc.get("type")
    if kind not in ("wordpiece", "bpe", "sentencepiece"):
        raise ValueError(f"{path}: unknown corpustok tokenizer type {kind!r} "
                         "(expected 'wordpiece', 'bpe' or 'sentencepiece')")
    try:
        return tokenizer_class(kind).from_dict(doc)
    except (ValueError, TypeError) as e:  # the dict knows no path: name the file
        raise ValueError(f"{path}: {e}") from None


def _tekken(path, doc):
    return tokenizer_class("bpe")._from_tekken_doc(path, doc)


def _hf_refused(path, doc):
    """An HF tokenizer.json whose model or settings corpustok does not run: one line."""
    raise ValueError(f"{path}: {hf_model_problem(doc) or json_problem(doc)}")


def _hf_wordpiece(path, doc):
    return tokenizer_class("wordpiece")._from_hf_doc(path, doc)


def _hf_bpe(path, doc):
    return tokenizer_class("bpe")._from_hf_doc(path, doc)  # parsed once


def _hf_spbpe(path, doc):
    return tokenizer_class("hf-sentencepiece")._from_hf_doc(path, doc)


def _hf_unigram(path, doc):
    return tokenizer_class("hf-unigram")._from_hf_doc(path, doc)


def _model_type(doc):
    model = doc.get("model")
    return model.get("type") if isinstance(model, dict) else None


# What a JSON document is, first match wins: (test of the parsed object, its reader).
JSON_READERS = (
    (lambda doc: doc.get("format") == FILE_FORMAT, _corpustok_file),
    (is_tekken, _tekken),
    (lambda doc: bool(hf_model_problem(doc) or json_problem(doc)), _hf_refused),
    (lambda doc: _model_type(doc) == "WordPiece", _hf_wordpiece),
    (is_spbpe_doc, _hf_spbpe),
    (is_unigram_doc, _hf_unigram),
    (lambda doc: _model_type(doc) == "BPE", _hf_bpe),
)


def _from_doc(path, doc):
    """The tokenizer of a parsed JSON file, by the first of :data:`JSON_READERS` that
    matches; a ValueError names anything else."""
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: a tokenizer file holds a JSON object, found "
                         f"{type(doc).__name__}")
    for matches, read in JSON_READERS:
        if matches(doc):
            return read(path, doc)
    raise ValueError(f"{path}: neither a corpustok tokenizer file (no \"format\": "
                     f"\"{FILE_FORMAT}\") nor an HF tokenizer.json with a WordPiece, BPE or "
                     f"Unigram model; expected {FORMATS}")
