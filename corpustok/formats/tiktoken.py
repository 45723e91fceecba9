"""tiktoken rank files and Mistral Tekken files, read into a byte-level BPE vocabulary.

A rank file holds one ``base64(token bytes) rank`` line per token; the ranks are the ids and
the merge order (tiktoken merges any adjacent pair whose concatenation is a token, lowest rank
first, and emits a chunk that is itself a token whole). Neither the split pattern nor the
special tokens are in the file: for the rank files people use they are in
``corpustok/data/rank_files.json`` (``tools/gen_rank_files.py``), keyed by the file's sha256.
"""
import base64
import binascii
import hashlib
import json
from functools import lru_cache
from importlib import resources

import numpy as np

from corpustok.kernels.rank_lines import BASE64, decode_rank_lines
from corpustok.substrate import SYMBOL_STRINGS

SHORT_TOKEN = 64  # bytes: longer tokens are mapped to symbols with numpy,
LONG_STEP = 1 << 20  # this many bytes at a time
_BYTE_CPS = np.array([ord(s) for s in SYMBOL_STRINGS[:256]], "<u4")  # byte -> code point

# mistral-common's special tokens of Tekken files without a "special_tokens" list (< v7)
TEKKEN_CONTROL_TOKENS = ("<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]",
                         "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]",
                         "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
                         "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]",
                         "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]")

__all__ = ["known_rank_file", "read_rank_file", "rank_file_parts", "read_tekken", "is_rank_file",
           "is_tekken"]


@lru_cache(maxsize=None)
def _known():
    with resources.files("corpustok").joinpath("data/rank_files.json").open("rb") as f:
        return json.load(f)


def known_rank_file(digest):
    """``{name, ranks, pretokenizer, normalize, special_tokens}`` of a known rank file by its
    sha256 (hex), else None."""
    return _known().get(digest)


def token_string(raw):
    """The utf8-substrate symbol string of a token's bytes: a join for short tokens, numpy
    for long ones, a megabyte at a time (a Python step per byte took a second for a 10 MB
    token; steps of bounded size keep the temporaries small and a signal handled soon)."""
    if len(raw) <= SHORT_TOKEN:
        return "".join(SYMBOL_STRINGS[b] for b in raw)
    raw = np.frombuffer(raw, np.uint8)
    return "".join(str(_BYTE_CPS[raw[k:k + LONG_STEP]], "utf-32-le")
                   for k in range(0, len(raw), LONG_STEP))


