"""Readable pure-Python references of the corpustok kernels (in the spirit of tiktoken's
``_educational.py``): each function is the plain definition that a Numba kernel is tested
against, slow, short and standard library only (no ``regex``, no kernels). The tests prove
these references against the external ones (Python's codecs, ``regex``, tiktoken and HF
``tokenizers``) in ``tests/test_reference.py``; kernel tests then compare with them.

1. Substrate codec (mirrors ``kernels/substrate_codec.py``): :func:`symbol_ids`,
   :func:`encode_symbols`, :func:`decode_symbols`, :func:`bytes_to_unicode`,
   :func:`symbol_string`.
2. GPT-2 pre-tokenization (mirrors ``kernels/split.py``): :func:`gpt2_split`.
3. Byte-level BPE (mirrors ``kernels/bpe_merge.py``, ``kernels/bpe_chunk.py`` and
   ``kernels/bpe_encode.py``): :func:`merge_ids`, :func:`encode`, :func:`decode`,
   :func:`load_gpt2`, :func:`load_hf_json`.
4. BPE training (mirrors ``kernels/chunk_count.py``, ``kernels/bpe_learn.py``):
   :func:`count_chunks`, :func:`train_bpe`.
5. BERT WordPiece (mirrors ``kernels/wordpiece_walk.py``): :func:`bert_words`,
   :func:`wordpiece_word`, :func:`wordpiece`.

Character classes come from the running Python's ``unicodedata``; the ``regex`` module and HF
``tokenizers`` carry their own Unicode tables, so code points that one version assigns and the
other does not may be classed differently (the tests keep to code points both know).
"""
import json
import unicodedata
from collections import Counter

SUBSTRATES = ("utf8", "utf16", "ube")
SECOND = 256  # first id of UBE's second (UTF-16LE) alphabet
PUA_BASE = 0xE100  # symbol string of second-alphabet byte b: chr(PUA_BASE + b)
REPLACEMENT = "\ufffd"


# --- 1. substrate codec ------------------------------------------------------------------
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


# --- 2. GPT-2 pre-tokenization -------------------------------------------------------------
# ``\s`` of the regex module is the Unicode White_Space property (not ``str.isspace``, which
# adds U+001C..U+001F).
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                        "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def char_class(ch):
    """``"L"`` (``\\p{L}``), ``"N"`` (``\\p{N}``), ``"S"`` (``\\s``) or ``"O"``: every
    character is in exactly one."""
    major = unicodedata.category(ch)[0]
    if major in "LN":
        return major
    return "S" if ch in WHITE_SPACE else "O"


def _run(text, i, cls):
    """End of the run of class ``cls`` starting at ``i``."""
    while i < len(text) and char_class(text[i]) == cls:
        i += 1
    return i


def gpt2_split(text):
    """``regex.findall(GPT2_PATTERN, text)`` written out: at each position the first
    alternative of ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|
    \\s+(?!\\S)|\\s+`` that matches wins, each ``+`` taking the longest run."""
    chunks, i = [], 0
    while i < len(text):
        end = next((i + len(c) for c in CONTRACTIONS if text.startswith(c, i)), None)
        if end is None:
            j = i + 1 if text[i] == " " and i + 1 < len(text) else i
            if char_class(text[j]) != "S":  # ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
                end = _run(text, j, char_class(text[j]))
            else:
                end = _run(text, i, "S")
                if end < len(text) and end - i > 1:  # `\s+(?!\S)` backs off one character
                    end -= 1
        chunks.append(text[i:end])
        i = end
    return chunks


# --- 3. byte-level BPE encode and decode -----------------------------------------------------
def merge_ids(ids, ranks):
    """GPT-2's ``bpe()`` on ids: merge every occurrence (left to right) of the pair of lowest
    rank, repeat until no pair has a rank. ``ranks``: ``{(left, right): (rank, new_id)}``."""
    ids = list(ids)
    while True:
        found = [(ranks[p][0], p) for p in zip(ids, ids[1:]) if p in ranks]
        if not found:
            return ids
        a, b = min(found)[1]
        ids = merge_pair(ids, a, b, ranks[(a, b)][1])


