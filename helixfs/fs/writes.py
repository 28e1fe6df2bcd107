"""When spooled content becomes a save: close, fsync, release, truncate.

The write half of the Operations class: it owns no state of its own beyond the spools
and the saver, and decides which kernel event stores a file's bytes (see spool.py for
where they wait until then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from helixfs.errors import InvalidInput, IsADirectory
from helixfs.fs import edge
from helixfs.fs.handles import FileHandle
from helixfs.fs.inodes import NodeInode, Stale, pages_key
from helixfs.fs.saver import Saver
from helixfs.fs.spool import Spool, SpoolTable
from helixfs.vcs.content import CHUNK_THRESHOLD

if TYPE_CHECKING:
    from helixfs.vcs.worktree import Node, Worktree


class Writes:
    def __init__(self, spools: SpoolTable, saver: Saver) -> None:
        self.spools = spools
        self.saver = saver

    def truncate(self, entry: NodeInode, size: int, *, by_handle: bool) -> None:
        """ftruncate on an open file is part of its write session (stored at close);
        truncate(path) is a save of its own, like any other."""
        if entry.node.is_dir():
            raise IsADirectory("a directory has no size to change")
        if not entry.node.is_file():
            raise InvalidInput("only regular files have a size to change")
        spool = self.spools.get(entry.node)
        if spool is None and by_handle:
            spool = self.spool(entry.worktree, entry.node)
        if spool is None:
            entry.worktree.set_attrs(entry.node, size=size)
            return
        spool.truncate(size)
        if not by_handle:
            self.store_spool(entry.worktree, entry.node, spool)

    def spool(self, worktree: Worktree, node: Node) -> Spool:
        found = self.spools.get(node)
        if found is not None:
            return found
        return self.spools.ensure(
            node,
            lambda off, size: worktree.read(node, off, size),
            node.size,
            node.oid,
            base_holes=worktree.zero_ranges(node),
            prestore=worktree.prestore,
        )

    def store(self, handle: FileHandle, *, sync: bool = False) -> bool:
        """Close/fsync: a written file goes into the store and becomes a save (`sync`:
        a durable one). False when there was nothing to store."""
        spool = self.spools.get(handle.node)
        if spool is None or not spool.dirty:
            return False
        if not handle.worktree.holds(handle.node):
            spool.stored()
            if entry_unlinked(handle):
                return False  # unlinked while open: readable through the fd, never saved
            raise Stale(
                "the branch was reset or merged while this file was open: "
                "these writes were not saved"
            )
        meta = edge.closer_meta(handle.meta)
        self.store_spool(handle.worktree, handle.node, spool, meta, sync=sync)
        # The kernel's pages of this inode saw every write: they may stay cached.
        handle.entry.cache_key = pages_key(handle.node)
        return True

    def store_spool(
        self,
        worktree: Worktree,
        node: Node,
        spool: Spool,
        meta: dict[str, Any] | None = None,
        *,
        sync: bool = False,
    ) -> None:
        # mtime is the time of the last write (or an explicit utimens), not of the close:
        # it is what stat() showed while the file was open, and the kernel may keep it.
        mtime = spool.mtime_override if spool.mtime_override is not None else spool.mtime_ns
        # ctime too is the one shown while open (the last write, or a later chmod or
        # utimens): a close changes nothing, and a stat once the kernel's cached
        # attributes expire must not see it move.
        ctime = max(node.ctime_ns, spool.mtime_ns)
        source = spool.source()
        if isinstance(source, bytes) and len(source) <= CHUNK_THRESHOLD:
            # one blob (nearly every save): neither edits nor holes change how it is stored
            edited, holes = None, []
        else:
            edits = spool.edits()
            edited = None if edits is None or spool.base_id is None else (spool.base_id, edits)
            holes = spool.holes()
        head = spool.take_head()
        worktree.set_content(
            node, source, edited=edited, holes=holes, head=head, mtime_ns=mtime, ctime_ns=ctime
        )
        spool.stored(node.oid)
        self.saver.saved(worktree, meta or {}, sync=sync)


def entry_unlinked(handle: FileHandle) -> bool:
    """Unlinked while open (written data is readable through the fd, never saved), as
    opposed to superseded by a reset or merge (written data is lost: say so)."""
    entry = handle.entry
    return entry.detached and not entry.superseded and entry.node is handle.node
