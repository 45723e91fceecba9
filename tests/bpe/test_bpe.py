"""BytePairTokenizer encode/decode against HF tokenizers, tiktoken, Python codecs and
pure-Python references of the merge kernels. GPT-2 on the whole shared corpus (``-m slow``) is
tests/parity/test_bpe_slow.py."""
import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numba import njit

import corpustok
from corpustok import reference, ube
from corpustok.arrow import utf8_batch
from corpustok.bpe.caches import seed_batch, seed_texts
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.kernels.bpe.cache import FAST_PER_SLOT
from corpustok.kernels.bpe.encode import BLOCK
from corpustok.kernels.bpe.merge import (BUCKET_MIN, GRID, N_RANK, NODE, bucket_work,
                                         build_pair_table, long_work, merge_buckets, merge_long,
                                         merge_short)
from corpustok.kernels.bpe.premerge import premerge, premerge_table
from corpustok.kernels.memory.prefetch import prefetch
from corpustok.reference import merge_ids as ref_merge
from corpustok.parallel import MIN_PART_BYTES, Schedule

from tests.conftest import (corpus_lines, emoji_texts, GPT2, hf_bpe_train, read_xz_text,
                            reference_pattern, SHARED_DATA, TEST_DATA, tiktoken_gpt2)

SAMPLE = (TEST_DATA / "bpe_sample.txt").read_bytes().decode("utf-8")
SUBSTRATES = ("utf8", "utf16", "ube")
SPECIALS = ("<|endoftext|>", "<pad>", "<pad><pad>")
GPT2_PATTERN = reference_pattern("gpt2")  # tiktoken's r50k_base/gpt2 pattern, for the oracles


# --- references (tests only) -------------------------------------------------------------
def ref_decode(tok, ids):
    """:func:`corpustok.reference.decode` with the tokenizer's table, substrate and specials."""
    return reference.decode(ids, tok.id_to_token, tok.substrate, tok.special_tokens)


def hf_bpe(vocab, merges):
    """HF's BPE model alone (no normalizer, no pre-tokenizer): the merge oracle."""
    from tokenizers import Tokenizer, models
    return Tokenizer(models.BPE(vocab, merges))


def hf_presplit_ids(hf, text, substrate):
    chunks = regex.findall(GPT2_PATTERN, text)
    if not chunks:
        return []
    return hf.encode([ube.to_symbols(c, substrate) for c in chunks], is_pretokenized=True).ids


def hf_train(texts, substrate, vocab_size, specials=()):
    """HF BpeTrainer on the GPT-2 chunks of ``texts`` mapped to symbols: (vocab, merges)."""
    counts = Counter(c for t in texts for c in regex.findall(GPT2_PATTERN, t))
    return hf_bpe_train(counts, vocab_size, substrate, special_tokens=specials)


# --- fixtures (gpt2 and hf_gpt2: tests/conftest.py) ------------------------------------------
TRAIN_TEXT = [SAMPLE * 2, "lower lowest newest widest " * 20]


@pytest.fixture(scope="module", params=SUBSTRATES)
def trained(request):
    """(substrate, HF vocab, HF merges, our tokenizer) for a small vocabulary with specials."""
    vocab, merges = hf_train(TRAIN_TEXT, request.param, 700, SPECIALS)
    return request.param, vocab, merges, BytePairTokenizer(vocab, merges, request.param,
                                                           SPECIALS)


# --- merge kernels against the reference -------------------------------------------------
@st.composite
def merge_cases(draw):
    """A random well-formed merge list (each merge joins tokens that exist before it) over a
    small alphabet, and a sequence of base ids."""
    k = draw(st.integers(2, 5))
    nmerge = draw(st.integers(0, 30))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    new_ids = list(range(k, k + nmerge))
    if draw(st.booleans()):  # merged ids not in rank order: the table keeps ranks
        rnd.shuffle(new_ids)
    ranks, tokens = {}, list(range(k))
    for _ in range(nmerge):
        pair = (rnd.choice(tokens), rnd.choice(tokens))
        if pair not in ranks:
            ranks[pair] = (len(ranks), new_ids[len(ranks)])
            tokens.append(ranks[pair][1])
    seq = draw(st.lists(st.integers(0, k - 1), max_size=300))
    return ranks, seq


@settings(max_examples=300, deadline=None)
@given(merge_cases())
def test_merge_kernels_equal_gpt2_reference(case):
    ranks, seq = case
    merges = sorted(ranks.items(), key=lambda kv: kv[1][0])
    pairs = build_pair_table([p[0] for p, _ in merges], [p[1] for p, _ in merges],
                             [v[1] for _, v in merges])
    want = ref_merge(seq, ranks)
    n = len(seq)
    ids = np.array(seq + [0], np.int32)
    m = merge_short(ids, n, pairs, np.empty(n + 1, np.int64))
    assert ids[:m].tolist() == want, "merge_short"
    ids = np.array(seq, np.int32)
    m = merge_long(ids, n, pairs, *long_work(n))
    assert ids[:m].tolist() == want, "merge_long"
    ids = np.array(seq, np.int32)
    work = bucket_work(n, pairs[2])
    m = merge_buckets(ids, n, pairs, *work)
    assert m >= 0, "merges learned in order: the buckets always follow BPE's order"
    assert ids[:m].tolist() == want, "merge_buckets"
    assert (work[0][N_RANK::NODE] == -1).all()  # no position is left holding a pair to merge


@st.composite
def rank_cases(draw):
    """Tokens over a small alphabet, each two earlier ones joined, ranked in a random order as
    a rank file may rank them (a token made from a token ranked after it), every split of a
    token into two tokens a pair of the token's rank (tiktoken's rule); and base ids."""
    k = draw(st.integers(2, 4))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    tokens = [(b,) for b in range(k)]
    for _ in range(draw(st.integers(0, 25))):
        t = rnd.choice(tokens) + rnd.choice(tokens)
        if t not in tokens and len(t) <= 6:
            tokens.append(t)
    order = list(range(k, len(tokens)))
    rnd.shuffle(order)
    rank = dict(zip(range(k, len(tokens)), order))
    index = {t: i for i, t in enumerate(tokens)}
    ranks = {(index[t[:c]], index[t[c:]]): (rank[i], i)
             for i, t in enumerate(tokens) if i >= k
             for c in range(1, len(t)) if t[:c] in index and t[c:] in index}
    seq = draw(st.lists(st.integers(0, k - 1), max_size=60))
    return ranks, seq


