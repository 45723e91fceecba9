"""HF and GPT-2 tokenizer files: ``tokenizer.json``'s vocabulary, added tokens, merges and
pre-tokenizer (:func:`hf_bpe_model`), and GPT-2's ``vocab.json`` + ``merges.txt``
(:func:`gpt2_files`). A malformed file is a ValueError naming the file and the entry."""
from itertools import repeat

import numpy as np

from corpustok.formats.json_file import read_json
from corpustok.formats.hf_spbpe import is_spbpe_doc
from corpustok.formats.recognize import check_gpt2_heads, hf_model_problem
from corpustok.pretokenize.python_split import SUPPORTED, steps
from corpustok.substrate import alphabet
from corpustok.vocab import check_dense_ids, is_id, short, vocab_ids

# GPT-2 style files name no special tokens: vocab entries no merge makes are taken as such
# (GPT-2 has one, <|endoftext|>); more than this means mismatched or truncated files.
MAX_INFERRED_SPECIALS = 64


def gpt2_files(vocab_json, merges_txt):
    """``(vocab, merges, specials)`` of a GPT-2 style ``vocab.json`` + ``merges.txt``, the
    merges as its ``"left right"`` lines (as a tokenizer.json writes them), or ValueError naming
    the file and what is wrong with it."""
    check_gpt2_heads(vocab_json, merges_txt)
    vocab = read_json(vocab_json)
    if not isinstance(vocab, dict):
        raise ValueError(f"{vocab_json}: expected a JSON object of token -> id, found "
                         f"{type(vocab).__name__}")
    if vocab_ids(vocab) is None:  # the loop names the first bad id
        for tok, i in vocab.items():
            if not is_id(i) or i < 0:
                raise ValueError(f"{vocab_json}: entry {tok!r}: {short(i)} is not a "
                                 "non-negative int id")
    check_dense_ids(vocab, f"{vocab_json}: ")
    with open(merges_txt, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{merges_txt}: not UTF-8 text ({e.reason} at byte {e.start})") \
            from None
    if "\r" in text:  # line ends as a text file's reading sees them: \n, \r\n or \r
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    # lines as read (numbered from 1), less blank ones and a first "#version" line
    numbered = [(k, line) for k, line in enumerate(lines, 1)
                if line and not (k == 1 and line.startswith("#version"))]
    bad = next(((k, line) for k, line in numbered if line.count(" ") != 1), None)
    if bad is not None:
        raise ValueError(f"{merges_txt}:{bad[0]}: {bad[1]!r} is not '<left> <right>'")
    merges = [line for _, line in numbered]
    # Specials: entries that are neither a base symbol nor made by a merge (GPT-2's
    # <|endoftext|> is spelled with byte symbols, so the alphabet alone cannot tell).
    made = set(alphabet("utf8")) | {m.replace(" ", "") for m in merges}
    specials = [t for t in vocab if t not in made]
    if len(specials) > MAX_INFERRED_SPECIALS:
        raise ValueError(f"{vocab_json}: {len(specials)} entries (e.g. {specials[:3]}) are "
                         f"neither byte symbols nor made by a merge of {merges_txt}; is the "
                         "merges file truncated or from another vocabulary?")
    return vocab, merges, specials


def added_token(path, k, t):
    """``(content, id)`` of HF ``added_tokens[k]``, or ValueError naming what is wrong."""
    if not isinstance(t, dict):
        raise ValueError(f"{path}: added_tokens[{k}] = {short(t)} is not an object with "
                         "\"content\" and \"id\"")
    for key in ("content", "id"):
        if key not in t:
            raise ValueError(f"{path}: added_tokens[{k}] has no \"{key}\"")
    content, i = t["content"], t["id"]
    if not isinstance(content, str):
        raise ValueError(f"{path}: added_tokens[{k}].content = {short(content)} is not a "
                         "string")
    if not is_id(i) or i < 0:
        raise ValueError(f"{path}: added_tokens[{k}].id = {short(i)} ({content!r}) is not a "
                         "non-negative int id")
    return content, i


def hf_vocab(path, model):
    """``model["vocab"]`` of an HF tokenizer.json, or ValueError when it is no JSON object."""
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise ValueError(f"{path}: model.vocab must be an object of token -> id, found "
                         f"{type(vocab).__name__} {short(vocab)}")
    return vocab


def hf_added_tokens(path, doc):
    """``(content, id, entry)`` of each of an HF tokenizer.json's ``added_tokens``, checked
    (see :func:`added_token`)."""
    added = doc.get("added_tokens")
    if added is None:
        return []
    if not isinstance(added, list):
        raise ValueError(f"{path}: added_tokens must be a list of objects, found "
                         f"{type(added).__name__} {short(added)}")
    return [(*added_token(path, k, t), t) for k, t in enumerate(added)]


def check_hf_merges(path, merges):
    """ValueError naming the first item of an HF ``model.merges`` list that is neither a
    ``"left right"`` string (one space) nor a two-item list; the parts are checked later."""
    kinds = set(map(type, merges))
    if kinds <= {str} and set(map(str.count, merges, repeat(" "))) <= {1}:
        return
    if kinds <= {list} and set(map(len, merges)) <= {2}:
        return
    for k, m in enumerate(merges):
        pair = m.split(" ") if isinstance(m, str) else m
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"{path}: model.merges[{k}] = {short(m)} is not a pair "
                             "(\"left right\" or [left, right])")


