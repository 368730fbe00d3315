"""Build ``tasks.jsonl``, the programming task set of ``agentgym/CodeTests-v0``.

Run ``python -m agentgym.envs.code.build_tasks`` to regenerate (deterministic). Each task is
a template written for this project with a parameter (a power, a shift, a window...), a
reference solution, and test inputs drawn from a fixed seed; expected values are computed
here by running the reference solution, in this trusted process. Every task has 3 public
and 10 hidden tests; every 5th task goes to the test split.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Template:
    slug: str
    params: tuple[Any, ...]
    fn: str
    doc: str
    sol: str
    gen: Callable[[np.random.Generator, Any], tuple[Any, ...]]


def _ints(
    rng: np.random.Generator, n_lo: int = 0, n_hi: int = 12, lo: int = -50, hi: int = 50
) -> list[int]:
    return [int(v) for v in rng.integers(lo, hi, size=int(rng.integers(n_lo, n_hi)))]


def _word(rng: np.random.Generator, n: int, alphabet: str = "abcdefghij") -> str:
    return "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), size=n))


def _text(rng: np.random.Generator) -> str:
    words = ["apple", "Banana", "cat", "dog", "Eel", "fig", "grape", "hi", "a", "kiwi", "lemon"]
    return " ".join(
        words[int(i)] for i in rng.integers(0, len(words), size=int(rng.integers(0, 12)))
    )


T: list[Template] = []


def t(slug: str, params: tuple[Any, ...], fn: str, doc: str, sol: str, gen: Callable) -> None:
    T.append(Template(slug, params, fn, doc, sol, gen))


t(
    "sum_of_powers",
    (1, 2, 3),
    "sum_powers",
    "Return the sum of x**{p} over the integers x in the list `nums` (0 for an empty list).",
    "def sum_powers(nums):\n    return sum(x ** {p} for x in nums)\n",
    lambda r, p: (_ints(r),),
)
t(
    "count_divisible",
    (2, 3, 5, 7),
    "count_divisible",
    "Return how many integers in `nums` are divisible by {p}.",
    "def count_divisible(nums):\n    return sum(1 for x in nums if x % {p} == 0)\n",
    lambda r, p: (_ints(r),),
)
t(
    "rotate",
    ("left", "right"),
    "rotate",
    "Return the list `xs` rotated {p} by `k` positions (k >= 0 may exceed len(xs)); an empty list stays empty.",
    "def rotate(xs, k):\n    if not xs:\n        return []\n    k %= len(xs)\n    return xs[k:] + xs[:k] if '{p}' == 'left' else xs[len(xs) - k:] + xs[:len(xs) - k]\n",
    lambda r, p: (_ints(r), int(r.integers(0, 20))),
)
t(
    "chunk",
    (2, 3, 4),
    "chunk",
    "Split the list `xs` into consecutive chunks of {p} elements (the last one may be shorter) and return the list of chunks.",
    "def chunk(xs):\n    return [xs[i:i + {p}] for i in range(0, len(xs), {p})]\n",
    lambda r, p: (_ints(r),),
)
t(
    "moving_average",
    (2, 3),
    "moving_average",
    "Return the list of averages (floats) of every window of {p} consecutive numbers of `xs`, in order; [] if xs has fewer than {p} items.",
    "def moving_average(xs):\n    return [sum(xs[i:i + {p}]) / {p} for i in range(len(xs) - {p} + 1)]\n",
    lambda r, p: (_ints(r, 0, 10),),
)
t(
    "caesar",
    (1, 3, 13),
    "caesar",
    "Shift every ASCII letter of `s` forward by {p} places in the alphabet, wrapping around and keeping its case; leave other characters unchanged. Return the new string.",
    "def caesar(s):\n    out = []\n    for c in s:\n        if 'a' <= c <= 'z':\n            out.append(chr((ord(c) - 97 + {p}) % 26 + 97))\n        elif 'A' <= c <= 'Z':\n            out.append(chr((ord(c) - 65 + {p}) % 26 + 65))\n        else:\n            out.append(c)\n    return ''.join(out)\n",
    lambda r, p: (_text(r) + " Zz!",),
)
t(
    "count_chars",
    ("vowels", "digits", "uppercase"),
    "count_chars",
    "Return the number of {p} in the string `s` (vowels: a, e, i, o, u in either case).",
    "def count_chars(s):\n    kind = '{p}'\n    if kind == 'vowels':\n        return sum(c in 'aeiouAEIOU' for c in s)\n    if kind == 'digits':\n        return sum(c.isdigit() for c in s)\n    return sum(c.isupper() for c in s)\n",
    lambda r, p: (_text(r) + str(int(r.integers(0, 10**6))),),
)
t(
    "palindrome",
    ("strict", "loose"),
    "is_palindrome",
    "Return True if `s` is a palindrome. Mode {p}: 'strict' compares the string exactly; 'loose' ignores case and every character that is not a letter or digit.",
    "def is_palindrome(s):\n    if '{p}' == 'loose':\n        s = ''.join(c.lower() for c in s if c.isalnum())\n    return s == s[::-1]\n",
    lambda r, p: (
        (lambda w: w + w[::-1] if r.random() < 0.5 else w)(
            _word(r, int(r.integers(0, 6)), "abAB ,")
        ),
    ),
)
t(
    "fizzbuzz",
    ((3, 5), (2, 7), (4, 6)),
    "fizzbuzz",
    "Return a list of strings for i = 1..n: 'FizzBuzz' if i is divisible by both {p[0]} and {p[1]}, 'Fizz' if only by {p[0]}, 'Buzz' if only by {p[1]}, else str(i).",
    "def fizzbuzz(n):\n    out = []\n    for i in range(1, n + 1):\n        a, b = i % {p[0]} == 0, i % {p[1]} == 0\n        out.append('FizzBuzz' if a and b else 'Fizz' if a else 'Buzz' if b else str(i))\n    return out\n",
    lambda r, p: (int(r.integers(0, 30)),),
)
t(
    "digit_sum_base",
    (2, 8, 10, 16),
    "digit_sum",
    "Return the sum of the digits of the non-negative integer `n` written in base {p}.",
    "def digit_sum(n):\n    s = 0\n    while n:\n        s += n % {p}\n        n //= {p}\n    return s\n",
    lambda r, p: (int(r.integers(0, 10**9)),),
)
t(
    "to_base",
    (2, 3, 7),
    "to_base",
    "Return the base-{p} representation of the integer `n` as a string of digits (a leading '-' for negatives, '0' for zero).",
    "def to_base(n):\n    if n == 0:\n        return '0'\n    sign, n = ('-', -n) if n < 0 else ('', n)\n    d = []\n    while n:\n        d.append(str(n % {p}))\n        n //= {p}\n    return sign + ''.join(reversed(d))\n",
    lambda r, p: (int(r.integers(-(10**6), 10**6)),),
)
t(
    "gcd_lcm_list",
    ("gcd", "lcm"),
    "reduce_list",
    "Return the {p} of the positive integers in the non-empty list `nums`.",
    "import math\ndef reduce_list(nums):\n    out = nums[0]\n    for x in nums[1:]:\n        out = math.{p}(out, x)\n    return out\n",
    lambda r, p: (
        [int(v) * int(r.integers(1, 4)) for v in r.integers(1, 30, size=int(r.integers(1, 6)))],
    ),
)
t(
    "kth_largest",
    (1, 2, 3),
    "kth_largest",
    "Return the {p}-th largest DISTINCT value in `nums`, or None if there are fewer than {p} distinct values.",
    "def kth_largest(nums):\n    v = sorted(set(nums), reverse=True)\n    return v[{p} - 1] if len(v) >= {p} else None\n",
    lambda r, p: (_ints(r, 0, 8, -5, 5),),
)
t(
    "rle",
    ("encode", "decode"),
    "rle",
    "Run-length {p}. encode: turn a string like 'aaab' into 'a3b1' (each run as the character then its count). decode: the inverse, from 'a3b1' back to 'aaab' (counts may have several digits).",
    "def rle(s):\n    if '{p}' == 'encode':\n        out, i = [], 0\n        while i < len(s):\n            j = i\n            while j < len(s) and s[j] == s[i]:\n                j += 1\n            out.append(s[i] + str(j - i))\n            i = j\n        return ''.join(out)\n    out, i = [], 0\n    while i < len(s):\n        c = s[i]\n        j = i + 1\n        while j < len(s) and s[j].isdigit():\n            j += 1\n        out.append(c * int(s[i + 1:j]))\n        i = j\n    return ''.join(out)\n",
    lambda r, p: (
        (lambda w: w if p == "encode" else "".join(f"{c}{int(r.integers(1, 15))}" for c in w))(
            _word(r, int(r.integers(0, 12)), "aab")
        ),
    ),
)
t(
    "top_words",
    (1, 2, 3),
    "top_words",
    "Split `text` on whitespace, lowercase the words, and return the {p} most frequent words as a list, most frequent first, ties broken alphabetically (fewer if there are fewer distinct words).",
    "from collections import Counter\ndef top_words(text):\n    c = Counter(w.lower() for w in text.split())\n    return [w for w, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:{p}]]\n",
    lambda r, p: (_text(r),),
)
t(
    "matrix",
    ("transpose", "trace", "row_sums", "col_sums"),
    "matrix_op",
    "Given a matrix `m` as a list of equal-length lists of integers (square for trace), return its {p} (transpose: a list of lists; trace: the sum of the main diagonal; row_sums / col_sums: lists of sums).",
    "def matrix_op(m):\n    op = '{p}'\n    if op == 'transpose':\n        return [list(c) for c in zip(*m)]\n    if op == 'trace':\n        return sum(m[i][i] for i in range(len(m)))\n    if op == 'row_sums':\n        return [sum(row) for row in m]\n    return [sum(c) for c in zip(*m)]\n",
    lambda r, p: (_matrix(r, p == "trace"),),
)
t(
    "primes",
    ("count_below", "nth", "factors"),
    "prime_fn",
    "Prime helper, mode {p}: count_below(n) = how many primes are < n; nth(n) = the n-th prime (nth(1) == 2); factors(n) = the prime factors of n >= 2 in non-decreasing order, with repetition.",
    "def prime_fn(n):\n    def is_p(k):\n        return k > 1 and all(k % d for d in range(2, int(k ** 0.5) + 1))\n    mode = '{p}'\n    if mode == 'count_below':\n        return sum(is_p(k) for k in range(n))\n    if mode == 'nth':\n        k, c = 1, 0\n        while c < n:\n            k += 1\n            c += is_p(k)\n        return k\n    out, d = [], 2\n    while d * d <= n:\n        while n % d == 0:\n            out.append(d)\n            n //= d\n        d += 1\n    if n > 1:\n        out.append(n)\n    return out\n",
    lambda r, p: (int(r.integers(1, 300)) if p == "nth" else int(r.integers(2, 5000)),),
)
t(
    "collatz",
    ("steps", "peak"),
    "collatz",
    "For a positive integer n, repeatedly apply n -> n/2 (n even) or n -> 3n+1 (n odd) until n == 1. Return the {p}: steps = the number of steps taken; peak = the largest value reached (including the start).",
    "def collatz(n):\n    steps, peak = 0, n\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        steps += 1\n        peak = max(peak, n)\n    return steps if '{p}' == 'steps' else peak\n",
    lambda r, p: (int(r.integers(1, 10000)),),
)
t(
    "search",
    ("index", "lower_bound"),
    "search",
    "`xs` is sorted ascending, `x` an integer. index: return an index i with xs[i] == x, the smallest one, or -1. lower_bound: return the first index i with xs[i] >= x (len(xs) if none). Mode here: {p}.",
    "import bisect\ndef search(xs, x):\n    i = bisect.bisect_left(xs, x)\n    if '{p}' == 'lower_bound':\n        return i\n    return i if i < len(xs) and xs[i] == x else -1\n",
    lambda r, p: (sorted(_ints(r, 0, 12, -20, 20)), int(r.integers(-22, 22))),
)
t(
    "longest_run",
    ("increasing", "decreasing"),
    "longest_run",
    "Return the length of the longest run of consecutive elements of `xs` that is strictly {p} (0 for an empty list, 1 for a single element).",
    "def longest_run(xs):\n    best = cur = 1 if xs else 0\n    for a, b in zip(xs, xs[1:]):\n        ok = b > a if '{p}' == 'increasing' else b < a\n        cur = cur + 1 if ok else 1\n        best = max(best, cur)\n    return best\n",
    lambda r, p: (_ints(r, 0, 15, 0, 8),),
)
t(
    "brackets",
    ("()", "()[]", "()[]{}"),
    "balanced",
    "Return True if the brackets {p} in `s` are balanced and properly nested; every other character is ignored.",
    "def balanced(s):\n    pairs = dict(zip(')]}}', '([{{'))\n    allowed = set('{p}')\n    st = []\n    for c in s:\n        if c not in allowed:\n            continue\n        if c in '([{{':\n            st.append(c)\n        elif not st or st.pop() != pairs[c]:\n            return False\n    return not st\n",
    lambda r, p: (_word(r, int(r.integers(0, 10)), "()[]{}x"),),
)
t(
    "anagram",
    ("is_anagram", "group_count"),
    "anagram",
    "Anagrams (mode {p}). is_anagram(a, b): True if strings a and b use the same letters the same number of times. group_count(words, _): the number of groups of mutual anagrams among the list `words` (second argument ignored).",
    "def anagram(a, b):\n    if '{p}' == 'is_anagram':\n        return sorted(a) == sorted(b)\n    return len({{''.join(sorted(w)) for w in a}})\n",
    lambda r, p: (
        (_word(r, 4, "abc"), _word(r, 4, "abc"))
        if p == "is_anagram"
        else ([_word(r, 3, "abc") for _ in range(int(r.integers(0, 8)))], 0)
    ),
)
t(
    "dedupe",
    ("first", "last"),
    "dedupe",
    "Remove duplicates from `xs`, keeping the {p} occurrence of each value and the relative order of the kept elements.",
    "def dedupe(xs):\n    if '{p}' == 'first':\n        seen, out = set(), []\n        for x in xs:\n            if x not in seen:\n                seen.add(x)\n                out.append(x)\n        return out\n    last = {{x: i for i, x in enumerate(xs)}}\n    return [x for i, x in enumerate(xs) if last[x] == i]\n",
    lambda r, p: (_ints(r, 0, 12, 0, 6),),
)
t(
    "pairs_diff",
    (0, 1, 3),
    "count_pairs",
    "Return how many index pairs i < j have abs(xs[i] - xs[j]) == {p}.",
    "def count_pairs(xs):\n    return sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs)) if abs(xs[i] - xs[j]) == {p})\n",
    lambda r, p: (_ints(r, 0, 12, 0, 8),),
)
t(
    "window_max_sum",
    (1, 2, 3),
    "window_max_sum",
    "Return the largest sum of {p} consecutive elements of `xs`, or None if xs has fewer than {p} elements.",
    "def window_max_sum(xs):\n    if len(xs) < {p}:\n        return None\n    return max(sum(xs[i:i + {p}]) for i in range(len(xs) - {p} + 1))\n",
    lambda r, p: (_ints(r),),
)
t(
    "every_nth_char",
    (2, 3),
    "every_nth",
    "Return the string made of every {p}-th character of `s`, starting with the first one.",
    "def every_nth(s):\n    return s[::{p}]\n",
    lambda r, p: (_text(r),),
)
t(
    "figurate",
    ("triangular", "pentagonal", "hexagonal"),
    "figurate",
    "Return the n-th {p} number for n >= 1 (triangular n(n+1)/2, pentagonal n(3n-1)/2, hexagonal n(2n-1)) as an int.",
    "def figurate(n):\n    return {{'triangular': n * (n + 1) // 2, 'pentagonal': n * (3 * n - 1) // 2, 'hexagonal': n * (2 * n - 1)}}['{p}']\n",
    lambda r, p: (int(r.integers(1, 10**4)),),
)
t(
    "roman",
    ("to_int", "from_int"),
    "roman",
    "Roman numerals, mode {p}. to_int: convert a valid numeral such as 'MCMXCIV' to an int. from_int: convert an int in 1..3999 to its standard numeral.",
    "def roman(x):\n    vals = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'), (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]\n    if '{p}' == 'from_int':\n        out = ''\n        for v, s in vals:\n            while x >= v:\n                out += s\n                x -= v\n        return out\n    single = {{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}}\n    total = 0\n    for i, c in enumerate(x):\n        v = single[c]\n        total += -v if i + 1 < len(x) and single[x[i + 1]] > v else v\n    return total\n",
    lambda r, p: (
        (int(r.integers(1, 4000)),) if p == "from_int" else (_roman(int(r.integers(1, 4000))),)
    ),
)
t(
    "long_words",
    (3, 5),
    "long_words",
    "Return how many whitespace-separated words of `text` have more than {p} characters.",
    "def long_words(text):\n    return sum(len(w) > {p} for w in text.split())\n",
    lambda r, p: (_text(r),),
)
t(
    "cumulative",
    ("sum", "product", "max"),
    "cumulative",
    "Return the list of running {p}s of `xs` (element i is the {p} of xs[0..i]).",
    "import itertools, operator\ndef cumulative(xs):\n    f = {{'sum': operator.add, 'product': operator.mul, 'max': max}}['{p}']\n    return list(itertools.accumulate(xs, f))\n",
    lambda r, p: (_ints(r, 0, 10, -5, 6),),
)
t(
    "clamp",
    ((0, 10), (-5, 5)),
    "clamp",
    "Return `xs` with every value below {p[0]} replaced by {p[0]} and every value above {p[1]} replaced by {p[1]}.",
    "def clamp(xs):\n    return [min(max(x, {p[0]}), {p[1]}) for x in xs]\n",
    lambda r, p: (_ints(r, 0, 12, -20, 20),),
)
t(
    "case_convert",
    ("snake_to_camel", "camel_to_snake", "title"),
    "convert",
    "Convert the identifier or phrase `s`: snake_to_camel ('foo_bar_baz' -> 'fooBarBaz'), camel_to_snake ('fooBarBaz' -> 'foo_bar_baz'), title (capitalize the first letter of every space-separated word, lowercase the rest). Mode here: {p}.",
    "def convert(s):\n    mode = '{p}'\n    if mode == 'snake_to_camel':\n        parts = s.split('_')\n        return parts[0] + ''.join(p[:1].upper() + p[1:] for p in parts[1:])\n    if mode == 'camel_to_snake':\n        return ''.join('_' + c.lower() if c.isupper() else c for c in s)\n    return ' '.join(w[:1].upper() + w[1:].lower() for w in s.split(' '))\n",
    lambda r, p: (
        ("_".join(_word(r, int(r.integers(1, 5)), "abcxyz") for _ in range(int(r.integers(1, 4)))),)
        if p == "snake_to_camel"
        else (
            (
                _word(r, 3, "abc")
                + "".join(
                    _word(r, 1, "ABC") + _word(r, 2, "xyz") for _ in range(int(r.integers(0, 3)))
                )
            ),
        )
        if p == "camel_to_snake"
        else (_text(r),)
    ),
)
t(
    "misc_int",
    ("reverse_digits", "is_armstrong", "digital_root"),
    "int_fn",
    "Integer helper, mode {p}. reverse_digits(n): the digits of n >= 0 reversed, as an int (1200 -> 21). is_armstrong(n): True if n >= 0 equals the sum of its digits each raised to the number of digits. digital_root(n): repeatedly sum the digits of n >= 0 until one digit remains.",
    "def int_fn(n):\n    mode = '{p}'\n    if mode == 'reverse_digits':\n        return int(str(n)[::-1])\n    if mode == 'is_armstrong':\n        d = str(n)\n        return n == sum(int(c) ** len(d) for c in d)\n    while n >= 10:\n        n = sum(int(c) for c in str(n))\n    return n\n",
    lambda r, p: (
        int(r.choice([153, 370, 371, 9474, 0, 7]))
        if p == "is_armstrong" and r.random() < 0.3
        else int(r.integers(0, 10**7)),
    ),
)
t(
    "stats",
    ("median", "mode", "range"),
    "stat",
    "Return the {p} of the non-empty integer list `xs` (median: the middle value, or the mean of the two middle values as a float when the length is even; mode: the most frequent value, the smallest one on ties; range: max - min).",
    "from collections import Counter\ndef stat(xs):\n    mode = '{p}'\n    if mode == 'median':\n        s = sorted(xs)\n        n = len(s)\n        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2\n    if mode == 'mode':\n        c = Counter(xs)\n        return min(c, key=lambda v: (-c[v], v))\n    return max(xs) - min(xs)\n",
    lambda r, p: (_ints(r, 1, 10, 0, 6),),
)
t(
    "strings2",
    ("hamming", "common_prefix", "edit_distance"),
    "str2",
    "For two strings a and b, return (mode {p}): hamming = the number of positions where they differ (assume equal length); common_prefix = their longest common prefix; edit_distance = the Levenshtein distance (insertions, deletions, substitutions).",
    "def str2(a, b):\n    mode = '{p}'\n    if mode == 'hamming':\n        return sum(x != y for x, y in zip(a, b))\n    if mode == 'common_prefix':\n        i = 0\n        while i < min(len(a), len(b)) and a[i] == b[i]:\n            i += 1\n        return a[:i]\n    prev = list(range(len(b) + 1))\n    for i, ca in enumerate(a, 1):\n        cur = [i]\n        for j, cb in enumerate(b, 1):\n            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))\n        prev = cur\n    return prev[-1]\n",
    lambda r, p: (
        (lambda n: (_word(r, n, "ab"), _word(r, n, "ab")))(int(r.integers(0, 8)))
        if p == "hamming"
        else (_word(r, int(r.integers(0, 7)), "abc"), _word(r, int(r.integers(0, 7)), "abc"))
    ),
)
t(
    "grid",
    ("islands", "spiral", "max_path"),
    "grid_fn",
    "Grid task (mode {p}) on a rectangular list of lists of ints. islands: the number of 4-connected groups of 1s in a 0/1 grid. spiral: the elements in clockwise spiral order starting top-left. max_path: the largest sum of a path from the top-left to the bottom-right moving only right or down.",
    "def grid_fn(g):\n    mode = '{p}'\n    if not g or not g[0]:\n        return 0 if mode != 'spiral' else []\n    h, w = len(g), len(g[0])\n    if mode == 'islands':\n        seen, n = set(), 0\n        for i in range(h):\n            for j in range(w):\n                if g[i][j] == 1 and (i, j) not in seen:\n                    n += 1\n                    st = [(i, j)]\n                    seen.add((i, j))\n                    while st:\n                        a, b = st.pop()\n                        for x, y in ((a + 1, b), (a - 1, b), (a, b + 1), (a, b - 1)):\n                            if 0 <= x < h and 0 <= y < w and g[x][y] == 1 and (x, y) not in seen:\n                                seen.add((x, y))\n                                st.append((x, y))\n        return n\n    if mode == 'spiral':\n        out, m = [], [row[:] for row in g]\n        while m:\n            out += m.pop(0)\n            m = [list(r) for r in zip(*m)][::-1]\n        return out\n    best = [[0] * w for _ in range(h)]\n    for i in range(h):\n        for j in range(w):\n            up = best[i - 1][j] if i else None\n            left = best[i][j - 1] if j else None\n            prev = max(v for v in (up, left) if v is not None) if (up is not None or left is not None) else 0\n            best[i][j] = prev + g[i][j]\n    return best[-1][-1]\n",
    lambda r, p: (_grid(r, 2 if p == "islands" else 10),),
)
t(
    "sequences",
    ("pascal_row", "tribonacci", "look_and_say"),
    "seq",
    "Sequence helper, mode {p}. pascal_row(n): row n of Pascal's triangle as a list (row 0 is [1]). tribonacci(n): T(0)=0, T(1)=0, T(2)=1, T(n)=T(n-1)+T(n-2)+T(n-3). look_and_say(n): the n-th term of the look-and-say sequence as a string, term 1 being '1'.",
    "def seq(n):\n    mode = '{p}'\n    if mode == 'pascal_row':\n        row = [1]\n        for _ in range(n):\n            row = [a + b for a, b in zip([0] + row, row + [0])]\n        return row\n    if mode == 'tribonacci':\n        a, b, c = 0, 0, 1\n        for _ in range(n):\n            a, b, c = b, c, a + b + c\n        return a\n    s = '1'\n    for _ in range(n - 1):\n        out, i = [], 0\n        while i < len(s):\n            j = i\n            while j < len(s) and s[j] == s[i]:\n                j += 1\n            out.append(str(j - i) + s[i])\n            i = j\n        s = ''.join(out)\n    return s\n",
    lambda r, p: (int(r.integers(1, 20 if p == "look_and_say" else 30)),),
)
t(
    "dicts",
    ("invert", "group_by_length", "merge_sum"),
    "dict_fn",
    "Dictionary helper, mode {p}. invert(d, _): swap keys and values (values are unique). group_by_length(words, _): a dict from word length to the list of words of that length, in input order. merge_sum(a, b): a dict with every key of a or b, mapped to the sum of its values in both.",
    "def dict_fn(a, b):\n    mode = '{p}'\n    if mode == 'invert':\n        return {{v: k for k, v in a.items()}}\n    if mode == 'group_by_length':\n        out = {{}}\n        for w in a:\n            out.setdefault(len(w), []).append(w)\n        return out\n    out = dict(a)\n    for k, v in b.items():\n        out[k] = out.get(k, 0) + v\n    return out\n",
    lambda r, p: (
        ({_word(r, 3): int(i) for i, _ in enumerate(range(int(r.integers(0, 5))))}, 0)
        if p == "invert"
        else (_text(r).split(), 0)
        if p == "group_by_length"
        else (
            {_word(r, 1, "abcd"): int(r.integers(0, 9)) for _ in range(3)},
            {_word(r, 1, "abcd"): int(r.integers(0, 9)) for _ in range(3)},
        )
    ),
)
t(
    "inversions",
    ("count",),
    "inversions",
    "Return the number of index pairs i < j with xs[i] > xs[j].",
    "def inversions(xs):\n    return sum(1 for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[i] > xs[j])\n",
    lambda r, p: (_ints(r, 0, 12, 0, 10),),
)
t(
    "leap_years",
    ("count",),
    "leap_years",
    "Return how many leap years (Gregorian rules) lie in the inclusive range a..b (a <= b).",
    "def leap_years(a, b):\n    return sum(1 for y in range(a, b + 1) if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0))\n",
    lambda r, p: (lambda a: (a, a + int(r.integers(0, 500))))(int(r.integers(1, 2500))),
)
t(
    "interleave",
    ("alternate", "pairwise_sum"),
    "combine",
    "Combine lists a and b (mode {p}). alternate: a[0], b[0], a[1], b[1], ... then the rest of the longer list. pairwise_sum: [a[i] + b[i]] for the indexes both lists have.",
    "def combine(a, b):\n    if '{p}' == 'pairwise_sum':\n        return [x + y for x, y in zip(a, b)]\n    out = []\n    for i in range(max(len(a), len(b))):\n        if i < len(a):\n            out.append(a[i])\n        if i < len(b):\n            out.append(b[i])\n    return out\n",
    lambda r, p: (_ints(r, 0, 6), _ints(r, 0, 6)),
)
t(
    "flatten",
    ("deep",),
    "flatten",
    "Flatten an arbitrarily nested list of integers into a flat list, keeping left-to-right order.",
    "def flatten(xs):\n    out = []\n    for x in xs:\n        if isinstance(x, list):\n            out.extend(flatten(x))\n        else:\n            out.append(x)\n    return out\n",
    lambda r, p: (_nested(r, 3),),
)
t(
    "max_subarray",
    ("kadane",),
    "max_subarray",
    "Return the largest sum of a non-empty contiguous slice of the non-empty integer list `xs`.",
    "def max_subarray(xs):\n    best = cur = xs[0]\n    for x in xs[1:]:\n        cur = max(x, cur + x)\n        best = max(best, cur)\n    return best\n",
    lambda r, p: (_ints(r, 1, 12, -10, 10),),
)
t(
    "sort_by",
    ("length_then_alpha", "last_char", "vowel_count"),
    "sort_words",
    "Return the list `words` sorted by {p} (ascending), ties broken alphabetically. vowel_count counts a, e, i, o, u.",
    "def sort_words(words):\n    mode = '{p}'\n    if mode == 'length_then_alpha':\n        key = lambda w: (len(w), w)\n    elif mode == 'last_char':\n        key = lambda w: (w[-1:], w)\n    else:\n        key = lambda w: (sum(c in 'aeiou' for c in w), w)\n    return sorted(words, key=key)\n",
    lambda r, p: (
        [_word(r, int(r.integers(1, 6)), "abeiostu") for _ in range(int(r.integers(0, 8)))],
    ),
)


def _matrix(rng: np.random.Generator, square: bool) -> list[list[int]]:
    h = int(rng.integers(1, 5))
    w = h if square else int(rng.integers(1, 5))
    return [[int(v) for v in rng.integers(-9, 10, size=w)] for _ in range(h)]


def _grid(rng: np.random.Generator, hi: int) -> list[list[int]]:
    h, w = (int(v) for v in rng.integers(1, 6, size=2))
    return [[int(v) for v in rng.integers(0, hi, size=w)] for _ in range(h)]


def _roman(n: int) -> str:
    vals = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
            (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]  # fmt: skip
    out = ""
    for v, s in vals:
        while n >= v:
            out += s
            n -= v
    return out


def _nested(rng: np.random.Generator, depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(int(rng.integers(0, 4))):
        if depth > 0 and rng.random() < 0.4:
            out.append(_nested(rng, depth - 1))
        else:
            out.append(int(rng.integers(0, 10)))
    return out


def _plain(value: Any) -> Any:
    """Expected values as JSON (tuples become lists; dict keys keep their type via pairs)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[_plain(k), _plain(v)] for k, v in value.items()]}
    return value