def leftmost_lowest(ids, ranks):
    """BPE by definition: merge the lowest-rank pair, the leftmost of equals, until none."""
    ids = list(ids)
    while True:
        found = [(ranks[p][0], k) for k, p in enumerate(zip(ids, ids[1:])) if p in ranks]
        if not found:
            return ids
        k = min(found)[1]
        ids[k:k + 2] = [ranks[(ids[k], ids[k + 1])][1]]


def premerge_tables(ranks):
    pairs = list(ranks.items())
    table = build_pair_table([p[0] for p, _ in pairs], [p[1] for p, _ in pairs],
                             [v[1] for _, v in pairs], [v[0] for _, v in pairs])
    return premerge_table(table), table[1]


def kernel_premerge(ranks, seq, tables=None, rounds=1):
    """The kernel's pass, ``rounds`` times or until one merges nothing."""
    pre, new_of_rank = tables or premerge_tables(ranks)
    ids = np.array(seq, np.int32)
    n = len(seq)
    for _ in range(rounds):
        m = premerge(ids, n, pre, new_of_rank)
        if m == n:
            break
        n = m
    return ids[:n].tolist()


@settings(max_examples=250, deadline=None)
@given(st.one_of(merge_cases(), rank_cases()))
def test_premerge_keeps_bpe_exact(case):
    """Pre-merging, then BPE, is BPE, for merges learned in order and for rank files, after
    one pass (what the encoder runs) and after passes until one merges nothing (a sequence
    of any tokens); the kernel pre-merges what the readable reference does."""
    ranks, seq = case
    want = leftmost_lowest(seq, ranks)
    for rounds in (1, 8):
        pre = reference.premerge(seq, ranks, rounds)
        assert leftmost_lowest(pre, ranks) == want
        assert kernel_premerge(ranks, seq, rounds=rounds) == pre


def test_premerge_takes_what_comes_first_and_nothing_else():
    a, b, c = 0, 1, 2
    in_order = {(a, b): (0, 3), (b, c): (1, 4), (3, c): (2, 5)}
    assert reference.premerge([a, b, c], in_order) == [3, c] == kernel_premerge(in_order, [a, b, c])
    assert reference.premerge([a, b, c], in_order, 2) == [5] == \
        kernel_premerge(in_order, [a, b, c], rounds=2)
    # (b, c) ranks below (a, b): b goes right, not left
    later = {(b, c): (0, 4), (a, b): (1, 3)}
    assert reference.premerge([a, b, c], later) == [a, 4] == kernel_premerge(later, [a, b, c])
    # the token (a, b) makes joins c at a rank below its own: pre-merging it could jump ahead
    early = {(a, b): (1, 3), (3, c): (0, 5)}
    assert reference.premerge([a, b, c], early) == [a, b, c] == kernel_premerge(early, [a, b, c])
    # equal pairs side by side: neither is provably first
    same = {(a, a): (0, 3)}
    assert reference.premerge([a, a, a], same) == [a, a, a] == kernel_premerge(same, [a, a, a])
    # an id beyond the table (as Tekken's bytes, after 1,000 specials) is never pre-merged,
    # and its neighbours are not either: nothing bounds what it may join
    far = {(a, b): (0, 3), (GRID, a): (1, GRID + 1)}
    assert kernel_premerge(far, [a, b]) == [3]
    assert kernel_premerge(far, [GRID, a, b]) == [GRID, a, b] == \
        reference.premerge([GRID, a, b], far, below=GRID)
    # nothing that may be pre-merged (Tekken's case): an empty table, a pass that changes nothing
    none = {(GRID, GRID + 1): (0, GRID + 2)}
    assert len(premerge_tables(none)[0]) == 0
    assert kernel_premerge(none, [GRID, GRID + 1]) == [GRID, GRID + 1]


def test_premerge_on_gpt2_chunks_matches_the_reference():
    """On real chunks the pass merges a good share of the pairs, as the reference does."""
    tok = BytePairTokenizer.from_hf(GPT2 / "vocab.json", GPT2 / "merges.txt")
    ranks = {tuple(p): (r, tok.token_to_id(tok.id_to_token(p[0]) + tok.id_to_token(p[1])))
             for r, p in enumerate(tok._merges.tolist())}
    tables = premerge_tables(ranks)
    merged = total = 0
    for k, chunk in enumerate(regex.findall(GPT2_PATTERN, SAMPLE[:2000])):
        seq = [int(tok._sym_id[x]) for x in chunk.encode("utf-8")]
        pre = kernel_premerge(ranks, seq, tables)
        if k < 12:  # the reference reads every merge for each bound
            assert pre == reference.premerge(seq, ranks, below=GRID), chunk
        assert leftmost_lowest(pre, ranks) == tok.encode(chunk), chunk
        merged += len(seq) - len(pre)
        total += len(seq) - len(tok.encode(chunk))
    assert merged > 0.3 * total


def _buckets_or_refusal(ranks, seq):
    """merge_buckets' result on ``seq`` (None where it refuses), and leftmost_lowest's."""
    merges = list(ranks.items())
    pairs = build_pair_table([p[0] for p, _ in merges], [p[1] for p, _ in merges],
                             [v[1] for _, v in merges], [v[0] for _, v in merges])
    ids = np.array(seq, np.int32)
    m = merge_buckets(ids, len(seq), pairs, *bucket_work(len(seq), pairs[2]))
    assert m >= 0 or ids.tolist() == seq, "a refusal leaves the ids as they were"
    return (ids[:m].tolist() if m >= 0 else None), leftmost_lowest(seq, ranks)


def test_buckets_refuse_a_merge_made_of_a_later_token():
    """Merge 0 joins token 3, which merge 1 makes: merging (0, 1) makes a pair of a lower
    value, whose turn the buckets have passed; the same merges learned in order are fine."""
    later = {(3, 1): (0, 4), (0, 1): (1, 3)}
    assert _buckets_or_refusal(later, [0, 1, 1]) == (None, [4])
    assert _buckets_or_refusal(later, [0, 1, 0, 0]) == ([3, 0, 0], [3, 0, 0])  # not made here
    in_order = {(0, 1): (0, 3), (3, 1): (1, 4)}
    assert _buckets_or_refusal(in_order, [0, 1, 1]) == ([4], [4])


