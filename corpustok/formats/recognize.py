"""Recognising a tokenizer file by its content (what ``corpustok.load`` does before it picks a
reader): the formats it knows, the files people hand over by mistake, and a one-line reason
for each refusal."""
import json
from itertools import islice

from corpustok.formats.hf_spbpe import is_spbpe_doc, spbpe_problem
from corpustok.formats.hf_unigram import unigram_problem
from corpustok.sentencepiece.model_file import ProtoError, read_varint
from corpustok.vocab import is_id, short

# ---- recognising a file by its content (corpustok.load) ------------------------------------
FORMATS = ("a corpustok .json, an HF tokenizer.json (WordPiece, BPE or Unigram), a "
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
    "WordLevel": "a WordLevel model (one id per whole word)",
}


def hf_model_problem(doc):
    """Why an HF ``tokenizer.json`` (parsed) has a model corpustok does not run, naming the
    model type, else None: a WordLevel model, any other type but WordPiece, BPE and Unigram,
    a Unigram model of a shape we do not run
    (:func:`corpustok.formats.hf_unigram.unigram_problem`), or a SentencePiece-style BPE (``byte_fallback``, or spaces as ``▁`` through a
    Metaspace pre-tokenizer or a normalizer) of a shape we do not encode exactly
    (:func:`corpustok.formats.hf_spbpe.spbpe_problem`; Mistral v0.1's, Llama 2's and Gemma's
    are read)."""
    model = doc.get("model")
    kind = model.get("type") if isinstance(model, dict) else None
    runs = "corpustok runs WordPiece, BPE and Unigram models"
    if kind == "Unigram":
        problem = unigram_problem(doc)
        return problem and (problem + "; corpustok runs the Unigram json of T5 and what "
                            "transformers writes for T5, mT5 and ALBERT-shaped models")
    if kind in UNSUPPORTED_MODELS:
        return f"an HF tokenizer.json with {UNSUPPORTED_MODELS[kind]}: not supported; {runs}"
    if kind == "BPE" and is_spbpe_doc(doc):
        problem = spbpe_problem(doc)
        return problem and (problem + "; corpustok runs the SentencePiece-style BPE json of "
                            "Mistral v0.1, Llama 2 and Gemma 1-3 (byte fallback, Prepend/Replace)")
    if kind == "BPE" and _sentencepiece_style(doc):
        return ("an HF tokenizer.json with a SentencePiece-style BPE model (spaces as "
                "'\u2581' through Metaspace or its decoder): not supported yet; " + runs)
    if kind is not None and kind not in ("WordPiece", "BPE", "Unigram"):
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


def check_gpt2_heads(vocab_json, merges_txt):
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
