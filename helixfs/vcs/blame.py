"""`blame`: for each line of a file, the commit that last changed it.

History is walked back along first parents, but only through the commits that changed
the path (`history.touching`, which mostly reads commit records alone). At each one the
file is line-diffed against its parent's version (`linediff.py`): the lines that commit
added are its, the others map to their place in the parent's version and the walk goes
on with them. It stops as soon as every line has its commit, so the cost is one diff
per commit that touched the file, not one per commit of the branch. Neighbouring
versions mostly differ by a few lines: their diff is a Myers walk (linediff's
`few_changes`, about one pass over the lines); a bigger one takes the merge's diff.

A line brought in by a merge is the merge commit's (first parents only, as `log PATH`).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

from helixfs.errors import InvalidInput, IsADirectory, NotADirectory, NotFound
from helixfs.ids import CommitId, ObjectId, hex_id
from helixfs.vcs import blamecache
from helixfs.vcs.history import touching
from helixfs.vcs.linediff import Range, changed_ranges, few_changes
from helixfs.vcs.objects import Commit, TreeEntry
from helixfs.vcs.text import as_text
from helixfs.vcs.treeops import show_path

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


Run = tuple[int, int, int]  # lines [start, end) of a version, from line `final` of the file


@dataclass(frozen=True, slots=True)
class BlameLine:
    number: int  # 1-based, in the file at the blamed revision
    commit: CommitId
    text: bytes  # with its line end
    label: str  # the commit as blame's text shows it after its id: `label(commit)`


def label(commit: Commit) -> str:
    """Author, the processes whose saves it holds, and date: `ann [vim 42] 2026-12-04 +0000`.
    Kept in the blame cache, so a change here needs a new cache version."""
    from helixfs.vcs.dates import shown_time  # here: a cached blame calls it for none
    from helixfs.vcs.node import saved_by

    author = commit.author.partition("<")[0].strip() or commit.author
    return f"{author}{saved_by(commit.meta)} {shown_time(commit, '%Y-%m-%d')}"


def blame(repo: Repository, head: CommitId, path: bytes, *, cached: bool = True) -> list[BlameLine]:
    """`cached=False`: neither read nor write the blame cache (blamecache.py): the walk
    as it was before it, for tests and the benchmark's first-ever figure."""
    entry = _file_at(repo, repo.commit_info(head).tree, path)
    if entry is None:
        raise NotFound(f"{show_path(path)} is not in commit {hex_id(head)[:12]}")
    if entry.is_dir():
        raise IsADirectory(f"{show_path(path)} is a folder: blame takes a file")
    lines = _text_lines(repo, entry.oid, path)
    owners, labels = _owners(repo, head, path, entry.oid, lines, cached)
    return [
        BlameLine(i + 1, owner, text, labels[owner])
        for i, (owner, text) in enumerate(zip(owners, lines, strict=True))
    ]


def _owners(
    repo: Repository,
    head: CommitId,
    path: bytes,
    blob: ObjectId,
    lines: list[bytes],
    cached: bool,
) -> tuple[list[CommitId], dict[CommitId, str]]:
    owners: list[CommitId | None] = [None] * len(lines)
    # the lines without a commit yet, as runs: (start, end) in the version walked to,
    # and the line of the blamed file the run starts at; edits split runs, so few
    pending: list[Run] = [(0, len(lines), 0)] if lines else []
    current, current_blob, last = lines, blob, head
    newest: CommitId | None = None  # the newest commit that changed the path: the key
    hit: blamecache.Cached | None = None
    hit_at: CommitId | None = None
    cache = blamecache.entries(repo, path) if cached else {}
    for commit in touching(repo, head, path):
        newest = newest or commit.id
        last = commit.id
        value = cache.get(commit.id)
        known = None if value is None else blamecache.decode(value, current_blob, len(current))
        if known is not None:
            _fill(known.owners, pending, owners)
            pending, hit, hit_at = [], known, commit.id
            break
        tree = repo.commit_info(commit.parents[0]).tree if commit.parents else None
        older_entry = _file_at(repo, tree, path) if tree is not None else None
        older = _older_lines(repo, older_entry)
        if older is None or older_entry is None:  # the commit made the file (or made it text)
            break
        pending = _carried(_line_diff(older, current), pending, owners, commit.id)
        if not pending:
            break
        current, current_blob = older, older_entry.oid
    for start, end, final in pending:  # the commit that made it (or the oldest seen)
        owners[final : final + end - start] = [last] * (end - start)
    done = [owner or last for owner in owners]
    labels = dict(hit.labels) if hit is not None else {}
    for owner in dict.fromkeys(done):  # walked (so decoded already) or from an old entry
        if owner not in labels:
            labels[owner] = label(repo.commit_info(owner))
    if cached and newest is not None and (newest != hit_at or not (hit and hit.current)):
        blamecache.save(repo, path, newest, blob, done, labels, superseded=hit_at)
    return done, labels


def _fill(known: list[CommitId], runs: list[Run], owners: list[CommitId | None]) -> None:
    """The waiting lines take their owners from the blame cached at the version the
    walk is at: run (start, end, final) is that version's lines start..end."""
    for start, end, final in runs:
        owners[final : final + end - start] = known[start:end]


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


NEAR = 32
"""Lines inserted plus deleted up to which a version's diff takes Myers' walk."""


def _line_diff(older: list[bytes], newer: list[bytes]) -> list[Range]:
    near = few_changes(older, newer, NEAR)
    return near if near is not None else changed_ranges(older, newer)


def _carried(
    ranges: list[Range], runs: list[Run], owners: list[CommitId | None], commit: CommitId
) -> list[Run]:
    """The parts of `runs` (places in the newer version, in order) that the change
    `ranges` (older -> newer, in order) left alone, at their places in the older
    version; the lines it wrote become `commit`'s in `owners`. Only the runs a range
    meets are looked at one by one: the others are copied (and shifted) in bulk, since a
    version mostly differs from its parent by a few lines and hundreds of runs wait."""
    out: list[Run] = []
    runs = list(runs)  # its first waiting run may be cut below
    shift, r = 0, 0  # older minus newer line count over the ranges passed; next run
    for i1, i2, j1, j2 in ranges:
        k = bisect_right(runs, j1, lo=r, key=_run_end)  # runs[r:k] end before j1
        out.extend(_shifted(runs[r:k], shift))
        r = k
        while r < len(runs) and runs[r][0] < j2:  # runs[r] meets the range
            start, end, final = runs[r]
            if start < j1:  # its head is before the range
                out.append((start + shift, j1 + shift, final))
            low, high = max(start, j1), min(end, j2)
            owners[final + low - start : final + high - start] = [commit] * (high - low)
            if end > j2:  # its tail is after the range: left for the next ranges
                runs[r] = (j2, end, final + j2 - start)
                break
            r += 1
        shift += (i2 - i1) - (j2 - j1)
    out.extend(_shifted(runs[r:], shift))
    return out


def _run_end(run: Run) -> int:
    return run[1]


def _shifted(runs: list[Run], shift: int) -> list[Run]:
    return runs if shift == 0 else [(start + shift, end + shift, f) for start, end, f in runs]