# Two pairs (3, 1) of value 13 with the pair (1, 3) between them, both made by merges of value
# 5 and listed right one first: BPE merges the left one first, which makes (7, 3) of value 2.
# The buckets merged the right one first, made (1, 7) and (7, 7), of no value, and gave [7, 7].
GAP_OF_ONE = ({(1, 1): (6, 2), (0, 0): (5, 3), (2, 0): (11, 4), (0, 4): (9, 5), (2, 4): (10, 6),
               (12, 0): (10, 6), (3, 1): (13, 7), (4, 3): (12, 8), (2, 5): (3, 9), (4, 4): (3, 9),
               (2, 13): (14, 10), (6, 1): (14, 10), (7, 3): (2, 11), (2, 2): (4, 12),
               (4, 1): (7, 13), (0, 5): (8, 14), (3, 4): (8, 14)}, [0, 0, 1, 0, 0, 1])


def test_buckets_merge_pairs_one_apart_left_first():
    assert leftmost_lowest(GAP_OF_ONE[1], GAP_OF_ONE[0]) == [11, 1]
    assert _buckets_or_refusal(*GAP_OF_ONE) == (None, [11, 1])


def test_buckets_merge_a_pair_whose_chain_was_cut():
    """Value 1's pairs (0, 6) and (6, 3) overlap, and (4, 5) is one pair from (6, 3); the walk
    from (4, 5) to the chain's left end goes through 6, which merging (0, 6) takes: (4, 5) is
    then a chain of its own, merged too (it was left as it was once)."""
    cut = {(1, 2): (0, 6), (0, 6): (1, 7), (6, 3): (1, 7), (4, 5): (1, 7)}
    assert _buckets_or_refusal(cut, [0, 1, 2, 3, 4, 5]) == ([7, 3, 7], [7, 3, 7])


@st.composite
def pair_table_cases(draw):
    """Pair tables of any shape a table allows: a token made by one to three pairs of tokens
    before it, ranks in order or shuffled; and base ids, up to 80."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    k, values = rnd.choice([2, 3, 4]), rnd.randint(1, 8)
    ids, ranks = list(range(k)), {}
    for v in range(values):
        for _ in range(rnd.randint(1, 3)):
            ranks.setdefault((rnd.choice(ids), rnd.choice(ids)), (v, k + v))
        ids.append(k + v)
    if draw(st.booleans()):
        order = list(range(values))
        rnd.shuffle(order)
        ranks = {p: (order[v], t) for p, (v, t) in ranks.items()}
    return ranks, [rnd.randrange(k) for _ in range(draw(st.sampled_from([6, 12, 30, 80])))]


@settings(max_examples=500, deadline=None)
@given(pair_table_cases())
def test_buckets_on_any_pair_table_are_bpe_or_refuse(case):
    got, want = _buckets_or_refusal(*case)
    assert got is None or got == want


@settings(max_examples=300, deadline=None)
@given(rank_cases())
@example(GAP_OF_ONE)
def test_buckets_on_rank_files_are_bpe_or_refuse(case):
    """On rank-file tables (tokens made from later tokens, every split a pair) the buckets
    either give BPE's ids or refuse before touching them (both happen: the cases above)."""
    got, want = _buckets_or_refusal(*case)
    assert got is None or got == want


@njit(cache=False)
def _sum_with_prefetches(a, stride):
    total = 0
    for i in range(len(a)):
        prefetch(a, (i * stride) % len(a))
        total += a[i]
    return total


def test_prefetch_changes_no_result():
    for dtype in (np.int64, np.int32, np.uint8):
        a = np.arange(1000).astype(dtype)
        assert _sum_with_prefetches(a, 7919) == int(a.astype(np.int64).sum())


def test_pair_table_states_its_limits():
    """A slot packs 21 bits of each id and of the rank; a rank names one merged token."""
    build_pair_table([2**21 - 1], [0], [5])
    with pytest.raises(ValueError, match="token id outside 0..2097151"):
        build_pair_table([2**21], [0], [5])
    with pytest.raises(ValueError, match="merge rank outside"):
        build_pair_table([1], [0], [5], rank=[2**21])
    with pytest.raises(ValueError, match="merge 1 has rank 7, which another merge gives"):
        build_pair_table([1, 2], [0, 0], [5, 6], rank=[7, 7])
    # tiktoken's rule: two pairs make one token
    slots, new_of_rank, _, grid = build_pair_table([1, 2], [0, 0], [5, 5], rank=[7, 7])
    assert len(new_of_rank) == 0 and sorted(slots[slots >= 0] & (2**21 - 1)) == [5, 5]
    # the grid of pairs of low ids holds the same order values, -1 for every other pair
    assert grid[1 * GRID + 0] == grid[2 * GRID + 0] == 5 and (grid >= 0).sum() == 2
    slots, new_of_rank, _, grid = build_pair_table([1, 2], [0, 0], [6, 5])  # ids against rank order
    assert new_of_rank.tolist() == [6, 5] and sorted(slots[slots >= 0] & (2**21 - 1)) == [0, 1]
    assert grid[1 * GRID + 0] == 0 and grid[2 * GRID + 0] == 1 and (grid >= 0).sum() == 2
    _, _, _, grid = build_pair_table([GRID, 3], [0, GRID - 1], [GRID + 1, GRID + 2])
    assert grid[3 * GRID + GRID - 1] == GRID + 2 and (grid >= 0).sum() == 1  # (GRID, 0): hashed


# --- GPT-2 files: HF ByteLevelBPETokenizer and tiktoken --------------------------------------
def test_gpt2_sample_matches_hf_and_tiktoken(gpt2, hf_gpt2):
    enc = tiktoken_gpt2()
    lines = SAMPLE.splitlines(keepends=True) + [SAMPLE]
    ours = gpt2.encode_batch(lines).to_pylist()
    assert ours == [e.ids for e in hf_gpt2.encode_batch(lines)]
    assert ours == [enc.encode_ordinary(t) for t in lines]
    assert all(gpt2.decode(ids) == t for ids, t in zip(ours, lines))


def seeded(tok):
    batch = tok._caches.seed(tok._token_texts)
    data, off = batch.data.tobytes(), batch.offsets
    return [data[off[k]:off[k + 1]].decode("utf-8") for k in range(len(off) - 1)]