def merge_pair(ids, a, b, new):
    """``ids`` with every occurrence of the pair ``(a, b)`` replaced by ``new``, left to
    right without overlap (``a a a`` merges as ``aa a``)."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def premerge(ids, ranks, rounds=1, below=None):
    """``ids`` with the pairs BPE provably merges before anything else touches their tokens
    merged, in ``rounds`` passes at most (the encoder runs one: ``kernels/bpe_premerge.py``);
    BPE on the result equals BPE on ``ids``. ``ranks`` as for
    :func:`merge_ids`. A pair of rank ``r`` qualifies when every pair holding the token it
    makes, every pair that could join its left token to what ends as the token before it ends
    and every pair that could join its right token to what starts as the token after it
    starts rank above ``r``; tokens end and start in base tokens, those no pair makes. With
    ``below`` (the kernel's table size), a pair next to or of an id from ``below`` up never
    qualifies."""
    made = {new for _, new in ranks.values()}
    ends = {x: (x, x) for pair in ranks for x in pair if x not in made}  # first, last base id
    ends |= {x: (x, x) for x in ids if x not in made}
    changed = True
    while changed:
        changed = False
        for (a, b), (_, t) in ranks.items():
            if t not in ends and a in ends and b in ends:
                ends[t] = (ends[a][0], ends[b][1])
                changed = True

    def lowest(holds):
        return min((r for pair, (r, _) in ranks.items() if holds(*pair)), default=float("inf"))

    def qualifies(i):
        if below is not None and max(ids[max(i - 1, 0):i + 3]) >= below:
            return False
        (x, y), (r, t) = ids[i:i + 2], ranks[tuple(ids[i:i + 2])]
        before = ends[ids[i - 1]][1] if i > 0 else None
        after = ends[ids[i + 2]][0] if i + 2 < len(ids) else None
        return (lowest(lambda a, b: t in (a, b)) > r
                and lowest(lambda a, b: b == x and a in ends and ends[a][1] == before) > r
                and lowest(lambda a, b: a == y and b in ends and ends[b][0] == after) > r)

    for _ in range(rounds):
        out, i = [], 0
        while i < len(ids):
            if tuple(ids[i:i + 2]) in ranks and qualifies(i):
                out.append(ranks[tuple(ids[i:i + 2])][1])
                i += 2
            else:
                out.append(ids[i])
                i += 1
        if len(out) == len(ids):
            break
        ids = out
    return list(ids)


def merge_ranks(vocab, merges):
    """``{(left_id, right_id): (rank, merged_id)}`` of a vocabulary and its merge list (a
    pair listed twice keeps its first rank)."""
    ranks = {}
    for r, (a, b) in enumerate(merges):
        ranks.setdefault((vocab[a], vocab[b]), (r, vocab[a + b]))
    return ranks


def encode(text, vocab, merges, substrate="utf8", ranks=None):
    """Ids of ``text``: GPT-2 chunks, each mapped to the vocabulary ids of its symbol strings
    and merged by rank. ``vocab``: token string -> id, ``merges``: ``(left, right)`` strings
    in rank order (as :func:`load_gpt2` or a trainer returns them); pass ``ranks`` (from
    :func:`merge_ranks`) to reuse them between calls. Special tokens are plain text."""
    ranks = merge_ranks(vocab, merges) if ranks is None else ranks
    out = []
    for chunk in gpt2_split(text):
        out += merge_ids([vocab[s] for s in symbol_string(symbol_ids(chunk, substrate))], ranks)
    return out


def decode(ids, id_to_token, substrate="utf8", special_tokens=()):
    """Text of token ids: the symbols of the tokens' strings decoded by
    :func:`decode_symbols`; a special token ends the pending run and stands for itself.
    ``id_to_token``: a function id -> token string (such as ``tokens.__getitem__``)."""
    index = {s: k for k, s in enumerate(SYMBOL_STRINGS)}
    out, run = [], []
    for i in ids:
        token = id_to_token(i)
        if token in special_tokens:
            out += [decode_symbols(run, substrate), token]
            run = []
        else:
            run += [index[ch] for ch in token]
    return "".join(out) + decode_symbols(run, substrate)


def load_gpt2(vocab_json, merges_txt):
    """``(vocab, merges)`` of GPT-2-style files: ``vocab.json`` (token -> id) and
    ``merges.txt`` (an optional ``#version`` line, then one ``left right`` pair a line)."""
    with open(vocab_json, encoding="utf-8") as f:
        vocab = json.load(f)
    with open(merges_txt, encoding="utf-8") as f:
        lines = f.read().splitlines()
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    return vocab, [tuple(ln.split(" ")) for ln in lines if ln]


def load_hf_json(path):
    """``(vocab, merges)`` of the BPE model of an HF ``tokenizer.json`` (merges written as
    ``"left right"`` strings or as ``[left, right]`` lists)."""
    with open(path, encoding="utf-8") as f:
        model = json.load(f)["model"]
    return model["vocab"], [tuple(m.split(" ") if isinstance(m, str) else m)
                            for m in model["merges"]]


# --- 4. BPE training -------------------------------------------------------------------------
def count_chunks(texts, split=gpt2_split):
    """``{chunk: count}`` over the chunks of every text (``None`` texts skipped)."""
    return dict(Counter(c for t in texts if t is not None for c in split(t)))


def train_bpe(counts, vocab_size, substrate="ube", min_frequency=0, special_tokens=()):
    """``(vocab, merges)`` as HF ``BpeTrainer`` learns them from ``{chunk: count}`` (each
    chunk a word spelled in the substrate's symbol strings, ``initial_alphabet`` = the whole
    alphabet, no normalizer, no pre-tokenizer).

    Ids: the special tokens, the alphabet sorted by code point (a string a special token
    holds keeps that id), then merged tokens in creation order. Each step recounts every pair
    (overlapping windows count, weighted by the chunk's count) and merges the most frequent
    one, the smallest ``(left_id, right_id)`` on ties, into every word (left to right, no
    overlap); a merged string that already exists keeps its id. Stops at ``vocab_size``
    entries, when no pair is left or when the best count is below ``max(1, min_frequency)``.

    HF updates pair counts incrementally through a lazy heap whose entries hold word lists,
    and leaves a merged pair's count stale; that equals this recount because every
    occurrence of a token string is created in the same step (an occurrence of a token is
    built only from symbols never merged with their neighbours, and those evolve the same
    way wherever they stand), so each pair has a single heap entry covering all its words
    and a merged pair never comes back.
    """
    tokens = list(dict.fromkeys(special_tokens))
    alphabet = SYMBOL_STRINGS[:512 if substrate == "ube" else 256]
    tokens += [s for s in sorted(alphabet) if s not in tokens]
    ids = {t: i for i, t in enumerate(tokens)}
    words = [([ids[s] for s in symbol_string(symbol_ids(chunk, substrate))], n)
             for chunk, n in counts.items()]
    merges = []
    while len(tokens) < vocab_size:
        pairs = Counter()
        for w, n in words:
            for p in zip(w, w[1:]):
                pairs[p] += n
        if not pairs:
            break
        (a, b), best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        if best < max(1, min_frequency):
            break
        merged = tokens[a] + tokens[b]
        if merged not in ids:
            ids[merged] = len(tokens)
            tokens.append(merged)
        merges.append((tokens[a], tokens[b]))
        words = [(merge_pair(w, a, b, ids[merged]), n) for w, n in words]
    return ids, merges


# --- 5. BERT WordPiece -----------------------------------------------------------------------
# The rules of HF ``tokenizers`` (BertNormalizer, BertPreTokenizer), which BertTokenizerFast
# and our kernels follow. Google's BERT ``tokenization.py`` (and the slow ``BertTokenizer``)
# differ in three places: they also remove unassigned code points (Cn), space U+2B820..U+2B91F
# as CJK, and lowercase whole words (so a final capital sigma becomes U+03C2, not U+03C3).
def is_control(ch):
    """Characters ``clean_text`` removes besides NUL and U+FFFD: categories Cc, Cf and Co,
    except tab, newline and carriage return."""
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Co")


def is_punctuation(ch):
    """BERT's punctuation: the ASCII characters ``!``..``~`` other than letters and digits,
    and the categories P*."""
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 \
        or unicodedata.category(ch)[0] == "P"


CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_chinese(ch):
    """The CJK ideograph blocks ``handle_chinese_chars`` spaces (HF's list, whose
    Extension E starts at U+2B920 where BERT's starts at U+2B820)."""
    return any(a <= ord(ch) <= b for a, b in CJK_RANGES)


def bert_words(text, lowercase=True, strip_accents=None, handle_chinese_chars=True,
               clean_text=True):
    """BERT basic tokenization: drop NUL, U+FFFD and control characters and turn whitespace
    into spaces (``clean_text``), put spaces around CJK ideographs, strip accents (NFD, then
    drop Mn; ``strip_accents=None`` means "as ``lowercase``"), lowercase each character on
    its own, then split on whitespace (Unicode White_Space, :data:`WHITE_SPACE`) and make
    each punctuation character a word of its own."""
    if clean_text:
        text = "".join(" " if ch in WHITE_SPACE else ch for ch in text
                       if ch not in "\x00\ufffd" and not is_control(ch))
    if handle_chinese_chars:
        text = "".join(f" {ch} " if is_chinese(ch) else ch for ch in text)
    if lowercase if strip_accents is None else strip_accents:
        text = "".join(ch for ch in unicodedata.normalize("NFD", text)
                       if unicodedata.category(ch) != "Mn")
    if lowercase:
        text = "".join(ch.lower() for ch in text)
    words = []
    for piece in "".join(" " if ch in WHITE_SPACE else ch for ch in text).split(" "):
        word = ""
        for ch in piece:
            if is_punctuation(ch):
                words += [word, ch] if word else [ch]
                word = ""
            else:
                word += ch
        if word:
            words.append(word)
    return words


def wordpiece_word(word, vocab, unk_token="[UNK]", prefix="##", max_chars=100):
    """WordPiece on one word: greedy longest match first, later pieces spelled with
    ``prefix``; the whole word is ``unk_token`` if some position matches nothing or the word
    has more than ``max_chars`` characters. ``vocab``: token -> id."""
    if len(word) > max_chars:
        return [vocab[unk_token]]
    out, start = [], 0
    while start < len(word):
        end = next((e for e in range(len(word), start, -1)
                    if (prefix if start else "") + word[start:e] in vocab), None)
        if end is None:
            return [vocab[unk_token]]
        out.append(vocab[(prefix if start else "") + word[start:end]])
        start = end
    return out


def wordpiece(text, vocab, unk_token="[UNK]", prefix="##", max_chars=100, **options):
    """Ids of ``text`` as HF ``BertTokenizerFast`` gives them without ``[CLS]``/``[SEP]``:
    :func:`bert_words` (``options`` are its keywords) then :func:`wordpiece_word`."""
    return [i for w in bert_words(text, **options)
            for i in wordpiece_word(w, vocab, unk_token, prefix, max_chars)]
