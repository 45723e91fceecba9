"""HF ``tokenizers``' Unigram pipeline in plain Python: the readable reference of the kernels
in :mod:`corpustok.kernels.sentencepiece.hf_normalize` and ``.hf_unigram`` (decision 0037).

For one text, as ``Tokenizer.encode(text, add_special_tokens=False).ids`` does:

1. **Added tokens** are cut out of the raw text, leftmost-longest (:func:`split_added`); each
   is its id. The text between them is a *segment*, normalized and split alone.
2. **Normalizer** steps in order (:func:`normalize`): ``Precompiled`` works on extended
   grapheme clusters (``regex``'s ``\\X``): a cluster of fewer than 6 bytes is replaced whole
   by the replacement of the *shortest* charsmap key that begins it; else (or when no key
   begins it) each character by the replacement of its own key, or kept. ``Strip`` removes
   White_Space at either end, ``Replace`` a string (leftmost, non-overlapping) or a run of 2+
   spaces (T5's ``" {2,}"``). ALBERT's ``NFKD``, ``StripAccents`` and ``Lowercase`` are
   per-character maps read from ``tokenizers`` itself (:func:`~corpustok.sentencepiece.
   hf_unicode.hf_unicode_maps`, decision 0039), NFKD then sorting each run of non-starters
   stably by canonical combining class.
3. **Pre-tokenizer** (:func:`words`): ``WhitespaceSplit`` cuts at White_Space and drops it;
   ``Metaspace`` writes ``" "`` as U+2581, prepends U+2581 to a piece that does not begin with
   one (``always``; ``first``: only a piece that begins the text; ``never``), and with
   ``split`` cuts before every U+2581.
4. **Unigram** (:func:`viterbi`) on each word: the best path by float64 sums from 0, offers
   taken in order of start then length, a later one only when strictly greater; a character
   that no one-character token covers offers the unknown id at ``min score - 10``; adjacent
   unknown pieces are fused into one string, then each string is its token's id, else its
   bytes' ``<0xXX>`` tokens (byte fallback, when all exist), else the unknown id.
"""
import base64

import regex

from corpustok.formats.hf_unigram import hf_score, normalizer_steps, pre_tokenizer, prepend_scheme
from corpustok.sentencepiece.hf_unicode import hf_unicode_maps
from corpustok.sentencepiece.model_file import split_charsmap

__all__ = ["Reference", "WHITE_SPACE"]