def _same_batch(got, ref):
    """Same texts; ``got`` says what token texts are (well-formed, no nulls)."""
    return np.array_equal(got.data, ref.data) and np.array_equal(got.offsets, ref.offsets) \
        and got.valid is None and got.well_formed and not got.binary


def test_seed_batch_is_its_reference(gpt2):
    """The seed batch, made from whole arrays, is the reference's texts one by one: GPT-2's
    tokens at every cut, and texts whose U+FFFD bytes are whole, cut by the texts' edges (not
    a token's text, which is decoded, but the cut must not drop them), or at the very start
    and end."""
    text, offsets = gpt2._token_texts()
    for most in (10 ** 9, 40_000, 17, 1):
        assert _same_batch(seed_batch(text, offsets, most),
                           utf8_batch(seed_texts(text, np.asarray(offsets), most)))
    fffd = "\ufffd".encode()
    pieces = [fffd + b"a", b"ab" + fffd[:2], fffd[2:] + b"cd", b"x", b"y" * 15, b"z" * 16,
              b"mn", b"p" + fffd, b"\xc3\xa9t", fffd, b"qr"]
    text = b"".join(pieces)
    offsets = np.cumsum([0] + [len(p) for p in pieces])
    for most in (10 ** 9, 3, 1):
        got = seed_batch(text, offsets, most)
        assert _same_batch(got, utf8_batch(seed_texts(text, offsets, most)))
    assert got.data.tobytes() == b"ab" + fffd[:2]  # the lowest id kept: text 0 holds one


def test_seeded_cache_serves_what_tiktoken_encodes(gpt2):
    """Every new cache is seeded with the vocabulary's short tokens, the lowest ids last; the
    seeded entries give tiktoken's encoding of those texts, and a cache of one general slot
    (FAST_PER_SLOT fast entries) is seeded with that many lowest-id tokens only."""
    texts = seeded(gpt2)
    assert len(texts) > 40_000 and all(2 <= len(t.encode()) <= 15 for t in texts)
    assert not any("\ufffd" in t for t in texts)  # no token that is part of a character
    got = gpt2.encode_batch(texts).to_pylist()
    assert got == tiktoken_gpt2().encode_ordinary_batch(texts, num_threads=1)
    whole = [ids[0] for ids in got if len(ids) == 1]  # the texts that are their own token
    assert len(whole) > 0.9 * len(texts) and whole == sorted(whole, reverse=True)
    small = BytePairTokenizer.__new__(BytePairTokenizer)
    small.__setstate__(gpt2.__getstate__() | {"cache_size": 1})  # as a pickle restores it
    assert seeded(small) == texts[-FAST_PER_SLOT:]
    assert small.encode_batch(texts[-100:]).to_pylist() == \
        gpt2.encode_batch(texts[-100:]).to_pylist()
    with pytest.raises(ValueError, match="cache_size must be a power of two, got 3"):
        BytePairTokenizer(gpt2.vocab, gpt2.merges, "utf8", ["<|endoftext|>"], cache_size=3)


def test_gpt2_shared_corpus_sample(gpt2, hf_gpt2):
    # 11,140 lines of the 8 shared files; on a fresh clone the shipped sample (532 languages)
    lines = corpus_lines(150_000, at_least=10_000)
    ours = gpt2.encode_batch(lines).to_pylist()
    assert ours == [e.ids for e in hf_gpt2.encode_batch(lines)]
    assert ours == tiktoken_gpt2().encode_ordinary_batch(lines, num_threads=1)
    assert gpt2.decode_batch(gpt2.encode_batch(lines)) == lines


def test_adversarial_long_chunks_match_tiktoken(gpt2):
    enc = tiktoken_gpt2()
    for text in ("a" * 5000, "!?" * 3000, " " * 4000 + "x", "1" * 3000, "性" * 2000,
                 "ab" * 2500 + "a", ("x" * 300 + " ") * 10):
        assert gpt2.encode(text) == enc.encode_ordinary(text)


