"""Split patterns as data: a pre-tokenizer regex compiled into a small program for one kernel.

Byte-level BPE tokenizers cut text with a regex before merging (``regex.findall(PATTERN,
text)``). Their patterns share one shape: an ordered alternation of branches, each an optional
leading character, one or two greedy runs of a character class, an optional tail (a class run or
a group of literal strings such as ``(?i:'s|'t|...)``) and at most a ``(?!...)`` lookahead of one
character. :func:`compile_pattern` parses a pattern string, checks it has that shape, and turns
it into the tuple :mod:`corpustok.kernels.split.interpreter` interprets; any other pattern raises
:class:`UnsupportedPattern` (the caller then falls back to the ``regex`` module).

Character classes are evaluated once per *class id*: code points with the same Unicode
properties (``\\p{Lu}`` ... ``\\s``, from the ``regex`` module's tables, see
``tools/gen_unicode_props.py``) and the same membership in every literal range of the pattern
share an id, at most 63 ids, so a class is a 64-bit mask and a membership test is one shift.
"""
from functools import lru_cache
from importlib import resources

import numpy as np

from corpustok.kernels.split.interpreter import (A_MAX, A_MIN, A_SET, B_MIN, B_SET, BODY_FIRST,
                                     CLASS_TAIL, FIELDS, FIRST, GROUP_TAIL, HAS_B, HAS_LEAD, KIND,
                                     LEAD_SET, LITERALS, LITS, NO_TAIL, NOT_AHEAD, NOT_SET, RUN,
                                     TAIL, TAIL_GROUP, TAIL_MASK, UNBOUNDED)

PROPERTY_BITS = {"Lu": 1, "Ll": 2, "Lt": 4, "Lm": 8, "Lo": 16, "M": 32, "N": 64, "s": 128}
_NAMED = {"L": 1 | 2 | 4 | 8 | 16, "Lu": 1, "Ll": 2, "Lt": 4, "Lm": 8, "Lo": 16, "M": 32,
          "N": 64}
