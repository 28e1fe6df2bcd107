"""`helix log --graph`: an ASCII commit graph in the style of `git log --graph`.

Each column ("lane") waits for one commit id. A commit takes the lane that waits for it,
lanes that waited for the same commit fold into it (`|/`), and a merge opens one lane per
extra parent (`|\\`), even for a parent another lane waits for already (a criss-cross):
the two lanes fold when that parent is drawn, so every edge shows. Lanes to the right of
an opened or folded one, or of a root's lane (which ends there), lean with it as they
move. The input is in log order: every child before its parents.
"""

from __future__ import annotations

from collections.abc import Sequence


def _cells(count: int, marks: dict[int, str]) -> str:
    """Lanes at even columns; a `/` or `\\` for lane i is drawn between lanes i-1 and i."""
    chars = [" "] * max(0, 2 * count - 1)
    for i in range(count):
        mark = marks.get(i, "|")
        if mark in "/\\" and i > 0:
            chars[2 * i - 1] = mark
        else:
            chars[2 * i] = mark
    return "".join(chars).rstrip()


def graph_lines(nodes: Sequence[tuple[bytes, Sequence[bytes]]], labels: Sequence[str]) -> list[str]:
    lanes: list[bytes] = []
    lines: list[str] = []
    for (cid, parents), label in zip(nodes, labels, strict=True):
        if cid not in lanes:
            lanes.append(cid)
        col = lanes.index(cid)
        lanes = _fold(lanes, col, lines)
        lines.append(f"{_cells(len(lanes), {col: '*'})}  {label}")
        if not parents and col < len(lanes) - 1:
            # A root ends its lane: the lanes right of it lean into the gap, or the next
            # commit drawn under the root would look like its parent.
            lines.append(_cells(len(lanes), {col: " ", **_leaning(len(lanes), col + 1, "/")}))
        lanes, opened = _advance(lanes, col, parents)
        if opened:
            lines.append(_cells(len(lanes), _leaning(len(lanes), opened[0], "\\")))
    return lines


def _fold(lanes: list[bytes], col: int, lines: list[str]) -> list[bytes]:
    """Fold the other lanes waiting for the commit of `col` into it, one `/` line each:
    one line for them all (`|/ /`) showed the first moving in and the next just moving
    left, its edge ending nowhere (three branches off one base, merged in turn)."""
    while True:
        folded = [i for i, lane in enumerate(lanes) if lane == lanes[col] and i != col]
        if not folded:
            return lanes
        lines.append(_cells(len(lanes), _leaning(len(lanes), folded[0], "/")))
        lanes = lanes[: folded[0]] + lanes[folded[0] + 1 :]


def _leaning(count: int, first: int, mark: str) -> dict[int, str]:
    return {i: mark for i in range(first, count)}


def _advance(
    lanes: list[bytes], col: int, parents: Sequence[bytes]
) -> tuple[list[bytes], list[int]]:
    """Lanes after the commit in `col`: first parent in place, extra parents opened to its
    right (unless the commit's own lanes hold them already)."""
    if not parents:
        return lanes[:col] + lanes[col + 1 :], []
    new = list(lanes)
    new[col] = parents[0]
    opened: list[int] = []
    for parent in parents[1:]:
        if parent in new[col : col + 1 + len(opened)]:
            continue  # the same parent twice
        position = col + 1 + len(opened)
        new.insert(position, parent)
        opened.append(position)
    return new, opened
