"""HF's ``Metaspace`` step (a pre-tokenizer or decoder) as both SentencePiece-style json
readers see it (:mod:`corpustok.formats.hf_unigram`, :mod:`corpustok.formats.hf_spbpe`)."""

SPACE = "\u2581"


def prepend_scheme(meta):
    """HF's prepend scheme of a Metaspace step (``add_prefix_space: false`` is ``never``)."""
    if meta.get("add_prefix_space") is False:
        return "never"
    return meta.get("prepend_scheme", "always")


def metaspace_problem(meta, where):
    """Why a Metaspace step is not one corpustok runs (a replacement other than U+2581, an
    unknown prepend scheme), in a phrase; None when it is."""
    if meta.get("replacement") != SPACE:
        return f"a Metaspace {where} with replacement {meta.get('replacement')!r} (runs: '{SPACE}')"
    scheme = prepend_scheme(meta)
    if scheme not in ("always", "first", "never"):
        return f"a Metaspace {where} with prepend_scheme {scheme!r}"
    return None
