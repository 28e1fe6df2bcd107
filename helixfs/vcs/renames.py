"""Renames between two trees: a file one side deleted while it added another with the
same or a similar content (git's rename detection, which merges need).

A deleted and an added file pair when their content is the same, or when at least half
of their lines are shared (git's default, `-M50%`): best pairs first, each file in one
pair at most. Comparing contents costs the product of both counts, so above
`COMPARE_LIMIT` pairs, and for files over `COMPARE_MAX_BYTES`, only exact renames are
found (git has a rename limit too).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, TypeGuard

from helixfs.ids import ObjectId
from helixfs.vcs.content import EMPTY
from helixfs.vcs.objects import TreeEntry

if TYPE_CHECKING:
    from helixfs.vcs.content import ContentReader
    from helixfs.vcs.treeops import Change

SIMILAR = 0.5
COMPARE_LIMIT = 100 * 100
COMPARE_MAX_BYTES = 1 << 20  # a bigger file is read for no rename but an exact one
TEXT_PROBE = 8192  # a NUL in the first bytes: binary, renamed only if unchanged


def renames(
    reader: ContentReader, changes: Iterable[Change], among: Collection[bytes]
) -> dict[bytes, bytes]:
    """Old path -> new path, for the files of `among` that a tree moved, given its
    `changes` against the tree before (`Trees.diff`)."""
    gone: dict[bytes, TreeEntry] = {}
    added: dict[bytes, TreeEntry] = {}
    for change in changes:
        if change.status == "D" and change.path in among and _movable(change.old):
            gone[change.path] = change.old
        elif change.status == "A" and _movable(change.new):
            added[change.path] = change.new
    pairs = _exact(gone, added)
    left = {p: e for p, e in gone.items() if p not in pairs and _comparable(e)}
    free = {p: e for p, e in added.items() if p not in pairs.values() and _comparable(e)}
    if left and free and len(left) * len(free) <= COMPARE_LIMIT:
        pairs.update(_similar(reader, left, free))
    return pairs


def _movable(entry: TreeEntry | None) -> TypeGuard[TreeEntry]:
    """Whether `entry` can be told apart by its content. Not an empty file, a pipe or a
    socket: all share the empty blob's id, so any of them would pair with any other
    (git leaves empty files out of rename detection too)."""
    return entry is not None and entry.oid != EMPTY.oid


def _comparable(entry: TreeEntry) -> bool:
    return entry.is_file() and entry.size <= COMPARE_MAX_BYTES


def _exact(gone: dict[bytes, TreeEntry], added: dict[bytes, TreeEntry]) -> dict[bytes, bytes]:
    by_content: dict[ObjectId, list[bytes]] = {}
    for path, entry in added.items():
        by_content.setdefault(entry.oid, []).append(path)
    pairs = {}
    for path, entry in gone.items():
        candidates = by_content.get(entry.oid)
        if candidates:
            pairs[path] = candidates.pop(0)
    return pairs


def _similar(
    reader: ContentReader, gone: dict[bytes, TreeEntry], added: dict[bytes, TreeEntry]
) -> dict[bytes, bytes]:
    lines = {p: _lines(reader.read(e.oid)) for p, e in (gone | added).items()}
    scored = sorted(
        (
            (score, old, new)
            for old in gone
            for new in added
            if (score := similarity(lines[old], lines[new])) >= SIMILAR
        ),
        reverse=True,
    )
    pairs: dict[bytes, bytes] = {}
    taken: set[bytes] = set()
    for _, old, new in scored:
        if old not in pairs and new not in taken:
            pairs[old] = new
            taken.add(new)
    return pairs


def _lines(data: bytes) -> Counter[bytes] | None:
    """A text file's lines as a multiset; None for a binary one."""
    if b"\0" in data[:TEXT_PROBE]:
        return None
    return Counter(data.splitlines())


def similarity(a: Counter[bytes] | None, b: Counter[bytes] | None) -> float:
    """The share of lines two texts have in common (0 for binary or empty files)."""
    if not a or not b:
        return 0.0
    shared = sum((a & b).values())
    return 2 * shared / (a.total() + b.total())
