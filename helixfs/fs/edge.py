"""The kernel edge: errno mapping, attributes, caller identity, cache invalidation.

The only place domain errors become errno values (HelixError.errno), and the only place
that talks to the kernel outside a request (invalidations).
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import stat
import threading
import time
from typing import Any

import pyfuse3

from helixfs.errors import HelixError, is_failure
from helixfs.fs.helixdir import Entry, Link, VirtualFile
from helixfs.fs.inodes import ROOT_INODE, NodeInode, VirtualInode
from helixfs.fs.spool import Spool
from helixfs.vcs import attrs as attrs_codec

log = logging.getLogger(__name__)


BLOCK_SIZE = 128 * 1024  # st_blksize: what cp/cat size their buffers on
# Every change the kernel did not make itself is invalidated explicitly (another view of
# the branch: Operations._tell_other_views; a ref move: Views.regenerate), so cached
# entries and attributes stay true; the timeout only bounds a missed case.
WRITABLE_TIMEOUT = 300.0
READONLY_TIMEOUT = 300.0  # snapshots and commits never change
STOP_SECONDS = 5.0  # an unmount waits this long for the invalidation thread to end
DRAIN_STALL = 0.1  # seconds without a delivered invalidation before a switch stops waiting
MTIME_MIN, MTIME_MAX = -(2**63), 2**63 - 1  # a tree entry's mtime: signed 64-bit ns


class CrossDevice(HelixError):
    """A rename between two views: the kernel's `mv` falls back to copy + delete."""

    errno = errno.EXDEV


class BadHandle(HelixError):
    errno = errno.EBADF


class AccessDenied(HelixError):
    """A permission the kernel could not check itself (default_permissions)."""

    errno = errno.EACCES


class NoAttr(HelixError):
    errno = pyfuse3.ENOATTR


class NotSupported(HelixError):
    """xattr namespaces other than user.* (security, trusted, system ACLs)."""

    errno = errno.ENOTSUP


class XattrsFull(HelixError):
    """A file's xattrs past their bounds (names listxattr can return, names and values in
    all): ENOSPC, as ext4 answers."""

    errno = errno.ENOSPC


def fuse_error(where: str, exc: BaseException) -> BaseException:
    """What a request that raised `exc` fails with: a domain error's errno; anything
    else is a bug: EIO (a Rust panic too, see is_failure). trio.Cancelled,
    KeyboardInterrupt and SystemExit are not the request's: they are returned as they
    are, to go on. One function, so that every handler maps errors the same way."""
    if isinstance(exc, HelixError):
        log.debug("%s: %s", where, exc)
        return pyfuse3.FUSEError(exc.errno)
    if isinstance(exc, OSError):
        log.warning("%s: %s", where, exc)
        return pyfuse3.FUSEError(exc.errno or errno.EIO)
    if not is_failure(exc):
        return exc  # trio.Cancelled, KeyboardInterrupt, SystemExit: not this request's
    # A bug, or a panic in rocksdict or blake3: this request fails, the mount serves
    # on. An unmount would not keep saved data safer: each store write is one
    # RocksDB batch, applied whole or not at all, so a panic leaves the store as
    # its last finished write did; an unmount would commit open files through
    # the code that just panicked, and leave an empty folder where programs still
    # write. The user can copy out and `helix umount`; the log says what failed.
    log.error("%s failed", where, exc_info=exc)
    return pyfuse3.FUSEError(errno.EIO)


def no_attr() -> pyfuse3.FUSEError:
    """ENOATTR, as NoAttr maps to it, for the common answer made without the error."""
    return pyfuse3.FUSEError(pyfuse3.ENOATTR)


def attributes(
    ino: int,
    mode: int,
    size: int,
    mtime_ns: int,
    ctime_ns: int,
    *,
    owner: tuple[int, int],
    timeout: float,
    data_bytes: int | None = None,
    atime_ns: int | None = None,
    subdirs: int = 0,
    rdev: int = 0,
) -> pyfuse3.EntryAttributes:
    """`data_bytes`: the bytes not in holes, for st_blocks (default: all of them). Tools
    take st_blocks < size as the sign of a sparse file (`du`, `cp --sparse=auto`, `tar
    -S`): the mount cannot answer SEEK_DATA/SEEK_HOLE (pyfuse3 has no lseek)."""
    attrs = pyfuse3.EntryAttributes()
    attrs.st_ino = ino
    attrs.generation = 0
    attrs.entry_timeout = timeout
    attrs.attr_timeout = timeout
    attrs.st_mode = mode
    attrs.st_nlink = 2 + subdirs if stat.S_ISDIR(mode) else 1
    attrs.st_uid, attrs.st_gid = owner
    attrs.st_rdev = rdev
    attrs.st_size = size
    attrs.st_blksize = BLOCK_SIZE
    attrs.st_blocks = ((size if data_bytes is None else data_bytes) + 511) // 512
    attrs.st_atime_ns = mtime_ns if atime_ns is None else atime_ns
    attrs.st_mtime_ns = mtime_ns
    attrs.st_ctime_ns = ctime_ns
    return attrs


