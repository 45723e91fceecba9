"""The slow parity sweeps (marked slow: ./run_local.sh test -m slow), one file per subject
(``test_<subject>_slow.py``): every code point, the whole shared corpus, every UDHR record,
corpus-b, training up to 32K, the CUDA simulator on every scalar. Helpers they share with their
subject's default tests live in that subject's conftest.py (tests/{bpe,core,formats,
pretokenize,sentencepiece}/conftest.py, GPT-2's fixtures in tests/conftest.py) or, where a
subject file's own ``pair``/``first_difference`` is meant, are imported from that file. The
pipeline's slow memory test (a 100 MB document) stays in tests/pipeline/test_pipeline.py: a
resource bound, not a parity sweep."""
