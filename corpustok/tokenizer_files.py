"""Checks shared by the tokenizer-file loaders: a malformed file is a ValueError that names
the file and the entry, never an AttributeError, a MemoryError or a silently wrong table.

The checks of large vocabularies run over whole arrays (types as sets, ids with numpy, merges
as one Numba hash pass), and only when one fails does a per-entry loop look for the entry to
name, so a 10M-entry file costs little more than its JSON parse."""
import json
from itertools import chain, islice, repeat

import numpy as np

from corpustok._arrow import id_array
from corpustok.kernels.token_table import EMPTY, fill_token_table, lookup_tokens, unmergeable
from corpustok.python_split import SUPPORTED, kernel_pattern, steps
from corpustok.sentencepiece.model_file import ProtoError, read_varint
from corpustok.ube import alphabet, parse_symbols

# Tables are sized by the largest id (about 40 bytes per id), so ids must be dense: the largest
# id below 2 * entries + SPARSE_IDS_SLACK (gaps are allowed, a stray id of 10**12 is not).
SPARSE_IDS_SLACK = 1024
_INT64_MAX = (1 << 63) - 1


def short(value, width=60):
    """``repr(value)`` cut to ``width`` characters, for messages about file contents."""
    r = repr(value)
    return r if len(r) <= width else r[:width - 3] + "..."


def is_id(i):
    """A JSON/Python integer id: an int that is not a bool."""
    return isinstance(i, int) and not isinstance(i, bool)


def vocab_ids(vocab):
    """The ids of ``vocab`` (a dict) in its order as int64, when every key is a ``str`` and
    every id a non-negative ``int`` below 2**63 (exactly these types); else None, and the
    caller's per-entry loop names the first bad entry (or accepts an int subclass)."""
    if set(map(type, vocab.values())) - {int} or set(map(type, vocab)) - {str}:
        return None
    try:
        ids = np.fromiter(vocab.values(), np.int64, len(vocab))
    except OverflowError:
        return None
    return None if len(ids) and ids.min() < 0 else ids


def check_dense_ids(vocab, where="", ids=None):
    """ValueError unless the largest id of ``vocab`` (token -> non-negative int id; ``ids``:
    :func:`vocab_ids` of it, if known) is below ``2 * len(vocab) + SPARSE_IDS_SLACK``; tables
    sized by the largest id stay small."""
    if not vocab:
        return
    if ids is None:
        top_tok, top = max(vocab.items(), key=lambda kv: kv[1])
    else:
        k = int(np.argmax(ids))  # the first largest, as max() above
        top, top_tok = int(ids[k]), None
    limit = 2 * len(vocab) + SPARSE_IDS_SLACK
    if top >= limit:
        top_tok = next(islice(vocab, k, None)) if top_tok is None else top_tok
        raise ValueError(f"{where}vocab ids are too sparse: the largest id is {top} "
                         f"({top_tok!r}) but there are only {len(vocab)} entries; ids must be "
                         f"dense (the "
                         f"largest id below 2 * entries + {SPARSE_IDS_SLACK} = {limit}), as "
                         "the tables are sized by the largest id")


def string_list(value, name, what="token strings"):
    """``list(value)`` for an argument that must hold only str; a lone str, bytes or dict is
    refused rather than iterated (a str would become its characters)."""
    if isinstance(value, (str, bytes, dict)):
        raise TypeError(f"{name} must be a list of {what}, got {type(value).__name__}; "
                        "wrap a single str in a list")
    items = list(value)
    for k, s in enumerate(items):
        if not isinstance(s, str):
            raise TypeError(f"{name}[{k}] = {short(s)} is {type(s).__name__}, expected str")
    return items


