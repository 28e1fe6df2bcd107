"""The history page's data: every branch and snapshot walked together, newest first,
one page at a time, and its commit graph drawn as SVG.

A page costs O(page), whatever the history's length: the walk is a heap of the commits
still to show (the frontier), and the link to the next page carries that frontier (each
commit id with the ref it was reached from), not a page number to skip to. A commit
reached from several refs is drawn in the lane of the first ref in the page's order
(HEAD's branch, other branches, then snapshots); a merge's other parents in the lane of
the branch it merged.
"""

from __future__ import annotations

import base64
import binascii
import heapq
import itertools
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from helixfs.errors import InvalidInput
from helixfs.ids import CommitId
from helixfs.vcs import Repository
from helixfs.vcs.objects import Commit
from helixfs.web.html import e

PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f",
)  # fmt: skip
ROW = 28  # px per commit row: helix.css gives each row the same height
LANE = 18  # px between lanes
MAX_PAGE = 500
# heap entries: newest first, then by id, then the lane that wins a commit reached twice;
# the tick keeps two entries of one commit and lane from comparing their Commits
Entry = tuple[int, bytes, int, int, str, Commit]
_ticks = itertools.count()


@dataclass(frozen=True)
class Row:
    commit: Commit
    ref: str  # the ref (label) it was reached from: "main", "snapshot before-x"
    tips: tuple[str, ...]  # refs pointing at this very commit


@dataclass(frozen=True)
class HistoryPage:
    rows: list[Row]
    lanes: list[str]  # labels in lane order, as drawn
    after: str | None  # cursor of the next (older) page; None: the history ends here


def colour(label: str) -> str:
    """The same colour for a ref on every page and every visit."""
    return PALETTE[zlib.crc32(label.encode("utf-8", "surrogateescape")) % len(PALETTE)]


def ref_labels(repo: Repository) -> list[tuple[str, CommitId]]:
    """(label, tip) of every branch (HEAD's first) and snapshot."""
    head = repo.head_branch()
    branches = sorted(repo.branches(), key=lambda r: (r.name != head, r.name))
    labelled = [(r.name, r.commit) for r in branches]
    return labelled + [(f"snapshot {r.name}", r.commit) for r in repo.snapshots()]


def refs_version(repo: Repository) -> str:
    """Changes whenever a ref moves: what the page's live update polls for."""
    data = "\n".join(f"{label} {cid.hex()}" for label, cid in ref_labels(repo))
    return f"{zlib.crc32(data.encode('utf-8', 'surrogateescape')):08x}"


def walk(repo: Repository, after: str | None, limit: int) -> HistoryPage:
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"a page holds 1..{MAX_PAGE} commits, not {limit}")
    refs = ref_labels(repo)
    order = {label: i for i, (label, _) in enumerate(refs)}
    tips: dict[CommitId, list[str]] = {}
    for label, cid in refs:
        tips.setdefault(cid, []).append(label)
    frontier = decode_cursor(after) if after else [(label, cid) for label, cid in refs]
    heap: list[Entry] = []
    for label, cid in frontier:
        _push(heap, repo.commit_info(cid), label, order)
    rows: list[Row] = []
    shown: set[bytes] = set()
    while heap and len(rows) < limit:
        *_, label, commit = heapq.heappop(heap)
        if commit.id in shown:
            continue
        shown.add(commit.id)
        rows.append(Row(commit, label, tuple(tips.get(commit.id, ()))))
        for i, parent in enumerate(commit.parents):
            _push(heap, repo.commit_info(parent), _parent_label(commit, i, label), order)
    rest = _frontier(heap, shown)
    lanes = sorted({row.ref for row in rows}, key=lambda label: order.get(label, len(order)))
    return HistoryPage(rows, lanes, encode_cursor(rest) if rest else None)


def _parent_label(commit: Commit, index: int, label: str) -> str:
    """A first parent stays in its child's lane; a merged parent goes to the lane of
    the branch merged (vcs records it in meta["merge"]), as git draws a merge."""
    merged = commit.meta.get("merge")
    if index == 0:
        return label
    return merged if isinstance(merged, str) and merged else f"{label} (merged)"


def _push(heap: list[Entry], commit: Commit, label: str, order: dict[str, int]) -> None:
    rank = order.get(label, len(order))
    heapq.heappush(heap, (-commit.time_ns, commit.id, rank, next(_ticks), label, commit))


def _frontier(heap: list[Entry], shown: set[bytes]) -> list[tuple[str, CommitId]]:
    """What the next page starts from: each commit once, in the lane that wins it."""
    best: dict[bytes, tuple[int, str]] = {}
    for _, cid, rank, _, label, _ in heap:
        if cid not in shown and (cid not in best or rank < best[cid][0]):
            best[cid] = (rank, label)
    return [(label, CommitId(cid)) for cid, (_, label) in best.items()]


def encode_cursor(frontier: Sequence[tuple[str, CommitId]]) -> str:
    data = json.dumps([[label, cid.hex()] for label, cid in frontier]).encode()
    return base64.urlsafe_b64encode(zlib.compress(data)).decode("ascii").rstrip("=")


def decode_cursor(text: str) -> list[tuple[str, CommitId]]:
    """InvalidInput for anything this module did not write (a hand-edited URL)."""
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        items = json.loads(raw)
        frontier = [(str(label), CommitId(bytes.fromhex(hexid))) for label, hexid in items]
    except (ValueError, TypeError, binascii.Error, zlib.error):
        raise InvalidInput(
            "the page link is damaged: start again from the newest commits"
        ) from None
    if not frontier or len(frontier) > 10_000:
        raise InvalidInput("the page link is damaged: start again from the newest commits")
    return frontier


def graph_svg(page: HistoryPage) -> str:
    """One dot per row in its ref's lane; a line to each parent on the page, and a line
    off the bottom for a parent on a later page."""
    lane_of = {label: i for i, label in enumerate(page.lanes)}
    row_of = {row.commit.id: i for i, row in enumerate(page.rows)}
    height = max(1, len(page.rows)) * ROW
    width = max(1, len(page.lanes)) * LANE + LANE // 2
    lines: list[str] = []
    dots: list[str] = []
    for i, row in enumerate(page.rows):
        x, y = _x(lane_of[row.ref]), _y(i)
        for parent in row.commit.parents:
            j = row_of.get(parent)
            if j is None:
                lines.append(_edge(x, y, x, height, colour(row.ref)))
            else:
                target = page.rows[j]
                lines.append(_edge(x, y, _x(lane_of[target.ref]), _y(j), colour(target.ref)))
        ring = ' stroke="#222" stroke-width="2"' if row.tips else ""
        dots.append(
            f'<circle cx="{x}" cy="{y}" r="5" fill="{colour(row.ref)}"{ring}>'
            f"<title>{e(row.ref)}</title></circle>"
        )
    return (
        f'<svg class="graph" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' role="img" aria-label="commit graph">{"".join(lines)}{"".join(dots)}</svg>'
    )


def _x(lane: int) -> int:
    return LANE // 2 + lane * LANE + 2


def _y(row: int) -> int:
    return row * ROW + ROW // 2


def _edge(x1: int, y1: int, x2: int, y2: int, stroke: str) -> str:
    if x1 == x2:
        path = f"M{x1},{y1} L{x2},{y2}"
    else:  # leave the child's lane at once, reach the parent's lane a row before it
        bend = y1 + ROW
        path = f"M{x1},{y1} C{x1},{bend} {x2},{y1} {x2},{bend} L{x2},{y2}"
    return f'<path d="{path}" stroke="{stroke}" stroke-width="2" fill="none"/>'
