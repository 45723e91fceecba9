"""The memo on disk of a BPE tokenizer's tables (corpustok/bpe/table_cache.py), a rank file's
or a merge list's: what it gives back is what building gives, and a damaged, foreign or
unwritable memo costs only time."""
import os

import numpy as np
import pytest

import corpustok
import corpustok.bpe.table_cache as table_cache
from corpustok.bpe.tables import build_rank_tables
from tests.conftest import GPT2, GPT2_4K_RANKS as RANKS, SHARED_DATA, sample_texts
from corpustok.formats.hf import gpt2_files

O200K = SHARED_DATA / "vocab" / "modern" / "o200k_base.tiktoken"


@pytest.fixture
def memo(tmp_path, monkeypatch):
    """The memo in a folder of its own, keeping vocabularies of any size; counts builds."""
    monkeypatch.setenv(table_cache.ENV, str(tmp_path))
    monkeypatch.setattr(table_cache, "MIN_TOKENS", 0)
    builds = []

    def counted(*a):
        builds.append(1)
        return build_rank_tables(*a)

    monkeypatch.setattr("corpustok.bpe.tokenizer.build_rank_tables", counted)
    merge_tables = corpustok.BytePairTokenizer._merge_tables

    def counted_merges(self, *a):
        builds.append(1)
        return merge_tables(self, *a)

    monkeypatch.setattr(corpustok.BytePairTokenizer, "_merge_tables", counted_merges)
    return tmp_path / table_cache.FOLDER, builds


def same_tables(a, b):
    pa, pb = a._pairs, b._pairs
    if (a._merges is None) != (b._merges is None) or (
            a._merges is not None and not (a._merges.dtype == b._merges.dtype
                                           and np.array_equal(a._merges, b._merges))):
        return False
    return pa.buckets == pb.buckets and all(
        x.dtype == y.dtype and np.array_equal(x, y) for x, y in
        [(pa.slots, pb.slots), (pa.new_of_rank, pb.new_of_rank), (pa.grid, pb.grid),
         (a._pre, b._pre), (a._whole.slots, b._whole.slots)])


def load(path, pretokenizer="gpt2", **kw):
    return corpustok.BytePairTokenizer.from_tiktoken(path, pretokenizer=pretokenizer, **kw)


def built(path, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setenv(table_cache.ENV, "")  # the memo off: built
        return load(path, **kw)


def test_kept_tables_are_the_built_ones(memo, monkeypatch):
    folder, builds = memo
    ref = built(RANKS, monkeypatch)
    first = load(RANKS)
    assert len(builds) == 2 and len(list(folder.glob("*.npz"))) == 1
    again = load(RANKS)
    assert len(builds) == 2  # read back, not built
    texts = sample_texts()
    for tok in (first, again):
        assert same_tables(tok, ref)
        assert tok.encode_batch(texts).to_pylist() == ref.encode_batch(texts).to_pylist()


def test_each_input_and_each_code_has_its_own_key(memo, monkeypatch):
    """The vocabulary, the whole-chunk rule and the code that builds the tables are all part
    of the key: each change is a new file, never another input's tables."""
    folder, builds = memo
    vocab = load(RANKS).vocab
    assert len(builds) == 1
    corpustok.BytePairTokenizer(vocab, None, substrate="utf8", whole_chunks=True)
    assert len(builds) == 1  # the same inputs as the file's: read back
    corpustok.BytePairTokenizer(vocab, None, substrate="utf8", whole_chunks=False)
    fewer = dict(list(vocab.items())[:-1])
    corpustok.BytePairTokenizer(fewer, None, substrate="utf8", whole_chunks=True)
    monkeypatch.setattr(table_cache, "code_digest", lambda: "another corpustok")
    load(RANKS)
    assert len(builds) == 4 and len(list(folder.glob("*.npz"))) == 4


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "wrong arrays", "an .npy",
                                    "a slots table of 3", "a grid of pre-merges",
                                    "ranks too few"])
def test_a_damaged_file_is_built_again_and_replaced(memo, monkeypatch, damage):
    folder, builds = memo
    ref = built(RANKS, monkeypatch)
    load(RANKS)
    (path,) = folder.glob("*.npz")
    raw = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(raw[:len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(raw)))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "wrong arrays":
        np.savez(path, slots=np.zeros(3, np.float32))
    elif damage == "an .npy":
        with open(path, "wb") as f:
            np.save(f, np.zeros(3))
    else:  # the right arrays and dtypes, a shape the kernels would index past
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        if damage == "a slots table of 3":
            arrays["slots"] = np.full(3, -1, np.int64)
        elif damage == "a grid of pre-merges":
            arrays["pre"] = np.zeros(5, np.int64)
        else:
            arrays["new_of_rank"] = np.zeros(1, np.int32)
        np.savez(path, **arrays)
    tok = load(RANKS)
    assert len(builds) == 3 and same_tables(tok, ref)
    assert path.read_bytes() == raw  # replaced by what building writes
    load(RANKS)
    assert len(builds) == 3


def test_an_unwritable_folder_costs_only_time(memo, monkeypatch):
    folder, builds = memo
    folder.parent.joinpath(table_cache.FOLDER).write_text("a file, not a folder")
    ref = built(RANKS, monkeypatch)
    assert same_tables(load(RANKS), ref) and same_tables(load(RANKS), ref)
    assert len(builds) == 3


