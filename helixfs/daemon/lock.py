"""One daemon per store: an advisory lock on `STORE/mount.lock`.

RocksDB refuses a second writer too, but only with a message about its LOCK file. The
mount lock is taken first, before anything is opened, so the second `helix mount` of a
store fails with a message that says where the store is already mounted and by whom, and
the first mount is never disturbed. The lock is a `flock`, so it dies with its process:
a `kill -9` leaves nothing stale to clean up.

The holder also records how far it is (`state`): a daemon whose mount was detached
lazily (`umount -z`) with files still open in it serves them on, holding the store,
and the refusal must then say so rather than point at a mount point that is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from helixfs.daemon.mountinfo import helix_mounts_in
from helixfs.errors import StoreLocked

LOCK_NAME = "mount.lock"
STARTING, SERVING, CLOSING = "starting", "serving", "closing"


@dataclass(frozen=True)
class Holder:
    """Who holds a store's mount lock (as it wrote itself into the lock file)."""

    pid: int
    mountpoint: str
    state: str = SERVING  # STARTING until mounted, CLOSING once its FUSE loop ended
    detail: str = ""  # CLOSING: what it is finishing (a push: `helix umount` shows it)


class MountLock:
    """The exclusive right to serve one store; held for the life of the daemon."""

    def __init__(self, store: Path) -> None:
        self.path = store / LOCK_NAME
        self._fd: int | None = None
        self._mountpoint = Path()
        self._writing = threading.Lock()  # notes come from the push's progress thread too
        self._written = 0

    def acquire(self, mountpoint: Path) -> None:
        """Take the lock or raise StoreLocked naming the current holder."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(_refusal(self.path.parent, read_holder(self.path.parent))) from None
        self._fd = fd
        self._mountpoint = mountpoint
        self.note(STARTING)

    def note(self, state: str, detail: str = "") -> None:
        """Record how far the daemon is: what a refused second mount is told, and what
        `helix umount` shows while the daemon finishes (`detail`). Written in one
        pwrite over the old record, padded: a reader sees the old or the new one."""
        if self._fd is None:
            return
        record = {"pid": os.getpid(), "mountpoint": str(self._mountpoint), "state": state}
        if detail:
            record["detail"] = detail
        blob = json.dumps(record).encode()
        with self._writing:
            os.pwrite(self._fd, blob.ljust(self._written), 0)
            if len(blob) < self._written:
                os.ftruncate(self._fd, len(blob))
            self._written = len(blob)

    def release(self) -> None:
        if self._fd is None:
            return
        # Emptied before unlocking, so a reader never names a daemon that has gone.
        os.ftruncate(self._fd, 0)
        os.close(self._fd)
        self._fd = None


def read_holder(store: Path) -> Holder | None:
    """The daemon serving `store`, or None when no daemon holds its lock."""
    if not is_locked(store):
        return None
    try:
        record = json.loads((store / LOCK_NAME).read_text())
        state = str(record.get("state", SERVING))  # written before states were
        detail = str(record.get("detail", ""))
        return Holder(int(record["pid"]), str(record["mountpoint"]), state, detail)
    except (OSError, ValueError, KeyError, TypeError):
        return Holder(0, "?")  # locked, but the holder has not written itself in yet


def detached_holder(mountpoint: Path) -> tuple[Path, Holder] | None:
    """The store and daemon of a mount detached lazily from `mountpoint` while its daemon
    lives on (no mount table shows it any more): found by the mount lock the daemon
    holds open. Only processes this user may inspect are seen (all of them for root)."""
    for pid, store in _lock_holders():
        holder = read_holder(store)
        if (
            holder is not None
            and holder.pid == pid
            and same_path(holder.mountpoint, mountpoint)
            and not _still_mounted(holder, store)
        ):
            return store, holder
    return None


def _lock_holders() -> list[tuple[int, Path]]:
    """(pid, store) for every process with a store's mount lock open."""
    found: list[tuple[int, Path]] = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            found.extend((int(proc.name), lock.parent) for lock in _open_files(proc))
    return found


def _open_files(proc: Path) -> list[Path]:
    """The mount locks among the files a process has open. An fd closed while this
    reads (the listing's own, when the process is this one) is passed over."""
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:  # another user's process, or gone meanwhile
        return []
    locks = []
    for fd in fds:
        try:
            link = Path(os.readlink(fd))
        except OSError:
            continue
        if link.name == LOCK_NAME:
            locks.append(link)
    return locks


def is_locked(store: Path) -> bool:
    try:
        fd = os.open(store / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _refusal(store: Path, holder: Holder | None) -> str:
    if holder is None or holder.pid == 0:
        return f"store {store} is already mounted by another helix daemon"
    where, pid = holder.mountpoint, holder.pid
    if holder.state == STARTING:
        return f"store {store} is already mounted at {where} (daemon pid {pid}, starting up)"
    if holder.state == CLOSING:
        return (
            f"store {store} was unmounted from {where}, but its daemon (pid {pid}) is"
            " still committing and closing it; mount again once it has exited"
        )
    if not _still_mounted(holder, store):
        return (
            f"store {store} is still held by helix daemon pid {pid}: its mount at {where}"
            " was detached lazily (umount -z) and it serves the files still open there"
            " until they are closed; close them (or end the processes holding them), or"
            f" stop the daemon with: kill {pid} (it commits what they wrote first)"
        )
    return (
        f"store {store} is already mounted at {where} (daemon pid {pid});"
        f" unmount it first with: helix umount {where}"
    )


def _still_mounted(holder: Holder, store: Path) -> bool:
    """Whether the holder's mount point still shows this store, as the holder sees it
    (its own mount namespace; ours if its table cannot be read). True if unknown."""
    for table in (Path(f"/proc/{holder.pid}/mountinfo"), Path("/proc/self/mountinfo")):
        try:
            mounts = helix_mounts_in(table)
        except OSError:
            continue
        point = Path(holder.mountpoint)
        return any(m.point == point and same_path(m.source, store) for m in mounts)
    return True


def same_path(recorded: str, path: Path) -> bool:
    """Whether a path the lock file records (a store, a mount point) names `path`."""
    return os.path.realpath(recorded) == os.path.realpath(path)