_ESCAPED = {"r": "\r", "n": "\n", "t": "\t", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b"}
MAX_IDS = 63

__all__ = ["UnsupportedPattern", "SplitPattern", "compile_pattern", "unicode_props"]


class UnsupportedPattern(ValueError):
    """The pattern uses regex features the split kernel does not interpret."""


@lru_cache(maxsize=None)
def unicode_props():
    """``(props uint8[0x110000], fold_from int32, fold_to int32)``: the property bits of every
    code point and the non-ASCII code points ``(?i)`` matches to an ASCII letter."""
    with resources.files("corpustok").joinpath("data/unicode_props.npz").open("rb") as f:
        z = np.load(f)
        starts, values = z["starts"], z["values"]
        folds = (z["fold_from"].astype(np.int32), z["fold_to"].astype(np.int32))
    table = np.repeat(values, np.diff(starts, append=0x110000))
    table.setflags(write=False)
    return (table, *folds)


# ---- parsing: pattern string -> branches of items ------------------------------------------
# A character set is (props bitmask, ranges [(lo, hi)], negated); an item is
# ("set", cset, min, max), ("lits", [str], icase, min, max) or ("not", cset).

class _Parser:
    def __init__(self, pattern):
        self.p = pattern
        self.k = 0

    def fail(self, what):
        raise UnsupportedPattern(f"{what} at offset {self.k} of {self.p!r}")

    def peek(self):
        return self.p[self.k] if self.k < len(self.p) else ""

    def take(self):
        c = self.peek()
        self.k += 1
        return c

    def alternation(self):
        branches = [self.sequence()]
        while self.peek() == "|":
            self.k += 1
            branches.append(self.sequence())
        return branches

    def sequence(self):
        items = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.quantified())
        return items

    def quantified(self):
        item = self.atom()
        c = self.peek()
        if item[0] == "not" or c not in ("?", "*", "+", "{"):
            return item
        self.k += 1
        lo, hi = {"?": (0, 1), "*": (0, UNBOUNDED), "+": (1, UNBOUNDED)}.get(c, (None, None))
        if c == "{":
            close = self.p.find("}", self.k)
            parts = self.p[self.k:close].split(",") if close > 0 else []
            if not 1 <= len(parts) <= 2 or not all(x.strip().isdigit() or x.strip() == ""
                                                   for x in parts) or not parts[0].strip():
                self.fail("unsupported repetition")
            lo = int(parts[0])
            hi = lo if len(parts) == 1 else int(parts[1]) if parts[1].strip() else UNBOUNDED
            self.k = close + 1
        if self.peek() in ("?", "+"):
            self.fail("lazy or possessive quantifier")
        return (*item[:-2], lo, hi)

    def atom(self):
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return ("set", self.char_class(), 1, 1)
        if c == "\\":
            return ("set", self.escape(in_class=False), 1, 1)
        if c == ".":
            return ("set", (0, [(10, 10)], True), 1, 1)
        if c in "^$)*+?{":
            self.k -= 1
            self.fail(f"unsupported {c!r}")
        return ("set", (0, [(ord(c), ord(c))], False), 1, 1)

    def group(self):
        for head, kind in (("?i:", "icase"), ("?:", "plain"), ("?!", "not")):
            if self.p.startswith(head, self.k):
                self.k += len(head)
                break
        else:
            self.fail("unsupported group (capturing groups change findall's result)")
        branches = self.alternation()
        if self.take() != ")":
            self.fail("unclosed group")
        if kind == "not":
            if len(branches) != 1 or len(branches[0]) != 1 or branches[0][0][0] != "set" \
                    or branches[0][0][2:] != (1, 1):
                self.fail("lookahead other than (?!one character class)")
            return ("not", branches[0][0][1])
        strings = [_literal_string(b) for b in branches]
        if None in strings:
            self.fail("group that is not an alternation of literal strings")
        if kind == "icase":
            if not all(s.isascii() for s in strings):
                self.fail("case-insensitive group with non-ASCII literals")
            strings = [s.lower() for s in strings]
        return ("lits", strings, kind == "icase", 1, 1)

    def char_class(self):
        negated = self.peek() == "^"
        if negated:
            self.k += 1
        members = []  # character sets; the class is their union
        first = True
        while True:
            c = self.take()
            if c == "":
                self.fail("unclosed character class")
            if c == "]" and not first:
                break
            first = False
            if c == "\\":
                cs = self.escape(in_class=True)
            elif c == "[":
                self.fail("nested character class")
            else:
                cs = (0, [(ord(c), ord(c))], False)
            if self.peek() == "-" and self.p[self.k + 1:self.k + 2] not in ("]", ""):
                lo = _single(cs)
                self.k += 1
                c2 = self.take()
                hi = _single(self.escape(in_class=True) if c2 == "\\" else
                             (0, [(ord(c2), ord(c2))], False))
                if lo is None or hi is None or hi < lo:
                    self.fail("bad range")
                cs = (0, [(lo, hi)], False)
            members.append(cs)
        if any(m[2] for m in members):
            if len(members) != 1:
                self.fail("negated escape inside a character class with other members")
            props, ranges, neg = members[0]
            return (props, ranges, neg != negated)
        props = 0
        ranges = []
        for m in members:
            props |= m[0]
            ranges += m[1]
        return (props, ranges, negated)

    def escape(self, in_class):
        c = self.take()
        if c in ("p", "P"):
            close = self.p.find("}", self.k)
            if self.peek() != "{" or close < 0 or self.p[self.k + 1:close] not in _NAMED:
                self.fail("unsupported Unicode property")
            name = self.p[self.k + 1:close]
            self.k = close + 1
            return (_NAMED[name], [], c == "P")
        if c in ("s", "S"):
            return (PROPERTY_BITS["s"], [], c == "S")
        if c in _ESCAPED:
            cp = ord(_ESCAPED[c])
        elif c in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[c]
            digits = self.p[self.k:self.k + width]
            if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
                self.fail("bad hexadecimal escape")
            self.k += width
            cp = int(digits, 16)
        elif c and not c.isalnum():
            cp = ord(c)
        else:
            self.fail(f"unsupported escape \\{c}")
        return (0, [(cp, cp)], False)


def _single(cset):
    props, ranges, neg = cset
    if props or neg or len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
        return None
    return ranges[0][0]


def _literal_string(branch):
    """The string a branch of single literal characters matches, else None."""
    out = []
    for item in branch:
        if item[0] != "set" or item[2:] != (1, 1) or _single(item[1]) is None:
            return None
        out.append(chr(_single(item[1])))
    return "".join(out) if out else None


# ---- class ids and masks -------------------------------------------------------------------

