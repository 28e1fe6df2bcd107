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


class Collector:
    def __init__(self, repo: Repository, growth: int, check_seconds: float = CHECK_SECONDS):
        self._repo = repo
        self.growth = growth  # changed live by `helix config set gc.growth`
        self._check_seconds = check_seconds
        self._base = repo.store.disk_bytes()  # after the last gc, or at mount

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
            report = self._repo.gc(grace_seconds=settings["gc.retention"])
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
