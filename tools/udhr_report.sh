#!/usr/bin/env bash
# Reproduce docs/report/: BBPE (utf8), BBPE16 (utf16) and UBE 32K vocabularies trained on the
# same text (chunks counted once), then the token-budget report on the UDHR parallel corpus
# (532 languages, English reference, English excluded from the Gini), with BERT's uncased
# WordPiece (tests/data/bert-base-uncased, a tokenizer with [UNK]) reported beside them.
# Neither run trains on the evaluated text:
#   OUT/          --train's default: the UDHR held out by section (16 of its 32 sections, every
#                 language, train; the other 16 are evaluated)
#   OUT/corpus/   trained on the shared corpus (../shared/data/corpus/*.txt.xz) without udhr.txt
#                 and gflanguages_samples.txt (UDHR article 1 in many languages: 1,008 of the
#                 evaluated lines), 60 MiB, evaluated on the whole UDHR
# Each summary.md states its training text and how many evaluated lines it holds verbatim.
# Usage: tools/udhr_report.sh [OUT_DIR] [extra report options, e.g. --beam]
# About 30 s and 2 min on 2 cores. The trained tokenizers (~1 MB each) go to $TOKS, not to OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
OUT=${1:-docs/report}
shift || true
PY=${PY:-.venv/bin/python}
TOKS=${TOKS:-/tmp/corpustok-udhr-tokenizers}
BERT=tests/data/bert-base-uncased/vocab.txt
HELD=()
for f in "$SHARED"/corpus/*.txt.xz; do
    case $(basename "$f") in udhr.txt.xz|gflanguages_samples.txt.xz) ;; *) HELD+=("$f") ;; esac
done

run() {  # run OUT_SUBDIR TITLE [TRAIN OPTIONS...]
    local out=$1 title=$2
    shift 2
    "$PY" -m corpustok.pipeline.report "$SHARED/udhr/udhr.jsonl.xz" \
        --train --vocab-size 32000 "$@" --tokenizer "BERT=$BERT" --out "$out" \
        --title "$title" "${EXTRA[@]}"
    mkdir -p "$TOKS/$(basename "$out")"
    mv "$out"/tokenizers/*.json "$TOKS/$(basename "$out")/" && rmdir "$out/tokenizers"
}
EXTRA=("$@")
T="Token-budget report: UDHR (532 languages), 32K vocabularies trained on"
run "$OUT" "$T half its sections (held out)"
run "$OUT/corpus" "$T the shared corpus without UDHR text" --train-text "${HELD[@]}"
echo "tokenizers in $TOKS"
