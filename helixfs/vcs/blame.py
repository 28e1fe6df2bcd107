"""`blame`: for each line of a file, the commit that last changed it.

History is walked back along first parents, but only through the commits that changed
the path (`history.touching`, which mostly reads commit records alone). At each one the
file is line-diffed against its parent's version (`linediff.py`): the lines that commit
added are its, the others map to their place in the parent's version and the walk goes
on with them. It stops as soon as every line has its commit, so the cost is one diff
per commit that touched the file, not one per commit of the branch.

A line brought in by a merge is the merge commit's (first parents only, as `log PATH`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from helixfs.errors import InvalidInput, IsADirectory, NotADirectory, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.vcs.history import touching
from helixfs.vcs.linediff import changed_ranges
from helixfs.vcs.merge import as_text
from helixfs.vcs.objects import TreeEntry
from helixfs.vcs.treeops import show_path

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


@dataclass(frozen=True, slots=True)
class BlameLine:
    number: int  # 1-based, in the file at the blamed revision
    commit: CommitId
    text: bytes  # with its line end


def blame(repo: Repository, head: CommitId, path: bytes) -> list[BlameLine]:
    entry = _file_at(repo, repo.commit_info(head).tree, path)
    if entry is None:
        raise NotFound(f"{show_path(path)} is not in commit {hex_id(head)[:12]}")
    if entry.is_dir():
        raise IsADirectory(f"{show_path(path)} is a folder: blame takes a file")
    lines = _text_lines(repo, entry.oid, path)
    owners: list[CommitId | None] = [None] * len(lines)
    pending = list(range(len(lines)))  # lines without a commit yet...
    places = list(range(len(lines)))  # ...and where each is in the version walked to
    current, last = lines, head
    for commit in touching(repo, head, path):
        last = commit.id
        parent = (
            _file_at(repo, repo.commit_info(commit.parents[0]).tree, path)
            if (commit.parents)
            else None
        )
        older = _older_lines(repo, parent)
        kept = _carried(older, current, places) if older is not None else [None] * len(places)
        still, still_at = [], []
        for line, place in zip(pending, kept, strict=True):
            if place is None:
                owners[line] = commit.id
            else:
                still.append(line)
                still_at.append(place)
        pending, places = still, still_at
        if not pending or older is None:
            break
        current = older
    for line in pending:  # history ran out (a root that held it): the oldest commit seen
        owners[line] = last
    return [
        BlameLine(i + 1, owner or last, text)
        for i, (owner, text) in enumerate(zip(owners, lines, strict=True))
    ]


def _file_at(repo: Repository, tree: ObjectId, path: bytes) -> TreeEntry | None:
    try:
        return repo.trees.entry(tree, path)
    except (NotFound, NotADirectory):
        return None


def _text_lines(repo: Repository, oid: ObjectId, path: bytes) -> list[bytes]:
    data = repo.contents.read(oid)
    if as_text(data) is None:
        raise InvalidInput(f"{show_path(path)} is a binary file: blame takes text")
    return data.splitlines(keepends=True)


def _older_lines(repo: Repository, entry: TreeEntry | None) -> list[bytes] | None:
    """The parent's version of the file, or None when it had none (or not as text):
    then the commit made every line still pending."""
    if entry is None or entry.is_dir():
        return None
    data = repo.contents.read(entry.oid)
    return data.splitlines(keepends=True) if as_text(data) is not None else None


def _carried(older: list[bytes], newer: list[bytes], places: list[int]) -> list[int | None]:
    """For each place in `newer` (ascending), its place in `older`, or None when the
    change from `older` to `newer` wrote that line."""
    out: list[int | None] = []
    ranges = changed_ranges(older, newer)
    k, shift = 0, 0  # ranges passed so far, and older minus newer line count over them
    for place in places:
        while k < len(ranges) and ranges[k][3] <= place:
            i1, i2, j1, j2 = ranges[k]
            shift += (i2 - i1) - (j2 - j1)
            k += 1
        if k < len(ranges) and ranges[k][2] <= place:
            out.append(None)  # inside range k's new lines
        else:
            out.append(place + shift)
    return out