def _hf_split(path, pre):
    """The ``pretokenizer`` of an HF byte-level pre-tokenizer: the spec itself, checked here
    (``ByteLevel`` last, every step one :mod:`corpustok.pretokenize.python_split` reads), so
    that a ValueError names the file. :func:`corpustok.pretokenize.patterns.resolve` then runs
    a spec of one isolated regex split (GPT-2's ``ByteLevel(use_regex=true)``, or
    ``Sequence[Split(Regex(P), Isolated), ByteLevel(use_regex=false)]``) in the split kernel
    where the kernel runs ``P``, and anything else in Python, reading its regexes as HF's
    Oniguruma does (a pattern string is read as the ``regex`` module reads it)."""
    last = pre.get("pretokenizers", [None])[-1] if isinstance(pre, dict) and \
        pre.get("type") == "Sequence" and pre.get("pretokenizers") else pre
    if not isinstance(last, dict) or last.get("type") != "ByteLevel":
        raise ValueError(f"{path}: pre_tokenizer {short(pre, 120)} does not end with ByteLevel, "
                         "so it is not byte-level BPE; supported: " + SUPPORTED)
    steps(pre, f"{path}: pre_tokenizer")
    return pre


def hf_bpe_model(path, doc):
    """``(vocab, ids, merges, specials, options)`` of an HF ``tokenizer.json`` (parsed:
    ``doc``) with a byte-level BPE model, or ValueError naming what is malformed or
    unsupported. ``vocab`` is the document's own dict plus the added tokens it lacks (all
    ``specials``), ``ids`` its :func:`vocab_ids` (None: the tokenizer's loop looks again),
    ``merges`` the model's list, each item checked to be a pair (the parts are the tokenizer's
    to check); ``options`` the tokenizer's ``pretokenizer``, ``whole_chunks`` (HF's
    ``ignore_merges``) and ``normalize``."""
    model = doc.get("model") if isinstance(doc, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"{path}: not an HF tokenizer.json with a BPE model")
    problem = hf_model_problem(doc)
    if problem:
        raise ValueError(f"{path}: {problem}")
    if is_spbpe_doc(doc):
        raise ValueError(f"{path}: a SentencePiece-style BPE tokenizer.json (byte fallback, "
                         "spaces as '\u2581'), no byte-level BPE: corpustok.load reads it")
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise ValueError(f"{path}: model.{key} = {short(model[key])} is not supported "
                             "(byte-level BPE has none)")
    norm = doc.get("normalizer")
    if norm is not None and not (isinstance(norm, dict) and norm.get("type") == "NFC"):
        kind = norm.get("type") if isinstance(norm, dict) else short(norm)
        raise ValueError(f"{path}: a normalizer ({kind}) is not supported; corpustok BPE "
                         "reads raw text or NFC")
    options = {"pretokenizer": _hf_split(path, doc.get("pre_tokenizer") or {}),
               "whole_chunks": bool(model.get("ignore_merges")),
               "normalize": "NFC" if norm is not None else None}
    vocab = hf_vocab(path, model)
    ids = vocab_ids(vocab)
    if ids is None:  # the loop names the first bad id
        for tok, i in vocab.items():
            if not is_id(i) or i < 0:
                raise ValueError(f"{path}: model.vocab[{tok!r}] = {short(i)} is not a "
                                 "non-negative int id")
    merges = model.get("merges")
    if merges is None:
        merges = []
    if not isinstance(merges, list):
        raise ValueError(f"{path}: model.merges must be a list of \"left right\" strings "
                         f"or [left, right] pairs, found {type(merges).__name__} "
                         f"{short(merges)}")
    check_hf_merges(path, merges)
    specials, new_ids = [], []
    for content, i, _ in hf_added_tokens(path, doc):
        if content not in vocab:
            vocab[content] = i
            new_ids.append(i)
        if vocab[content] != i:
            raise ValueError(f"{path}: added token {content!r} has id {i} but "
                             f"the model vocab says {vocab[content]}")
        specials.append(content)
    if ids is not None and new_ids:
        ids = None if max(new_ids) >= 1 << 63 else np.append(ids, new_ids)
    return vocab, ids, merges, specials, options
