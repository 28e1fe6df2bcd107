"""Line diffs that stay fast on big files, for the three-way merge.

difflib's SequenceMatcher (without its junk heuristic, which would misalign real code)
is quadratic in repeated lines: blank lines, `}`, `},` in a lock file. A merge of a
20,000-line file edited on both sides took 17 s, one of 50,000 lines nearly two
minutes. So, as git's patience diff does, the diff is cut first at anchors: lines that
occur exactly once on each side, kept in the longest run in the same order on both
sides. Between two anchors the pieces are small, and are diffed the same way; difflib
only sees a piece with no anchor at all.
"""

from __future__ import annotations

import bisect
import difflib
from collections import Counter
from collections.abc import Sequence
from itertools import compress, count
from operator import ne

Range = tuple[int, int, int, int]  # a[i1:i2] became b[j1:j2]; never both empty
_MAX_DEPTH = 64  # pieces within pieces: past this, difflib takes the piece whole


def changed_ranges(a: Sequence[bytes], b: Sequence[bytes]) -> list[Range]:
    """The ranges where `a` and `b` differ, in order; everything between them is equal."""
    out: list[Range] = []
    _diff(a, 0, len(a), b, 0, len(b), out, 0)
    return out


def _diff(
    a: Sequence[bytes],
    alo: int,
    ahi: int,
    b: Sequence[bytes],
    blo: int,
    bhi: int,
    out: list[Range],
    depth: int,
) -> None:
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo, blo = alo + 1, blo + 1
    while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
        ahi, bhi = ahi - 1, bhi - 1
    if alo == ahi or blo == bhi:
        if alo < ahi or blo < bhi:
            out.append((alo, ahi, blo, bhi))
        return
    anchors = _anchors(a, alo, ahi, b, blo, bhi) if depth < _MAX_DEPTH else []
    if not anchors:
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                out.append((alo + i1, alo + i2, blo + j1, blo + j2))
        return
    i, j = alo, blo
    for ai, bj in anchors:
        _diff(a, i, ai, b, j, bj, out, depth + 1)
        i, j = ai + 1, bj + 1
    _diff(a, i, ahi, b, j, bhi, out, depth + 1)


def _anchors(
    a: Sequence[bytes], alo: int, ahi: int, b: Sequence[bytes], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """(i, j) of lines found once in a[alo:ahi] and once in b[blo:bhi], the longest
    chain of them in the same order on both sides (patience sorting)."""
    in_a, in_b = Counter(a[alo:ahi]), Counter(b[blo:bhi])
    where_b = {b[j]: j for j in range(blo, bhi) if in_b[b[j]] == 1 and in_a[b[j]] == 1}
    pairs = [(i, where_b[a[i]]) for i in range(alo, ahi) if a[i] in where_b]
    # longest increasing run of j (the i are increasing already)
    tails: list[int] = []  # tails[k]: the smallest j ending a run of length k + 1
    ends: list[int] = []  # the pair index of that tail
    before: list[int] = []  # per pair: the previous pair of its best run, or -1
    for index, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[k] = j
            ends[k] = index
        before.append(ends[k - 1] if k else -1)
    chain: list[tuple[int, int]] = []
    index = ends[-1] if ends else -1
    while index >= 0:
        chain.append(pairs[index])
        index = before[index]
    return chain[::-1]


def few_changes(a: Sequence[bytes], b: Sequence[bytes], limit: int) -> list[Range] | None:
    """The ranges where `a` and `b` differ when at most `limit` lines are inserted or
    deleted (Myers' O((N+M)D) walk, a shortest edit), else None. For blame, whose
    neighbouring versions differ by a few lines: then this costs about one pass over
    the lines, where the anchors above cost a count of every line between the edits."""
    lo = _same_run(a, 0, b, 0)
    tail = min(_same_run(a[::-1], 0, b[::-1], 0), len(a) - lo, len(b) - lo)
    a_hi, b_hi = len(a) - tail, len(b) - tail
    if lo in (a_hi, b_hi):  # only inserted or only deleted lines
        if a_hi + b_hi - 2 * lo > limit:
            return None
        return [(lo, a_hi, lo, b_hi)] if lo < a_hi or lo < b_hi else []
    trace = _walk(a[lo:a_hi], b[lo:b_hi], limit)
    if trace is None:
        return None
    return [(i1 + lo, i2 + lo, j1 + lo, j2 + lo) for i1, i2, j1, j2 in trace]


def _walk(a: Sequence[bytes], b: Sequence[bytes], limit: int) -> list[Range] | None:
    n, m = len(a), len(b)
    v = {1: 0}  # diagonal k = x - y -> the furthest x reached on it
    rounds: list[dict[int, int]] = []
    for d in range(limit + 1):
        rounds.append(dict(v))
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if k == -d or (k != d and v[k - 1] < v[k + 1]) else v[k - 1] + 1
            y = x - k
            x += _same_run(a, x, b, y)
            v[k] = x
            if x >= n and y >= m:
                return _edits(rounds, n, m)
    return None


def _same_run(a: Sequence[bytes], x: int, b: Sequence[bytes], y: int) -> int:
    """How many lines are equal from a[x] and b[y] on: the comparisons run in C
    (map, compress, count), not one Python step per line, which was blame's cost."""
    if x >= len(a) or y >= len(b) or a[x] != b[y]:
        return 0  # most of Myers' snakes: no slices made for them
    unequal = compress(count(), map(ne, a[x:], b[y:]))
    return next(unequal, min(len(a) - x, len(b) - y))


def _edits(rounds: list[dict[int, int]], x: int, y: int) -> list[Range]:
    """The shortest edit found, walked back from the end, as merged ranges."""
    steps: list[Range] = []
    for d in range(len(rounds) - 1, 0, -1):
        v, k = rounds[d], x - y
        prev_k = k + 1 if k == -d or (k != d and v[k - 1] < v[k + 1]) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        back = min(x - prev_x, y - prev_y)  # down the snake, to just after the edit
        x, y = x - back, y - back
        steps.append((prev_x, x, prev_y, y))  # one line deleted or inserted
        x, y = prev_x, prev_y
    out: list[Range] = []
    for i1, i2, j1, j2 in reversed(steps):
        if out and out[-1][1] == i1 and out[-1][3] == j1:
            out[-1] = (out[-1][0], i2, out[-1][2], j2)
        else:
            out.append((i1, i2, j1, j2))
    return out
