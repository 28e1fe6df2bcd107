"""The pyfuse3 Operations class: kernel requests in, Worktree calls out.

Nothing of substance lives here: names resolve through the inode table (inodes.py) and
the views (views.py), content goes through spools (spool.py) to `Worktree.set_content`,
every save goes to the Saver (saver.py), `.helix/` is the handler table of helixdir.py.
Domain errors become errno values in one decorator (edge.fuse_errors).

Handlers never await: each runs to completion on the trio loop, so the Worktree (which
is not thread-safe) sees one request at a time and no request sees another half done.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyfuse3

from helixfs.errors import (
    Busy,
    HelixError,
    InvalidInput,
    IsADirectory,
    NotADirectory,
    NotFound,
    NotPermitted,
    ReadOnly,
)
from helixfs.fs import edge
from helixfs.fs.edge import BadHandle, CrossDevice, NoAttr, NotSupported, fuse_errors
from helixfs.fs.helixdir import Entry, ViewSpec, VirtualDir, VirtualFile, helix_root
from helixfs.fs.inodes import ROOT_INODE, InodeTable, NodeInode, VirtualInode
from helixfs.fs.saver import Saver
from helixfs.fs.spool import Spool, SpoolTable
from helixfs.fs.views import Views

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.worktree import Node, Worktree

log = logging.getLogger(__name__)

HELIX = b".helix"
HASH_XATTR = b"user.helix.hash"
COMMIT_XATTR = b"user.helix.commit"
MESSAGE_XATTR = b"user.helix.message"
VIRTUAL_XATTR_PREFIX = b"user.helix."

ReaddirReply = Callable[[Any, bytes, pyfuse3.EntryAttributes, int], bool]


@dataclass(eq=False)
class FileHandle:
    """An open file: the node it opened, even if the view has moved on since."""

    entry: NodeInode
    worktree: Worktree
    node: Node
    flags: int
    meta: dict[str, Any]

    @property
    def writable(self) -> bool:
        return (self.flags & os.O_ACCMODE) != os.O_RDONLY


@dataclass(eq=False)
class VirtualHandle:
    """An open `.helix/` file: rendered once at open, written back at flush."""

    file: VirtualFile
    data: bytes
    written: bytearray | None = None  # None: opened read-only
    unapplied: bool = False  # written since the last flush (a dup'ed fd flushes early)


@dataclass(eq=False)
class DirHandle:
    """An open directory: its listing as of opendir, so offsets stay meaningful."""

    ino: int
    names: list[bytes] = field(default_factory=list)
    nodes: list[Node] | None = None


Handle = FileHandle | VirtualHandle | DirHandle
H = TypeVar("H", FileHandle, VirtualHandle, DirHandle)


class Operations(pyfuse3.Operations):
    """One mounted store: the HEAD branch at the root, everything else under `.helix/`."""

    supports_dot_lookup = False
    enable_writeback_cache = False

    def __init__(
        self,
        repo: Repository,
        *,
        saver: Saver | None = None,
        helix_entries: Mapping[bytes, Entry] | None = None,
        owner: tuple[int, int] | None = None,
    ) -> None:
        super().__init__()
        if repo.path is None:
            raise InvalidInput("the filesystem needs a store on disk (its tmp/ holds spools)")
        self.repo = repo
        self.store_path = Path(repo.path)
        self.saver = saver if saver is not None else Saver()
        self.owner = owner if owner is not None else (os.getuid(), os.getgid())
        self.inodes = InodeTable()
        self.spools = SpoolTable(self.store_path / "tmp")
        self.invalidator = edge.Invalidator()
        self.views = Views(repo, self.inodes, self.invalidator, self.saver)
        self.helix = helix_root(self, self.store_path, helix_entries or {})
        self.readdir_reply: ReaddirReply = pyfuse3.readdir_reply
        self._handles: dict[int, Handle] = {}
        self._next_fh = 1
        self._unsubscribe = repo.subscribe(self.views.ref_moved)
        self._started_ns = time.time_ns()

    # -- lifecycle (called by the daemon) -----------------------------------------------

    def init(self) -> None:
        """The kernel connection is up: invalidations can now reach it."""
        self.invalidator.start()

    def close(self) -> None:
        """Unmounted: store what open files still hold, commit everything pending."""
        for handle in list(self._handles.values()):
            if isinstance(handle, FileHandle):
                self._store(handle)
        self.saver.flush_now()
        self.invalidator.stop()
        self._unsubscribe()

    # -- helixdir.Host ------------------------------------------------------------------

    def current_branch(self) -> str:
        return self.views.root.name

    def switch_branch(self, name: str) -> None:
        self.settle()
        self.repo.checkout(name)  # subscribers (views.ref_moved) move the root
        self.views.switch_root(name)

    def settle(self) -> None:
        self.saver.commit_now(self.views.root.worktree)

    def forget_view(self, kind: str, name: str) -> None:
        self.views.forget(kind, name)

    def rename_view(self, kind: str, old: str, new: str) -> None:
        self.views.forget(kind, old)

    # -- names --------------------------------------------------------------------------

    @fuse_errors
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self.inodes.get(parent_inode)
        if name == b".":
            found = parent
        elif name == b"..":
            found = self._parent_of(parent)
        else:
            found = self._child(parent, name)
        found.lookups += 1
        return self._attrs(found)

    def _child(self, parent: NodeInode | VirtualInode, name: bytes) -> NodeInode | VirtualInode:
        if isinstance(parent, VirtualInode):
            return self._virtual_child(parent, name)
        if parent.ino == ROOT_INODE and name == HELIX:
            return self.inodes.virtual((HELIX,), self.helix)
        if not parent.node.is_dir():
            raise NotADirectory(f"{name!r}: parent is not a directory")
        node = parent.worktree.lookup(parent.node, name)
        return self.inodes.for_node(parent.view, node, parent.ino, name)

    def _virtual_child(self, parent: VirtualInode, name: bytes) -> NodeInode | VirtualInode:
        directory = parent.entry
        if not isinstance(directory, VirtualDir):
            raise NotADirectory(f"{name!r}: parent is not a directory")
        child = directory.child(name)
        path = (*parent.path, name)
        if isinstance(child, ViewSpec):
            view = self.views.open(child, path, parent.ino)
            return self.inodes.for_node(view, view.worktree.root, parent.ino, name)
        return self.inodes.virtual(path, child)

    def _parent_of(self, entry: NodeInode | VirtualInode) -> NodeInode | VirtualInode:
        if isinstance(entry, VirtualInode):
            return self.inodes.get(ROOT_INODE if len(entry.path) == 1 else
                                   self.inodes.number_for(entry.path[:-1]))
        return self.inodes.get(entry.parent)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for ino, count in inode_list:
            self.inodes.forget(ino, count)

    # -- attributes ---------------------------------------------------------------------

    @fuse_errors
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        return self._attrs(self.inodes.get(inode))

    def _attrs(self, entry: NodeInode | VirtualInode) -> pyfuse3.EntryAttributes:
        if isinstance(entry, VirtualInode):
            return self._virtual_attrs(entry)
        node = entry.node
        size, mtime = node.size, node.mtime_ns
        spool = self.spools.get(node)
        if spool is not None:
            size = spool.size
            if spool.mtime_override is not None:
                mtime = spool.mtime_override
            elif spool.dirty:
                mtime = spool.mtime_ns
        timeout = edge.READONLY_TIMEOUT if entry.view.readonly else edge.WRITABLE_TIMEOUT
        if entry.parent != ROOT_INODE and entry.ino == entry.view.root_ino:
            timeout = 0  # a `.helix/` view root: the branch may be deleted any time
        return edge.attributes(entry.ino, node.mode, size, mtime, node.ctime_ns,
                               owner=self.owner, timeout=timeout)

    def _virtual_attrs(self, entry: VirtualInode) -> pyfuse3.EntryAttributes:
        thing = entry.entry
        mode = thing.mode if isinstance(thing, Entry) else stat.S_IFDIR | 0o555
        size = 0
        if isinstance(thing, VirtualFile) and thing.cheap:
            size = len(thing.render())
        now = time.time_ns()
        return edge.attributes(entry.ino, mode, size, now, self._started_ns,
                               owner=self.owner, timeout=0)

    @fuse_errors
    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            return self._virtual_setattr(entry, fields)
        worktree, node = entry.worktree, entry.node
        if worktree.readonly:
            raise ReadOnly("snapshots and commits are read-only")
        if fields.update_size:
            self._truncate(entry, attr.st_size, by_handle=fh is not None)
        if fields.update_mode:
            worktree.set_attrs(node, mode=stat.S_IFMT(node.mode) | stat.S_IMODE(attr.st_mode))
        if fields.update_mtime:
            worktree.set_attrs(node, mtime_ns=attr.st_mtime_ns)
            spool = self.spools.get(node)
            if spool is not None and spool.dirty:
                spool.mtime_override = attr.st_mtime_ns  # outlives the store at close
        if fields.update_size or fields.update_mode or fields.update_mtime:
            self._saved(entry, edge.caller_meta(ctx))
        return self._attrs(entry)

    def _virtual_setattr(
        self, entry: VirtualInode, fields: pyfuse3.SetattrFields
    ) -> pyfuse3.EntryAttributes:
        """Only `> .helix/HEAD` (truncate to 0 before a write) means anything here."""
        thing = entry.entry
        if not (isinstance(thing, VirtualFile) and thing.writable):
            raise NotPermitted("this .helix entry cannot be changed")
        return self._virtual_attrs(entry)

    def _truncate(self, entry: NodeInode, size: int, *, by_handle: bool) -> None:
        """ftruncate on an open file is part of its write session (stored at close);
        truncate(path) is a save of its own, like any other."""
        spool = self.spools.get(entry.node)
        if spool is None and by_handle:
            spool = self._spool(entry.worktree, entry.node)
        if spool is None:
            entry.worktree.set_attrs(entry.node, size=size)
            return
        spool.truncate(size)
        if not by_handle:
            self._store_spool(entry.worktree, entry.node, spool)

    # -- directories --------------------------------------------------------------------

    @fuse_errors
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            if not isinstance(entry.entry, VirtualDir):
                raise NotADirectory("not a directory")
            return self._new_handle(DirHandle(inode, entry.entry.names()))
        if not entry.node.is_dir():
            raise NotADirectory("not a directory")
        listing = entry.worktree.listdir(entry.node)
        if inode == ROOT_INODE:
            listing = [(name, node) for name, node in listing if name != HELIX]
        return self._new_handle(
            DirHandle(inode, [name for name, _ in listing], [node for _, node in listing])
        )

    @fuse_errors
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        handle = self._handle(fh, DirHandle)
        parent = self.inodes.get(handle.ino)
        for index in range(start_id, len(handle.names)):
            name = handle.names[index]
            try:
                child = self._listed_child(parent, handle, index)
            except HelixError:
                continue  # vanished since opendir
            if not self.readdir_reply(token, name, self._attrs(child), index + 1):
                return
            child.lookups += 1

    def _listed_child(
        self, parent: NodeInode | VirtualInode, handle: DirHandle, index: int
    ) -> NodeInode | VirtualInode:
        if handle.nodes is None or not isinstance(parent, NodeInode):
            return self._child(parent, handle.names[index])
        return self.inodes.for_node(parent.view, handle.nodes[index], parent.ino,
                                    handle.names[index])

    @fuse_errors
    async def releasedir(self, fh: int) -> None:
        self._handles.pop(fh, None)

    @fuse_errors
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        handle = self._handle(fh, DirHandle)
        entry = self.inodes.get(handle.ino)
        if isinstance(entry, NodeInode) and not entry.worktree.readonly:
            self.saver.persist(entry.worktree)

    @fuse_errors
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self.inodes.get(parent_inode)
        if isinstance(parent, VirtualInode):
            self._virtual_dir(parent).mkdir(name)
            return await self.lookup(parent_inode, name, ctx)
        self._refuse_helix_name(parent, name)
        node = parent.worktree.mkdir(parent.node, name, stat.S_IFDIR | stat.S_IMODE(mode))
        return self._created(parent, node, name, ctx)

    @fuse_errors
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self.inodes.get(parent_inode)
        if isinstance(parent, VirtualInode):
            self._virtual_dir(parent).rmdir(name)
            return
        self._refuse_helix_name(parent, name)
        node = parent.worktree.lookup(parent.node, name)
        if not node.is_dir():
            raise NotADirectory(f"{name!r} is not a directory")
        parent.worktree.rmdir(parent.node, name)
        self._detach(parent.worktree, node)
        self._saved(parent, edge.caller_meta(ctx))

    # -- names: create, remove, rename, link --------------------------------------------

    @fuse_errors
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name)
        node = parent.worktree.symlink(parent.node, name, target)
        return self._created(parent, node, name, ctx)

    @fuse_errors
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        entry = self.inodes.node(inode)
        return entry.worktree.readlink(entry.node)

    @fuse_errors
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if not stat.S_ISREG(mode):
            raise NotPermitted("only regular files, directories and symlinks can be stored")
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name)
        node = parent.worktree.create(parent.node, name, stat.S_IFREG | stat.S_IMODE(mode))
        return self._created(parent, node, name, ctx)

    @fuse_errors
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name)
        if parent.worktree.lookup(parent.node, name).is_dir():
            raise IsADirectory(f"{name!r} is a directory")
        node = parent.worktree.unlink(parent.node, name)
        self._detach(parent.worktree, node)
        self._saved(parent, edge.caller_meta(ctx))

    @fuse_errors
    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        old_parent = self.inodes.get(parent_inode_old)
        new_parent = self.inodes.get(parent_inode_new)
        if isinstance(old_parent, VirtualInode) or isinstance(new_parent, VirtualInode):
            self._virtual_rename(old_parent, name_old, new_parent, name_new)
            return
        if old_parent.view is not new_parent.view:
            raise CrossDevice("renames across branches or views are copies")
        for parent, name in ((old_parent, name_old), (new_parent, name_new)):
            self._refuse_helix_name(parent, name)
        worktree = old_parent.worktree
        replaced = worktree.rename(
            old_parent.node, name_old, new_parent.node, name_new,
            noreplace=bool(flags & pyfuse3.RENAME_NOREPLACE),
            exchange=bool(flags & pyfuse3.RENAME_EXCHANGE),
        )
        self._follow_move(new_parent, name_new)
        if flags & pyfuse3.RENAME_EXCHANGE:
            self._follow_move(old_parent, name_old)
        elif replaced is not None:
            self._detach(worktree, replaced)
        self._saved(old_parent, edge.caller_meta(ctx))

    def _virtual_rename(
        self, old_parent: NodeInode | VirtualInode, name_old: bytes,
        new_parent: NodeInode | VirtualInode, name_new: bytes,
    ) -> None:
        if old_parent is not new_parent or not isinstance(old_parent, VirtualInode):
            raise CrossDevice("entries cannot move in or out of .helix")
        self._virtual_dir(old_parent).rename(name_old, name_new)

    def _follow_move(self, parent: NodeInode, name: bytes) -> None:
        """The moved node keeps its inode; record where the kernel now sees it."""
        node = parent.worktree.lookup(parent.node, name)
        for view in self.views.sharing(parent.worktree):
            known = self.inodes.known(view, node)
            if known is not None:
                known.parent = parent.ino if view is parent.view else known.parent
                known.name = name

    @fuse_errors
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        raise NotPermitted("hard links are not supported (docs/decisions/0003)")

    # -- files --------------------------------------------------------------------------

    @fuse_errors
    async def create(
        self, parent_inode: int, name: bytes, mode: int, flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name)
        node = parent.worktree.create(parent.node, name, stat.S_IFREG | stat.S_IMODE(mode))
        attrs = self._created(parent, node, name, ctx)
        entry = self.inodes.node(attrs.st_ino)
        return self._open_node(entry, flags & ~os.O_TRUNC, ctx), attrs

    @fuse_errors
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            return self._open_virtual(entry, flags)
        return self._open_node(entry, flags, ctx)

    def _open_node(self, entry: NodeInode, flags: int, ctx: Any) -> pyfuse3.FileInfo:
        node = entry.node
        if node.is_dir():
            raise IsADirectory("cannot open a directory as a file")
        handle = FileHandle(entry, entry.worktree, node, flags, edge.caller_meta(ctx))
        if handle.writable and entry.worktree.readonly:
            raise ReadOnly("snapshots and commits are read-only")
        cache_key = (id(node), node.size, node.mtime_ns)
        keep_cache = entry.view.readonly or entry.cache_key == cache_key
        entry.cache_key = cache_key
        self.spools.opened(node)
        entry.opens += 1
        fh = self._new_handle(handle)
        if handle.writable and flags & os.O_TRUNC:
            self._spool(handle.worktree, node).truncate(0)
            keep_cache = False
        return pyfuse3.FileInfo(fh=fh, direct_io=False, keep_cache=keep_cache)

    def _open_virtual(self, entry: VirtualInode, flags: int) -> pyfuse3.FileInfo:
        thing = entry.entry
        if isinstance(thing, VirtualDir):
            raise IsADirectory("cannot open a directory as a file")
        if not isinstance(thing, VirtualFile):
            raise NotFound("not a file")
        handle = VirtualHandle(thing, b"")
        if (flags & os.O_ACCMODE) != os.O_RDONLY:
            if not thing.writable:
                raise NotPermitted("this .helix file is read-only")
            handle.written = bytearray()
        if (flags & os.O_ACCMODE) != os.O_WRONLY:
            handle.data = thing.render()
        return pyfuse3.FileInfo(fh=self._new_handle(handle), direct_io=True, keep_cache=False)

    @fuse_errors
    async def read(self, fh: int, off: int, size: int) -> bytes:
        handle = self._handles.get(fh)
        if isinstance(handle, VirtualHandle):
            return handle.data[off : off + size]
        handle = self._handle(fh, FileHandle)
        spool = self.spools.get(handle.node)
        if spool is not None:
            return spool.read(off, size)
        return handle.worktree.read(handle.node, off, size)

    @fuse_errors
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._handles.get(fh)
        if isinstance(handle, VirtualHandle):
            if handle.written is None:
                raise NotPermitted("opened read-only")
            end = off + len(buf)
            handle.written.extend(b"\0" * max(0, end - len(handle.written)))
            handle.written[off:end] = buf
            handle.unapplied = True
            return len(buf)
        handle = self._handle(fh, FileHandle)
        if not handle.writable:
            raise BadHandle("the file was opened read-only")
        spool = self._spool(handle.worktree, handle.node)
        return spool.write(spool.size if handle.flags & os.O_APPEND else off, buf)

    @fuse_errors
    async def flush(self, fh: int) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, VirtualHandle):
            self._apply_virtual_write(handle)
        elif isinstance(handle, FileHandle):
            self._store(handle)

    @fuse_errors
    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, FileHandle) and not handle.worktree.readonly:
            self._store(handle)
            self.saver.persist(handle.worktree)

    @fuse_errors
    async def release(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if isinstance(handle, VirtualHandle):
            self._apply_virtual_write(handle)
            return
        if not isinstance(handle, FileHandle):
            return
        try:
            self._store(handle)  # writes after the last flush: a shared mmap's pages
        finally:
            self.spools.closed(handle.node)
            handle.entry.opens -= 1
            self.inodes.release_if_unused(handle.entry)

    def _apply_virtual_write(self, handle: VirtualHandle) -> None:
        if handle.written is None or not handle.unapplied:
            return
        handle.unapplied = False
        handle.file.write(bytes(handle.written))

    def _spool(self, worktree: Worktree, node: Node) -> Spool:
        return self.spools.ensure(
            node, lambda off, size: worktree.read(node, off, size), node.size
        )

    def _store(self, handle: FileHandle) -> None:
        """Close/fsync: a written file goes into the store and becomes a save."""
        spool = self.spools.get(handle.node)
        if spool is None or not spool.dirty:
            return
        if handle.entry.detached and handle.entry.node is handle.node:
            spool.stored()  # unlinked while open: readable through the fd, not saved
            return
        self._store_spool(handle.worktree, handle.node, spool, handle.meta)
        # The kernel's pages of this inode saw every write: they may stay cached.
        handle.entry.cache_key = (id(handle.node), handle.node.size, handle.node.mtime_ns)

    def _store_spool(
        self, worktree: Worktree, node: Node, spool: Spool, meta: dict[str, Any] | None = None
    ) -> None:
        override = spool.mtime_override
        worktree.set_content(node, spool.source())
        if override is not None:
            worktree.set_attrs(node, mtime_ns=override)
        spool.stored()
        self.saver.saved(worktree, meta or {})

    # -- extended attributes ------------------------------------------------------------

    @fuse_errors
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            raise NoAttr()
        worktree, node = entry.worktree, entry.node
        if name == HASH_XATTR:
            oid = worktree.content_id(node)
            if oid is None:
                raise NoAttr()
            return oid.hex().encode()
        if name == COMMIT_XATTR:
            cid = worktree.last_commit(worktree.path_of(node))
            if cid is None:
                raise NoAttr()
            return cid.hex().encode()
        try:
            return node.xattrs[name]
        except KeyError:
            raise NoAttr() from None

    @fuse_errors
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> Sequence[bytes]:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            return []
        return sorted(entry.node.xattrs)

    @fuse_errors
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        entry = self._xattr_target(inode, name)
        if name == MESSAGE_XATTR:
            entry.worktree.set_next_message(value.decode("utf-8", "replace"))
            return
        if name.startswith(VIRTUAL_XATTR_PREFIX):
            raise NotPermitted(f"{name.decode(errors='replace')} is computed, not stored")
        entry.worktree.set_xattr(entry.node, name, value)
        self._saved(entry, edge.caller_meta(ctx))

    @fuse_errors
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        entry = self._xattr_target(inode, name)
        if name not in entry.node.xattrs:
            raise NoAttr()
        entry.worktree.remove_xattr(entry.node, name)
        self._saved(entry, edge.caller_meta(ctx))

    def _xattr_target(self, inode: int, name: bytes) -> NodeInode:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode) or not name.startswith(b"user."):
            raise NotSupported()
        if entry.worktree.readonly:
            raise ReadOnly("snapshots and commits are read-only")
        return entry

    # -- whole filesystem ---------------------------------------------------------------

    @fuse_errors
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        return edge.statvfs(str(self.store_path))

    # -- helpers ------------------------------------------------------------------------

    def _created(
        self, parent: NodeInode, node: Node, name: bytes, ctx: Any
    ) -> pyfuse3.EntryAttributes:
        entry = self.inodes.for_node(parent.view, node, parent.ino, name)
        entry.lookups += 1
        self._saved(parent, edge.caller_meta(ctx))
        return self._attrs(entry)

    def _saved(self, entry: NodeInode, meta: dict[str, Any]) -> None:
        self.saver.saved(entry.worktree, meta)

    def _detach(self, worktree: Worktree, node: Node) -> None:
        for view in self.views.sharing(worktree):
            known = self.inodes.known(view, node)
            if known is not None:
                self.inodes.detach(known)

    def _tree_dir(self, inode: int) -> NodeInode:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            raise NotPermitted("only directories can be made in .helix folders")
        return entry

    def _virtual_dir(self, entry: VirtualInode) -> VirtualDir:
        if not isinstance(entry.entry, VirtualDir):
            raise NotADirectory("not a directory")
        return entry.entry

    @staticmethod
    def _refuse_helix_name(parent: NodeInode, name: bytes) -> None:
        if parent.ino == ROOT_INODE and name == HELIX:
            raise Busy(".helix is reserved for the virtual control folder")

    def _new_handle(self, handle: Handle) -> int:
        fh = self._next_fh
        self._next_fh += 1
        self._handles[fh] = handle
        return fh

    def _handle(self, fh: int, kind: type[H]) -> H:
        handle = self._handles.get(fh)
        if not isinstance(handle, kind):
            raise BadHandle(f"file handle {fh} is not open")
        return handle


