"""Refuse a write while the disk still has room, instead of letting it fill.

RocksDB takes no more writes after one failed for lack of space, until the store is
opened again: a mount would then refuse every save until it is remounted. So the store
keeps a reserve free on its disk. A write that would eat into it fails with StoreFull
(ENOSPC) before RocksDB sees it, RocksDB's own background flushes and compactions keep
room to finish, and writes succeed again as soon as space is freed.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from helixfs.errors import StoreFull
from helixfs.lazy import logger

log = logger(__name__)  # logging imported at the first line logged (ADR 0083)


# Kept free: RocksDB's own writes must fit in it (two 16 MiB memtables to flush, a
# write-ahead log it preallocates at 1.1x a memtable, compactions), whatever the disk.
RESERVE_BYTES = 64 << 20
RECHECK_SECONDS = 1.0  # others write to the disk too: look again at least this often
WRITE_AMPLIFICATION = 2  # the log, then the flush: each stored byte lands twice soon


def room(path: Path) -> int:
    """Bytes the store may still write on its disk without eating into the reserve."""
    disk = os.statvfs(path)
    return disk.f_bavail * disk.f_frsize - RESERVE_BYTES


class SpaceGuard:
    """Counts down the room a store may still write into, looking at the disk (one
    statvfs) only when the count runs out or it is older than RECHECK_SECONDS."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._room = 0
        self._looked = -RECHECK_SECONDS
        self._full = False

    def claim(self, nbytes: int) -> None:
        """Account for a write of about `nbytes`; StoreFull if it does not fit."""
        cost = nbytes * WRITE_AMPLIFICATION
        if cost > self._room or time.monotonic() - self._looked > RECHECK_SECONDS:
            self._look_for(cost, nbytes)
        self._room -= cost

    def check(self, nbytes: int) -> None:
        """StoreFull if a write of about `nbytes` does not fit now; nothing is counted.
        For a change applied later (a HEAD switch, at close): refused while its writer
        can still be told. Rare, so it looks at the disk itself, not at a count that
        may be a second old."""
        self._look_for(nbytes * WRITE_AMPLIFICATION, nbytes)

    def _look_for(self, cost: int, nbytes: int) -> None:
        self._look()
        if cost > self._room:
            self._refuse(nbytes)
        if self._full:
            log().warning("the disk of store %s has room again: saves work", self.path)
            self._full = False

    def _look(self) -> None:
        self._room = room(self.path)
        self._looked = time.monotonic()

    def _refuse(self, nbytes: int) -> None:
        if not self._full:
            log().warning("the disk of store %s is full: saves fail with ENOSPC", self.path)
        self._full = True
        raise StoreFull(
            f"no space left on the disk of store {self.path} for a write of {nbytes} bytes "
            f"(HelixFS keeps {RESERVE_BYTES >> 20} MiB free there, so that the store stays "
            "writable): free some space, e.g. with `helix gc` after deleting old branches"
        )
