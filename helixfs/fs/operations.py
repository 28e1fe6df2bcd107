"""The pyfuse3 Operations class: kernel requests in, Worktree calls out.

Nothing of substance lives here: names resolve through the inode table (inodes.py) and
the views (views.py), content goes through spools (spool.py) to `Worktree.set_content`,
every save goes to the Saver (saver.py), `.helix/` is the handler table of helixdir.py.
Domain errors become errno values in one decorator (`request`, by edge.fuse_error).

Handlers never await: each runs to completion on the trio loop, under the repository
lock, so the Worktree (which is not thread-safe) sees one request at a time, and no
request sees another half done, nor a reload by a command on another thread. One answer
is made without it: getxattr of a file that has no xattrs (see there).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import pyfuse3
import trio

from helixfs.errors import (
    AlreadyExists,
    Busy,
    HelixError,
    InvalidInput,
    IsADirectory,
    NotADirectory,
    NotFound,
    NotPermitted,
    ReadOnly,
)
from helixfs.fs import edge, posix, xattrs
from helixfs.fs.edge import AccessDenied, BadHandle, CrossDevice, NoAttr, NotSupported
from helixfs.fs.handles import DirHandle, FileHandle, HandleTable, VirtualHandle
from helixfs.fs.helixdir import Entry, Link, ViewSpec, VirtualDir, VirtualFile, helix_root
from helixfs.fs.inodes import (
    ROOT_INODE,
    Inode,
    InodeTable,
    NodeInode,
    OpenRetries,
    Stale,
    VirtualInode,
    pages_key,
)
from helixfs.fs.negatives import NegativeNames
from helixfs.fs.saver import Saver
from helixfs.fs.spool import SpoolTable
from helixfs.fs.views import Views
from helixfs.fs.writes import Writes
from helixfs.ids import ObjectId
from helixfs.vcs.node import check_name_length

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.worktree import Node, Worktree

log = logging.getLogger(__name__)

HELIX = b".helix"
RELATIME_AGE_NS = 24 * 3600 * 10**9  # relatime moves an atime at least once a day
DOTS = 2  # `.` and `..` open every listing: readdir offsets 1 and 2
RENAME_FLAGS_KEPT = pyfuse3.RENAME_NOREPLACE | pyfuse3.RENAME_EXCHANGE

ReaddirReply = Callable[[Any, bytes, pyfuse3.EntryAttributes, int], bool]
P = ParamSpec("P")
T = TypeVar("T")
Handler = Callable[Concatenate["Operations", P], Coroutine[Any, Any, T]]


def request(fn: Handler[P, T]) -> Handler[P, T]:
    """A kernel request handler: domain errors become errno (edge.fuse_error), and the
    whole request runs under the repository lock, after the ref moves other threads made
    (`Operations._ref_moved`). A command on a daemon worker thread (commit, import)
    reloads a branch's Worktree there: a request half done across that reload, or served
    before the views follow it, would change nodes no longer in the tree, and its
    rename or save would be lost. One wrapper for both: a `tar x` sends ten requests
    per file, and each layer of coroutine around a handler costs on every one."""
    where = fn.__name__

    @functools.wraps(fn)
    async def serialized(self: Operations, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            with self.repo.lock:
                if self._moves:
                    self._apply_moves()
                return await fn(self, *args, **kwargs)  # handlers never await: no yield here
        except pyfuse3.FUSEError:
            raise
        except BaseException as exc:
            error = edge.fuse_error(where, exc)
            if error is exc:
                raise
            raise error from exc

    return serialized


def _logged(update: Callable[[], None], what: str) -> Callable[[], None]:
    """`update`, whose exception is logged: raised on the loop, it would take the whole
    trio loop down."""

    def run() -> None:
        try:
            update()
        except Exception:
            log.exception("following the move of %s failed", what)

    return run


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
        relatime: bool = False,
    ) -> None:
        """`relatime`: reads set atime as Linux's relatime does, in memory only (a
        read never makes a commit); without it reads leave atime alone (noatime)."""
        super().__init__()
        if repo.path is None:
            raise InvalidInput("the filesystem needs a store on disk (its tmp/ holds spools)")
        self.repo = repo
        self.store_path = Path(repo.path)
        self.saver = saver if saver is not None else Saver()
        self.owner = owner if owner is not None else (os.getuid(), os.getgid())
        self.relatime = relatime
        self.inodes = InodeTable()
        self.retries = OpenRetries()
        self.spools = SpoolTable(self.store_path / "tmp")
        self.writes = Writes(self.spools, self.saver)
        self.invalidator = edge.Invalidator()
        self.negatives = NegativeNames()
        self.views = Views(
            repo, self.inodes, self.invalidator, self.saver, self.negatives, self._follow_open
        )
        self.helix = helix_root(self, self.store_path, helix_entries or {})
        self.readdir_reply: ReaddirReply = pyfuse3.readdir_reply
        self._handles = HandleTable()
        self._digests = xattrs.ContentDigests()
        self._unsubscribe = repo.subscribe(self._ref_moved)
        self._unsubscribe_snapshots = repo.subscribe_snapshots(self._snapshot_moved)
        self._release_in_use = repo.keep_in_use(self._open_content)
        self._release_chunks = repo.keep_chunks_in_use(self.spools.prestored)
        self._loop: tuple[int, trio.lowlevel.TrioToken] | None = None
        # view updates for ref moves made on other threads, applied on the loop thread
        self._moves: collections.deque[Callable[[], None]] = collections.deque()

    # -- lifecycle (called by the daemon) -----------------------------------------------

    def init(self) -> None:
        """The kernel connection is up: invalidations can now reach it."""
        self.invalidator.start()
        with contextlib.suppress(RuntimeError):
            self._loop = (threading.get_ident(), trio.lowlevel.current_trio_token())

    def _ref_moved(self, branch: str) -> None:
        """Repository.subscribe callback. A CLI command the daemon runs on a worker thread
        calls it there, holding the repository lock: the views (not thread-safe) are
        updated on the loop thread instead, without waiting for it (the loop may itself
        be waiting for that lock), before its next request (`request`) or soon."""
        self._follow(functools.partial(self.views.ref_moved, branch), f"branch {branch}")

    def _snapshot_moved(self, name: str, renamed_to: str | None) -> None:
        """Repository.subscribe_snapshots callback: as `_ref_moved`, for a snapshot."""
        move = functools.partial(self.views.snapshot_moved, name, renamed_to)
        self._follow(move, f"snapshot {name}")

    def _follow(self, update: Callable[[], None], what: str) -> None:
        if self._loop is not None and threading.get_ident() != self._loop[0]:
            self._moves.append(_logged(update, what))
            self._loop[1].run_sync_soon(self._apply_moves)
        else:
            self._apply_moves()  # in order: an earlier move from a thread goes first
            update()

    def _apply_moves(self) -> None:
        """Follow the ref moves queued by other threads (on the loop thread)."""
        with self.repo.lock:
            while self._moves:
                self._moves.popleft()()

    def close(self) -> None:
        """Unmounted: store what open files still hold, commit everything pending.
        Idempotent; one file that cannot be stored does not stop the others."""
        for handle in self._handles.files():
            try:
                self.writes.store(handle)
            except HelixError:
                log.exception("could not store an open file at unmount")
        self.saver.flush_now()
        self.invalidator.stop()
        self._unsubscribe()
        self._unsubscribe = lambda: None
        self._unsubscribe_snapshots()
        self._unsubscribe_snapshots = lambda: None
        self._release_in_use()
        self._release_in_use = lambda: None
        self._release_chunks()
        self._release_chunks = lambda: None

    def _open_content(self) -> list[ObjectId]:
        """The stored content open descriptors read (a spool reads its unwritten bytes
        from its node's content too): gc keeps it even where no ref reaches it any more,
        in a deleted branch or a commit a reset left behind. Called by gc on a worker
        thread: `files()` copies the handle table in one step, under the GIL. The chunks
        of files stored ahead of their close (ADR 0048), which nothing reaches yet, are
        named apart (`keep_chunks_in_use`): gc need not read them."""
        return [h.node.oid for h in self._handles.files() if h.node.oid is not None]

    def _follow_open(self, old: Node, new: Node) -> None:
        """Views.regenerate: a file its branch's reload left as it was got a new node;
        its open descriptors and their spool follow it (their writes are not stale)."""
        self.spools.rebind(old, new)
        for handle in self._handles.files():
            if handle.node is old:
                handle.node = new

    # -- helixdir.Host ------------------------------------------------------------------

    def current_branch(self) -> str:
        return self.views.root.name

    def switch_branch(self, name: str) -> None:
        self.settle()
        self.repo.checkout(name)  # subscribers (views.ref_moved) move the root
        self.views.switch_root(name)
        # Before the write that asked for it returns: no process may meet the old
        # branch's cached names or pages after it. Safe on this loop: the writer holds
        # no directory lock, and a kernel stuck on another request ends the wait.
        self.invalidator.drain()

    def settle(self) -> None:
        self.saver.commit_now(self.views.root.worktree)

    def check_switch_room(self) -> None:
        # switch_branch commits the pending saves (settle), then moves HEAD
        self.repo.check_room(self.views.root.worktree.commit_bound())

    def forget_view(self, kind: str, name: str) -> None:
        self.views.forget(kind, name)

    def rename_view(self, kind: str, old: str, new: str) -> None:
        # The view followed the ref move already (Views.ref_moved, .snapshot_moved): a
        # view still under the old name is a stale one.
        self.views.forget(kind, old)

    # -- names --------------------------------------------------------------------------

    @request
    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name_length(name)
        parent = self.inodes.get(parent_inode)
        if name == b".":
            found = parent
        elif name == b"..":
            found = self._parent_of(parent)
        else:
            try:
                known = self._looked_up(parent, name, ctx.pid)
            except Stale:
                raise
            except NotFound:
                known = None
                if not self._caches_absence(parent):
                    raise
            if known is None:
                if not self.negatives.record(parent.ino, name):
                    raise NotFound(f"no such file: {name!r}")
                return edge.negative_entry(self.negatives.timeout)
            found = known
            self.negatives.discard(parent.ino, name)
        found.lookups += 1
        return self._attrs(found)

    @staticmethod
    def _caches_absence(parent: Inode) -> bool:
        """Whether the kernel may cache "no such name" in `parent` (negatives.py): a
        live folder of a writable view. Not `.helix/` (its names come and go with refs,
        and are never cached), nor a folder removed or replaced while held."""
        return (
            isinstance(parent, NodeInode)
            and not parent.view.readonly
            and not parent.detached
            and parent.node.is_dir()
        )

    def _looked_up(self, parent: Inode, name: bytes, tid: int) -> Inode | None:
        """The child `name` of `parent`; None when a folder of a writable view has no
        such name (`_caches_absence`: a negative entry), NotFound elsewhere."""
        try:
            found = self._present_child(parent, name)
        except HelixError:
            self.retries.looked_up(tid, None)
            raise
        self.retries.looked_up(tid, found)
        return found

    def _present_child(self, parent: Inode, name: bytes) -> Inode | None:
        """`_child`, but None for a name a live tree folder lacks, without an error: most
        names `tar x`, `make` and a compiler look up are not there."""
        if (
            isinstance(parent, NodeInode)
            and not (parent.ino == ROOT_INODE and name == HELIX)
            and self._caches_absence(parent)
        ):
            node = parent.worktree.find(parent.node, name)
            return (
                None if node is None else self.inodes.for_node(parent.view, node, parent.ino, name)
            )
        return self._child(parent, name)

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
        if isinstance(child, Link):  # never the number of a view at the same path
            return self.inodes.virtual((*path, b"/"), child)
        return self.inodes.virtual(path, child)

    def _parent_of(self, entry: NodeInode | VirtualInode) -> NodeInode | VirtualInode:
        if isinstance(entry, VirtualInode):
            return self.inodes.get(
                ROOT_INODE if len(entry.path) == 1 else self.inodes.number_for(entry.path[:-1])
            )
        return self.inodes.get(entry.parent)

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for ino, count in inode_list:
            found = self.inodes.forget(ino, count)
            if isinstance(found, NodeInode) and found.ino == found.view.root_ino:
                self.views.close_if_unused(found.view)

    # -- attributes ---------------------------------------------------------------------

    @request
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        try:
            return self._attrs(self.inodes.get(inode))
        except NotFound:
            retried = self.retries.peek(ctx.pid, inode)
            if retried is not None:  # the permission check of a retried open
                return self._attrs(retried)
            attrs = self._attrs(self._buried(inode, ctx.pid))
            attrs.st_nlink = 0
            return attrs

    def _buried(self, inode: int, tid: int) -> NodeInode:
        try:
            return self.inodes.buried(inode)
        except Stale:
            self.retries.refused(tid)  # an open's permission check: the open is retried
            raise

    def _attrs(self, entry: NodeInode | VirtualInode) -> pyfuse3.EntryAttributes:
        if isinstance(entry, VirtualInode):
            return self._virtual_attrs(entry)
        spool = self.spools.get(entry.node)
        return edge.node_attributes(entry, spool, self.owner, entry.read_atime)

    def _virtual_attrs(self, entry: VirtualInode) -> pyfuse3.EntryAttributes:
        return edge.virtual_attributes(entry, self.owner)

    @request
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
        save = changed = False  # a save is persisted before the reply; a change is not
        if fields.update_size:
            self.writes.truncate(entry, attr.st_size, by_handle=fh is not None)
            save = fh is None  # ftruncate belongs to its write session, saved at close
        if fields.update_mode:
            mode = stat.S_IFMT(node.mode) | stat.S_IMODE(attr.st_mode)
            if mode != node.mode:
                worktree.set_attrs(node, mode=mode)
                changed = True
            else:  # tar and cp re-apply the mode it has: nothing to store, ctime moves
                worktree.mark_changed(node)
        update_uid, update_gid = fields.update_uid, fields.update_gid
        if update_uid or update_gid:
            uid = attr.st_uid if update_uid else None
            gid = attr.st_gid if update_gid else None
            if not node.xattrs and posix.chowned(self.owner, uid, gid) == self.owner:
                worktree.mark_changed(node)  # `tar x` chowns every file to the owner it has
            else:
                changes = posix.chown_changes(node, uid, gid, self.owner)
                changed = worktree.set_hidden(node, changes) or changed
        mtime = node.mtime_ns
        if fields.update_mtime:
            mtime = edge.clamp_mtime(attr.st_mtime_ns)
            changed = self._set_mtime(entry, mtime) or changed
        if fields.update_atime:  # an atime equal to the (new) mtime is not stored
            atime = posix.atime_change(edge.clamp_mtime(attr.st_atime_ns), mtime)
            changed = worktree.set_hidden(node, atime) or changed
        if save:
            self._saved(entry, edge.caller_meta(ctx))
        elif changed:
            self._changed(entry, edge.caller_meta(ctx))
        self._tell_other_views(entry)
        return self._attrs(entry)

    def _set_mtime(self, entry: NodeInode, mtime_ns: int) -> bool:
        """utimens is metadata, not a namespace change: committed with the save around
        it (tar and cp -p set times right after close), persisted by the next one.
        True when the tree changed. A file open with unstored writes (`tar x` sets the
        times of each file before it closes it) keeps the time on its spool until the
        close stores it with the bytes: the tree then has neither yet, a commit in
        between takes the file as it was, and stat shows the spool's (ctime moves now)."""
        spool = self.spools.get(entry.node)
        if spool is not None and spool.dirty:
            spool.mtime_override = mtime_ns  # outlives the store at close
            entry.worktree.mark_changed(entry.node)
            return False
        if mtime_ns != entry.node.mtime_ns:
            pages_kept = entry.cache_key == pages_key(entry.node)
            entry.worktree.set_attrs(entry.node, mtime_ns=mtime_ns)
            if pages_kept:  # new times, the same bytes: the kernel's pages stay right
                entry.cache_key = pages_key(entry.node)
        return True

    def _virtual_setattr(
        self, entry: VirtualInode, fields: pyfuse3.SetattrFields
    ) -> pyfuse3.EntryAttributes:
        """Only `> .helix/HEAD` (truncate to 0 before a write) means anything here."""
        thing = entry.entry
        if not (isinstance(thing, VirtualFile) and thing.writable):
            raise NotPermitted("this .helix entry cannot be changed")
        return self._virtual_attrs(entry)

    # -- directories --------------------------------------------------------------------

    @request
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            self._virtual_dir(entry)
        elif not entry.node.is_dir():
            raise NotADirectory("not a directory")
        return self._handles.add(DirHandle(inode))

    def _list(self, handle: DirHandle) -> None:
        """Take the directory's listing now: at the first readdir, and again at each
        rewinddir (offset 0), not at opendir. A descriptor opened early and read later
        (`os.open` then `os.scandir(fd)`, `fdopendir`) sees the directory as it is when
        it reads it, as on a local disk: with a listing from opendir, a file renamed
        in between was listed under neither name."""
        entry = self.inodes.get(handle.ino)
        if isinstance(entry, VirtualInode):
            handle.names = self._virtual_dir(entry).names()
            return
        if not entry.node.is_dir():
            raise NotADirectory("not a directory")
        names, nodes = entry.worktree.listed(entry.node)
        if handle.ino == ROOT_INODE and HELIX in names:
            at = names.index(HELIX)
            del names[at], nodes[at]
        handle.names, handle.nodes = names, nodes

    @request
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        handle = self._handles.typed(fh, DirHandle)
        if start_id == 0 or not handle.listed:
            self._list(handle)  # first read, or rewinddir: the directory as it is now
        handle.listed = True
        parent = self.inodes.get(handle.ino)
        if not self._reply_dots(parent, start_id, token):
            return
        names, nodes, reply, attrs = handle.names, handle.nodes, self.readdir_reply, self._attrs
        tree = parent if nodes is not None and isinstance(parent, NodeInode) else None
        for index in range(max(start_id - DOTS, 0), len(names)):
            name = names[index]
            try:
                # _listed_child, written out for a tree folder's child still in place
                if (
                    tree is not None
                    and nodes is not None
                    and (node := nodes[index]).parent is tree.node
                    and node.name == name
                ):
                    child: Inode = self.inodes.for_node(tree.view, node, tree.ino, name)
                else:
                    child = self._listed_child(parent, handle, index)
            except HelixError:
                continue  # vanished since opendir
            if not reply(token, name, attrs(child), index + 1 + DOTS):
                return
            child.lookups += 1

    def _reply_dots(
        self, directory: NodeInode | VirtualInode, start_id: int, token: pyfuse3.ReaddirToken
    ) -> bool:
        """List `.` and `..` first (offsets 1 and 2), as a local disk does: `ls -a` and
        shell globs show them. The kernel takes no lookup reference for either, so none
        is counted here. False when the reply buffer is full."""
        dots = ((b".", directory), (b"..", self._dotdot(directory)))
        for offset in range(start_id, DOTS):
            name, entry = dots[offset]
            if not self.readdir_reply(token, name, self._attrs(entry), offset + 1):
                return False
        return True

    def _dotdot(self, directory: NodeInode | VirtualInode) -> NodeInode | VirtualInode:
        try:
            return self._parent_of(directory)
        except HelixError:
            return directory  # a removed folder held open: its parent may be gone too

    def _listed_child(
        self, parent: NodeInode | VirtualInode, handle: DirHandle, index: int
    ) -> NodeInode | VirtualInode:
        name = handle.names[index]
        if handle.nodes is None or not isinstance(parent, NodeInode):
            return self._child(parent, name)
        node = handle.nodes[index]
        if node.parent is not parent.node or node.name != name:
            # Removed, moved or replaced since opendir: readdirplus would make the kernel
            # cache a name that no longer leads there, so list what the name is now.
            return self._child(parent, name)
        return self.inodes.for_node(parent.view, node, parent.ino, name)

    @request
    async def releasedir(self, fh: int) -> None:
        self._handles.pop(fh)

    @request
    async def fsyncdir(self, fh: int, datasync: bool) -> None:
        handle = self._handles.typed(fh, DirHandle)
        entry = self.inodes.get(handle.ino)
        if isinstance(entry, NodeInode) and not entry.worktree.readonly:
            self.saver.persist(entry.worktree)

    @request
    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name_length(name)
        parent = self.inodes.get(parent_inode)
        if isinstance(parent, VirtualInode):
            self._virtual_dir(parent).mkdir(name)
            return await self.lookup(parent_inode, name, ctx)
        self._refuse_helix_name(parent, name, making=True)
        mode = stat.S_IFDIR | stat.S_IMODE(mode)
        # As on a local disk, a folder made in a setgid folder is setgid too (the kernel
        # leaves that to the filesystem): shared group folders keep the bit all the way down.
        mode |= parent.node.mode & stat.S_ISGID
        owner = posix.new_node_owner(parent.node, ctx, self.owner)
        node = parent.worktree.mkdir(parent.node, name, mode, hidden=owner)
        return self._created(parent, node, name, edge.caller_meta(ctx))

    @request
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        check_name_length(name)
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
        self._changed(parent, edge.caller_meta(ctx))
        self._tell_other_views(parent, name)

    # -- names: create, remove, rename, link --------------------------------------------

    @request
    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        check_name_length(name)
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name, making=True)
        owner = posix.new_node_owner(parent.node, ctx, self.owner)
        node = parent.worktree.symlink(parent.node, name, target, hidden=owner)
        return self._created(parent, node, name, edge.caller_meta(ctx))

    @request
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        found = self.inodes.get(inode)
        if isinstance(found, VirtualInode) and isinstance(found.entry, Link):
            return found.entry.target
        entry = self.inodes.node(inode)
        return entry.worktree.readlink(entry.node)

    @request
    async def mknod(
        self, parent_inode: int, name: bytes, mode: int, rdev: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        # the kind bits go through: a pipe, socket or device is stored (opening a device
        # is the kernel's business, refused on this nodev mount)
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name, making=True)
        owner = posix.new_node_owner(parent.node, ctx, self.owner)
        node = parent.worktree.create(parent.node, name, mode, rdev=rdev, hidden=owner)
        return self._created(parent, node, name, edge.caller_meta(ctx))

    @request
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        check_name_length(name)
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name)
        node = parent.worktree.unlink(parent.node, name)  # IsADirectory for a folder
        self._detach(parent.worktree, node)
        self._changed(parent, edge.caller_meta(ctx))
        self._tell_other_views(parent, name)

    @request
    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        check_name_length(name_old)
        check_name_length(name_new)
        if flags & ~RENAME_FLAGS_KEPT:
            # RENAME_WHITEOUT would leave a whiteout device behind, and devices are
            # refused: say so (as a filesystem without whiteouts does) rather than
            # doing a plain rename the caller did not ask for.
            raise InvalidInput(f"rename flags {flags:#x} are not supported")
        old_parent = self.inodes.get(parent_inode_old)
        new_parent = self.inodes.get(parent_inode_new)
        if isinstance(old_parent, VirtualInode) or isinstance(new_parent, VirtualInode):
            self._virtual_rename(old_parent, name_old, new_parent, name_new, flags)
            return
        if old_parent.view is not new_parent.view:
            raise CrossDevice("renames across branches or views are copies")
        exchange = bool(flags & pyfuse3.RENAME_EXCHANGE)
        self._refuse_helix_name(old_parent, name_old, making=exchange)  # both names stay
        self._refuse_helix_name(new_parent, name_new, making=True)
        worktree = old_parent.worktree
        if flags & pyfuse3.RENAME_NOREPLACE and old_parent is new_parent and name_old == name_new:
            worktree.lookup(old_parent.node, name_old)  # ENOENT first, as the VFS does
            raise AlreadyExists("rename onto itself with RENAME_NOREPLACE")
        replaced = worktree.rename(
            old_parent.node,
            name_old,
            new_parent.node,
            name_new,
            noreplace=bool(flags & pyfuse3.RENAME_NOREPLACE),
            exchange=exchange,
        )
        self._follow_move(new_parent, name_new)
        self.negatives.discard(new_parent.ino, name_new)
        if flags & pyfuse3.RENAME_EXCHANGE:
            self._follow_move(old_parent, name_old)
        elif replaced is not None:
            self._detach(worktree, replaced)
        self._saved(old_parent, edge.caller_meta(ctx))
        self._tell_other_views(old_parent, name_old)
        self._tell_other_views(new_parent, name_new)

    def _virtual_rename(
        self,
        old_parent: NodeInode | VirtualInode,
        name_old: bytes,
        new_parent: NodeInode | VirtualInode,
        name_new: bytes,
        flags: int,
    ) -> None:
        if old_parent is not new_parent or not isinstance(old_parent, VirtualInode):
            # EPERM, not EXDEV: on EXDEV `mv` copies instead, and here a copy is a
            # mkdir that makes a branch or a snapshot of HEAD (`mv .helix/branches/A
            # .helix/snapshots/`), or a branch's files copied into another branch or the
            # root and the branch then deleted (`mv A B`, `mv A CUR`: into B/ or ../..).
            # EPERM is rename(2)'s "this filesystem does not do that rename": mv gives
            # up. Not EACCES: that reads as a permission a chmod could grant.
            raise NotPermitted(
                "branches, snapshots and other .helix entries cannot move in or out of"
                " their .helix folder (rename them in place)"
            )
        if flags & pyfuse3.RENAME_EXCHANGE:
            # The handlers only relabel one entry (never over another: EEXIST), which
            # read as "the name is taken" for an exchange of two that both must exist.
            # Swapping two branches or snapshots is refused as every other change of
            # .helix entries the handlers do not make is: EPERM.
            raise NotPermitted(".helix entries cannot be exchanged (rename them one by one)")
        self._virtual_dir(old_parent).rename(name_old, name_new)

    def _follow_move(self, parent: NodeInode, name: bytes) -> None:
        """The moved node keeps its inode; record where the kernel now sees it."""
        node = parent.worktree.lookup(parent.node, name)
        for view in self.views.sharing(parent.worktree):  # the root and branches/HEAD
            known = self.inodes.known(view, node)
            if known is None:
                continue
            where = parent if view is parent.view else self.inodes.known(view, parent.node)
            if where is None:
                known.detached = True  # its new parent is unknown there: not by path
            else:
                known.parent, known.name = where.ino, name

    @request
    async def link(
        self, inode: int, new_parent_inode: int, new_name: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        """A hard link within one view's tree (ADR 0043); across views, as across mounts,
        EXDEV: a branch, a snapshot and `.helix/` are other trees."""
        check_name_length(new_name)
        entry = self.inodes.get(inode)
        parent = self.inodes.get(new_parent_inode)
        if isinstance(entry, VirtualInode) or isinstance(parent, VirtualInode):
            raise CrossDevice("hard links into or out of .helix are across trees")
        if entry.view is not parent.view or entry.worktree is not parent.worktree:
            raise CrossDevice("hard links across branches or views are across trees")
        self._refuse_helix_name(parent, new_name, making=True)
        parent.worktree.link(entry.node, parent.node, new_name)
        entry.lookups += 1  # the reply is an entry: the kernel counts it as a lookup
        self.negatives.discard(parent.ino, new_name)
        self._saved(parent, edge.caller_meta(ctx))
        self._tell_other_views(parent, new_name)
        self._tell_other_views(entry)
        return self._attrs(entry)

    # -- files --------------------------------------------------------------------------

    @request
    async def create(
        self,
        parent_inode: int,
        name: bytes,
        mode: int,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._tree_dir(parent_inode)
        self._refuse_helix_name(parent, name, making=True)
        existing = None if flags & os.O_EXCL else self._created_meanwhile(parent, name, flags, ctx)
        meta = edge.caller_meta(ctx)
        if existing is not None:
            existing.lookups += 1
            return self._open_node(existing, flags, meta), self._attrs(existing)
        owner = posix.new_node_owner(parent.node, ctx, self.owner)
        node = parent.worktree.create(
            parent.node, name, stat.S_IFREG | stat.S_IMODE(mode), hidden=owner
        )
        entry = self.inodes.for_node(parent.view, node, parent.ino, name)
        attrs = self._made(parent, entry, name, meta)
        return self._open_node(entry, flags & ~os.O_TRUNC, meta), attrs

    def _created_meanwhile(
        self, parent: NodeInode, name: bytes, flags: int, ctx: Any
    ) -> NodeInode | None:
        """The file that a create without O_EXCL finds already there, to open as open(2)
        does. The kernel sends a create only after its lookup found nothing, but the
        name can appear in between: a HEAD switch or a `reset` swaps the whole tree
        behind the kernel's directory lock. A symlink or any other kind stays EEXIST."""
        try:
            found = self._present_child(parent, name)
        except NotFound:
            return None
        if not isinstance(found, NodeInode) or found.node.is_symlink():
            return None
        writes = flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC
        if writes and not posix.may_write(found.node, ctx, self.owner):
            # the kernel's permission check (default_permissions) was for the create
            raise AccessDenied(f"{name!r} is not writable")
        return found

    @request
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        retried = self.retries.take(ctx.pid, inode)
        try:
            entry = self._openable(inode)
        except Stale:
            if retried is None:
                self.retries.refused(ctx.pid)
                raise
            self.inodes.revive(retried)
            entry = retried
        if isinstance(entry, VirtualInode):
            handle = VirtualHandle.open(entry.entry, flags)
            if handle.data:
                entry.served = len(handle.data)
            return pyfuse3.FileInfo(fh=self._handles.add(handle), direct_io=True, keep_cache=False)
        return self._open_node(entry, flags, edge.caller_meta(ctx))

    def _openable(self, inode: int) -> Inode:
        """The entry an open of `inode` opens. One its generation dropped, kept only
        while a descriptor was open, is stale once they are closed: the kernel then
        walks the path again and opens what it names now."""
        entry = self.inodes.get(inode)
        if isinstance(entry, NodeInode) and entry.superseded and not entry.opens:
            raise Stale(f"inode {inode} was replaced by a switch or a reset")
        return entry

    def _open_node(self, entry: NodeInode, flags: int, meta: dict[str, Any]) -> pyfuse3.FileInfo:
        node = entry.node
        if node.is_dir():
            raise IsADirectory("cannot open a directory as a file")
        handle = FileHandle(entry, entry.worktree, node, flags, meta)
        truncate = bool(flags & os.O_TRUNC)
        if (handle.writable or truncate) and entry.worktree.readonly:
            raise ReadOnly("snapshots and commits are read-only")
        cache_key = pages_key(node)
        keep_cache = entry.view.readonly or entry.cache_key == cache_key
        entry.cache_key = cache_key
        if self.relatime and flags & os.O_ACCMODE != os.O_WRONLY:
            self._accessed(entry)  # at the open: the kernel serves cached pages itself
        self.spools.opened(node)
        entry.opens += 1
        fh = self._handles.add(handle)
        if truncate:
            # Even with O_RDONLY, as Linux does: the kernel (default_permissions) has
            # checked that the caller may write the file. The close stores it.
            self.writes.spool(handle.worktree, node).truncate(0)
            keep_cache = False
        return pyfuse3.FileInfo(fh=fh, direct_io=False, keep_cache=keep_cache)

    def _accessed(self, entry: NodeInode) -> None:
        """relatime: a read moves atime when it is not after the mtime and ctime, or is
        a day old."""
        shown = self._attrs(entry)
        now = time.time_ns()
        stale = now - shown.st_atime_ns >= RELATIME_AGE_NS
        if stale or shown.st_atime_ns <= max(shown.st_mtime_ns, shown.st_ctime_ns):
            entry.read_atime = now
            self.invalidator.attributes(entry.ino)

    @request
    async def read(self, fh: int, off: int, size: int) -> bytes:
        handle = self._handles.get(fh)
        if isinstance(handle, VirtualHandle):
            return handle.read(off, size)
        if not isinstance(handle, FileHandle):
            handle = self._handles.typed(fh, FileHandle)  # the error it raises
        spool = self.spools.get(handle.node)
        if spool is not None:
            return spool.read(off, size)
        return handle.worktree.read(handle.node, off, size)

    @request
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        handle = self._handles.get(fh)
        if isinstance(handle, VirtualHandle):
            return handle.write(off, buf)
        if not isinstance(handle, FileHandle):
            handle = self._handles.typed(fh, FileHandle)  # the error it raises
        if not handle.writable:
            raise BadHandle("the file was opened read-only")
        spool = self.writes.spool(handle.worktree, handle.node)
        # The kernel has resolved O_APPEND into `off` already; the page writeback of a
        # shared mmap may come through an O_APPEND handle and must land where it says.
        written = spool.write(off, buf)
        self._tell_other_views(handle.entry)
        return written

    @request
    async def flush(self, fh: int) -> None:
        handle = self._handles.get(fh)
        if isinstance(handle, VirtualHandle):
            handle.apply()
        elif isinstance(handle, FileHandle):
            self.writes.store(handle)
            if not handle.worktree.readonly:
                self.saver.closed(handle.worktree)
                self._tell_other_views(handle.entry)

    @request
    async def fsync(self, fh: int, datasync: bool) -> None:
        handle = self._handles.get(fh)
        if not isinstance(handle, FileHandle) or handle.worktree.readonly:
            return
        # A written file is stored by one synced write, not a save then a sync of the
        # store (an SQLite commit fsyncs four times); otherwise the sync alone.
        if not self.writes.store(handle, sync=True):
            self.saver.persist(handle.worktree)

    @request
    async def release(self, fh: int) -> None:
        handle = self._handles.pop(fh)
        if isinstance(handle, VirtualHandle):
            handle.apply()
            return
        if not isinstance(handle, FileHandle):
            return
        try:
            self.writes.store(handle)  # writes after the last flush: a shared mmap's pages
        finally:
            self.spools.closed(handle.node)
            handle.entry.opens -= 1
            self.inodes.release_if_unused(handle.entry)

    # -- extended attributes ------------------------------------------------------------

    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        """The kernel asks security.capability before each write and chown of a file
        (two per file in `tar x`): a file with no xattrs has none of them, answered
        here without the repository lock, the one request that is. It reads one field
        of a node the inode table names; a command on another thread that holds the
        lock meanwhile is not done yet, so the answer is the one before it (as if this
        request came first), and once it has moved a ref, `_moves` sends the request
        to the locked path, which follows the move first (ADR 0091)."""
        entry = self.inodes.find(inode)
        if (
            isinstance(entry, NodeInode)
            and not entry.node.xattrs
            and not self._moves
            and not name.startswith(xattrs.COMPUTED_PREFIX)
        ):
            raise edge.no_attr()
        return await self._getxattr(inode, name)

    @request
    async def _getxattr(self, inode: int, name: bytes) -> bytes:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            raise NoAttr()
        if not entry.node.xattrs and not name.startswith(xattrs.COMPUTED_PREFIX):
            raise edge.no_attr()
        return xattrs.get(entry.worktree, entry.node, name, self._digests)

    @request
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> Sequence[bytes]:
        entry = self.inodes.get(inode)
        return [] if isinstance(entry, VirtualInode) else xattrs.listed(entry.node)

    @request
    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        entry = self._xattr_target(inode)
        if xattrs.set_(entry.worktree, entry.node, name, value):
            self._changed(entry, edge.caller_meta(ctx))
            self._tell_other_views(entry)

    @request
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        entry = self._xattr_target(inode)
        xattrs.remove(entry.worktree, entry.node, name)
        self._changed(entry, edge.caller_meta(ctx))
        self._tell_other_views(entry)

    def _xattr_target(self, inode: int) -> NodeInode:
        entry = self.inodes.get(inode)
        if isinstance(entry, VirtualInode):
            raise NotSupported()
        return entry

    # -- whole filesystem ---------------------------------------------------------------

    @request
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        return edge.statvfs(str(self.store_path))

    # -- helpers ------------------------------------------------------------------------

    def _created(
        self, parent: NodeInode, node: Node, name: bytes, meta: dict[str, Any]
    ) -> pyfuse3.EntryAttributes:
        entry = self.inodes.for_node(parent.view, node, parent.ino, name)
        return self._made(parent, entry, name, meta)

    def _made(
        self, parent: NodeInode, entry: NodeInode, name: bytes, meta: dict[str, Any]
    ) -> pyfuse3.EntryAttributes:
        """The reply to a request that made `entry` as `name` (an entry: the kernel
        counts it as a lookup)."""
        entry.lookups += 1
        self.negatives.discard(parent.ino, name)  # the kernel's negative entry is replaced
        self._changed(parent, meta)
        self._tell_other_views(parent, name)
        return self._attrs(entry)

    def _saved(self, entry: NodeInode, meta: dict[str, Any]) -> None:
        """Persisted before the reply (rename, truncate(path)): see saver.py."""
        self.saver.saved(entry.worktree, meta)

    def _changed(self, entry: NodeInode, meta: dict[str, Any]) -> None:
        """Committed with the quiet window, persisted by the next save or close."""
        self.saver.changed(entry.worktree, meta)

    def _tell_other_views(self, entry: NodeInode, *names: bytes) -> None:
        """The kernel caches entries and attributes for edge.WRITABLE_TIMEOUT and keeps
        only the inode a request named up to date: the same node seen through another
        view of the branch (the root and `.helix/branches/HEAD`) is invalidated there.
        `names`: children of `entry` that came, went or moved."""
        if not self.views.any_open:
            return  # the common case: one view per branch, nothing else to tell
        views = self.views.sharing(entry.worktree)
        if len(views) < 2:
            return
        for view in views:
            known = None if view is entry.view else self.inodes.known(view, entry.node)
            if known is None:
                continue
            self.invalidator.inode(known.ino)
            for name in names:
                self.invalidator.entry(known.ino, name)

    def _detach(self, worktree: Worktree, node: Node) -> None:
        if worktree.holds(node):  # a hard-linked file keeps its inode under its other names
            self._seen_at_first_name(worktree, node)
            return
        for view in self.views.sharing(worktree):
            known = self.inodes.known(view, node)
            if known is not None:
                self.inodes.detach(known)

    def _seen_at_first_name(self, worktree: Worktree, node: Node) -> None:
        """Where the kernel sees a linked file once one of its names went: its first
        remaining name (a reload keeps its number by that path)."""
        for view in self.views.sharing(worktree):
            known = self.inodes.known(view, node)
            where = None if node.parent is None else self.inodes.known(view, node.parent)
            if known is not None and where is not None:
                known.parent, known.name = where.ino, node.name

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
    def _refuse_helix_name(parent: NodeInode, name: bytes, *, making: bool = False) -> None:
        """`.helix` at the mount root is the control folder. Nor may one be made at the
        top of a branch folder: once that branch is HEAD, the control folder hides it
        (`helix import` refuses it too). One already there can still be removed."""
        if name != HELIX:
            return
        if parent.ino == ROOT_INODE or (making and parent.node is parent.worktree.root):
            raise Busy(".helix is reserved for the virtual control folder")
