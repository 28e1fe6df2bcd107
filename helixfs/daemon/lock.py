"""One daemon per store: an advisory lock on `STORE/mount.lock`.

RocksDB refuses a second writer too, but only with a message about its LOCK file. The
mount lock is taken first, before anything is opened, so the second `helix mount` of a
store fails with a message that says where the store is already mounted and by whom, and
the first mount is never disturbed. The lock is a `flock`, so it dies with its process:
a `kill -9` leaves nothing stale to clean up.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from helixfs.errors import StoreLocked

LOCK_NAME = "mount.lock"


@dataclass(frozen=True)
class Holder:
    """Who holds a store's mount lock (as it wrote itself into the lock file)."""

    pid: int
    mountpoint: str


class MountLock:
    """The exclusive right to serve one store; held for the life of the daemon."""

    def __init__(self, store: Path) -> None:
        self.path = store / LOCK_NAME
        self._fd: int | None = None

    def acquire(self, mountpoint: Path) -> None:
        """Take the lock or raise StoreLocked naming the current holder."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreLocked(_refusal(self.path.parent, read_holder(self.path.parent))) from None
        record = json.dumps({"pid": os.getpid(), "mountpoint": str(mountpoint)})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode(), 0)
        self._fd = fd

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
        return Holder(int(record["pid"]), str(record["mountpoint"]))
    except (OSError, ValueError, KeyError, TypeError):
        return Holder(0, "?")  # locked, but the holder has not written itself in yet


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
    return (
        f"store {store} is already mounted at {holder.mountpoint} (daemon pid {holder.pid});"
        f" unmount it first with: helix umount {holder.mountpoint}"
    )
