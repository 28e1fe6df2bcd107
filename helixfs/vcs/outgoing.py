"""What a push sends: the objects of new commits that their parents do not already hold.

A push of commits on top of what the remote is known to have (vcs/sync.py) used to mark
every object of the known side's tree to subtract it: the whole tree, read record by
record, on every push (90 ms of CPU, GIL held, for 10,000 files; a mount with
`--remote` pushes every second while it saves). Here each new commit's tree is walked
beside its parents' trees, name by name, and only where they differ: a one-file change
reads the folders on its path and the file, whatever the size of the tree (ADR 0070).

Why it sends all it must: an object of a new commit is left out only when the same id
is a child of the parent's counterpart (the folder of the same name, or the same
folder); it is then reachable from that parent, which is on the remote or is itself a
new commit whose objects are sent by the same rule. What it may send twice: a file or a
folder moved to a folder of another name (it has no counterpart there). Loose copies
are put only if absent, and large records are asked about first (vcs/sync.py), so a
move costs at most its small records again, in a pack.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from helixfs.errors import NotFound
from helixfs.ids import ObjectId
from helixfs.vcs.objects import (
    KIND_CHUNKED,
    KIND_PAGED,
    KIND_ROOT,
    KIND_TREE,
    decode_chunked,
    decode_paged,
    decode_root,
    decode_tree,
    kind_of,
)

if TYPE_CHECKING:
    from helixfs.ids import CommitId
    from helixfs.vcs.repo import Repository

Names = dict[bytes, set[ObjectId]]  # a folder's names -> the ids the old sides give them


class _Side:
    """The old side of one place in the tree: the ids its records hold, by name."""

    def __init__(self) -> None:
        self.ids: set[ObjectId] = set()  # every child id (entries, pages, chunks)
        self.names: Names = {}
        self.folders: list[ObjectId] = []  # for the pages of a new paged folder

    def add_folder(self, oid: ObjectId, record: bytes, repo: Repository) -> None:
        self.folders.append(oid)
        pages = [record]
        if kind_of(record) == KIND_PAGED:
            page_ids = [page for page, _ in decode_paged(record)]
            self.ids.update(page_ids)
            pages = [p for p in (_record(repo, page) for page in page_ids) if p is not None]
        for page in pages:
            for entry in decode_tree(page).entries:
                self.ids.add(entry.oid)
                self.names.setdefault(entry.name, set()).add(entry.oid)


def _record(repo: Repository, oid: ObjectId) -> bytes | None:
    """A local record, or None: a lazy clone may lack the old side's files."""
    try:
        return repo.store.get(oid, keep=False)
    except NotFound:
        return None


def _old_side(repo: Repository, olds: Iterable[ObjectId]) -> _Side:
    side = _Side()
    for oid in olds:
        record = _record(repo, oid)
        if record is None:
            continue
        kind = kind_of(record)
        if kind in (KIND_TREE, KIND_PAGED):
            side.add_folder(oid, record, repo)
        elif kind == KIND_ROOT:
            side.ids.add(decode_root(record).oid)
            side.names.setdefault(b"", set()).add(decode_root(record).oid)
        elif kind == KIND_CHUNKED:
            side.ids.update(chunk for chunk, _ in decode_chunked(record).chunks)
    return side


def _children(record: bytes, old: _Side) -> Iterable[tuple[ObjectId, set[ObjectId]]]:
    """A new record's children, each with its counterparts on the old side."""
    kind = kind_of(record)
    if kind == KIND_TREE:
        for entry in decode_tree(record).entries:
            yield entry.oid, old.names.get(entry.name, set())
    elif kind == KIND_PAGED:  # a page is a piece of the folder: paired with the old folder
        for page, _ in decode_paged(record):
            yield page, set(old.folders)
    elif kind == KIND_ROOT:  # the listing, beside the old root's (or the old plain folder)
        yield decode_root(record).oid, old.names.get(b"", set()) | set(old.folders)
    elif kind == KIND_CHUNKED:
        for chunk, _ in decode_chunked(record).chunks:
            yield chunk, set()  # a chunk is a leaf: never read


def new_objects(repo: Repository, commits: Iterable[CommitId]) -> list[ObjectId]:
    """The commits and the objects of their trees their parents' trees do not hold."""
    found: list[ObjectId] = []
    seen: set[ObjectId] = set()
    stack: list[tuple[ObjectId, set[ObjectId]]] = []
    for cid in commits:
        info = repo.commit_info(cid)
        found.append(ObjectId(cid))
        seen.add(ObjectId(cid))
        stack.append((info.tree, {repo.commit_info(p).tree for p in info.parents}))
    while stack:
        oid, olds = stack.pop()
        if oid in seen or oid in olds:
            continue
        seen.add(oid)
        found.append(oid)
        record = _record(repo, oid)
        kind = None if record is None else kind_of(record)
        if record is None or kind not in (KIND_TREE, KIND_PAGED, KIND_ROOT, KIND_CHUNKED):
            continue  # a file: it points at nothing
        old = _old_side(repo, olds)
        for child, counterparts in _children(record, old):
            if child in seen or child in old.ids:
                continue
            if kind == KIND_CHUNKED:
                seen.add(child)
                found.append(child)
            else:
                stack.append((child, counterparts))
    return found
