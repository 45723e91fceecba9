"""Byte-level BPE encode, decode and training (mirrors ``kernels/bpe/merge.py``,
``kernels/bpe/chunk.py``, ``kernels/bpe/encode.py``, ``kernels/bpe/chunk_count.py`` and
``kernels/bpe/learn.py``)."""
import json
from collections import Counter

from corpustok.reference.gpt2_split import gpt2_split
from corpustok.reference.substrate import (SYMBOL_STRINGS, decode_symbols, symbol_ids,
                                          symbol_string)


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
    merged, in ``rounds`` passes at most (the encoder runs one: ``kernels/bpe/premerge.py``);
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