class VocabIds:
    """The ids a vocabulary decodes: ``0..len(exists)-1`` where ``exists[id]`` (a vocabulary
    may leave ids unused). Both tokenizers check decode input through it, so a bad id gets
    the same message everywhere."""

    def __init__(self, exists):
        self.exists = exists
        self.stop = len(exists)
        self.dense = bool(exists.all())

    def error(self, k, value, where=""):
        unused = 0 <= value < self.stop
        return ValueError(f"{where}ids[{k}] = {value} is not a token id of this vocabulary "
                          f"({'an unused id in ' if unused else ''}0..{self.stop - 1})")

    def array(self, ids, where=""):
        """``id_array(ids)``, first checking what int64 cannot hold, so that ids are reported
        as given: for a list or tuple, its min and max (then, only when one is outside the
        range, the first such id); for a uint64 array, its max. Other inputs convert to int64
        losslessly and are checked by :meth:`check`."""
        stop = self.stop
        if isinstance(ids, (list, tuple)):
            if ids:
                try:
                    bad = bool(min(ids) < 0 or max(ids) >= stop)
                except (TypeError, ValueError):  # items that do not compare
                    bad = False  # id_array names them
                if bad:
                    for k, i in enumerate(ids):
                        if isinstance(i, (int, np.integer)) \
                                and not isinstance(i, (bool, np.bool_)) and not 0 <= i < stop:
                            raise self.error(k, int(i), where)
        elif isinstance(ids, np.ndarray) and ids.dtype.kind == "u" and ids.size \
                and int(ids.max()) > _INT64_MAX:
            flat = ids.reshape(-1)
            k = int(np.flatnonzero(flat >= stop)[0])
            raise self.error(k, int(flat[k]), where)
        return id_array(ids)

    def check(self, ids):
        """Raise for the first id of an int64 array this vocabulary does not decode."""
        if not len(ids):
            return
        bad = (ids < 0) | (ids >= self.stop)
        if not self.dense and not bad.any():
            bad = ~self.exists[ids]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise self.error(k, int(ids[k]))


# GPT-2 style files name no special tokens: vocab entries no merge makes are taken as such
# (GPT-2 has one, <|endoftext|>); more than this means mismatched or truncated files.
MAX_INFERRED_SPECIALS = 64


