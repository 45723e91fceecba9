#!/usr/bin/env bash
# Reproduce docs/report/: BBPE (utf8), BBPE16 (utf16) and UBE 32K vocabularies trained on the
# same text (chunks counted once), then the token-budget report on the UDHR parallel corpus
# (532 languages, English reference, English excluded from the Gini). Two runs:
#   OUT/          trained on the whole shared corpus (../shared/data/corpus/*.txt.xz, 67 MiB),
#                 which includes udhr.txt, the evaluated text itself (6.8 MiB)
#   OUT/heldout/  trained on the same corpus without udhr.txt (60.6 MiB)
# Usage: tools/udhr_report.sh [OUT_DIR] [extra report options, e.g. --beam]
# About 1 min per run on 2 cores. The trained tokenizers (~1 MB each) go to $TOKS, not to OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/data}
OUT=${1:-docs/report}
shift || true
PY=${PY:-.venv/bin/python}
TOKS=${TOKS:-/tmp/corpustok-udhr-tokenizers}
ALL=("$SHARED"/corpus/*.txt.xz)
HELD=()
for f in "${ALL[@]}"; do [[ $(basename "$f") == udhr.txt.xz ]] || HELD+=("$f"); done

run() {  # run OUT_SUBDIR TITLE TRAIN_FILES...
    local out=$1 title=$2
    shift 2
    "$PY" -m corpustok.pipeline.report "$SHARED/udhr/udhr.jsonl.xz" \
        --train --vocab-size 32000 --train-text "$@" --out "$out" --title "$title" \
        "${EXTRA[@]}"
    mkdir -p "$TOKS/$(basename "$out")"
    mv "$out"/tokenizers/*.json "$TOKS/$(basename "$out")/" && rmdir "$out/tokenizers"
}
EXTRA=("$@")
run "$OUT" "Token-budget report: UDHR (532 languages), 32K vocabularies trained on the whole shared corpus" "${ALL[@]}"
run "$OUT/heldout" "Token-budget report: UDHR (532 languages), 32K vocabularies trained without udhr.txt" "${HELD[@]}"
echo "tokenizers in $TOKS"