def test_very_long_chunks_by_buckets_match_hf(gpt2, hf_gpt2):
    """Chunks of BUCKET_MIN symbols and more are merged by buckets (GPT-2's merges allow it):
    runs, periods, letters drawn at random (chains of equal pairs meeting everywhere)."""
    assert gpt2._pairs[2] > 0
    rnd = random.Random(5)
    n = BUCKET_MIN + 7
    texts = ["a" * n, "ab" * (n // 2) + "a", "aab" * (n // 3), "性" * (n // 3 + 1),
             "".join(rnd.choice("ab") for _ in range(n)),
             "".join(rnd.choice("etaoinshr") for _ in range(n)), "!?" * (n // 2)]
    ours = gpt2.encode_batch(texts).to_pylist()
    assert ours == [e.ids for e in hf_gpt2.encode_batch(texts)]
    assert ours[0] == tiktoken_gpt2().encode_ordinary(texts[0])


# Words at the cache parts' limits and past them (fast: 15 bytes, 5 ids; wide: 31 bytes, 11
# ids; general: 128 bytes, 64 ids) and at the merge's (48 symbols by the scan, 256 by the
# kernel's own heap, more by encode_long_chunk): ASCII, CJK (many ids in few bytes) and
# punctuation of one id a byte (15 bytes, 15 ids: a fast key whose ids the general part keeps),
# repeated so that hits, evictions and every part serve them.
CACHE_WORDS = st.sampled_from(
    ["x" * k for k in (14, 15, 16, 30, 31, 32, 48, 49, 127, 128, 129, 256, 257)] +
    ["性能" * k for k in (1, 2, 3, 5, 8, 11, 21, 22)] +
    ["\u169b" * 5, "\u2e19" * 5, "zqxjkv" * 4, " ", "\n"])


@settings(max_examples=60, deadline=None)
@given(words=st.lists(CACHE_WORDS | st.text(max_size=30), max_size=40),
       size=st.sampled_from([1, 2, 1 << 14]))
def test_cache_limits_match_tiktoken(gpt2, words, size):
    enc = tiktoken_gpt2()
    tok = BytePairTokenizer(gpt2.vocab, gpt2.merges, "utf8", ["<|endoftext|>"], cache_size=size)
    text = " ".join(words)
    lines = [text, text[::-1], text, " ".join(reversed(words)), text]
    assert tok.encode_batch(lines).to_pylist() == enc.encode_ordinary_batch(lines, num_threads=1)


def test_special_tokens_recognized_like_hf(gpt2):
    from tokenizers import ByteLevelBPETokenizer
    hf = ByteLevelBPETokenizer(str(GPT2 / "vocab.json"), str(GPT2 / "merges.txt"),
                               add_prefix_space=False)
    hf.add_special_tokens(["<|endoftext|>"])
    texts = ["a<|endoftext|>b", "<|endoftext|><|endoftext|>", "x <|endoftext|>\n\ny",
             "<|endoftext", "<|endoftext|", SAMPLE + "<|endoftext|>" + SAMPLE]
    for t in texts:
        assert gpt2.encode(t, recognize_special=True) == hf.encode(t).ids
        assert gpt2.decode(gpt2.encode(t, recognize_special=True)) == t
    assert 50256 not in gpt2.encode("<|endoftext|>")  # plain text by default


# --- trained vocabularies, each substrate: HF's BPE model on pre-split input -------------------
def test_encode_matches_hf_bpe_model(trained):
    substrate, vocab, merges, tok = trained
    hf = hf_bpe(vocab, merges)
    texts = SAMPLE.splitlines(keepends=True) + [SAMPLE, "", "lowest newer widest", "😀" * 40]
    assert tok.encode_batch(texts).to_pylist() == [hf_presplit_ids(hf, t, substrate)
                                                   for t in texts]


def test_encode_matches_hf_on_shared_corpus(trained):
    substrate, vocab, merges, tok = trained
    hf = hf_bpe(vocab, merges)
    lines = corpus_lines(20_000, at_least=1_500)  # 1,572 lines
    assert tok.encode_batch(lines).to_pylist() == [hf_presplit_ids(hf, t, substrate)
                                                   for t in lines]


def test_checked_text_is_encoded_into_arrows_pool(trained):
    # Every substrate's reserve fits what the kernel needs (decision 0046): the ids of
    # checked text live in the pool buffer handed to it, not in an array it made instead.
    substrate, vocab, merges, tok = trained
    hf = hf_bpe(vocab, merges)
    texts = [SAMPLE, "😀 naïve ä " * 300, "lowest newer widest"]
    before = pa.total_allocated_bytes()
    ids, offsets, _ = tok.encode_arrays(utf8_batch(texts))
    assert pa.total_allocated_bytes() - before >= 4 * len(ids)
    assert [ids[offsets[k]:offsets[k + 1]].tolist() for k in range(len(texts))] == \
        [hf_presplit_ids(hf, t, substrate) for t in texts]


def test_recognized_specials_match_hf(trained):
    from tokenizers import AddedToken
    substrate, vocab, merges, tok = trained
    hf = hf_bpe(vocab, merges)
    hf.add_special_tokens([AddedToken(s, normalized=False) for s in SPECIALS])
    for t in ["x<pad><pad><pad>y", "<|endoftext|>lower<pad>", "no specials", "<pad"]:
        pieces = regex.split("(<\\|endoftext\\|>|<pad><pad>|<pad>)", t)
        want = []
        for k, p in enumerate(pieces):
            want += [vocab[p]] if k % 2 else hf_presplit_ids(hf, p, substrate)
        assert tok.encode(t, recognize_special=True) == want


# --- round trips and decoding --------------------------------------------------------------
def test_round_trip_all_scalars(trained, gpt2):
    scalars = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    texts = [scalars[k:k + 4096] for k in range(0, len(scalars), 4096)]
    for tok in (trained[3], gpt2):
        assert tok.decode_batch(tok.encode_batch(texts)) == texts


def test_round_trip_emoji(trained, gpt2):
    emoji_file = SHARED_DATA / "corpus" / "unicode_emoji_test.txt.xz"
    if emoji_file.is_file():  # Unicode's emoji-test.txt: 4,733 lines
        text = read_xz_text(emoji_file)
        assert len(text.splitlines()) > 4_500
    else:  # a fresh clone: every emoji code point and the sequences users write
        text = "".join(emoji_texts())
        assert len(text.splitlines()) > 3_000
    for tok in (trained[3], gpt2):
        assert tok.decode(tok.encode(text)) == text
        lines = text.splitlines()
        assert tok.decode_batch(tok.encode_batch(lines)) == lines


def test_decode_malformed_ids_like_python_replace(trained, gpt2):
    tok = trained[3]
    half = {"utf8": "\u00e6", "utf16": "\u00e6"}  # GPT-2 symbol of byte 0xE6
    rnd = random.Random(7)
    ids = sorted(tok.vocab.values())
    for _ in range(300):
        seq = [rnd.choice(ids) for _ in range(rnd.randint(0, 12))]
        assert tok.decode(seq) == ref_decode(tok, seq)
    assert gpt2.decode([gpt2.token_to_id(half["utf8"])]) == b"\xe6".decode("utf-8", "replace")
    e6 = gpt2.token_to_id("\u00e6")
    assert gpt2.decode([e6, gpt2.token_to_id("!")]) == b"\xe6!".decode("utf-8", "replace")


def test_decode_rejects_unknown_ids(gpt2):
    with pytest.raises(ValueError, match=r"ids\[1\] = 50257"):
        gpt2.decode([0, 50257])
    with pytest.raises(ValueError, match=r"ids\[0\] = -1"):
        gpt2.decode([-1])


# --- streaming ---------------------------------------------------------------------------
STREAM_ALPHABET = st.sampled_from(list(" \n\t\r'sdlvtaA1!.<|>é性😀\u00a0\u3000") + ["<|endoftext|>", "<|end"])


@settings(max_examples=150, deadline=None)
@given(st.lists(STREAM_ALPHABET, max_size=60), st.lists(st.integers(0, 60), max_size=8),
       st.booleans())
def test_stream_encode_equals_whole(gpt2_tok, pieces, cuts, recognize):
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    stream = gpt2_tok.stream(recognize_special=recognize)
    got = []
    for a, b in zip(bounds, bounds[1:]):
        got += stream.feed(text[a:b])
    got += stream.finish()
    assert got == gpt2_tok.encode(text, recognize_special=recognize)


@pytest.fixture(scope="module")
def gpt2_tok():
    return BytePairTokenizer.from_hf(GPT2 / "vocab.json", GPT2 / "merges.txt")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 50256), max_size=30), st.lists(st.integers(0, 30), max_size=6))
