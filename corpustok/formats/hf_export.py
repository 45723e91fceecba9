"""Export a byte-level BPE tokenizer as an HF ``tokenizer.json`` that gives the same ids.

Only the ``utf8`` substrate has an HF form: its symbol strings are GPT-2's byte characters,
which is what HF's ``ByteLevel`` pre-tokenizer and decoder produce and read. The document is
the inverse of :func:`corpustok.formats.hf_bpe_model`: the split becomes
``ByteLevel(use_regex=true)`` (GPT-2's own regex) or ``Sequence[Split(Regex(P), Isolated),
ByteLevel(use_regex=false)]``, whole-chunk emission becomes ``ignore_merges`` and NFC the
normalizer. tiktoken's merge rule (``merges`` None) is written as the ranked merge list of
:func:`rank_merges`, as ``transformers`` converts tiktoken files.

Special tokens stay in the model vocab as well as in ``added_tokens``: HF does not take an
added token's id from the file but gives it the model vocab's id (or the next free one), so
only the vocab keeps ids that are not contiguous after the plain tokens.
"""
import json
import os

from corpustok.pretokenize.patterns import pattern_named
from corpustok.pretokenize.python_split import oniguruma_pattern

__all__ = ["hf_document", "save_hf", "rank_merges"]

_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}


def rank_merges(ranks):
    """HF merges equal to tiktoken's rule on ``ranks`` ({symbol string: rank}): tiktoken
    merges any adjacent pair whose concatenation is a token, lowest rank first, so every
    split of a token into two tokens is a merge, ranked by the token's rank (then by the
    parts' ranks, as ``transformers``' TikTokenConverter). Listing only each token's last
    merge in isolation (the older conversion) misses the splits that arise only in context,
    and some text then encodes differently (Llama 3's ranks)."""
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        splits = [(ranks[a], ranks[b], a, b) for a, b in
                  ((token[:k], token[k:]) for k in range(1, len(token)))
                  if a in ranks and b in ranks]
        merges += [(a, b) for _, _, a, b in sorted(splits)]
    return merges


def _pre_tokenizer(pretokenizer):
    if isinstance(pretokenizer, dict):  # an HF pre_tokenizer object: ensure the byte mapping
        steps = pretokenizer.get("pretokenizers") if pretokenizer.get("type") == "Sequence" \
            else [pretokenizer]
        if steps[-1].get("type") == "ByteLevel":
            return pretokenizer
        return {"type": "Sequence", "pretokenizers": [*steps,
                                                      {**_BYTE_LEVEL, "use_regex": False}]}
    if pretokenizer == "gpt2":  # HF's ByteLevel regex is GPT-2's pattern
        return {**_BYTE_LEVEL, "use_regex": True}
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": oniguruma_pattern(pattern_named(pretokenizer))},
         "behavior": "Isolated", "invert": False},
        {**_BYTE_LEVEL, "use_regex": False}]}


def hf_document(tok):
    """The HF ``tokenizer.json`` document (a dict) of a ``utf8`` :class:`BytePairTokenizer`;
    ValueError for the other substrates, whose symbols HF has no pre-tokenizer or decoder
    for."""
    d = tok.to_dict()
    if d.get("type") != "bpe":
        raise ValueError(f"hf_document writes byte-level BPE tokenizers, not a "
                         f"{d.get('type')!r} tokenizer")
    substrate = d["substrate"]
    if substrate == "ube":
        raise ValueError(
            "the 'ube' substrate cannot be written as an HF tokenizer.json: HF's ByteLevel "
            "pre-tokenizer and decoder map UTF-8 bytes only, and UBE writes characters of 3-4 "
            "UTF-8 bytes as UTF-16LE bytes in a second 256-symbol alphabet, which no HF "
            "pre-tokenizer produces and no HF decoder reads; train or load with "
            "substrate='utf8' to export")
    if substrate != "utf8":
        raise ValueError(
            f"the {substrate!r} substrate cannot be written as an HF tokenizer.json: its "
            "symbols are UTF-16LE bytes of the text's code units, and HF's ByteLevel "
            "pre-tokenizer and decoder map UTF-8 bytes only; train or load with "
            "substrate='utf8' to export")
    vocab = dict(sorted(d["vocab"].items(), key=lambda kv: kv[1]))
    specials = set(d["special_tokens"])
    merges = d["merges"]
    if merges is None:
        merges = rank_merges({t: i for t, i in vocab.items() if t not in specials})
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for t, i in vocab.items() if t in specials]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"} if d.get("normalize") == "NFC" else None,
        "pre_tokenizer": _pre_tokenizer(d["pre_tokenizer"]),
        "post_processor": None,
        "decoder": {**_BYTE_LEVEL, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": bool(d.get("whole_chunks")), "vocab": vocab,
                  "merges": [list(m) for m in merges]}}


def save_hf(tok, path):
    """Write :func:`hf_document` of ``tok`` to ``path`` (UTF-8 JSON), loadable by HF
    ``tokenizers.Tokenizer.from_file`` and ``transformers.PreTrainedTokenizerFast``."""
    doc = hf_document(tok)
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
