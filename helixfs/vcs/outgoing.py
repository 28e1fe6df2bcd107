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

from collections import OrderedDict
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
    kind_of,
    tree_names,
)

if TYPE_CHECKING:
    from helixfs.ids import CommitId
    from helixfs.vcs.repo import Repository

Names = dict[bytes, set[ObjectId]]  # a folder's names -> the ids the old sides give them


class _Side:
    """The old side of one place in the tree: the ids its records hold, by name.

    A paged folder's pages are not read until a plain folder is paired with it (a
    folder that shrank back under a page): a new paged folder's pages are paired with
    the old pages that are gone, so a save into a folder of 10,000 names reads the one
    page it changed and the one it replaced, not every page twice (ADR 0082)."""

    def __init__(self) -> None:
        self.ids: set[ObjectId] = set()  # every child id (entries, pages, chunks)
        self.names: Names = {}
        self.folders: list[ObjectId] = []  # plain folders, for a new paged folder's pages
        self.paged: set[ObjectId] = set()  # old paged folders
        self.pages: set[ObjectId] = set()  # and their pages
        self._unread: list[ObjectId] = []  # those pages, not read yet

    def add_paged(self, oid: ObjectId, record: bytes) -> None:
        page_ids = [page for page, _ in decode_paged(record)]
        self.paged.add(oid)
        self.ids.update(page_ids)
        self.pages.update(page_ids)
        self._unread.extend(page_ids)

    def add_folder(self, oid: ObjectId, listing: Listing) -> None:
        self.folders.append(oid)
        self._add_entries(listing)

    def _add_entries(self, listing: Listing) -> None:
        for name, oid in listing:
            self.ids.add(oid)
            self.names.setdefault(name, set()).add(oid)

    def read_pages(self, walk: _Walk) -> None:
        """The entries of the old paged folders too: a plain folder's names are paired
        with all of them."""
        unread, self._unread = self._unread, []
        for oid in unread:
            listing = walk.listing(oid)
            if listing is not None:
                self._add_entries(listing)


Listing = list[tuple[bytes, ObjectId]]  # a flat folder's (name, id) pairs
LISTINGS = 256  # folders' listings kept during one walk


class _Walk:
    """One walk's reads: a commit's folders are its parent's old side and the next
    commit's, so their listings are kept (LISTINGS of them) and decoded once."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self._listings: OrderedDict[ObjectId, Listing] = OrderedDict()

    def record(self, oid: ObjectId) -> bytes | None:
        """A local record, or None: a lazy clone may lack the old side's files."""
        try:
            return self.repo.store.get(oid, keep=False)
        except NotFound:
            return None

    def listing(self, oid: ObjectId, record: bytes | None = None) -> Listing | None:
        """The names and ids of flat folder `oid` (None: absent)."""
        found = self._listings.get(oid)
        if found is not None:
            self._listings.move_to_end(oid)
            return found
        if record is None:
            record = self.record(oid)
        if record is None:
            return None
        found = tree_names(record)
        self._listings[oid] = found
        if len(self._listings) > LISTINGS:
            self._listings.popitem(last=False)
        return found

    def listed(self, oid: ObjectId) -> Listing | None:
        return self._listings.get(oid)


def _old_side(walk: _Walk, olds: Iterable[ObjectId]) -> _Side:
    side = _Side()
    for oid in olds:
        listing = walk.listed(oid)
        if listing is not None:  # a folder of the walk's: no read
            side.add_folder(oid, listing)
            continue
        record = walk.record(oid)
        if record is None:
            continue
        kind = kind_of(record)
        if kind == KIND_TREE:
            side.add_folder(oid, walk.listing(oid, record) or [])
        elif kind == KIND_PAGED:
            side.add_paged(oid, record)
        elif kind == KIND_ROOT:
            side.ids.add(decode_root(record).oid)
            side.names.setdefault(b"", set()).add(decode_root(record).oid)
        elif kind == KIND_CHUNKED:
            side.ids.update(chunk for chunk, _ in decode_chunked(record).chunks)
    return side


def _children(
    oid: ObjectId, record: bytes, old: _Side, walk: _Walk
) -> Iterable[tuple[ObjectId, set[ObjectId]]]:
    """A new record's children, each with its counterparts on the old side."""
    kind = kind_of(record)
    if kind == KIND_TREE:
        for name, child in walk.listing(oid, record) or []:
            yield child, old.names.get(name, set())
    elif kind == KIND_PAGED:  # a new page holds what the old pages it replaced held
        pages = [page for page, _ in decode_paged(record)]
        replaced = (old.pages - set(pages)) | set(old.folders)
        for page in pages:
            yield page, replaced
    elif kind == KIND_ROOT:  # the listing, beside the old root's (or the old folder)
        olds = old.names.get(b"", set()) | set(old.folders) | old.paged
        yield decode_root(record).oid, olds
    elif kind == KIND_CHUNKED:
        for chunk, _ in decode_chunked(record).chunks:
            yield chunk, set()  # a chunk is a leaf: never read


def new_objects(repo: Repository, commits: Iterable[CommitId]) -> list[ObjectId]:
    """The commits and the objects of their trees their parents' trees do not hold."""
    walk = _Walk(repo)
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
        record = walk.record(oid)
        kind = None if record is None else kind_of(record)
        if record is None or kind not in (KIND_TREE, KIND_PAGED, KIND_ROOT, KIND_CHUNKED):
            continue  # a file: it points at nothing
        old = _old_side(walk, olds)
        if kind == KIND_TREE:
            old.read_pages(walk)
        for child, counterparts in _children(oid, record, old, walk):
            if child in seen or child in old.ids:
                continue
            if kind == KIND_CHUNKED:
                seen.add(child)
                found.append(child)
            else:
                stack.append((child, counterparts))
    return found
