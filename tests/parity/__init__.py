"""The parity sweeps over every code point and the whole shared corpus (marked slow: ./run_local.sh test -m slow)."""
