"""The substrate codec (mirrors ``kernels/substrate.py``): text <-> base symbols of the ``utf8``,
``utf16`` and ``ube`` substrates, and the GPT-2 byte-to-unicode table."""


SUBSTRATES = ("utf8", "utf16", "ube")
SECOND = 256  # first id of UBE's second (UTF-16LE) alphabet
PUA_BASE = 0xE100  # symbol string of second-alphabet byte b: chr(PUA_BASE + b)
REPLACEMENT = "\ufffd"


def bytes_to_unicode():
    """GPT-2's ``bytes_to_unicode`` (openai/gpt-2 ``encoder.py``) as a list in byte order:
    printable Latin-1 bytes are their own character, the other 68 become U+0100.. in order."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
          *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, map(chr, cs)))
    return [table[b] for b in range(256)]


SYMBOL_STRINGS = bytes_to_unicode() + [chr(PUA_BASE + b) for b in range(256)]


def _check_substrate(substrate):
    if substrate not in SUBSTRATES:
        raise ValueError(f"unknown substrate {substrate!r}; expected one of {SUBSTRATES}")


def symbol_ids(text, substrate="ube"):
    """Base symbol ids of ``text``, one character at a time: ``utf8`` gives its UTF-8 bytes,
    ``utf16`` its UTF-16LE bytes, ``ube`` the UTF-8 bytes of 1-2 byte characters and
    ``256 + b`` for each UTF-16LE byte ``b`` of 3-4 byte characters."""
    _check_substrate(substrate)
    ids = []
    for ch in text:
        u8 = ch.encode("utf-8")
        if substrate == "utf8" or (substrate == "ube" and len(u8) <= 2):
            ids.extend(u8)
        else:
            base = SECOND if substrate == "ube" else 0
            ids.extend(base + b for b in ch.encode("utf-16-le"))
    return ids


def encode_symbols(docs, substrate="ube"):
    """``(symbols, offsets, replaced)`` of a batch of UTF-8 byte strings, as the kernel's
    ``encode_symbols`` returns them: each document is read as ``decode("utf-8", "replace")``
    and ``replaced[d]`` counts the U+FFFD that decoding made (those in the text minus the
    well-formed EF BF BD sequences of the bytes: the lead byte EF is never a continuation,
    so each such sequence decodes to one U+FFFD of its own)."""
    symbols, offsets, replaced = [], [0], []
    for raw in docs:
        text = raw.decode("utf-8", "replace")
        symbols.extend(symbol_ids(text, substrate))
        offsets.append(len(symbols))
        replaced.append(text.count(REPLACEMENT) - raw.count(REPLACEMENT.encode()))
    return symbols, offsets, replaced


def decode_symbols(ids, substrate="ube"):
    """Text of symbol ids: maximal runs of one alphabet, each decoded by Python's codec with
    ``errors="replace"`` (``utf16`` and UBE's second alphabet as UTF-16LE, the rest as
    UTF-8). Runs end exactly where the alphabet switches ("flush on switch")."""
    _check_substrate(substrate)
    first = "utf-16-le" if substrate == "utf16" else "utf-8"
    out, run, second = [], [], False
    for s in ids:
        if (s >= SECOND) != second:
            out.append(bytes(run).decode("utf-16-le" if second else first, "replace"))
            run, second = [], s >= SECOND
        run.append(s & 0xFF)
    out.append(bytes(run).decode("utf-16-le" if second else first, "replace"))
    return "".join(out)


def symbol_string(ids):
    """One character per symbol id (the form vocabularies spell tokens in)."""
    return "".join(SYMBOL_STRINGS[i] for i in ids)