SPACE = "\u2581"
UNK_PENALTY = 10.0
# Rust's char::is_whitespace: the White_Space property (stable since Unicode 6.3)
WHITE_SPACE = frozenset(map(chr, [*range(9, 14), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                                  0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))


def first_key(trie, strings, data):
    """The replacement of the *shortest* charsmap key that begins ``data`` (bytes), or None:
    HF's ``Precompiled.transform`` (the first of ``common_prefix_search``, which stops at a NUL
    byte)."""
    def offset(unit):
        return (unit >> 10) << ((unit & 512) >> 6)

    pos = offset(int(trie[0]))
    for c in data:
        if c == 0:
            return None
        pos ^= c
        if pos >= len(trie):
            return None
        unit = int(trie[pos])
        if unit & 0x800000FF != c:
            return None
        pos ^= offset(unit)
        if unit >> 8 & 1:
            value = int(trie[pos]) & 0x7FFFFFFF
            return strings[value:strings.index(b"\x00", value)].decode("utf-8")
    return None


class Reference:
    """The pipeline of a parsed Unigram ``tokenizer.json`` (accepted by
    :func:`corpustok.formats.hf_unigram.unigram_problem`)."""

    def __init__(self, doc):
        model = doc["model"]
        self.vocab = [(t, hf_score(s)) for t, s in model["vocab"]]  # as HF reads them
        self.index = {t: i for i, (t, _) in enumerate(self.vocab)}  # the last id wins, as HF
        self.longest = max(len(t.encode()) for t, _ in self.vocab)
        self.unk_id = model["unk_id"]
        self.unk_score = min(s for _, s in self.vocab) - UNK_PENALTY
        self.byte_fallback = bool(model.get("byte_fallback"))
        self.steps = normalizer_steps(doc)
        self.charsmaps = {}
        for k, step in enumerate(self.steps):
            if step["type"] == "Precompiled":
                blob = base64.b64decode(step["precompiled_charsmap"])
                self.charsmaps[k] = split_charsmap(blob, "precompiled_charsmap")
        self.whitespace_split, meta = pre_tokenizer(doc)
        self.prepend = prepend_scheme(meta)
        self.split = meta.get("split", True)
        self.added = {t["content"]: t["id"] for t in doc.get("added_tokens") or []
                      if t["content"]}

    # ---- 1. added tokens --------------------------------------------------------------------
    def split_added(self, text):
        """``[(segment str, None) | (None, id)]``: the added tokens, leftmost-longest."""
        out, at, i = [], 0, 0
        longest = max((len(c) for c in self.added), default=0)
        while i < len(text):
            for n in range(min(longest, len(text) - i), 0, -1):
                tid = self.added.get(text[i:i + n])
                if tid is not None:
                    if i > at:
                        out.append((text[at:i], None))
                    out.append((None, tid))
                    i += n
                    at = i
                    break
            else:
                i += 1
        if at < len(text):
            out.append((text[at:], None))
        return out

    # ---- 2. normalizer ----------------------------------------------------------------------
    def precompiled(self, k, text):
        trie, strings = self.charsmaps[k]
        out = []
        for cluster in regex.findall(r"\X", text):
            raw = cluster.encode()
            if len(raw) < 6:
                rep = first_key(trie, strings, raw)
                if rep is not None:
                    out.append(rep)
                    continue
            for c in cluster:
                rep = first_key(trie, strings, c.encode())
                out.append(c if rep is None else rep)
        return "".join(out)

    @staticmethod
    def nfkd(text):
        """Each character by its decomposition, then each run of non-starters sorted (stably)
        by canonical combining class."""
        maps = hf_unicode_maps()
        out, run = [], []
        for c in "".join(maps.nfkd.get(c, c) for c in text):
            if c in maps.ccc:
                run.append(c)
            else:
                out.extend(sorted(run, key=maps.ccc.get))
                out.append(c)
                run = []
        return "".join(out + sorted(run, key=maps.ccc.get))

    @staticmethod
    def strip_accents(text):
        marks = hf_unicode_maps().marks
        return "".join(c for c in text if c not in marks)

    @staticmethod
    def lowercase(text):
        lower = hf_unicode_maps().lower
        return "".join(lower.get(c, c) for c in text)

    def normalize(self, text):
        for k, step in enumerate(self.steps):
            kind = step["type"]
            if kind == "Precompiled":
                text = self.precompiled(k, text)
            elif kind == "NFKD":
                text = self.nfkd(text)
            elif kind == "StripAccents":
                text = self.strip_accents(text)
            elif kind == "Lowercase":
                text = self.lowercase(text)
            elif kind == "Strip":
                a, b = 0, len(text)
                if step.get("strip_left"):
                    while a < b and text[a] in WHITE_SPACE:
                        a += 1
                if step.get("strip_right"):
                    while b > a and text[b - 1] in WHITE_SPACE:
                        b -= 1
                text = text[a:b]
            elif "String" in step["pattern"]:
                text = text.replace(step["pattern"]["String"], step["content"])
            else:  # the regex " {2,}"
                text = regex.sub(" {2,}", lambda m: step["content"], text)
        return text

    # ---- 3. pre-tokenizer -------------------------------------------------------------------
    def words(self, text, at_start):
        """The words of a normalized segment (``at_start``: it begins the text)."""
        if self.whitespace_split:
            pieces = [(m.start(), m.group()) for m in
                      regex.finditer("[^" + "".join(sorted(WHITE_SPACE)) + "]+", text)]
        else:
            pieces = [(0, text)] if text else []
        out = []
        for start, piece in pieces:
            piece = piece.replace(" ", SPACE)
            if not piece.startswith(SPACE) and (
                    self.prepend == "always" or
                    (self.prepend == "first" and at_start and start == 0)):
                piece = SPACE + piece
            if self.split:
                cuts = [i for i, c in enumerate(piece) if c == SPACE and i > 0]
                bounds = [0] + cuts + [len(piece)]
                out.extend(piece[a:b] for a, b in zip(bounds, bounds[1:]) if b > a)
            else:
                out.append(piece)
        return out

    # ---- 4. the model -----------------------------------------------------------------------
    def viterbi(self, word):
        """The token strings of one word (before ids), fused unknowns as one string."""
        raw = word.encode()
        n = len(raw)
        score = [0.0] * (n + 1)
        start = [None] * (n + 1)
        ident = [0] * (n + 1)
        at = 0
        while at < n:
            here = score[at]
            mblen = len(raw[at:at + 4].decode("utf-8", "ignore")[:1].encode())
            single = False
            for end in range(at + 1, min(n, at + self.longest) + 1):
                tid = self.index.get(raw[at:end].decode("utf-8", "ignore")
                                     if _whole(raw, at, end) else None)
                if tid is None:
                    continue
                cand = self.vocab[tid][1] + here
                if start[end] is None or cand > score[end]:
                    score[end], start[end], ident[end] = cand, at, tid
                single = single or end - at == mblen
            if not single:
                end = at + mblen
                cand = self.unk_score + here
                if start[end] is None or cand > score[end]:
                    score[end], start[end], ident[end] = cand, at, self.unk_id
            at += mblen
        pieces, fused, end = [], [], n
        while end > 0:
            a = start[end]
            if ident[end] == self.unk_id:
                fused.append(raw[a:end])
            else:
                if fused:
                    pieces.append(b"".join(reversed(fused)))
                    fused = []
                pieces.append(raw[a:end])
            end = a
        if fused:
            pieces.append(b"".join(reversed(fused)))
        return [p.decode("utf-8") for p in reversed(pieces)]

    def to_ids(self, pieces):
        ids = []
        for p in pieces:
            tid = self.index.get(p)
            if tid is not None:
                ids.append(tid)
                continue
            if self.byte_fallback:
                byte_ids = [self.index.get(f"<0x{b:02X}>") for b in p.encode()]
                if None not in byte_ids:
                    ids.extend(byte_ids)
                    continue
            ids.append(self.unk_id)
        return ids

    def encode(self, text):
        """HF's ``encode(text, add_special_tokens=False).ids`` (``text``: a str without lone
        surrogates)."""
        ids = []
        at = 0
        for segment, tid in self.split_added(text):
            if tid is not None:
                ids.append(tid)
                at += 1
                continue
            for word in self.words(self.normalize(segment), at == 0):
                ids.extend(self.to_ids(self.viterbi(word)))
            at += 1
        return ids


def _whole(raw, a, b):
    """Whether ``raw[a:b]`` ends at a character boundary (a token is whole characters)."""
    return b == len(raw) or raw[b] & 0xC0 != 0x80
