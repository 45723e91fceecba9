"""The CLI's tokenizer options: folders, --merges, --pretokenizer (which enters the job's
identity), encode --special, train --pretokenizer and export-tokenizer, against tiktoken and
HF."""
import json

import pyarrow.parquet as pq
import tiktoken
import tiktoken.load
from tokenizers import Tokenizer

import corpustok
from tests.conftest import GPT2, GPT2_4K_RANKS as RANKS, TEST_DATA
from corpustok.bpe.tokenizer import BytePairTokenizer
from corpustok.pipeline.cli import main
from corpustok.pretokenize.patterns import PATTERNS

LINES = [t for t in (TEST_DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines() if t]


def _jsonl(path, texts):
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    return path


def _tokens(out):
    rows = []
    for shard in sorted(out.glob("data/*.parquet")):
        rows += pq.read_table(shard).to_pylist()
    return [r["tokens"] for r in sorted(rows, key=lambda r: r["row"])]


def test_rank_file_with_pretokenizer_tokenizes_as_tiktoken(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl", LINES)
    out = tmp_path / "out"
    ref = tiktoken.Encoding("t", pat_str=PATTERNS["o200k"], special_tokens={},
                            mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(RANKS)))
    args = ["tokenize", str(src), "--tokenizer", str(RANKS), "--out", str(out), "--no-progress"]
    assert main(args) == 2  # an unknown rank file needs its split
    assert "--pretokenizer" in capsys.readouterr().err
    assert main(args + ["--pretokenizer", "o200k"]) == 0
    assert _tokens(out) == [ref.encode_ordinary(t) for t in LINES]
    # another split is another job: refused in the same folder without --overwrite
    assert main(args + ["--pretokenizer", "cl100k"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(args + ["--pretokenizer", "o200k"]) == 0  # the same job: kept, not redone


def test_gpt2_folder_and_merges_file(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl", LINES)
    hf = corpustok.load(GPT2)  # the folder's vocab.json + merges.txt
    ref = tiktoken.Encoding("gpt2", pat_str=PATTERNS["gpt2"],
                            special_tokens={"<|endoftext|>": 50256},
                            mergeable_ranks={bytes(BYTE[c] for c in t): i for t, i in
                                             hf.vocab.items() if t != "<|endoftext|>"})
    for name, opts in (("dir", [str(GPT2)]),
                       ("files", [str(GPT2 / "vocab.json"), "--merges",
                                  str(GPT2 / "merges.txt")])):
        out = tmp_path / name
        assert main(["tokenize", str(src), "--out", str(out), "--no-progress", "--eos",
                     "<|endoftext|>", "--tokenizer", *opts]) == 0
        assert _tokens(out) == [ref.encode_ordinary(t) + [50256] for t in LINES]
    capsys.readouterr()
    assert main(["encode", "--tokenizer", str(GPT2), "--special", "a<|endoftext|>b"]) == 0
    assert main(["encode", "--tokenizer", str(GPT2), "a<|endoftext|>b"]) == 0
    special, plain = capsys.readouterr().out.splitlines()
    assert special.split() == [str(i) for i in ref.encode("a<|endoftext|>b",
                                                          allowed_special="all")]
    assert plain.split() == [str(i) for i in ref.encode_ordinary("a<|endoftext|>b")]


BYTE = {c: b for b, c in enumerate(corpustok.substrate.SYMBOL_STRINGS[:256])}


def test_train_with_a_pretokenizer_then_export_to_hf(tmp_path, capsys):
    src = _jsonl(tmp_path / "in.jsonl", LINES)
    out = tmp_path / "tok.json"
    assert main(["train", str(src), "--substrate", "utf8", "--vocab-size", "600",
                 "--pretokenizer", "llama4", "--special-token", "<|eot|>",
                 "--out", str(out)]) == 0
    got = corpustok.load(out)
    want = BytePairTokenizer.train(LINES, 600, substrate="utf8", pretokenizer="o200k",
                                   special_tokens=["<|eot|>"])
    assert got.pretokenizer == "o200k"
    assert got.vocab == want.vocab and got.merges == want.merges
    hf_path = tmp_path / "tokenizer.json"
    assert main(["export-tokenizer", "--tokenizer", str(out), "--out", str(hf_path)]) == 0
    hf = Tokenizer.from_file(str(hf_path))
    assert [e.ids for e in hf.encode_batch(LINES)] == got.encode_batch(LINES).to_pylist()
    assert main(["export-tokenizer", "--tokenizer", str(out), "--out", str(hf_path)]) == 2
    assert "exists" in capsys.readouterr().err
    ube = tmp_path / "ube.json"
    assert main(["train", str(src), "--vocab-size", "600", "--out", str(ube)]) == 0
    assert main(["export-tokenizer", "--tokenizer", str(ube), "--out",
                 str(tmp_path / "no.json")]) == 2
    assert "'ube' substrate cannot be written as an HF tokenizer.json" in \
        capsys.readouterr().err
    assert not (tmp_path / "no.json").exists()
    assert main(["train", str(src), "--vocab-size", "600", "--pretokenizer", r"(?<=a)b",
                 "--out", str(tmp_path / "x.json")]) == 2
    assert "training needs a pre-tokenizer the split kernel runs" in capsys.readouterr().err