def negative_entry(timeout: float) -> pyfuse3.EntryAttributes:
    """ "No such name", cached by the kernel for `timeout` (st_ino 0: a negative dentry)."""
    attrs = pyfuse3.EntryAttributes()
    attrs.st_ino = 0
    attrs.entry_timeout = timeout
    attrs.attr_timeout = 0
    return attrs


def clamp_mtime(mtime_ns: int) -> int:
    """A time outside 1677..2262 is kept at the nearest end: the kernel does the same for
    a local disk's own range (ext4: 1901..2446), and `touch` or `tar x` of a file dated
    2300 then succeeds there instead of failing with EINVAL."""
    return min(max(mtime_ns, MTIME_MIN), MTIME_MAX)


def node_attributes(
    entry: NodeInode,
    spool: Spool | None,
    owner: tuple[int, int],
    read_atime: int | None = None,
) -> pyfuse3.EntryAttributes:
    """A tree node as the kernel sees it: an open file's pending size and mtime win.
    `owner`: the default owner, shown where the node stores none; `read_atime`: an atime
    that reads set in memory (`-o relatime`). `attributes` written out, for the reply of
    every getattr, setattr, create, mkdir and readdir entry (seven per file in `tar x`):
    fields pyfuse3 starts at zero (generation, rdev) are set only when they are not."""
    node = entry.node
    mode, size, mtime, ctime = node.mode, node.size, node.mtime_ns, node.ctime_ns
    if spool is None:
        data = entry.worktree.data_bytes(node)
    else:
        size, data = spool.size, spool.data_bytes()
        if spool.mtime_override is not None:
            mtime = spool.mtime_override
        elif spool.dirty:
            mtime = spool.mtime_ns
            ctime = max(ctime, mtime)  # a write changes ctime too, not only mtime
    view = entry.view
    timeout = READONLY_TIMEOUT if view.worktree.readonly else WRITABLE_TIMEOUT
    if entry.ino == view.root_ino and entry.parent != ROOT_INODE:
        timeout = 0  # a `.helix/` view root: its branch may be deleted any time
    attrs = pyfuse3.EntryAttributes()
    attrs.st_ino = entry.ino
    attrs.entry_timeout = attrs.attr_timeout = timeout
    attrs.st_mode = mode
    attrs.st_size = size
    attrs.st_blksize = BLOCK_SIZE
    attrs.st_blocks = (data + 511) // 512
    attrs.st_mtime_ns = mtime
    attrs.st_ctime_ns = ctime
    hidden = node.xattrs
    if hidden:
        stored_atime: int | None = attrs_codec.time_of(hidden.get(attrs_codec.ATIME), mtime)
        attrs.st_uid, attrs.st_gid = attrs_codec.owner_of(hidden.get(attrs_codec.OWNER), owner)
        rdev = hidden.get(attrs_codec.RDEV)
        if rdev is not None:
            attrs.st_rdev = attrs_codec.rdev_of(rdev)
    else:
        stored_atime = None
        attrs.st_uid, attrs.st_gid = owner
    if read_atime is not None and (stored_atime is None or read_atime > stored_atime):
        stored_atime = read_atime
    attrs.st_atime_ns = mtime if stored_atime is None else stored_atime
    if node.parent is None and node is not entry.worktree.root:
        attrs.st_nlink = 0  # unlinked (or rmdir'ed) while open: no name links it
    elif node.group is not None:
        attrs.st_nlink = node.group.count  # every name in the tree, loaded or not
    else:
        attrs.st_nlink = 2 + node.subdirs if stat.S_ISDIR(mode) else 1
    return attrs


def virtual_attributes(entry: VirtualInode, owner: tuple[int, int]) -> pyfuse3.EntryAttributes:
    """`.helix/` entries are never cached by the kernel: their content is computed."""
    thing = entry.entry
    mode = thing.mode if isinstance(thing, Entry) else stat.S_IFDIR | 0o555
    size = 0
    if isinstance(thing, VirtualFile):
        # A costly file is rendered once per open: its size is that of the last open's
        # bytes, so size-trusting readers (open, fstat, read st_size bytes) get them all.
        size = len(thing.render()) if thing.cheap else entry.served or 0
    elif isinstance(thing, Link):
        size = len(thing.target)
    now = time.time_ns()  # rendered anew: changed just now
    return attributes(entry.ino, mode, size, now, now, owner=owner, timeout=0)