def test_stream_decode_equals_batch(gpt2_tok, ids, cuts):
    bounds = sorted({min(c, len(ids)) for c in cuts} | {0, len(ids)})
    dec = gpt2_tok.decode_stream()
    got = "".join(dec.feed(ids[a:b]) for a, b in zip(bounds, bounds[1:])) + dec.finish()
    assert got == gpt2_tok.decode(ids) == ref_decode(gpt2_tok, ids)


def test_stream_decode_ube_one_token_at_a_time(trained):
    tok = trained[3]
    ids = tok.encode(SAMPLE) + [tok.token_to_id("<pad>")] + tok.encode("性能😀")
    dec = tok.decode_stream()
    assert "".join(dec.feed(i) for i in ids) + dec.finish() == tok.decode(ids)
    rnd = random.Random(3)
    seq = [rnd.choice(list(tok.vocab.values())) for _ in range(400)]
    dec = tok.decode_stream()
    assert "".join(dec.feed(i) for i in seq) + dec.finish() == ref_decode(tok, seq)


def test_stream_encode_long_text_in_small_pieces(trained):
    tok = trained[3]
    stream = tok.stream()
    got = []
    for k in range(0, len(SAMPLE), 7):
        got += stream.feed(SAMPLE[k:k + 7])
    assert got + stream.finish() == tok.encode(SAMPLE)


# --- batch protocol, cache, invalid UTF-8 ------------------------------------------------------
def test_encode_batch_nulls_slices_and_arrays(gpt2):
    arr = pa.array(["hello world", None, "", "性能"], pa.string())
    out = gpt2.encode_batch(arr)
    assert out.type == pa.list_(pa.int32())
    assert out.to_pylist() == [gpt2.encode("hello world"), None, [], gpt2.encode("性能")]
    assert gpt2.encode_batch(arr.slice(3)).to_pylist() == [gpt2.encode("性能")]
    assert gpt2.decode_batch(out) == ["hello world", None, "", "性能"]


def test_blocks_across_documents_of_a_sliced_column(gpt2):
    """Blocks of chunks run on across documents and read each document's end from the
    offsets: empty documents and nulls inside blocks, documents of one chunk and of several
    blocks, offsets not from 0 (a sliced column without nulls; a second thread's part) give
    tiktoken's ids document by document, with one thread and two."""
    enc = tiktoken_gpt2()
    lines = SAMPLE.splitlines(keepends=True)
    docs = []
    for k, line in enumerate(lines * 6):
        docs += [line, None if k % 5 == 0 else "", "x" * (k % 3), "".join(lines[k % 40:][:30])]
    assert max(len(regex.findall(GPT2_PATTERN, t or "")) for t in docs) > 2 * BLOCK
    for texts in (docs, [t or "" for t in docs]):
        column = pa.array(["head doc ", None] + texts, pa.string()).slice(2)
        batch = corpustok.arrow.utf8_batch(column)
        assert Schedule(batch.offsets, 2).workers == 2
        assert batch.offsets[0] > 0 or None in texts  # nulls are refilled: offsets from 0
        want = [None if t is None else enc.encode_ordinary(t) for t in texts]
        assert gpt2.encode_batch(column).to_pylist() == want
        assert gpt2.encode_batch(column, threads=2).to_pylist() == want


TEXT_ALPHABET = st.sampled_from(list(" \n\t'sdlrevtmowAN1!.,<|>pé\u00a0\u3000性能😀\ue100ж")
                                + list(SPECIALS))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(TEXT_ALPHABET, max_size=40).map("".join), max_size=6))
def test_encode_batch_equals_hf_on_random_text(trained, texts):
    substrate, vocab, merges, tok = trained
    hf = hf_bpe(vocab, merges)
    assert tok.encode_batch(texts).to_pylist() == [hf_presplit_ids(hf, t, substrate)
                                                   for t in texts]


def unchecked_strings(docs):
    """``docs`` (bytes) as an Arrow large_string array made from buffers, which Arrow does not
    check: a string column read from a file may hold ill-formed UTF-8 the same way."""
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    return pa.LargeStringArray.from_buffers(len(docs), pa.py_buffer(offsets),
                                            pa.py_buffer(b"".join(docs) or b"\0"))


# bytes that are each a case of UTF-8's well-formedness rules (CPython's decoder is the judge)
UTF8_EDGES = [b"\x7f", b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80", b"\xdf\xbf",
              b"\xe0\x9f\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf",
              b"\xee\x80\x80", b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80",
              b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xe6\x80",
              b"\xf0\x9f\x98", b"a"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(UTF8_EDGES) | st.binary(max_size=3), max_size=6)
                .map(b"".join), max_size=5))
def test_well_formed_check_agrees_with_cpython(docs):
    def strict(raw):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True
    batch = corpustok.arrow.utf8_batch(unchecked_strings(docs))
    assert not batch.well_formed
    assert corpustok.arrow.is_well_formed(batch) == all(strict(d) for d in docs)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=40).map(
    lambda b: b.replace(b"\x00", b"\xe6").replace(b"\x01", b"\xf0\x9f")), max_size=8),
    st.sampled_from(["binary", "string"]))
def test_invalid_utf8_counts_replacements(trained, docs, column):
    """Ill-formed bytes in a binary column or in an unchecked string column are read with
    replacement and counted, whereas ``encode`` (from ``str``: known well-formed) skips the
    count; the ids agree."""
    tok = trained[3]
    arr = pa.array(docs, pa.binary()) if column == "binary" else unchecked_strings(docs)
    ids, offsets, replaced = tok.encode_arrays(corpustok.arrow.utf8_batch(arr))
    for d, raw in enumerate(docs):
        text = raw.decode("utf-8", "replace")
        assert ids[offsets[d]:offsets[d + 1]].tolist() == tok.encode(text)
        assert replaced[d] == text.count("\ufffd") - raw.count(b"\xef\xbf\xbd")


def test_bounded_cache_does_not_change_results(trained):
    substrate, vocab, merges, tok = trained
    tiny = BytePairTokenizer(vocab, merges, substrate, SPECIALS, cache_size=1)
    lines = SAMPLE.splitlines() * 3
    assert tiny.encode_batch(lines).to_pylist() == tok.encode_batch(lines).to_pylist()


# --- files -------------------------------------------------------------------------------
def test_save_load_round_trip(trained, tmp_path):
    tok = trained[3]
    tok.save(tmp_path / "t.json")
    back = corpustok.load(tmp_path / "t.json")
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert back.special_tokens == tok.special_tokens and back.substrate == tok.substrate
    assert back.encode(SAMPLE) == tok.encode(SAMPLE)