def _class_ids(props, ranges):
    """``(ids uint8[0x110000], first code point of each id)``: code points share an id when
    their property bits and their membership in every range agree. Works on the runs where
    both are constant (a few thousand), not on every code point."""
    cuts = [np.flatnonzero(props[1:] != props[:-1]) + 1, [0]]
    cuts += [[lo, hi + 1] for lo, hi in ranges]
    starts = np.unique(np.concatenate(cuts))
    starts = starts[starts < len(props)]
    key = props[starts].astype(np.int64)
    for bit, (lo, hi) in enumerate(ranges):
        key[(starts >= lo) & (starts <= hi)] |= np.int64(1) << (8 + bit)
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    if len(uniq) > MAX_IDS:
        raise UnsupportedPattern(f"{len(uniq)} distinct character classes (at most {MAX_IDS})")
    ids = np.repeat(inverse.astype(np.uint8), np.diff(starts, append=len(props)))
    ids.setflags(write=False)
    return ids, starts[first]


def _mask(cset, reps, props):
    """64-bit mask of the class ids (by representative code point) that ``cset`` holds."""
    bits, ranges, neg = cset
    m = 0
    for k, cp in enumerate(reps):
        hit = bool(props[cp] & bits) or any(lo <= cp <= hi for lo, hi in ranges)
        if hit != neg:
            m |= 1 << k
    return m


class SplitPattern:
    """A compiled split pattern: ``.pattern`` (the regex string) and ``.program``, the tuple
    the split kernel takes: ``(ids, prog, lit_cp, lit_off, group_off, group_icase,
    fold_from, fold_to, rule, id_props)`` (see :mod:`corpustok.kernels.split.interpreter`); ``rule``
    names the bit-parallel rule of :mod:`corpustok.kernels.split.fast` that gives this
    pattern's chunks (0: none), which only the caller that knows the pattern can say, and
    ``id_props`` are the property bits (:data:`PROPERTY_BITS`) of each class id."""

    def __init__(self, pattern, rule=0):
        if not isinstance(pattern, str) or not pattern:
            raise UnsupportedPattern(f"a split pattern must be a non-empty str, got {pattern!r}")
        self.pattern = pattern
        parser = _Parser(pattern)
        branches = parser.alternation()
        if parser.k != len(pattern):
            parser.fail("unbalanced ')'")
        props, fold_from, fold_to = unicode_props()
        ranges = []
        for cset, strings in _sets_and_strings(branches):
            if cset is not None:
                ranges += [r for r in cset[1] if r not in ranges]
            # a literal group's first characters (and what (?i) folds to them) get ids of their own
            ranges += [r for r in _folded_ranges(strings) if r not in ranges]
        if len(ranges) > 55:
            raise UnsupportedPattern(f"{len(ranges)} literal characters and ranges (at most 55)")
        ids, reps = _class_ids(props, ranges)
        groups = []
        rows = [self._row(b, ids, reps, props, groups, pattern) for b in _merge_literals(branches)]
        lit_cp, lit_off, group_off = [], [0], [0]
        for strings, _ in groups:
            for s in strings:
                lit_cp += [ord(c) for c in s]
                lit_off.append(len(lit_cp))
            group_off.append(len(lit_off) - 1)
        self.program = (ids, np.array(rows, np.int64).reshape(-1, FIELDS),
                        np.array(lit_cp or [0], np.int32), np.array(lit_off, np.int64),
                        np.array(group_off, np.int64),
                        np.array([icase for _, icase in groups] or [False], np.bool_),
                        fold_from, fold_to, np.int64(rule), props[reps].astype(np.uint8))

    @staticmethod
    def _row(branch, ids, reps, props, groups, pattern):
        row = [0] * FIELDS
        mask = lambda cs: _mask(cs, reps, props)  # noqa: E731
        if branch[0] == "literals":
            row[KIND] = LITERALS
            row[LITS] = len(groups)
            groups.append((branch[1], branch[2]))
            row[FIRST] = _group_first(branch[1], branch[2], reps, props)
            return [_signed(v) for v in row]
        items = list(branch[1])
        row[KIND] = RUN
        if len(items) > 1 and items[0][0] == "set" and items[0][2:] == (0, 1):
            row[HAS_LEAD] = 1
            row[LEAD_SET] = mask(items.pop(0)[1])
        if not items or items[0][0] != "set":
            raise UnsupportedPattern(f"branch {_show(branch[1])} of {pattern!r}: expected a "
                                     "character-class run")
        a = items.pop(0)
        row[A_SET], row[A_MIN], row[A_MAX] = mask(a[1]), a[2], a[3]
        if items and items[0][0] == "set" and not (len(items) == 1
                                                   and items[0][2:] == (0, UNBOUNDED)):
            b = items.pop(0)  # a last X* is the tail: the same thing when nothing follows
            if b[3] != UNBOUNDED:
                raise UnsupportedPattern(f"second run {_show([b])} must be unbounded")
            row[HAS_B], row[B_SET], row[B_MIN] = 1, mask(b[1]), b[2]
        if items and items[0][0] == "set" and items[0][2:] == (0, UNBOUNDED):
            row[TAIL], row[TAIL_MASK] = CLASS_TAIL, mask(items.pop(0)[1])
        elif items and items[0][0] == "lits" and items[0][3:] == (0, 1):
            t = items.pop(0)
            row[TAIL], row[TAIL_GROUP] = GROUP_TAIL, len(groups)
            row[TAIL_MASK] = _group_first(t[1], t[2], reps, props)
            groups.append((t[1], t[2]))
        else:
            row[TAIL] = NO_TAIL
        if items and items[0][0] == "not" and not row[HAS_B] and row[TAIL] == NO_TAIL:
            row[NOT_AHEAD], row[NOT_SET] = 1, mask(items.pop(0)[1])
        if items:
            raise UnsupportedPattern(f"branch {_show(branch[1])} of {pattern!r} has a shape "
                                     "the split kernel does not interpret")
        _check_run(row, branch, pattern)
        row[BODY_FIRST] = row[A_SET] | (row[B_SET] if row[HAS_B] and row[A_MIN] == 0 else 0)
        row[FIRST] = row[BODY_FIRST] | (row[LEAD_SET] if row[HAS_LEAD] else 0)
        return [_signed(v) for v in row]