def build() -> list[dict[str, Any]]:
    import copy

    tasks: list[dict[str, Any]] = []
    for tpl in T:
        for p in tpl.params:
            pname = "-".join(str(x) for x in p) if isinstance(p, tuple) else str(p)
            clean = "".join(c for c in pname if c.isalnum() or c in "-_")
            pname = (
                clean if clean == pname.replace(" ", "") and clean else f"v{tpl.params.index(p)}"
            )
            tid = f"{tpl.slug}-{pname}"
            sol = tpl.sol.format(p=p)
            ns: dict[str, Any] = {}
            exec(sol, ns)
            fn = ns[tpl.fn]
            rng = np.random.default_rng([len(tasks), 20261121])
            seen: set[str] = set()
            cases: list[dict[str, Any]] = []
            attempts = 0
            while len(cases) < 13 and attempts < 400:
                attempts += 1
                args = tpl.gen(rng, p)
                args = json.loads(json.dumps(list(args)))  # inputs are plain JSON
                key = json.dumps(args)
                if key in seen:
                    continue
                seen.add(key)
                expected = fn(*copy.deepcopy(args))
                cases.append({"args": args, "expected": _plain(expected)})
            assert len(cases) == 13, tid
            tasks.append(
                {
                    "id": tid,
                    "split": "test" if len(tasks) % 5 == 4 else "train",
                    "entry_point": tpl.fn,
                    "prompt": tpl.doc.format(p=p),
                    "public_tests": cases[:3],
                    "hidden_tests": cases[3:],
                    "solution": sol,
                }
            )
    return tasks


def main() -> None:
    tasks = build()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks.jsonl")
    with open(path, "w") as fh:
        for task in tasks:
            fh.write(json.dumps(task, sort_keys=True) + "\n")
    print(f"wrote {len(tasks)} tasks to {path}")


if __name__ == "__main__":
    main()
