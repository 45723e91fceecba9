"""Pre-tokenization: the named split patterns and how a name or pattern resolves (patterns),
compiling a pattern to the split kernel's program (pattern), the patterns run in Python with
``regex`` (python_split), special tokens matched in raw text (specials).
"""
from corpustok.pretokenize import patterns as _patterns
from corpustok.pretokenize.patterns import *  # noqa: F401,F403 (the names users import)

__all__ = _patterns.__all__
