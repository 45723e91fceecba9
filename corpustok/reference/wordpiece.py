"""BERT WordPiece (mirrors ``kernels/wordpiece/walk.py``): HF's BertNormalizer and
BertPreTokenizer as :func:`bert_words`, greedy longest-match-first as :func:`wordpiece_word`."""
import unicodedata

from corpustok.reference.gpt2_split import WHITE_SPACE


# The rules of HF ``tokenizers`` (BertNormalizer, BertPreTokenizer), which BertTokenizerFast
# and our kernels follow. Google's BERT ``tokenization.py`` (and the slow ``BertTokenizer``)
# differ in three places: they also remove unassigned code points (Cn), space U+2B820..U+2B91F
# as CJK, and lowercase whole words (so a final capital sigma becomes U+03C2, not U+03C3).
def is_control(ch):
    """Characters ``clean_text`` removes besides NUL and U+FFFD: categories Cc, Cf and Co,
    except tab, newline and carriage return."""
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Co")


def is_punctuation(ch):
    """BERT's punctuation: the ASCII characters ``!``..``~`` other than letters and digits,
    and the categories P*."""
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 \
        or unicodedata.category(ch)[0] == "P"


CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_chinese(ch):
    """The CJK ideograph blocks ``handle_chinese_chars`` spaces (HF's list, whose
    Extension E starts at U+2B920 where BERT's starts at U+2B820)."""
    return any(a <= ord(ch) <= b for a, b in CJK_RANGES)


def bert_words(text, lowercase=True, strip_accents=None, handle_chinese_chars=True,
               clean_text=True):
    """BERT basic tokenization: drop NUL, U+FFFD and control characters and turn whitespace
    into spaces (``clean_text``), put spaces around CJK ideographs, strip accents (NFD, then
    drop Mn; ``strip_accents=None`` means "as ``lowercase``"), lowercase each character on
    its own, then split on whitespace (Unicode White_Space, :data:`WHITE_SPACE`) and make
    each punctuation character a word of its own."""
    if clean_text:
        text = "".join(" " if ch in WHITE_SPACE else ch for ch in text
                       if ch not in "\x00\ufffd" and not is_control(ch))
    if handle_chinese_chars:
        text = "".join(f" {ch} " if is_chinese(ch) else ch for ch in text)
    if lowercase if strip_accents is None else strip_accents:
        text = "".join(ch for ch in unicodedata.normalize("NFD", text)
                       if unicodedata.category(ch) != "Mn")
    if lowercase:
        text = "".join(ch.lower() for ch in text)
    words = []
    for piece in "".join(" " if ch in WHITE_SPACE else ch for ch in text).split(" "):
        word = ""
        for ch in piece:
            if is_punctuation(ch):
                words += [word, ch] if word else [ch]
                word = ""
            else:
                word += ch
        if word:
            words.append(word)
    return words


def wordpiece_word(word, vocab, unk_token="[UNK]", prefix="##", max_chars=100):
    """WordPiece on one word: greedy longest match first, later pieces spelled with
    ``prefix``; the whole word is ``unk_token`` if some position matches nothing or the word
    has more than ``max_chars`` characters. ``vocab``: token -> id."""
    if len(word) > max_chars:
        return [vocab[unk_token]]
    out, start = [], 0
    while start < len(word):
        end = next((e for e in range(len(word), start, -1)
                    if (prefix if start else "") + word[start:e] in vocab), None)
        if end is None:
            return [vocab[unk_token]]
        out.append(vocab[(prefix if start else "") + word[start:end]])
        start = end
    return out


def wordpiece(text, vocab, unk_token="[UNK]", prefix="##", max_chars=100, **options):
    """Ids of ``text`` as HF ``BertTokenizerFast`` gives them without ``[CLS]``/``[SEP]``:
    :func:`bert_words` (``options`` are its keywords) then :func:`wordpiece_word`."""
    return [i for w in bert_words(text, **options)
            for i in wordpiece_word(w, vocab, unk_token, prefix, max_chars)]
