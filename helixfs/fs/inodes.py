"""Inode numbers for the mount: stable, never reused, disjoint per view.

The kernel names everything by inode number and may hold a number long after we last
saw it (cached dentries, open files, `git`'s index which stores st_ino). So a number
always means the same thing for the life of the mount: a node keeps its number while the
kernel or an open file knows it, and a number that is gone is never handed out again.

Layout (64-bit inode numbers):

- 1: the mount root (the current branch's root node; still 1 after a HEAD switch).
- [2, 2**32): slot 0, the virtual `.helix/` entries, allocated per virtual path.
- slot k >= 1, [k * 2**32, (k + 1) * 2**32): the nodes of one view generation. A view
  (main root, a branch, a snapshot, a commit) takes a fresh slot whenever its node
  identities are replaced (reload after an out-of-band ref move, HEAD switch), so a
  stale number can never alias a new node. The root of a view other than the main one
  is a virtual inode (slot 0), so its number survives those generations too.
"""

from __future__ import annotations

import errno
import itertools
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from helixfs.errors import NotFound

if TYPE_CHECKING:
    from helixfs.vcs.worktree import Node, Worktree


class Stale(NotFound):
    """A number the kernel still holds, or an open file, whose tree state was replaced
    (HEAD switch, reset, merge): it names nothing here any more.

    ESTALE, not ENOENT: on it Linux walks the path again with every name revalidated, so
    `open`/`stat` of a path just after a switch find what the path is now, not a cached
    name of the old state.
    """

    errno = errno.ESTALE


class OpenRetries:
    """The kernel's one retry of an open that got ESTALE, per thread (ADR 0021).

    On ESTALE Linux walks the path again (a fresh LOOKUP) and opens what it finds. A
    HEAD switch landing between that LOOKUP's reply and the OPEN drops the number just
    handed out, and a second ESTALE reaches the caller. So the entry a retrying thread's
    LOOKUP returned is kept: its OPEN opens that file as it was when looked up, as an
    open that started before the switch would. Only a retry gets this: a number the
    kernel kept in its cache still answers ESTALE, so the walk finds the new branch.
    """

    def __init__(self) -> None:
        self._walks: dict[int, NodeInode | None] = {}  # thread id -> what its LOOKUP found

    def refused(self, tid: int) -> None:
        """An open of `tid` got ESTALE: the kernel walks the path again. A `stat` that
        got it (a GETATTR) walks again too, but opens nothing to end its retry: past
        `RETRIES_KEPT` threads, the oldest retry is given up, so such threads cannot
        pile up (each keeping the node it looked up, and its tree) for the mount's life."""
        self._walks.pop(tid, None)  # re-inserted as the newest
        if len(self._walks) >= RETRIES_KEPT:
            del self._walks[next(iter(self._walks))]
        self._walks[tid] = None

    def looked_up(self, tid: int, found: Inode | None) -> None:
        if tid in self._walks:
            self._walks[tid] = found if isinstance(found, NodeInode) else None

    def peek(self, tid: int, ino: int) -> NodeInode | None:
        """The entry the retry of `tid` looked up, if it is `ino`."""
        walk = self._walks.get(tid)
        return walk if walk is not None and walk.ino == ino else None

    def take(self, tid: int, ino: int) -> NodeInode | None:
        """`peek`, for the open that ends the retry (every open asks: nearly always
        with no retry in flight at all)."""
        if not self._walks:
            return None
        found = self.peek(tid, ino)
        self._walks.pop(tid, None)
        return found


# Retries in flight: one per thread between its ESTALE and the open that retries it.
RETRIES_KEPT = 256
ROOT_INODE = 1
SLOT_BITS = 32
_LOW_MAX = (1 << SLOT_BITS) - 1
VIRTUAL_FIRST = 2


@dataclass(eq=False, slots=True)
class View:
    """A Worktree shown somewhere in the mount: the root, or a `.helix/` folder."""

    kind: str  # "root" | "branch" | "snapshot" | "commit"
    name: str  # branch/snapshot name or commit prefix; the branch name for "root"
    worktree: Worktree
    root_ino: int
    parent_ino: int  # the directory that holds the view's root (itself for the mount root)
    slot: int = 0

    @property
    def readonly(self) -> bool:
        return self.worktree.readonly