def gpt2_files(vocab_json, merges_txt):
    """``(vocab, merges, specials)`` of a GPT-2 style ``vocab.json`` + ``merges.txt``, or
    ValueError naming the file and what is wrong with it."""
    _check_gpt2_heads(vocab_json, merges_txt)
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
    merges = []
    try:
        with open(merges_txt, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line or (line_no == 1 and line.startswith("#version")):
                    continue
                pair = line.split(" ")
                if len(pair) != 2:
                    raise ValueError(f"{merges_txt}:{line_no}: {line!r} is not "
                                     "'<left> <right>'")
                merges.append(tuple(pair))
    except UnicodeDecodeError:
        with open(merges_txt, "rb") as f:  # the position in the file, not in a chunk
            raw = f.read()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{merges_txt}: not UTF-8 text ({e.reason} at byte "
                             f"{e.start})") from None
        raise
    # Specials: entries that are neither a base symbol nor made by a merge (GPT-2's
    # <|endoftext|> is spelled with byte symbols, so the alphabet alone cannot tell).
    made = set(alphabet("utf8")) | {a + b for a, b in merges}
    specials = [t for t in vocab if t not in made]
    if len(specials) > MAX_INFERRED_SPECIALS:
        raise ValueError(f"{vocab_json}: {len(specials)} entries (e.g. {specials[:3]}) are "
                         f"neither byte symbols nor made by a merge of {merges_txt}; is the "
                         "merges file truncated or from another vocabulary?")
    return vocab, merges, specials


# ---- recognising a file by its content (corpustok.load) ------------------------------------
FORMATS = ("a corpustok .json, an HF tokenizer.json (WordPiece or byte-level BPE), a "
           "SentencePiece .model (BPE or Unigram), a tiktoken rank file, a Mistral tekken.json, "
           "a WordPiece vocab.txt, GPT-2's vocab.json with --merges merges.txt, or a folder "
           "holding them")
HEAD_BYTES = 1 << 16  # what load() reads to recognise a file

# Files people hand over as a tokenizer by mistake, by their first bytes.
MAGIC = ((b"PAR1", "a Parquet file (data, not a tokenizer)"),
         (b"\x1f\x8b", "a gzip-compressed file (decompress it first)"),
         (b"\x28\xb5\x2f\xfd", "a zstd-compressed file (decompress it first)"),
         (b"\xfd7zXZ\x00", "an xz-compressed file (decompress it first)"),
         (b"BZh", "a bzip2-compressed file (decompress it first)"),
         (b"PK\x03\x04", "a zip archive (extract the tokenizer file first)"),
         (b"PK\x05\x06", "an empty zip archive"),
         (b"GGUF", "a GGUF model file (llama.cpp)"),
         (b"\x93NUMPY", "a numpy .npy file"))
SENTENCEPIECE = ("a SentencePiece model (.model): give it alone as the tokenizer (it loads by "
                 "itself)")


def binary_problem(head):
    """What a file whose first bytes are ``head`` is, when it is binary (a tokenizer file is
    UTF-8 text): a known magic number, a SentencePiece ``ModelProto`` (load() reads it before
    asking; this names it where a text file was wanted, e.g. GPT-2's merges), UTF-16 text or
    any file with a NUL byte; else None."""
    for magic, what in MAGIC:
        if head.startswith(magic) and (magic != b"BZh" or head[4:10] == b"1AY&SY"):
            return what
    if is_sentencepiece_model(head):
        return SENTENCEPIECE
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text (tokenizer files are UTF-8)"
    nul = head.find(b"\x00")
    if nul >= 0:
        return f"a binary file (a NUL byte at offset {nul}), not a tokenizer file"
    return None


def _varint(buf, at):
    """``(value, next offset)`` of the protobuf varint at ``buf[at]``; value None if cut."""
    try:
        return read_varint(buf, at, len(buf))
    except ProtoError:
        return None, at


def is_sentencepiece_model(head):
    """Whether ``head`` begins a SentencePiece ``ModelProto``: its first ``pieces`` entry
    (field 1, length-delimited) holds a UTF-8 ``piece`` (field 1) followed by its ``score``
    (field 2, a float) or ``type`` (field 3), as every ``.model`` file begins (``<unk>`` or
    ``<pad>``). Text never does: the tags are control bytes."""
    if head[:1] != b"\x0a":
        return False
    size, at = _varint(head, 1)
    if size is None or at + size > len(head) or head[at:at + 1] != b"\x0a":
        return False
    end = at + size
    n, at = _varint(head, at + 1)
    if n is None or at + n >= end or head[at + n] not in (0x15, 0x18):
        return False
    try:
        head[at:at + n].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lines(head):
    """The complete lines of the first bytes of a file (the last may be cut), as bytes."""
    lines = head.split(b"\n")
    if len(head) >= HEAD_BYTES and len(lines) > 1:
        lines.pop()
    return [line.rstrip(b"\r") for line in lines]


def is_merges_file(head):
    """Whether the first bytes of a text file are a BPE ``merges.txt``: its ``#version``
    header, or lines of two symbol strings separated by one space of which the first line
    merges two single symbols (every BPE training begins so; a list of word pairs does not)."""
    lines = [line for line in _lines(head)[:1000] if line]
    if not lines:
        return False
    if lines[0].startswith(b"#version"):
        return True
    pairs = [line.decode("utf-8", "replace").split(" ") for line in lines]
    return all(len(p) == 2 and all(p) for p in pairs) and \
        all(len(part) == 1 for part in pairs[0])


# top-level keys of HF files that hold a tokenizer's settings, not its model
HF_SETTINGS_KEYS = ("tokenizer_class", "model_max_length", "added_tokens_decoder",
                    "architectures", "model_type")


def json_problem(doc):
    """What a parsed JSON file that is no tokenizer file we read is, with what would load it,
    for the files people give instead: GPT-2's ``vocab.json`` alone, an HF
    ``tokenizer_config.json`` or ``config.json``; else None."""
    if not isinstance(doc, dict) or isinstance(doc.get("model"), dict):
        return None
    if any(k in doc for k in HF_SETTINGS_KEYS):
        return ("an HF settings file (tokenizer_config.json or config.json), not the "
                "tokenizer itself: give the tokenizer.json beside it (or the folder)")
    if doc and all(isinstance(k, str) and is_id(i) for k, i in islice(doc.items(), 1000)):
        return ("a BPE vocabulary without its merges: add --merges merges.txt (or give the "
                "folder holding both)")
    return None


UNSUPPORTED_MODELS = {
    "Unigram": "a SentencePiece Unigram model (T5, ALBERT, XLM-R)",
    "WordLevel": "a WordLevel model (one id per whole word)",
}


def hf_model_problem(doc):
    """Why an HF ``tokenizer.json`` (parsed) has a model corpustok does not run, naming the
    model type, else None: a Unigram or WordLevel model, any other type but WordPiece and
    BPE, or a SentencePiece-style BPE (``byte_fallback``, or spaces as ``▁`` through a
    Metaspace pre-tokenizer or a normalizer: Llama 2, Mistral, Gemma)."""
    model = doc.get("model")
    kind = model.get("type") if isinstance(model, dict) else None
    runs = "corpustok runs WordPiece and byte-level BPE models"
    if kind in UNSUPPORTED_MODELS:
        return f"an HF tokenizer.json with {UNSUPPORTED_MODELS[kind]}: not supported; {runs}"
    if kind == "BPE" and _sentencepiece_style(doc):
        return ("an HF tokenizer.json with a SentencePiece-style BPE model (byte_fallback or "
                "spaces as '\u2581', as Llama 2, Mistral, Gemma): not supported yet; " + runs)
    if kind is not None and kind not in ("WordPiece", "BPE"):
        return f"an HF tokenizer.json with a model of type {short(kind)}: not supported; {runs}"
    return None


def _sentencepiece_style(doc):
    """Whether an HF BPE document is SentencePiece's kind: byte fallback, a Metaspace step or
    a normalizer, pre-tokenizer or decoder that writes spaces as '\u2581'."""
    if doc["model"].get("byte_fallback"):
        return True
    steps = json.dumps([doc.get(k) for k in ("normalizer", "pre_tokenizer", "decoder")],
                       ensure_ascii=False)
    return '"Metaspace"' in steps or "\u2581" in steps


MERGES_FILE = ("this is a BPE merges file; pass the vocabulary as --tokenizer vocab.json "
               "--merges merges.txt (or the folder)")


def _check_gpt2_heads(vocab_json, merges_txt):
    """ValueError when the first bytes show that ``vocab_json`` is not JSON (a binary file, or
    the merges file: the two swapped) or that ``merges_txt`` is not a merges file (binary, or
    JSON: the vocabulary)."""
    for path, json_expected in ((vocab_json, True), (merges_txt, False)):
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
        problem = binary_problem(head)
        if problem is None and json_expected and is_merges_file(head):
            problem = MERGES_FILE
        if problem is None and not json_expected and head.lstrip().startswith(b"{"):
            problem = ("a JSON file, not a merges.txt: --merges takes the merges.txt, "
                       "--tokenizer the vocab.json")
        if problem:
            raise ValueError(f"{path}: {problem}")


def read_json(path, what=None):
    """The JSON document in ``path``; ValueError naming the file if it is not UTF-8 JSON, or
    if it nests deeper than the parser's recursion limit (about 1,000 levels; tokenizer files
    nest a few). ``what``: how the message begins (e.g. "not a tokenizer file")."""
    start = f"{path}: {what}: " if what else f"{path}: "
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{start}not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        if e.msg == "Extra data" and e.doc[e.pos:e.pos + 1] == "{":
            raise ValueError(f"{start}JSON Lines, one object per line (a data file?); "
                             f"expected {FORMATS}") from None
        raise ValueError(f"{start}not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"{path}: {too_deep()}") from None


def too_deep():
    """The message for a JSON document nested deeper than Python follows (its recursion
    limit, about 1,000 levels) while parsing or reading it."""
    return "nested too deep to be a tokenizer file (more levels of JSON than Python " \
        "follows; tokenizer files nest a few)"


def from_json_file(path, build):
    """``build(path, doc)`` of the JSON document in ``path`` (:func:`read_json`); a document
    that parses but nests too deep for ``build`` to walk is the same ValueError."""
    doc = read_json(path)
    try:
        return build(path, doc)
    except RecursionError:
        raise ValueError(f"{path}: {too_deep()}") from None


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
    """The ``pretokenizer`` of an HF byte-level pre-tokenizer: the pattern ``P`` when the split
    kernel runs it (``ByteLevel(use_regex=true)``: GPT-2's; ``Sequence[Split(Regex(P),
    Isolated), ByteLevel(use_regex=false)]``: ``P``), else the spec itself for
    :mod:`corpustok.python_split`; a ValueError names anything else."""
    last = pre.get("pretokenizers", [None])[-1] if isinstance(pre, dict) and \
        pre.get("type") == "Sequence" and pre.get("pretokenizers") else pre
    if not isinstance(last, dict) or last.get("type") != "ByteLevel":
        raise ValueError(f"{path}: pre_tokenizer {short(pre, 120)} does not end with ByteLevel, "
                         "so it is not byte-level BPE; supported: " + SUPPORTED)
    pattern = kernel_pattern(steps(pre, f"{path}: pre_tokenizer"))
    return pattern or pre


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


def token_table(tok_sym, tok_off, plain):
    """The open-addressing table (:mod:`corpustok.kernels.token_table`) of the tokens ``i``
    with ``plain[i]``, whose symbols are ``tok_sym[tok_off[i]:tok_off[i + 1]]``."""
    size = 16
    while size < 2 * np.count_nonzero(plain):
        size *= 2
    slots = np.full(size, EMPTY, np.uint64)  # numpy's: huge pages where the system has them
    fill_token_table(slots, tok_sym, tok_off, plain, np.empty(len(plain), np.uint64))
    return slots


def whole_chunk_table(tok_sym, tok_off, plain, sym_id, pairs, merged):
    """The encoder's ``whole`` tuple ``(slots, tok_sym, tok_off)`` for tiktoken's rule (a chunk
    that is a token is emitted whole) over the tokens ``plain`` marks (none: the rule is off).
    ``slots`` holds only the tokens merging does not reach: a chunk that is any other token
    merges into it anyway. Empty when there are none (every rank file we know), so the rule
    costs no lookup; else small enough to stay in cache.

    ``merged``: the ids the merges of ``pairs`` make. A token of two symbols or more that no
    merge makes is not reached, without merging its symbols (O(L log L) for L symbols: a
    second for a 10 MB token that a rank file lists alone)."""
    made = np.zeros(len(plain), bool)
    made[merged] = True
    made |= np.diff(tok_off) == 1  # a base symbol is its own token
    hard = plain & ~made
    hard |= unmergeable(tok_sym, tok_off, plain & made, sym_id, pairs)
    slots = token_table(tok_sym, tok_off, hard) if hard.any() else np.empty(0, np.uint64)
    return slots, tok_sym, tok_off


MERGE_STEP = 1 << 18  # merges per pass of merge_ids (temporaries of about 60 MB)


def merge_ids(merges, tok_sym, tok_off, plain, substrate, strings=False):
    """``(left, right, merged)`` ids (int64, 3 rows) of a list of ``(left, right)``
    token-string pairs (or, with ``strings``, also of ``"left right"`` strings) when every
    part and every merged string is a token ``i`` with ``plain[i]``, whose symbol ids are
    ``tok_sym[tok_off[i]:tok_off[i + 1]]``; else None, and the caller's loop names the merge.

    Exact: every match is compared symbol by symbol. Each pass joins a slice of the merges
    into one string, checks where the separators are, and looks the parts up in a Numba hash
    table of the tokens, without a Python string or dict lookup per merge."""
    slots = token_table(tok_sym, tok_off, plain)
    ids = np.empty((3, len(merges)), np.int64)
    for start in range(0, len(merges), MERGE_STEP):
        chunk = merges[start:start + MERGE_STEP]
        kinds = set(map(type, chunk))
        try:
            if strings and kinds <= {str}:  # "a0 b0\na1 b1...": one space per merge
                flat, inner = "\n".join(chunk), 10
            elif kinds <= {tuple, list} and set(map(len, chunk)) == {2}:
                flat, inner = " ".join(chain.from_iterable(chunk)), 32  # "a0 b0 a1 b1..."
            else:
                return None
        except TypeError:  # a part that is not a str
            return None
        cps = np.frombuffer(flat.encode("utf-32-le", "surrogatepass"), np.uint32)
        seps = np.flatnonzero((cps == 32) | (cps == inner))
        want = np.full(2 * len(chunk) - 1, inner, np.uint32)
        want[0::2] = 32
        if len(seps) != len(want) or (cps[seps] != want).any():
            return None  # a part holds a separator: it is no token (neither is a symbol)
        try:
            sym = parse_symbols(flat.replace(" ", "").replace("\n", "") if inner == 10
                                else flat.replace(" ", ""), substrate)
        except ValueError:  # a part holds a non-symbol: it is no plain token
            return None
        # part j is sym[at[j]:at[j + 1]]; merge k looks up parts 2k, 2k + 1 and both
        at = np.concatenate(([0], seps - np.arange(len(seps)), [len(sym)]))
        starts = np.stack([at[:-1:2], at[1::2], at[:-1:2]], 1).ravel()
        stops = np.stack([at[1::2], at[2::2], at[2::2]], 1).ravel()
        out = np.empty(len(starts), np.int64)
        if lookup_tokens(slots, tok_sym, tok_off, sym, starts, stops, out) >= 0:
            return None
        ids[:, start:start + len(chunk)] = out.reshape(-1, 3).T
    return ids
