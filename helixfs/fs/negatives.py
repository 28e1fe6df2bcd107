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

    def record(self, parent: int, name: bytes) -> bool:
        """Note a negative answer about to be sent; False: send it uncached instead."""
        self._prune()
        key = (parent, name)
        if key not in self._expiry and len(self._expiry) >= self.limit:
            return False
        self._expiry[key] = self._clock() + self.timeout + MARGIN
        self._expiry.move_to_end(key)
        return True

    def discard(self, parent: int, name: bytes) -> None:
        """The kernel now holds `name` as a positive entry (looked up, or made)."""
        self._expiry.pop((parent, name), None)

    def take(self, parents: Collection[int]) -> list[tuple[int, bytes]]:
        """The names still cached negatively under `parents`, off the record."""
        self._prune()
        taken = [key for key in self._expiry if key[0] in parents]
        for key in taken:
            del self._expiry[key]
        return taken

    def _prune(self) -> None:
        now = self._clock()
        while self._expiry:
            key, expiry = next(iter(self._expiry.items()))
            if expiry > now:
                return
            del self._expiry[key]

    def __len__(self) -> int:
        return len(self._expiry)
