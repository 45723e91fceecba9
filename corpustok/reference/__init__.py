"""Readable pure-Python references of the corpustok kernels, one module per subject (the names
below import from here too) (in the spirit of tiktoken's
``_educational.py``): each function is the plain definition that a Numba kernel is tested
against, slow, short and standard library only (no ``regex``, no kernels). The tests prove
these references against the external ones (Python's codecs, ``regex``, tiktoken and HF
``tokenizers``) in ``tests/core/test_reference.py``; kernel tests then compare with them.

1. Substrate codec (mirrors ``kernels/substrate.py``): :func:`symbol_ids`,
   :func:`encode_symbols`, :func:`decode_symbols`, :func:`bytes_to_unicode`,
   :func:`symbol_string`.
2. GPT-2 pre-tokenization (mirrors ``kernels/split/interpreter.py``): :func:`gpt2_split`.
3. Byte-level BPE (mirrors ``kernels/bpe/merge.py``, ``kernels/bpe/chunk.py`` and
   ``kernels/bpe/encode.py``): :func:`merge_ids`, :func:`encode`, :func:`decode`,
   :func:`load_gpt2`, :func:`load_hf_json`.
4. BPE training (mirrors ``kernels/bpe/chunk_count.py``, ``kernels/bpe/learn.py``):
   :func:`count_chunks`, :func:`train_bpe`.
5. BERT WordPiece (mirrors ``kernels/wordpiece/walk.py``): :func:`bert_words`,
   :func:`wordpiece_word`, :func:`wordpiece`.

Character classes come from the running Python's ``unicodedata``; the ``regex`` module and HF
``tokenizers`` carry their own Unicode tables, so code points that one version assigns and the
other does not may be classed differently (the tests keep to code points both know).
"""
from corpustok.reference.substrate import *  # noqa: F401,F403
from corpustok.reference.gpt2_split import *  # noqa: F401,F403
from corpustok.reference.bpe import *  # noqa: F401,F403
from corpustok.reference.wordpiece import *  # noqa: F401,F403