@dataclass(eq=False, slots=True)
class NodeInode:
    """A Node the kernel knows by number, and where the kernel last saw it."""

    ino: int
    view: View
    node: Node
    # the Worktree `node` belongs to: the view's, until a HEAD switch or a reload moves
    # the view on and leaves this entry (an open file's) with its old branch
    worktree: Worktree
    parent: int
    name: bytes
    lookups: int = 0
    opens: int = 0
    detached: bool = False  # unlinked/replaced: kept only while the kernel or a fd holds it
    superseded: bool = False  # its view moved to other content (reset, HEAD switch)
    # pages_key(node) when last opened or stored: unchanged means the kernel's cached
    # pages of this inode are still the content (FOPEN_KEEP_CACHE is safe)
    cache_key: tuple[int, int, int] | None = None
    read_atime: int | None = None  # the atime reads set (`-o relatime`): never stored


def pages_key(node: Node) -> tuple[int, int, int]:
    """What the kernel's pages of a file are checked against: the node, its size and
    its mtime. Content changed anywhere but through the kernel (a command, a reset, a
    merge) gets a new node or a new mtime."""
    return (id(node), node.size, node.mtime_ns)


@dataclass(eq=False, slots=True)
class VirtualInode:
    """A `.helix/` entry; `entry` is whatever helixdir resolved the path to."""

    ino: int
    path: tuple[bytes, ...]
    entry: object
    lookups: int = 0
    served: int | None = None  # bytes the last open rendered (a computed file's size)


Inode = NodeInode | VirtualInode


