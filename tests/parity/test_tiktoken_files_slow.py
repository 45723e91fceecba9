"""Rank files and Tekken files on the whole shared corpus and every UDHR record (marked slow:
./run_local.sh test -m slow): corpustok's ids equal the vendor's tiktoken ``encode_ordinary``
and HF's tokenizer built from the same file (conftest.hf_tokenizer_from_ranks), every line but
those holding a code point newer than the oracle's Unicode tables (tests/formats/conftest.py;
docs/unicode_differences.md). The default tests are tests/formats/test_tiktoken_files.py."""
import json
import lzma
import re
import unicodedata
from functools import lru_cache

import pytest
import tiktoken
from tokenizers import normalizers

import corpustok
from tests.conftest import (hf_pattern, hf_tokenizer_from_ranks, MODERN_VOCABS, NAMED_AS,
                            read_xz_text, shared_corpus_files, SHARED_DATA, vendor_tokenizer)
from tests.formats.conftest import code_point_ranges, hf_nfc_differences, newer_code_points

TOKENIZERS = list(MODERN_VOCABS)


@lru_cache(maxsize=1)
def whole_corpus():
    """Every line of every shared corpus file, then every UDHR record's text."""
    lines = [t for p in shared_corpus_files() for t in read_xz_text(p).splitlines(True)]
    with lzma.open(SHARED_DATA / "udhr" / "udhr.jsonl.xz", "rt", encoding="utf-8") as f:
        lines += [json.loads(r)["text"] for r in f]
    assert len(lines) > 490_000, len(lines)  # the whole corpus (491,328): none of it missing
    return lines


def source(name, path):
    """``(ranks, the vendor's pattern, NFC, id offset of our ids)`` of a modern tokenizer, as
    its vendor's tokenizer holds them (conftest.vendor_tokenizer)."""
    vendor = vendor_tokenizer(name, path)
    return vendor.ranks, vendor.pattern, vendor.nfc, vendor.offset


def containing(points):
    """A predicate: does a string hold one of ``points``?"""
    return re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                                    for a, b in code_point_ranges(points)) + "]").search


def compare_whole_corpus(encode_ours, encode_ref, leave_out, chunk=20_000):
    """Compares ids line by line, in chunks, but for the lines ``leave_out`` is true of.
    Returns ``(lines, indices left out, indices of the other lines that differ)``."""
    lines = whole_corpus()
    left_out, left_out_differ, bad = [], 0, []
    for at in range(0, len(lines), chunk):
        part = lines[at:at + chunk]
        for k, (got, want) in enumerate(zip(encode_ours(part), encode_ref(part))):
            if leave_out(part[k]):
                left_out.append(at + k)
                left_out_differ += got != want
            elif got != want:
                bad.append(at + k)
    print(f"{len(lines)} lines, {len(left_out)} left out ({left_out_differ} of them differ), "
          f"{len(bad)} other lines differ")
    return lines, left_out, bad, left_out_differ


BERIA_ERFE = range(0x16EA0, 0x16EE0)  # a block of Unicode 17, newer than every oracle's tables


def assert_whole_corpus_equal(encode_ours, encode_ref, leave_out):
    """0 lines differ; the lines left out are the 4 docs/guarantees.md names (UDHR in Beria Erfe,
    added in Unicode 17: the oracles' tables do not know it), and they match anyway."""
    lines, left_out, bad, left_out_differ = compare_whole_corpus(encode_ours, encode_ref,
                                                                 leave_out)
    assert not bad, f"{len(bad)} of {len(lines)} lines differ, first {lines[bad[0]][:80]!r}"
    assert len(left_out) == 4 and left_out_differ == 0, (len(left_out), left_out_differ)
    assert all(any(ord(c) in BERIA_ERFE for c in lines[i]) for i in left_out)


@pytest.mark.slow
@pytest.mark.parametrize("name", TOKENIZERS)
def test_whole_corpus_equals_tiktoken(shared_data, modern_vocab, name):
    path = modern_vocab(name)
    ranks, pattern, nfc, offset = source(name, path)
    ref = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    tok = corpustok.load(path)

    def ours(part):
        return [[i - offset for i in ids] for ids in tok.encode_batch(part).to_pylist()]

    def reference(part):  # Qwen's own tokenizer normalizes before tiktoken
        part = [unicodedata.normalize("NFC", t) for t in part] if nfc else part
        return ref.encode_ordinary_batch(part, num_threads=1)

    assert_whole_corpus_equal(ours, reference, containing(newer_code_points("tiktoken")))


@pytest.mark.slow
@pytest.mark.parametrize("name", TOKENIZERS)
def test_whole_corpus_equals_hf(shared_data, modern_vocab, tmp_path, name):
    """HF's tokenizer of the vendor's file (conftest.hf_tokenizer_from_ranks), written as a
    tokenizer.json that corpustok reads."""

    ranks, _, nfc, _ = source(name, modern_vocab(name))
    hf = hf_tokenizer_from_ranks(ranks, hf_pattern(NAMED_AS[name][0]), nfc=nfc)
    path = tmp_path / "tokenizer.json"
    path.write_text(hf.to_str(), encoding="utf-8")
    tok = corpustok.load(path)

    def reference(part):
        return [e.ids for e in hf.encode_batch(part, add_special_tokens=False)]

    newer, older_nfc, hf_nfc = (containing(newer_code_points("hf")),
                                containing(hf_nfc_differences()), normalizers.NFC())

    def leave_out(t):
        """Lines with newer code points, and (Qwen) lines HF's older NFC normalizes otherwise,
        each of which must hold a code point of ``hf_nfc_differences()``."""
        if nfc and hf_nfc.normalize_str(t) != unicodedata.normalize("NFC", t):
            assert older_nfc(t), t[:80]
            return True
        return newer(t)

    assert_whole_corpus_equal(lambda part: tok.encode_batch(part).to_pylist(), reference,
                              leave_out)
