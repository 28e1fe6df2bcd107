"""What a work tree holds beyond its commit tree, as a tree of parts (ADR 0086).

Where a work tree holds ignored paths (ADR 0061) or editor temp files (ADR 0019), its
commit tree lacks them. A commit saves such a work tree as the commit tree plus an
overlay (`work/BRANCH`: vcs/journal.py), so it writes no second tree and no journal for
the folders that hold them. The overlay changes only when what is left out does, so a
commit that changes tracked files only names the same overlay again.

A `Part` is one folder's share: the entries its commit tree lacks (`kept`: a file, or a
folder left out whole, as the work tree has it), and the parts of its subfolders that
the commit tree holds with something left out below (`nested`). Stored, a part is a tree
record (so gc and fsck walk it as any tree): its kept entries, and for each nested part
an entry of that name whose id is the part's and whose xattrs are `attrs.GRAFT` alone.
Grafting it on a commit tree's folder gives the work tree's folder back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from helixfs.ids import ObjectId
from helixfs.vcs import attrs
from helixfs.vcs.objects import MODE_DIR, TreeEntry, encode_entry
from helixfs.vcs.treeops import EMPTY_TREE_ID, Trees

Objects = dict[ObjectId, bytes]
GRAFTED = ((attrs.GRAFT, b""),)


@dataclass(eq=True, slots=True)
class Part:
    """One folder's share of an overlay. Never changed once made: a change makes a new
    part (`patched`), so an unchanged one keeps its stored id. `left_folders`: how many
    of the folder's subfolders its commit tree leaves out whole."""

    kept: dict[bytes, TreeEntry] = field(default_factory=dict)
    nested: dict[bytes, Part] = field(default_factory=dict)
    oid: ObjectId | None = field(default=None, compare=False)
    left_folders: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        self.left_folders = sum(1 for entry in self.kept.values() if entry.is_dir())

    def __bool__(self) -> bool:
        return bool(self.kept or self.nested)

    def patched(self, changes: Mapping[bytes, TreeEntry | Part | None]) -> Part:
        """This part with the names in `changes` made again: a kept entry, a nested part
        (an empty one is none) or nothing. Itself when none differs."""
        kept: dict[bytes, TreeEntry] | None = None
        nested: dict[bytes, Part] | None = None
        for name, new in changes.items():
            if isinstance(new, Part) and not new:
                new = None
            old: TreeEntry | Part | None = self.kept.get(name) or self.nested.get(name)
            if new is old or new == old:
                continue
            if kept is None or nested is None:
                kept, nested = dict(self.kept), dict(self.nested)
            kept.pop(name, None)
            nested.pop(name, None)
            if isinstance(new, Part):
                nested[name] = new
            elif new is not None:
                kept[name] = new
        if kept is None or nested is None:
            return self
        return Part(kept, nested)


EMPTY = Part(oid=EMPTY_TREE_ID)


def of(kept: dict[bytes, TreeEntry], nested: dict[bytes, Part]) -> Part:
    return Part(kept, nested) if kept or nested else EMPTY


def store(part: Part, trees: Trees, objects: Objects) -> ObjectId:
    """The id of `part` stored as a tree of parts; the records not stored yet go to
    `objects`. A part stored before keeps its id (nothing is encoded again)."""
    if part.oid is not None:
        return part.oid
    entries = list(part.kept.values())
    entries += [
        TreeEntry(name, MODE_DIR, store(sub, trees, objects), 0, 0, GRAFTED)
        for name, sub in part.nested.items()
    ]
    entries.sort(key=lambda entry: entry.name)
    part.oid = trees.encode(entries, [encode_entry(entry) for entry in entries], objects)
    return part.oid


def is_grafted(entry: TreeEntry) -> bool:
    """Whether a stored part's entry names a nested part, not an entry left out."""
    return entry.xattrs == GRAFTED


def holds(part: Part, path: bytes) -> bool:
    """Whether `path` is one the commit tree leaves out: `part`'s (a root's) kept entry,
    or below one."""
    for name in path.split(b"/"):
        if name in part.kept:
            return True
        found = part.nested.get(name)
        if found is None:
            return False
        part = found
    return False


def stored_part(trees: Trees, work: ObjectId, commit: ObjectId) -> Part:
    """The part of stored work tree `work` that its commit tree `commit` lacks (a folder
    the live work tree has not loaded: Trees.without_ephemeral made its commit tree)."""
    if work == commit:
        return EMPTY
    made = {entry.name: entry for entry in trees.get(commit).entries}
    kept: dict[bytes, TreeEntry] = {}
    nested: dict[bytes, Part] = {}
    for entry in trees.get(work).entries:
        there = made.get(entry.name)
        if there is not None and there.is_dir() and entry.is_dir():
            sub = stored_part(trees, entry.oid, there.oid)
            if sub:
                nested[entry.name] = sub
        elif there != entry:  # left out (not in the commit tree), or not what it holds
            kept[entry.name] = entry
    return of(kept, nested)