@dataclass
class InodeTable:
    """Every inode number handed to the kernel, both directions."""

    _entries: dict[int, Inode] = field(default_factory=dict)
    # slot -> node -> its entry. Keyed by the Node itself (hashed by identity, and kept
    # alive by its entry anyway): a (slot, id(node)) key cost a tuple and an int, ~90
    # bytes per file the kernel holds.
    _by_node: dict[int, dict[Node, NodeInode]] = field(default_factory=dict)
    _numbers: dict[tuple[bytes, ...], int] = field(default_factory=dict)
    _slots: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _virtual_next: Iterator[int] = field(default_factory=lambda: itertools.count(VIRTUAL_FIRST))
    _buried: dict[int, NodeInode] = field(default_factory=dict)

    def get(self, ino: int) -> Inode:
        try:
            return self._entries[ino]
        except KeyError:
            if ino in self._buried:  # a removed folder: nothing in it, as on a local disk
                raise NotFound(f"inode {ino} is a removed folder") from None
            raise Stale(f"inode {ino} is not known (stale handle)") from None

    def find(self, ino: int) -> Inode | None:
        """`get`, None for a number not mapped (removed, stale or never handed out)."""
        return self._entries.get(ino)

    def node(self, ino: int) -> NodeInode:
        found = self.get(ino)
        if not isinstance(found, NodeInode):
            raise NotFound(f"inode {ino} is not a file of a tree")
        return found

    def new_slot(self, view: View) -> None:
        """Give `view` a fresh number range (its old node numbers stay reserved: nothing
        is numbered in the old one again)."""
        view.slot = next(self._slots)

    def number_for(self, path: tuple[bytes, ...]) -> int:
        """The slot-0 number of a `.helix/` path; the same path keeps the same number."""
        ino = self._numbers.get(path)
        if ino is None:
            ino = next(self._virtual_next)
            if ino >> SLOT_BITS:
                raise RuntimeError("virtual inode range exhausted")
            self._numbers[path] = ino
        return ino

    def renumber(self, ino: int) -> None:
        """The `.helix/` folder numbered `ino` was deleted: one made again at its path is
        another folder and gets another number. The kernel may still hold this one (a
        shell inside it), marked deleted, and would refuse to create anything in it."""
        for path in self._paths_numbered(ino):
            del self._numbers[path]

    def rename_number(self, ino: int, name: bytes) -> None:
        """The `.helix/` folder numbered `ino` was renamed to `name`: the number moves
        to the new path, so the kernel's dentry (moved by `mv`) and the cwd of a process
        inside still name it, and the old path is free for another folder."""
        for path in self._paths_numbered(ino):
            del self._numbers[path]
            self._numbers[(*path[:-1], name)] = ino

    def _paths_numbered(self, ino: int) -> list[tuple[bytes, ...]]:
        return [path for path, number in self._numbers.items() if number == ino]

    def virtual(self, path: tuple[bytes, ...], entry: object) -> VirtualInode:
        """The inode of a virtual `.helix/` entry (re-resolved on every lookup)."""
        ino = self.number_for(path)
        found = self._entries.get(ino)
        if isinstance(found, VirtualInode):
            found.entry = entry
            return found
        created = VirtualInode(ino, path, entry)
        self._entries[ino] = created
        return created

    def for_node(self, view: View, node: Node, parent: int, name: bytes) -> NodeInode:
        """The inode of `node` in `view`, allocated on first sight; records where it is."""
        in_slot = self._by_node.get(view.slot)
        if in_slot is None:  # not setdefault: it would build a dict on every lookup
            in_slot = self._by_node[view.slot] = {}
        found = in_slot.get(node)
        if name == node.name:
            name = node.name  # the kernel's copy of the name need not be kept as well
        if found is None:
            if node is view.worktree.root:
                ino = view.root_ino
            else:
                ino = self._allocate(view.slot, view.worktree.path_of(node))
            found = NodeInode(ino, view, node, view.worktree, parent, name)
            in_slot[node] = found
            self._entries[ino] = found
        elif not found.detached:
            found.parent, found.name = parent, name
        return found

    def known(self, view: View, node: Node) -> NodeInode | None:
        in_slot = self._by_node.get(view.slot)
        return None if in_slot is None else in_slot.get(node)

    def in_view(self, view: View) -> list[NodeInode]:
        return list(self._by_node.get(view.slot, {}).values())

    def detach(self, entry: NodeInode) -> None:
        """The node left its tree; forget it as soon as nothing refers to it."""
        entry.detached = True
        self.release_if_unused(entry)

    def drop_view(self, view: View) -> None:
        """Unmap a view nobody knows any more, its number range included."""
        self.drop_view_generation(view)
        self.renumber(view.root_ino)

    def drop_view_generation(self, view: View) -> list[NodeInode]:
        """Unmap every node of the view's current slot (numbers the kernel still holds
        answer ESTALE until `remap` gives them a node again); returns what was mapped."""
        old = list(self._by_node.pop(view.slot, {}).values())
        for entry in old:
            if self._entries.get(entry.ino) is entry:
                del self._entries[entry.ino]
        return old

    def orphan(self, entry: NodeInode) -> None:
        """Keep an entry of a dropped generation while descriptors hold it, detached (its
        old node still answers getattr and reads), like an unlinked open file. A
        directory only the kernel holds (a shell's cwd) is buried instead."""
        if entry.opens:
            entry.detached = entry.superseded = True
            self._entries[entry.ino] = entry
        elif entry.lookups and entry.node.is_dir():
            entry.detached = entry.superseded = True
            self._buried[entry.ino] = entry

    def revive(self, entry: NodeInode) -> None:
        """An entry dropped with its generation that a retried open takes after all
        (OpenRetries): kept, as `orphan` keeps an open file."""
        entry.detached = entry.superseded = True
        self._entries[entry.ino] = entry

    def buried(self, ino: int) -> NodeInode:
        """A directory gone with its generation that the kernel still holds: it answers
        getattr as a removed directory would, and nothing else (get() does not know it),
        so a process inside it can still `cd ..`, as on a local disk."""
        found = self._buried.get(ino)
        if found is None:
            raise Stale(f"inode {ino} is not known (stale handle)")
        return found

    def remap(self, entry: NodeInode, view: View, node: Node) -> None:
        """Keep `entry`'s number for `node` of the view's new generation."""
        entry.view, entry.node, entry.worktree, entry.detached = view, node, view.worktree, False
        self._by_node.setdefault(view.slot, {})[node] = entry
        self._entries[entry.ino] = entry

    def forget(self, ino: int, count: int) -> Inode | None:
        """The kernel dropped `count` references to `ino`; returns what it named."""
        found = self._entries.get(ino) or self._buried.get(ino)
        if found is None:
            return None
        found.lookups = max(0, found.lookups - count)
        if isinstance(found, NodeInode):
            self.release_if_unused(found)
        elif found.lookups == 0 and getattr(found.entry, "transient", False):
            # a file: no child refers to its number, and an open one is still held
            del self._entries[ino]
            self._numbers.pop(found.path, None)
        return found

    def release_if_unused(self, entry: NodeInode) -> None:
        if entry.detached and entry.lookups == 0 and entry.opens == 0:
            self._entries.pop(entry.ino, None)
            self._buried.pop(entry.ino, None)
            in_slot = self._by_node.get(entry.view.slot)
            if in_slot is not None and in_slot.get(entry.node) is entry:
                del in_slot[entry.node]
                if not in_slot:  # a slot nothing is numbered in keeps no table
                    del self._by_node[entry.view.slot]

    def _allocate(self, slot: int, path: bytes) -> int:
        """A number in `slot` made from the node's path, so that the same path has the
        same number in the next mount of the branch: git's index compares st_ino (its
        low 32 bits) and re-reads every file whose number moved (ADR 0042). A number
        in use already goes on to the next free one."""
        low = zlib.crc32(path) or 1
        base = slot << SLOT_BITS
        while True:
            ino = base | low
            if ino != ROOT_INODE and ino not in self._entries and ino not in self._buried:
                return ino
            low = low % _LOW_MAX + 1  # 1 .. 2**32 - 1, never 0 (a slot's own number)

    def __len__(self) -> int:
        return len(self._entries)
