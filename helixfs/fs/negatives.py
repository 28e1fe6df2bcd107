"""Names the kernel holds as "no such file" (negative dentries), so they can be dropped.

A lookup of a name a writable view does not have is answered with a negative entry the
kernel caches (`NEGATIVE_TIMEOUT`): SQLite probes `db-wal` and `db-journal`, git probes
`index.lock` and `.gitignore`s, a compiler probes every include folder, each time a
round trip into the daemon otherwise. A name made through the kernel replaces its
negative entry by itself (create, mkdir, symlink, rename). A name that appears behind
the kernel's back (a reset, a merge, a HEAD switch, a `helix commit`) would stay hidden
until the timeout: so every negative answer is recorded here by parent inode, and
`Views.regenerate` has the kernel drop those of the folders it keeps. A positive answer
or a name made through the kernel takes the name off the record: only names the kernel
holds as negative are ever invalidated, never a folder a process may be inside.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Collection

# Long enough for SQLite's and git's probes of one command to hit the cache; the record
# keeps each name only this long (the kernel forgets it by then).
NEGATIVE_TIMEOUT = 60.0
# Past this many names recorded at once, lookups answer plain ENOENT (never cached): a
# switch then invalidates at most this many names, and the record stays small.
NEGATIVE_LIMIT = 50_000
# A record outlives the kernel's entry by this much: the kernel starts its timeout when
# the reply arrives, after the record was made.
MARGIN = 1.0


class NegativeNames:
    """(parent inode, name) pairs answered negatively, oldest first, with their expiry."""

    def __init__(
        self,
        timeout: float = NEGATIVE_TIMEOUT,
        limit: int = NEGATIVE_LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout = timeout
        self.limit = limit
        self._clock = clock
        self._expiry: OrderedDict[tuple[int, bytes], float] = OrderedDict()
        # No name expires before this (the oldest one's expiry, or earlier): a `tar x`
        # records a name per file, and nearly every record has nothing to prune.
        self._soonest = math.inf

    def record(self, parent: int, name: bytes) -> bool:
        """Note a negative answer about to be sent; False: send it uncached instead."""
        now = self._clock()
        if now >= self._soonest:
            self._prune(now)
        key = (parent, name)
        expiry = self._expiry
        if key in expiry:
            expiry.move_to_end(key)
        elif len(expiry) >= self.limit:
            return False
        when = expiry[key] = now + self.timeout + MARGIN
        if when < self._soonest:
            self._soonest = when
        return True

    def discard(self, parent: int, name: bytes) -> None:
        """The kernel now holds `name` as a positive entry (looked up, or made)."""
        self._expiry.pop((parent, name), None)

    def take(self, parents: Collection[int]) -> list[tuple[int, bytes]]:
        """The names still cached negatively under `parents`, off the record."""
        self._prune(self._clock())
        taken = [key for key in self._expiry if key[0] in parents]
        for key in taken:
            del self._expiry[key]
        return taken

    def _prune(self, now: float) -> None:
        while self._expiry:
            key, expiry = next(iter(self._expiry.items()))
            if expiry > now:
                self._soonest = expiry  # the oldest left: records are in expiry order
                return
            del self._expiry[key]
        self._soonest = math.inf

    def __len__(self) -> int:
        return len(self._expiry)