def test_the_folder_keeps_the_files_used_last_and_nothing_else(memo, monkeypatch):
    folder, builds = memo
    monkeypatch.setattr(table_cache, "MAX_FILES", 2)
    folder.mkdir(parents=True)
    mine = folder / "notes.txt"
    mine.write_text("not the memo's")
    old_tmp = folder / ("0" * 16 + ".killed.tmp")
    old_tmp.write_bytes(b"half")
    os.utime(old_tmp, (1, 1))
    young_tmp = folder / ("1" * 16 + ".writing.tmp")
    young_tmp.write_bytes(b"half")
    for k in range(3):
        monkeypatch.setattr(table_cache, "code_digest", lambda k=k: f"version {k}")
        load(RANKS)
    kept = sorted(p.name for p in folder.iterdir())
    assert len([n for n in kept if n.endswith(".npz")]) == 2
    assert mine.name in kept and young_tmp.name in kept and old_tmp.name not in kept
    monkeypatch.setattr(table_cache, "code_digest", lambda: "version 0")  # evicted: built
    load(RANKS)
    assert len(builds) == 4


def test_o200k_from_the_memo_equals_tiktoken_order(memo, monkeypatch):
    """A real rank file (../shared's o200k, 200K tokens) read back from the memo: its tables
    are those built, and it encodes as the built tokenizer does."""
    if not O200K.exists():
        pytest.skip("../shared/data is absent")
    _, builds = memo
    ref = built(O200K, monkeypatch, pretokenizer="o200k")
    load(O200K, pretokenizer="o200k")
    tok = load(O200K, pretokenizer="o200k")
    assert len(builds) == 2 and same_tables(tok, ref)
    texts = sample_texts()
    assert tok.encode_batch(texts).to_pylist() == ref.encode_batch(texts).to_pylist()


# ---- a merge list's tables ---------------------------------------------------------------

def gpt2_merges():
    """GPT-2's merges as ``(left, right)`` tuples."""
    return [tuple(m.split(" ")) for m in gpt2_files(GPT2 / "vocab.json", GPT2 / "merges.txt")[1]]


def from_merges(merges, strings=False):
    """GPT-2's vocabulary with ``merges`` (tuples, or ``"left right"`` strings read as a
    tokenizer.json's reader passes them)."""
    vocab, _, specials = gpt2_files(GPT2 / "vocab.json", GPT2 / "merges.txt")
    if strings:
        return corpustok.BytePairTokenizer._from_file("test", vocab, merges, specials)
    return corpustok.BytePairTokenizer(vocab, merges, substrate="utf8", special_tokens=specials)


def test_a_merge_lists_kept_tables_are_the_built_ones(memo, monkeypatch):
    """GPT-2's files, loaded with the memo off, then on (built, kept), then on again (read
    back): the same pair, pre-merge and whole-chunk tables, the same merges as ids, the same
    ids on the sample texts."""
    folder, builds = memo
    with monkeypatch.context() as m:
        m.setenv(table_cache.ENV, "")
        ref = corpustok.load(GPT2)
    first = corpustok.load(GPT2)
    assert len(builds) == 2 and len(list(folder.glob("*.npz"))) == 1
    again = corpustok.load(GPT2)
    assert len(builds) == 2  # read back, not built
    texts = sample_texts()
    want = ref.encode_batch(texts).to_pylist()
    for tok in (first, again):
        assert same_tables(tok, ref)
        assert tok.encode_batch(texts).to_pylist() == want
    assert again.to_dict()["merges"] == ref.to_dict()["merges"]


def test_each_merge_list_has_its_own_key(memo):
    """The list's order, its length and how it is written are all in the key: a merge list
    that differs is built, never read as another's; the same list written as pairs or as HF
    strings gives the same tables."""
    folder, builds = memo
    merges = gpt2_merges()
    base = from_merges(merges)
    assert len(builds) == 1
    assert same_tables(from_merges(list(merges)), base) and len(builds) == 1  # read back
    swapped = [merges[1], merges[0], *merges[2:]]
    for other in (swapped, merges[:-1], [" ".join(m) for m in merges]):
        tok = from_merges(other, strings=isinstance(other[0], str))
        assert same_tables(tok, from_merges(other, strings=isinstance(other[0], str)))
    assert len(builds) == 4 and len(list(folder.glob("*.npz"))) == 4
    assert same_tables(from_merges([" ".join(m) for m in merges], strings=True), base)
    assert not np.array_equal(from_merges(swapped)._merges, base._merges)


def test_merges_the_memo_cannot_read_are_built_and_named(memo):
    """A merge list holding something else than strings is never kept: building names it."""
    folder, builds = memo
    merges = gpt2_merges()
    with pytest.raises(ValueError, match=r"merges\[1\]"):
        from_merges([merges[0], (merges[1][0], 7), *merges[2:]])
    assert not folder.exists() or not list(folder.glob("*.npz"))


def test_a_damaged_merge_list_file_is_built_again(memo):
    folder, builds = memo
    ref = corpustok.load(GPT2)
    (path,) = folder.glob("*.npz")
    raw = path.read_bytes()
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    for merges in (None, arrays["merges"].reshape(-1), arrays["merges"].astype(np.int64)):
        damaged = {k: v for k, v in arrays.items() if k != "merges"}
        if merges is not None:
            damaged["merges"] = merges
        np.savez(path, **damaged)
        assert same_tables(corpustok.load(GPT2), ref)
        assert path.read_bytes() == raw  # replaced by what building writes
    assert len(builds) == 4