def is_rank_file(head):
    """Whether the first bytes of a file look like tiktoken's rank format."""
    line = head.split(b"\n", 1)[0].strip()
    parts = line.split(b" ")
    if len(parts) != 2 or not parts[1].isdigit():
        return False
    try:
        base64.b64decode(parts[0], validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def read_rank_file(path):
    """``(vocab {symbol string: rank}, sha256 hex)`` of a tiktoken rank file, or ValueError
    naming the first bad line. The lines every published file has are decoded in one pass
    (:func:`corpustok.kernels.rank_lines.decode_rank_lines`); a file with any other line, an
    empty token or a repeated one is read line by line (:func:`_vocab_by_line`), which gives the
    same vocabulary or names the line."""
    with open(path, "rb") as f:
        raw = f.read()
    vocab = _vocab_at_once(raw)
    if vocab is None:
        vocab = _vocab_by_line(path, raw)
    return vocab, hashlib.sha256(raw).hexdigest()


def _vocab_at_once(raw):
    """The vocabulary of rank file bytes ``raw`` from one decoding pass and one symbol string
    sliced per token, or None when the pass declines a line or a token repeats."""
    ok, tokens, offsets, ranks = decode_rank_lines(np.frombuffer(raw, np.uint8), BASE64)
    if not ok or not len(ranks):
        return None
    text = str(_BYTE_CPS[tokens].tobytes(), "utf-32-le")
    o = offsets.tolist()
    vocab = dict(zip([text[o[k]:o[k + 1]] for k in range(len(ranks))], ranks.tolist()))
    return vocab if len(vocab) == len(ranks) else None


def _vocab_by_line(path, raw):
    """The vocabulary of rank file bytes ``raw``, a line at a time (the reference of
    :func:`_vocab_at_once`), or ValueError naming the first bad line."""
    vocab = {}
    for k, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            token = base64.b64decode(parts[0], validate=True)
            rank = int(parts[1])
        except (binascii.Error, ValueError):
            raise ValueError(f"{path}: line {k} is not 'base64 rank': {line[:60]!r}") from None
        s = token_string(token)
        if not token or s in vocab:
            raise ValueError(f"{path}: line {k}: an empty or repeated token {token!r}")
        vocab[s] = rank
    if not vocab:
        raise ValueError(f"{path}: an empty rank file")
    return vocab


def rank_file_parts(path, pretokenizer=None, special_tokens=None, normalize=None):
    """``(vocab with the specials, special token list, pretokenizer, normalize)`` of a rank
    file: what :data:`known_rank_file` says of it, overridden by any argument given; an
    unknown file without ``pretokenizer`` is a ValueError saying what to pass."""
    vocab, digest = read_rank_file(path)
    known = known_rank_file(digest) or {}
    pretokenizer = pretokenizer or known.get("pretokenizer")
    if pretokenizer is None:
        raise ValueError(f"{path}: a rank file corpustok does not know (sha256 {digest}); "
                         "say how to split text: pretokenizer=NAME or a pattern (CLI "
                         "--pretokenizer), e.g. 'cl100k' or 'o200k'")
    if special_tokens is None:
        special_tokens = dict(known.get("special_tokens", []))
    for tok, i in special_tokens.items():
        if vocab.setdefault(tok, i) != i:
            raise ValueError(f"{path}: special token {tok!r} (id {i}) is also rank {vocab[tok]}")
    return vocab, list(special_tokens), pretokenizer, normalize or known.get("normalize")


def is_tekken(doc):
    """Whether a parsed JSON document is a Mistral Tekken tokenizer."""
    return isinstance(doc, dict) and isinstance(doc.get("config"), dict) and \
        isinstance(doc.get("vocab"), list) and "pattern" in doc["config"]


def read_tekken(path, doc):
    """``(vocab {symbol string: id}, pattern, special token list)`` of a Tekken document:
    the first ``default_num_special_tokens`` ids are special (named by the file's
    ``special_tokens`` when it has them, else by mistral-common's names for files before v7:
    its 20 named control tokens, then ``<SPECIAL_{id}>``), then rank ``r`` has id ``r`` + that
    number, for the first ``default_vocab_size`` ids."""
    config = doc["config"]
    try:
        n_special = int(config.get("default_num_special_tokens", 0))
        size = int(config.get("default_vocab_size", n_special + len(doc["vocab"])))
        pattern = config["pattern"]
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"{path}: bad Tekken config: {e}") from None
    named = {int(t["rank"]): t["token_str"] for t in doc.get("special_tokens") or []
             if isinstance(t, dict) and "rank" in t and "token_str" in t}
    if not named:
        named = dict(enumerate(TEKKEN_CONTROL_TOKENS))
    specials = [named.get(i, f"<SPECIAL_{i}>") for i in range(n_special)]
    vocab = {s: i for i, s in enumerate(specials)}
    for k, entry in enumerate(doc["vocab"][:max(size - n_special, 0)]):
        try:
            raw = base64.b64decode(entry["token_bytes"], validate=True)
            rank = int(entry["rank"])
        except (TypeError, KeyError, ValueError, binascii.Error):
            raise ValueError(f"{path}: vocab[{k}] is not {{rank, token_bytes}}: "
                             f"{str(entry)[:60]}") from None
        if rank != k:
            raise ValueError(f"{path}: vocab[{k}] has rank {rank}; ranks must be 0, 1, ...")
        s = token_string(raw)
        if s in vocab:
            raise ValueError(f"{path}: vocab[{k}] repeats token {raw!r}")
        vocab[s] = n_special + rank
    return vocab, pattern, specials