def caller_meta(ctx: Any) -> dict[str, Any]:
    """Who saved: the process name and pid recorded in the commit metadata. Kept per
    thread for NAME_TTL, as its two parts are (`tar x` asks it four times per file);
    the dict is shared: callers copy it before they change it (Worktree.note_meta)."""
    thread = int(getattr(ctx, "pid", 0) or 0)
    if thread <= 0:
        return {}
    now = time.monotonic()
    known = _METAS.get(thread)
    if known is None or now - known[0] > NAME_TTL:
        if len(_METAS) > 1024:
            _METAS.clear()
        pid = process_of(thread)
        meta = pid_meta(pid)
        # as old as the older of its parts: a name is never kept past NAME_TTL
        known = _METAS[thread] = (min(_GROUPS[thread][0], _NAMES[pid][0]), meta)
    return known[1]


def process_of(thread: int) -> int:
    """The process a thread belongs to. FUSE names the thread that made a request, and a
    program with worker threads (npm's libuv pool, a JVM) counted as one process per
    thread in a commit's savers."""
    now = time.monotonic()
    known = _GROUPS.get(thread)
    if known is None or now - known[0] > NAME_TTL:
        if len(_GROUPS) > 1024:
            _GROUPS.clear()
        known = _GROUPS[thread] = (now, _thread_group(thread))
    return known[1]


def _thread_group(thread: int) -> int:
    try:  # os-level calls, as in process_name
        fd = os.open(f"/proc/{thread}/status", os.O_RDONLY)
        try:
            status = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return thread  # gone already: its id is all there is
    _, found, rest = status.partition(b"\nTgid:")
    digits = rest.split(b"\n", 1)[0].strip()
    return int(digits) if found and digits.isdigit() else thread


def pid_meta(pid: int, *, fresh: bool = False) -> dict[str, Any]:
    """The commit metadata naming `pid`. `fresh` reads the name again: a process that
    exec'd since its last request (a shell's child that opened `cmd > out` for `cmd`)
    has a new name under the same pid."""
    now = time.monotonic()
    known = _NAMES.get(pid)
    if fresh or known is None or now - known[0] > NAME_TTL:
        if len(_NAMES) > 1024:
            _NAMES.clear()
        known = _NAMES[pid] = (now, process_name(pid))
    name = known[1]
    return {"process": name, "pid": pid} if name else {"pid": pid}


def closer_meta(opened: dict[str, Any]) -> dict[str, Any]:
    """Who saved a file at its close: the process that opened it, by its name now
    (redirections are opened by the shell before it execs the command that writes),
    or by its name at open if it is gone."""
    pid = opened.get("pid")
    if not pid:
        return opened
    now = pid_meta(pid, fresh=True)
    return now if "process" in now else opened


NAME_TTL = 1.0  # a pid is reused only after the process exits; an exec is caught at close
_NAMES: dict[int, tuple[float, str | None]] = {}  # pid -> (read at, /proc/PID/comm)
_GROUPS: dict[int, tuple[float, int]] = {}  # thread id -> (read at, its process's pid)
_METAS: dict[int, tuple[float, dict[str, Any]]] = {}  # thread id -> (made at, caller_meta)


