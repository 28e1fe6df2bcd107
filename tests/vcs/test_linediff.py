"""Line diffs for the merge: correct on any input, and cut at unique lines."""

from __future__ import annotations

import random

import pytest

from helixfs.vcs.linediff import changed_ranges, few_changes
from helixfs.vcs.merge import merge_lines


def _apply(a: list[bytes], b: list[bytes], ranges: list[tuple[int, int, int, int]]) -> list[bytes]:
    """`a` with each range replaced by `b`'s lines, checking what is left equal."""
    out: list[bytes] = []
    i = j = 0
    for i1, i2, j1, j2 in ranges:
        assert i <= i1 <= i2 and j <= j1 <= j2 and (i1 < i2 or j1 < j2)
        assert a[i:i1] == b[j:j1]  # between ranges: equal
        out += a[i:i1] + b[j1:j2]
        i, j = i2, j2
    assert a[i:] == b[j:]
    return out + a[i:]


@pytest.mark.parametrize("seed", range(200))
def test_ranges_turn_a_into_b_on_random_texts_full_of_repeats(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [b"\n", b"}\n", b"{\n"] + [
        f"line {n}\n".encode() for n in range(rng.randrange(1, 40))
    ]
    a = [rng.choice(alphabet) for _ in range(rng.randrange(0, 120))]
    b = list(a)
    for _ in range(rng.randrange(0, 8)):
        at = rng.randrange(len(b) + 1)
        what = rng.random()
        if what < 0.4 and b[at:]:
            del b[at : at + rng.randrange(1, 4)]
        elif what < 0.7:
            b[at:at] = [rng.choice(alphabet) for _ in range(rng.randrange(1, 4))]
        elif b[at:]:
            b[at] = f"edit {rng.random()}\n".encode()
    assert _apply(a, b, changed_ranges(a, b)) == b
    near = few_changes(a, b, 64)  # blame's diff: a shortest edit, never longer
    assert near is not None and _apply(a, b, near) == b
    assert _cost(near) <= _cost(changed_ranges(a, b))


def _cost(ranges: list[tuple[int, int, int, int]]) -> int:
    return sum(i2 - i1 + j2 - j1 for i1, i2, j1, j2 in ranges)


def test_few_changes_gives_up_past_its_limit() -> None:
    a = [f"{n}\n".encode() for n in range(100)]
    b = a[:10] + [b"x\n"] * 5 + a[20:]  # 10 deleted, 5 inserted: 15 edits
    assert few_changes(a, b, 14) is None
    assert _cost(few_changes(a, b, 15) or []) == 15
    assert few_changes(a, a, 0) == [] and few_changes([], a[:2], 1) is None
    assert few_changes([], a[:2], 2) == [(0, 0, 0, 2)]


def test_one_edited_line_in_a_big_file_is_one_range() -> None:
    a = [b"\n" if n % 3 == 0 else f"line {n}\n".encode() for n in range(30_000)]
    b = list(a)
    b[20_000] = b"changed\n"
    assert changed_ranges(a, b) == [(20_000, 20_001, 20_000, 20_001)]


def test_a_big_file_full_of_repeated_lines_merges() -> None:
    """A 50,000-line file edited on both sides: difflib alone took nearly two minutes
    (quadratic in the blank and `}` lines); the anchors make it a fraction of a second."""
    rng = random.Random(5)
    base = [
        b"\n" if n % 3 == 0 else b"    }\n" if n % 7 == 0 else f"v{n} = {rng.random()}\n".encode()
        for n in range(50_000)
    ]
    ours, theirs = list(base), list(base)
    ours[10_001], theirs[40_001] = b"ours\n", b"theirs\n"
    merged, clean = merge_lines(b"".join(base), b"".join(ours), b"".join(theirs))
    expected = list(base)
    expected[10_001], expected[40_001] = b"ours\n", b"theirs\n"
    assert clean and merged == b"".join(expected)
