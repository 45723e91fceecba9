"""Which HF ``tokenizer.json`` files are SentencePiece-style BPE, and which of them corpustok
encodes exactly (:class:`corpustok.sentencepiece.hf_json.HfSentencePieceTokenizer`); plain
Python, so recognising a file imports no kernel."""
import json

from corpustok.formats.metaspace import metaspace_problem, prepend_scheme

__all__ = ["is_spbpe_doc", "metaspace", "prepends", "spbpe_problem"]

SPACE = "\u2581"
STEPS = ("Replace", "ByteFallback", "Fuse", "Strip")


def _normalizer_steps(doc):
    """The normalizer as a list of steps, or None when it is not one we run."""
    norm = doc.get("normalizer")
    if not isinstance(norm, dict):
        return None
    steps = norm.get("normalizers") if norm.get("type") == "Sequence" else [norm]
    return steps if isinstance(steps, list) else None


def _is_prepend(step):
    return isinstance(step, dict) and step.get("type") == "Prepend" and \
        step.get("prepend") == SPACE


def _is_space_replace(step):
    return isinstance(step, dict) and step.get("type") == "Replace" and \
        step.get("pattern") == {"String": " "} and step.get("content") == SPACE


def prepends(doc):
    """Whether the (accepted) normalizer prepends U+2581 to each segment."""
    steps = _normalizer_steps(doc)
    return bool(steps) and _is_prepend(steps[0])


def is_spbpe_doc(doc):
    """Whether a parsed HF ``tokenizer.json`` is a SentencePiece-style BPE: a BPE model with
    byte fallback, or a normalizer that writes spaces as U+2581."""
    model = doc.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        return False
    steps = _normalizer_steps(doc) or []
    return bool(model.get("byte_fallback")) or any(_is_space_replace(s) for s in steps)


def spbpe_problem(doc):
    """Why a SentencePiece-style BPE document (:func:`is_spbpe_doc`) is not one we encode
    exactly, in one line; None when it is."""
    model = doc["model"]
    what = "an HF tokenizer.json with a SentencePiece-style BPE model"
    if not model.get("byte_fallback"):
        return f"{what} without byte_fallback: not supported"
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            return f"{what} with {key} {model[key]!r}: not supported"
    if model.get("dropout"):
        return f"{what} with dropout: not supported (random merges)"
    if model.get("ignore_merges"):
        return f"{what} with ignore_merges: not supported"
    pre = doc.get("pre_tokenizer")
    if isinstance(pre, dict) and pre.get("type") == "Metaspace":
        return _metaspace_problem(doc, what)
    steps = _normalizer_steps(doc)
    if steps is None or not (
            [_is_space_replace(s) for s in steps] == [True] or
            (len(steps) == 2 and _is_prepend(steps[0]) and _is_space_replace(steps[1]))):
        return (f"{what} whose normalizer is not Replace(' ', '\u2581') or Prepend('\u2581') + "
                f"Replace(' ', '\u2581') (Mistral v0.1, Gemma): not supported; found "
                f"{json.dumps(doc.get('normalizer'))[:120]}")
    pre = doc.get("pre_tokenizer")
    if pre is not None and not (
            isinstance(pre, dict) and pre.get("type") == "Split" and
            pre.get("pattern") == {"String": " "} and not pre.get("invert")):
        return (f"{what} with the pre-tokenizer {json.dumps(pre)[:120]}: not supported "
                f"(only none, or Gemma's Split(' '), which never splits after the Replace)")
    return _decoder_and_added_problem(doc, what)


def metaspace(doc):
    """``(prepend scheme, split)`` of a Metaspace-style document (its pre-tokenizer), else
    None."""
    pre = doc.get("pre_tokenizer")
    if not (isinstance(pre, dict) and pre.get("type") == "Metaspace"):
        return None
    return prepend_scheme(pre), bool(pre.get("split", True))


def _metaspace_problem(doc, what):
    """The Metaspace shape (what transformers writes for Llama/Mistral with legacy=False):
    no normalizer, the pre-tokenizer Metaspace('▁', first/always/never, split or not)."""
    if doc.get("normalizer") is not None:
        return (f"{what} with a Metaspace pre-tokenizer after the normalizer "
                f"{json.dumps(doc.get('normalizer'))[:80]}: not supported (runs: none)")
    problem = metaspace_problem(doc["pre_tokenizer"], "pre-tokenizer")
    if problem:
        return f"{what} with {problem}: not supported"
    return _decoder_and_added_problem(doc, what)


def _decoder_and_added_problem(doc, what):
    dec = doc.get("decoder")
    dsteps = dec.get("decoders") if isinstance(dec, dict) and dec.get("type") == "Sequence" \
        else [dec]
    if not isinstance(dsteps, list) or not all(
            isinstance(s, dict) and s.get("type") in STEPS for s in dsteps) or \
            any(s["type"] == "Replace" and "String" not in (s.get("pattern") or {})
                for s in dsteps):
        return (f"{what} with the decoder {json.dumps(dec)[:120]}: not supported (Replace, "
                f"ByteFallback, Fuse and Strip steps only)")
    for t in doc.get("added_tokens") or []:
        if t.get("normalized") or t.get("lstrip") or t.get("rstrip") or t.get("single_word"):
            return (f"{what} whose added token {t.get('content')!r} is normalized, lstrip, "
                    "rstrip or single_word: not supported")
    return None