class Invalidator:
    """Tells the kernel to drop cached attributes, data and names.

    pyfuse3's invalidate_* block until the kernel is done, and the kernel may be waiting
    for a request that our (single-threaded) trio loop has not answered yet: calling them
    on the loop can deadlock. So they run on one worker thread, in order. Before the
    mount is up (direct tests) there is no kernel to tell: requests are only recorded.
    """

    def __init__(self) -> None:
        self.active = False
        self.recorded: list[tuple[Any, ...]] = []
        self._queue: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop_by: float | None = None  # monotonic time a stop() waits until
        self._stop_reported = False
        self._progress = threading.Condition()
        self._sent = self._done = 0  # requests queued / delivered (or refused) so far

    def drain(self, stall: float = DRAIN_STALL) -> bool:
        """Wait until every invalidation queued so far has reached the kernel, so that a
        switch seen by its caller is seen by every process. False if none got through
        for `stall` seconds: the kernel then waits on a request of ours (a lookup in a
        directory it must lock, a read of a page it must drop), and the loop must go on
        to answer it; the rest lands right after."""
        with self._progress:
            target = self._sent
            while self.active and self._done < target:
                before = self._done
                self._progress.wait(stall)
                if self._done == before:
                    log.warning("cache invalidations still pending after %.1f s", stall)
                    return False
        return True

    def start(self) -> None:
        if self._thread is None:
            self._stop_by = None
            self._thread = threading.Thread(target=self._run, name="helix-invalidate", daemon=True)
            self._thread.start()
        self.active = True

    def stop(self) -> bool:
        """Let the thread finish what is queued and end; True once it has. False if it
        is still inside a call to the kernel after STOP_SECONDS: the FUSE session must
        then stay open, for the call to return into (see lifecycle._close_fuse). The
        STOP_SECONDS count from the first call: Operations.close() stops it, and the
        unmount asks again without waiting as long once more."""
        self.active = False
        if self._thread is not None and self._stop_by is None:
            self._queue.put(None)
            self._stop_by = time.monotonic() + STOP_SECONDS
        if self.ended(self._stop_by - time.monotonic() if self._stop_by else 0):
            return True
        if not self._stop_reported:
            self._stop_reported = True
            log.error("cache invalidations still running after %.0f s", STOP_SECONDS)
        return False

    def ended(self, wait: float | None = None) -> bool:
        """True once the thread has ended (or never ran), after up to `wait` seconds
        (STOP_SECONDS by default)."""
        if self._thread is not None:
            self._thread.join(timeout=max(STOP_SECONDS if wait is None else wait, 0.0))
            if self._thread.is_alive():
                return False
            self._thread = None
        return True

    def inode(self, ino: int) -> None:
        self._send(("inode", ino))

    def attributes(self, ino: int) -> None:
        """Only the attributes (a read's atime): the kernel's pages of it stay."""
        self._send(("attrs", ino))

    def entry(self, parent: int, name: bytes, deleted: int = 0) -> None:
        self._send(("entry", parent, name, deleted))

    def _send(self, request: tuple[Any, ...]) -> None:
        if self.active:
            with self._progress:
                self._sent += 1
            self._queue.put(request)
        else:
            self.recorded.append(request)

    def _run(self) -> None:
        while (request := self._queue.get()) is not None:
            try:
                if request[0] == "inode":
                    pyfuse3.invalidate_inode(request[1])
                elif request[0] == "attrs":
                    pyfuse3.invalidate_inode(request[1], attr_only=True)
                else:
                    pyfuse3.invalidate_entry(request[1], request[2], request[3])
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.EBADF, errno.ENOTCONN):
                    log.warning("invalidate %s failed: %s", request[:2], exc)
            with self._progress:
                self._done += 1
                self._progress.notify_all()


class _CommFiles:
    """/proc/PID/comm of the processes that save, each kept open: a close reads its
    saver's name again (it may have exec'd since the open), and one pread costs a
    quarter of an open, read and close. The descriptor follows that process, not its
    number: an exec shows the new name, and once the process is gone reads fail
    (ESRCH), so a pid reused later is opened anew. A lock, because a descriptor
    closed by one thread could be reused by an open of another before a pread."""

    LIMIT = 64  # descriptors kept; past it all are closed (saving processes are few)

    def __init__(self) -> None:
        self._open: dict[int, int] = {}
        self._lock = threading.Lock()

    def read(self, pid: int) -> bytes | None:
        with self._lock:
            fd = self._open.get(pid)
            if fd is not None:
                try:
                    return os.pread(fd, 64, 0)  # TASK_COMM_LEN is 16
                except OSError:
                    del self._open[pid]  # gone: its number may be someone else's now
                    os.close(fd)
            try:
                fd = os.open(f"/proc/{pid}/comm", os.O_RDONLY)
            except OSError:
                return None
            try:
                raw = os.pread(fd, 64, 0)
            except OSError:
                os.close(fd)
                return None
            if len(self._open) >= self.LIMIT:
                self._close_all()
            self._open[pid] = fd
            return raw

    def _close_all(self) -> None:
        for fd in self._open.values():
            os.close(fd)
        self._open.clear()


_COMMS = _CommFiles()


def process_name(pid: int) -> str | None:
    """None once the process has exited. A process sets its own name (prctl, a write
    to /proc/self/comm): what is not printable shows as '?', as in ps, so the name
    cannot add lines to a commit message or to `.helix/log`."""
    raw = _COMMS.read(pid)
    if raw is None:
        return None
    name = raw.removesuffix(b"\n").decode("utf-8", "replace")
    return name if name.isprintable() else "".join(c if c.isprintable() else "?" for c in name)


def statvfs(path: str) -> pyfuse3.StatvfsData:
    """The store's own disk: what the mount can really hold."""
    real = os.statvfs(path)
    data = pyfuse3.StatvfsData()
    data.f_bsize = real.f_bsize
    data.f_frsize = real.f_frsize
    data.f_blocks = real.f_blocks
    data.f_bfree = real.f_bfree
    data.f_bavail = real.f_bavail
    data.f_files = real.f_files
    data.f_ffree = real.f_ffree
    data.f_favail = real.f_favail
    data.f_namemax = 255
    return data
