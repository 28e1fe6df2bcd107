"""gc on its own for a long-lived mount (ADR 0024).

Saves leave garbage behind: the pending state a later save replaced before its commit
(a `.git/index` rewritten by every `git status`), and whatever a deleted branch held.
A mount that runs for days must not fill the disk with it, so the daemon runs gc once
the store has grown enough since the last one: by the store's size after that gc, and
at least by `growth` bytes. Doubling keeps gc's total work proportional to what was
written, as a growing array's copies are, and a store of live history is not walked
over and over for little. gc marks without the repository lock (maint.gc), so the
mount keeps serving while it runs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING

import trio

from helixfs import config
from helixfs.errors import HelixError, is_failure
from helixfs.vcs import retention

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)

DEFAULT_GROWTH = int(config.default("gc.growth"))  # bytes; -o gc_growth=MIB; 0 = never
# An abandoned commit (a reset, a deleted branch) survives the automatic gc this long
# (`gc.retention`), restorable by its id: only `helix gc`, asked for by hand, drops it
# sooner.
GRACE_SECONDS = float(config.default("gc.retention"))
CHECK_SECONDS = 10.0  # a check is one scandir of the store folder
# Pacing (see Pacer): the loop thread counts as busy above this share of a core...
BUSY_SHARE = 0.25
LOOK_SECONDS = 0.01  # ... looked at this often while gc works,
PAUSE_SECONDS = 0.02  # gc sleeps this long at a time while it is busy,
MOST_PAUSED = 9.0  # and never longer than this many times its own work: a mount that is
# never idle still gets its gc, at a tenth of its speed at worst


class Pacer:
    """gc's progress callback: a pause while the FUSE loop thread is busy.

    The automatic gc walks the whole store in Python, on a worker thread: measured on 2
    cores, one started by a 1 GiB write (the store grew past `gc.growth`) ran through
    the file's cold read, which then took 5.3-6.9 s of the daemon's CPU at 78-167 MB/s
    against 1.7-2.3 s at 410-560 with gc off. The loop thread's own CPU clock says
    whether the mount is serving (nothing on the request path counts anything); while
    it is, gc sleeps, which frees the GIL and a core. Bounded by MOST_PAUSED.
    """

    def __init__(self, loop_thread: int, busy_share: float = BUSY_SHARE) -> None:
        self._clock = time.pthread_getcpuclockid(loop_thread)
        self._busy_share = busy_share
        self.pauses = 0
        self._paused = 0.0
        self._started = self._seen = time.monotonic()
        self._loop_cpu = time.clock_gettime(self._clock)

    def __call__(self, done: int = 0, total: int = 0) -> None:
        now = time.monotonic()
        if now - self._seen < LOOK_SECONDS:
            return
        while self._loop_busy(now):
            worked = now - self._started - self._paused
            if self._paused >= MOST_PAUSED * worked:
                return
            time.sleep(PAUSE_SECONDS)
            self.pauses += 1
            self._paused += time.monotonic() - now
            now = time.monotonic()

    def _loop_busy(self, now: float) -> bool:
        """Whether the loop thread used more than its share of a core since last looked."""
        cpu = time.clock_gettime(self._clock)
        share = (cpu - self._loop_cpu) / max(now - self._seen, 1e-6)
        self._loop_cpu, self._seen = cpu, now
        return share > self._busy_share


class Collector:
    def __init__(self, repo: Repository, growth: int, check_seconds: float = CHECK_SECONDS):
        self._repo = repo
        self.growth = growth  # changed live by `helix config set gc.growth`
        self._check_seconds = check_seconds
        self._base = repo.store.disk_bytes()  # after the last gc, or at mount
        self._loop_thread = threading.get_ident()  # made on the FUSE loop's thread

    async def run(self) -> None:
        while True:
            await trio.sleep(self._check_seconds)
            if self.growth <= 0:
                continue
            try:
                # not abandoned on cancel: unmounting waits for a running gc to finish, so
                # the store is never closed under it
                await trio.to_thread.run_sync(self.collect_if_due)
            except BaseException as exc:
                # no thread to run on ("can't start new thread"), a panic in gc: this
                # runs in the mount's nursery, so an error escaping it ends the mount
                if not is_failure(exc):
                    raise
                log.exception("automatic gc could not run (tried again at the next check)")

    def due(self) -> bool:
        grown = self._repo.store.disk_bytes() - self._base
        return grown >= max(self.growth, self._base)

    def collect_if_due(self) -> None:
        """Run gc if due. A failure is logged, never raised: this runs in the mount's
        nursery, and an error escaping it would end the mount (a file RocksDB deleted
        while gc measured the store did, once)."""
        try:
            if not self.due():
                return
            settings = self._repo.settings
            retention.expire_snapshots(self._repo, settings["gc.snapshot_ttl"])
            # paced from a worker thread only: on the loop's own, gc is what keeps it busy
            pace = Pacer(self._loop_thread) if threading.get_ident() != self._loop_thread else None
            report = self._repo.gc(grace_seconds=settings["gc.retention"], progress=pace)
        except HelixError as exc:  # a full disk, say: `helix gc` by hand may still help
            log.error("automatic gc failed (next try after as much growth again): %s", exc)
            report = None
        except Exception:
            log.exception("automatic gc failed (next try after as much growth again)")
            report = None
        with contextlib.suppress(OSError):
            self._base = self._repo.store.disk_bytes()
        if report is None:
            return
        log.info(
            "automatic gc: dropped %d objects, %d bytes freed; the store holds %d bytes",
            report.unreachable,
            report.freed_bytes or 0,
            self._base,
        )
