"""GPT-2 pre-tokenization by hand (mirrors the split kernel on GPT-2's pattern,
``kernels/split/``): :func:`gpt2_split`."""
import unicodedata


# ``\s`` of the regex module is the Unicode White_Space property (not ``str.isspace``, which
# adds U+001C..U+001F).
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                        "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def char_class(ch):
    """``"L"`` (``\\p{L}``), ``"N"`` (``\\p{N}``), ``"S"`` (``\\s``) or ``"O"``: every
    character is in exactly one."""
    major = unicodedata.category(ch)[0]
    if major in "LN":
        return major
    return "S" if ch in WHITE_SPACE else "O"


def _run(text, i, cls):
    """End of the run of class ``cls`` starting at ``i``."""
    while i < len(text) and char_class(text[i]) == cls:
        i += 1
    return i


def gpt2_split(text):
    """``regex.findall(GPT2_PATTERN, text)`` written out: at each position the first
    alternative of ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|
    \\s+(?!\\S)|\\s+`` that matches wins, each ``+`` taking the longest run."""
    chunks, i = [], 0
    while i < len(text):
        end = next((i + len(c) for c in CONTRACTIONS if text.startswith(c, i)), None)
        if end is None:
            j = i + 1 if text[i] == " " and i + 1 < len(text) else i
            if char_class(text[j]) != "S":  # ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
                end = _run(text, j, char_class(text[j]))
            else:
                end = _run(text, i, "S")
                if end < len(text) and end - i > 1:  # `\s+(?!\S)` backs off one character
                    end -= 1
        chunks.append(text[i:end])
        i = end
    return chunks