def test_from_hf_tokenizer_json(hf_gpt2, gpt2, tmp_path):
    hf_gpt2.save(str(tmp_path / "tokenizer.json"))
    tok = corpustok.load(tmp_path / "tokenizer.json")
    assert tok.vocab == gpt2.vocab and tok.merges == gpt2.merges
    assert tok.encode(SAMPLE) == gpt2.encode(SAMPLE) == hf_gpt2.encode(SAMPLE).ids


def test_train_classmethod_matches_hf(tmp_path):
    for substrate in SUBSTRATES:
        vocab, merges = hf_train(TRAIN_TEXT, substrate, 600, SPECIALS)
        tok = BytePairTokenizer.train(TRAIN_TEXT, 600, substrate=substrate,
                                      special_tokens=SPECIALS)
        assert tok.vocab == vocab and tok.merges == merges


def test_bad_files_raise_with_position(tmp_path):
    (tmp_path / "merges.txt").write_text("#version: 0.2\nĠ t\nbad\n", encoding="utf-8")
    with pytest.raises(ValueError, match="merges.txt:3"):
        BytePairTokenizer.from_hf(GPT2 / "vocab.json", tmp_path / "merges.txt")
    with pytest.raises(ValueError, match=r"merges\[0\]"):
        BytePairTokenizer({"a": 0, "b": 1}, [("a", "b")], "utf8")
    with pytest.raises(ValueError, match="substrate"):
        BytePairTokenizer({"a": 0}, [], "latin1")
    with pytest.raises(ValueError, match="no symbol"):
        BytePairTokenizer({"a": 0, "\u4e00": 1}, [], "utf8")


def test_malformed_merges_name_the_first_bad_one():
    # the fast lookup path must hand every odd merge list to the checking loop
    vocab = {"a": 0, "b": 1, "ab": 2, "<s>": 3, "a<s>": 4}
    ok = BytePairTokenizer(vocab, [["a", "b"]], "utf8")  # lists, as JSON gives them
    assert ok.merges == [("a", "b")] and ok.encode("ab") == [2]
    cases = [(["ab"], r"merges\[0\] = 'ab': expected a pair"),
             ([("a", "b"), ("a", "b", "c")], r"merges\[1\] = .*expected a pair"),
             ([(0, 1)], r"merges\[0\] = \(0, 1\): expected a pair"),
             ([("a", "a")], r"merges\[0\] = \('a', 'a'\): 'aa' is not a \(non-special\)"),
             ([("a", "<s>")], r"'<s>' is not a \(non-special\) vocabulary token")]
    for merges, message in cases:
        with pytest.raises(ValueError, match=message):
            BytePairTokenizer(vocab, merges, "utf8", special_tokens=["<s>"])


def test_threads_share_a_tokenizer(gpt2):
    """Each thread has its own chunk cache, so concurrent batches give the serial result."""
    from concurrent.futures import ThreadPoolExecutor
    batches = [SAMPLE.splitlines()[k::4] * 20 for k in range(4)]
    want = [gpt2.encode_batch(b).to_pylist() for b in batches]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda b: gpt2.encode_batch(b).to_pylist(), batches * 3))
    assert got == want * 3


def test_stream_one_huge_chunk_in_small_pieces(gpt2):
    """A chunk that never ends while feeding is retried only when the pending text doubles."""
    text = "a" * 300_000 + " b" + "!" * 100_000
    stream = gpt2.stream()
    got = []
    for k in range(0, len(text), 100):
        got += stream.feed(text[k:k + 100])
    assert got + stream.finish() == gpt2.encode(text)


def test_pickle_round_trip(trained):
    """Beam pickles DoFn state; a tokenizer travels as its to_dict() form."""
    import pickle
    tok = trained[3]
    back = pickle.loads(pickle.dumps(tok))
    assert back.vocab == tok.vocab and back.merges == tok.merges
    assert back.encode(SAMPLE, recognize_special=True) == tok.encode(SAMPLE,
                                                                     recognize_special=True)


def test_decode_rejects_non_integer_ids(gpt2):
    with pytest.raises(TypeError, match="integers"):
        gpt2.decode(["7592"])
    with pytest.raises(TypeError, match="integers"):
        gpt2.decode([1.5])
    with pytest.raises(TypeError, match="integers"):
        gpt2.decode_batch([[True]])


def test_truncated_merges_file_is_an_error(tmp_path):
    lines = (GPT2 / "merges.txt").read_text(encoding="utf-8").splitlines()
    short = tmp_path / "merges.txt"
    short.write_text("\n".join(lines[:1000]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="neither byte symbols nor made by a merge"):
        BytePairTokenizer.from_hf(GPT2 / "vocab.json", short)


# --- threads -----------------------------------------------------------------------------------
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_give_the_same_ids(gpt2, threads):
    lines = (SAMPLE.splitlines(keepends=True) + [None, ""]) * 150
    assert len("".join(t or "" for t in lines).encode()) > 3 * MIN_PART_BYTES
    taken = drain(Schedule(corpustok.arrow.utf8_batch(lines).offsets, threads), [0])
    assert len(taken) > threads or threads > 2  # ranges taken in turn
    want = gpt2.encode_batch(lines).to_pylist()
    assert gpt2.encode_batch(lines, threads=threads).to_pylist() == want
    assert gpt2.encode_batch(lines, threads=threads, recognize_special=True).to_pylist() == \
        gpt2.encode_batch(lines, recognize_special=True).to_pylist()
    with pytest.raises(ValueError, match="threads must be a positive int"):
        gpt2.encode_batch(lines, threads=0)


def test_threads_check_and_count_their_own_parts(gpt2):
    """Each thread checks its part of an unchecked column: a part with ill-formed bytes
    counts its replacements, a well-formed one skips the count; the results are those of
    one thread."""
    good = [line.encode() for line in SAMPLE.splitlines(keepends=True)] * 150
    docs = good + [b"caf\xe9 \xff\xfe ok", b"\xed\xa0\x80 surrogate"] + good
    want_text = [d.decode("utf-8", "replace") for d in docs]
    for column in (unchecked_strings(docs), pa.array(docs, pa.binary())):
        batch = corpustok.arrow.utf8_batch(column)
        one = gpt2.encode_arrays(batch)
        for threads in (2, 3):
            ids, offsets, replaced = gpt2.encode_arrays(batch, threads=threads)
            assert ids.tolist() == one[0].tolist() and offsets.tolist() == one[1].tolist()
            assert replaced.tolist() == one[2].tolist()
        assert one[2].tolist() == [t.count("\ufffd") for t in want_text]
        assert gpt2.encode_batch(column).to_pylist() == [gpt2.encode(t) for t in want_text]


def drain(schedule, turns):
    """Every range of ``schedule``, taken by its threads in the order of ``turns`` (thread
    numbers, cycled; a thread that finds nothing left drops out): ``(thread, (a, b))``."""
    taken, active, k = [], list(range(schedule.workers)), 0
    while active:
        t = turns[k % len(turns)] % len(active)
        k += 1
        part = schedule.take(active[t])
        if part is None:
            del active[t]
        else:
            taken.append((active[t], part))
    return taken


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(0, 1 << 18), max_size=30), threads=st.integers(1, 9),
       turns=st.lists(st.integers(0, 8), min_size=1, max_size=12))
