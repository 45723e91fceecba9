"""Reading a tokenizer's JSON file: a file that is not UTF-8 JSON, or nests deeper than the
parser can go, is one ValueError naming the file."""
import json

from corpustok.formats.recognize import FORMATS

def read_json(path, what=None):
    """The JSON document in ``path``; ValueError naming the file if it is not UTF-8 JSON, or
    if it nests deeper than the parser's recursion limit (about 1,000 levels; tokenizer files
    nest a few). ``what``: how the message begins (e.g. "not a tokenizer file")."""
    start = f"{path}: {what}: " if what else f"{path}: "
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as e:
        raise ValueError(f"{start}not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        if e.msg == "Extra data" and e.doc[e.pos:e.pos + 1] == "{":
            raise ValueError(f"{start}JSON Lines, one object per line (a data file?); "
                             f"expected {FORMATS}") from None
        raise ValueError(f"{start}not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError(f"{path}: {too_deep()}") from None


def too_deep():
    """The message for a JSON document nested deeper than Python follows (its recursion
    limit, about 1,000 levels) while parsing or reading it."""
    return "nested too deep to be a tokenizer file (more levels of JSON than Python " \
        "follows; tokenizer files nest a few)"


def from_json_file(path, build):
    """``build(path, doc)`` of the JSON document in ``path`` (:func:`read_json`); a document
    that parses but nests too deep for ``build`` to walk is the same ValueError."""
    doc = read_json(path)
    try:
        return build(path, doc)
    except RecursionError:
        raise ValueError(f"{path}: {too_deep()}") from None