def _check_run(row, branch, pattern):
    """The run shapes the kernel matches without general backtracking."""
    where = f"branch {_show(branch[1])} of {pattern!r}"
    if row[A_MIN] == 0 and not (row[HAS_B] and row[B_MIN] >= 1):
        raise UnsupportedPattern(f"{where} can match the empty string")
    if row[HAS_B]:
        if row[A_MIN] == 0 and (row[A_MAX] != UNBOUNDED or row[B_MIN] != 1):
            raise UnsupportedPattern(f"{where}: X*Y+ needs an unbounded X and Y with min 1")
        if row[A_MIN] >= 1 and row[B_MIN] >= 1 and row[A_SET] & row[B_SET]:
            raise UnsupportedPattern(f"{where}: X+Y+ with overlapping classes backtracks")
        if row[B_MIN] > 1:
            raise UnsupportedPattern(f"{where}: a second run must have min 0 or 1")
    if row[NOT_AHEAD] and (row[A_MAX] != UNBOUNDED or row[A_SET] & row[NOT_SET]):
        raise UnsupportedPattern(f"{where}: X+(?!Y) needs an unbounded X disjoint from Y")


def _signed(v):
    """A 64-bit mask stored in an int64 field."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _group_first(strings, icase, reps, props):
    """Mask of the class ids a literal group's strings can start with."""
    ranges = _folded_ranges(strings) if icase else [(ord(s[0]), ord(s[0])) for s in strings]
    return _mask((0, ranges, False), reps, props)


def _folded_ranges(strings):
    """One-character ranges of the strings' first characters and of every code point
    ``(?i)`` matches to them."""
    _, fold_from, fold_to = unicode_props()
    cps = set()
    for s in strings:
        c = s[0].lower()
        cps.add(ord(s[0]))
        if c.isascii() and c.isalpha():
            cps.update([ord(c), ord(c.upper()), *fold_from[fold_to == ord(c)].tolist()])
    return [(c, c) for c in sorted(cps)]


def _merge_literals(branches):
    """Branches of literal strings in a row (GPT-2's ``'s|'t|...``) become one literal group;
    every other branch is ``("run", items)``."""
    out = []
    for b in branches:
        s = _literal_string(b)
        lit = ("literals", [s], False) if s is not None else \
            ("literals", b[0][1], b[0][2]) if len(b) == 1 and b[0][0] == "lits" \
            and b[0][3:] == (1, 1) else None
        if lit and out and out[-1][0] == "literals" and out[-1][2] == lit[2]:
            out[-1][1].extend(lit[1])
        elif lit:
            out.append(("literals", list(lit[1]), lit[2]))
        elif not b:
            raise UnsupportedPattern("an empty branch matches the empty string")
        else:
            out.append(("run", b))
    return out


def _sets_and_strings(branches):
    for b in branches:
        for item in b:
            if item[0] in ("set", "not"):
                yield item[1], []
            else:
                yield None, item[1]


def _show(items):
    return "".join(f"<{i[0]}>" for i in items)


@lru_cache(maxsize=64)
def compile_pattern(pattern, rule=0):
    """The :class:`SplitPattern` of a regex string (cached); :class:`UnsupportedPattern` when
    the kernel cannot interpret it exactly. ``rule``: see :class:`SplitPattern`."""
    return SplitPattern(pattern, rule)