def test_thread_ranges_cover_the_batch(sizes, threads, turns):
    """However the threads take turns, the ranges cover every document once, none empty, and
    only a block's last one is under :data:`MIN_PART_BYTES` (when not one document)."""
    offsets = np.concatenate([[7], 7 + np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    schedule = Schedule(offsets, threads)
    assert 1 <= schedule.workers <= threads and (schedule.workers == 1 or threads > 1)
    parts = sorted(part for _, part in drain(schedule, turns))
    if not sizes:
        assert parts == [] and schedule.workers == 1  # run() encodes it whole
        return
    assert parts[0][0] == 0 and parts[-1][1] == len(sizes)
    assert all(a < b for a, b in parts)
    assert all(b == c for (_, b), (c, _) in zip(parts, parts[1:]))
    small = [(a, b) for a, b in parts if offsets[b] - offsets[a] < MIN_PART_BYTES and b > a + 1]
    assert len(small) <= schedule.workers


def test_thread_ranges_shrink_as_the_batch_runs_out():
    """Equal documents of 1 KB on two threads, thread 1 busy in its first range: thread 0
    takes its block from the front, then the other's from the back, each range a quarter of
    what no thread has taken (to a document), at least :data:`MIN_PART_BYTES`, and the whole
    rest of a block rather than leave it less."""
    doc = 1024
    total = 64 * MIN_PART_BYTES
    offsets = np.arange(0, total + 1, doc, dtype=np.int64)
    half = (len(offsets) - 1) // 2
    schedule = Schedule(offsets, 2)
    assert schedule.workers == 2 and Schedule(offsets, 1).workers == 1
    first = schedule.take(1)
    assert first == (half, half + total // 4 // doc)
    left = left_first = total - total // 4
    front, back, sizes = 0, len(offsets) - 1, []
    for t, (a, b) in drain(schedule, [0]):
        own = a < half
        rest = ((half if own else back) - (front if own else first[1])) * doc
        size = -(-max(MIN_PART_BYTES, left // 4) // doc) * doc
        if rest < 2 * MIN_PART_BYTES or rest - size < MIN_PART_BYTES:
            size = rest
        assert t == 0 and (b - a) * doc == size and (a == front if own else b == back)
        front, back = (b, back) if own else (front, a)
        left -= size
        sizes.append(size)
    assert left == 0 and front == half and back == first[1]
    assert sizes[0] == left_first // 4 and sizes[-1] < sizes[0] and schedule.take(1) is None


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_thread_pools_encode_every_range_once(threads):
    """Whichever thread takes a range (its own block's front, another block's back), each is
    encoded once and the outputs join in document order; a range's error reaches the caller
    once every thread has stopped."""
    import threading
    import time
    offsets = np.arange(0, 301 * (MIN_PART_BYTES // 3), MIN_PART_BYTES // 3, dtype=np.int64)
    seen, lock, rng = [], threading.Lock(), random.Random(threads)

    def encode(offs):  # one id a document: its index; uneven work
        time.sleep(rng.random() * 0.004)
        with lock:
            seen.append((int(offs[0]), int(offs[-1])))
        first = int(offs[0]) // (MIN_PART_BYTES // 3)
        n = len(offs) - 1
        return (np.arange(first, first + n, dtype=np.int32), np.arange(n + 1, dtype=np.int64),
                np.zeros(n, np.int64))

    pools = corpustok.parallel.ThreadPools()
    for _ in range(3):
        seen.clear()
        ids, out, replaced = pools.run(encode, offsets, threads)
        assert ids.tolist() == list(range(300)) and out.tolist() == list(range(301))
        seen.sort()
        assert len(seen) > 2 * threads and seen[0][0] == 0 and seen[-1][1] == offsets[-1]
        assert all(b == c for (_, b), (c, _) in zip(seen, seen[1:]))

    def failing(offs):
        if offs[0] <= offsets[150] < offs[-1]:
            raise ValueError("this range")
        return encode(offs)

    with pytest.raises(ValueError, match="this range"):
        pools.run(failing, offsets, threads)


def test_thread_pools_callers_do_not_wait_for_each_other():
    """Two callers share a tokenizer's pool (two Beam threads, each with kernel threads): one
    whose pool thread is busy with the other's batch encodes its own alone and returns."""
    import threading
    offsets = np.arange(0, 301 * (MIN_PART_BYTES // 3), MIN_PART_BYTES // 3, dtype=np.int64)
    pools = corpustok.parallel.ThreadPools()
    started, release = threading.Semaphore(0), threading.Event()

    def encode(offs, block=False):
        if block:
            started.release()
            release.wait(30)
        n = len(offs) - 1
        return np.zeros(n, np.int32), np.arange(n + 1, dtype=np.int64), np.zeros(n, np.int64)

    first = threading.Thread(target=pools.run, args=(lambda o: encode(o, True), offsets, 2))
    first.start()
    assert started.acquire(timeout=30) and started.acquire(timeout=30)  # caller and pool
    got = []
    second = threading.Thread(target=lambda: got.append(pools.run(encode, offsets, 2)))
    second.start()
    second.join(10)
    done = not second.is_alive()
    release.set()
    first.join()
    second.join()
    assert done and got[0][1].tolist() == list(range(301))
