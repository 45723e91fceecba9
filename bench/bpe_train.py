"""BPE training time: corpustok vs HF ``BpeTrainer`` vs SentencePiece BPE, same text.

    .venv/bin/python bench/bpe_train.py [--mb 24.5] [--vocab 32000] [--runs 3]

All three learn a 32K vocabulary from the first ``--mb`` MB of the shared corpus
(``../shared/data/corpus/*.txt.xz``), from in-memory lines. corpustok runs single-threaded
(one Numba call to count per batch, one to learn); HF uses its own thread pool (all cores) with
the GPT-2 ByteLevel pre-tokenizer, the same work as corpustok's ``utf8`` substrate;
SentencePiece runs with its defaults (``num_threads=16``, capped by the cores). Medians of
``--runs`` runs after a warm-up (Numba compilation is excluded).
"""
import argparse
import io
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner, corpus_lines, timed  # noqa: E402



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=24.5)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    banner("BPE training", ("corpustok", "numba", "tokenizers", "sentencepiece"))
    from corpustok.bpe.train import count_chunks, train, train_from_counts

    lines = corpus_lines(args.mb)
    size = sum(len(x.encode("utf-8")) for x in lines)
    counts = count_chunks(lines)
    print(f"input: {size / 1e6:.1f} MB, {len(lines)} lines, {len(counts)} unique GPT-2 chunks; "
          f"vocab {args.vocab}; medians of {args.runs} runs")

    rows = []
    t_count = timed(lambda: count_chunks(lines), args.runs)[0]
    rows.append(("corpustok count_chunks (shared by all substrates)", t_count))
    for sub in ("ube", "utf8", "utf16"):
        rows.append((f"corpustok merges only, {sub}",
                     timed(lambda: train_from_counts(counts, args.vocab, sub), args.runs)[0]))
    ours = {sub: timed(lambda: train(lines, args.vocab, sub), args.runs)[0]
            for sub in ("ube", "utf8")}
    rows += [(f"corpustok train (count + merges), {s}", t) for s, t in ours.items()]

    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    def hf():
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(vocab_size=args.vocab, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(lines, trainer)
    t_hf = timed(hf, args.runs)[0]
    rows.append(("HF tokenizers BpeTrainer (ByteLevel, all cores)", t_hf))

    import sentencepiece as spm
    stripped = [x.rstrip("\n") for x in lines if x.strip()]

    def sp():
        spm.SentencePieceTrainer.train(sentence_iterator=iter(stripped), model_writer=io.BytesIO(),
                                       model_type="bpe", vocab_size=args.vocab,
                                       max_sentence_length=1 << 20, minloglevel=2)
    t_sp = timed(sp, args.runs)[0]
    rows.append(("SentencePiece BPE (defaults)", t_sp))

    print(f"{'trainer':58s} {'seconds':>8s} {'vs HF':>7s} {'vs SPM':>7s}")
    for name, t in rows:
        print(f"{name:58s} {t:8.2f} {t_hf / t:6.2f}x {t_sp / t:6.2f}x")


if __name__ == "__main__":
    main()
