"""`helix mount --remote NAME`: keep the store in step with a remote, in the background.

Every round (about a second apart) pushes each branch whose head is not where the
remote was last seen (once it has stood still for a round, or has waited MOST_DEFERRED
seconds while saves keep coming), then fetches: other machines' new branches appear, branches this
machine has not moved are fast-forwarded. A remote change to a branch this machine has
also moved is merged in here when it merges cleanly (the mount shows the merge, as
after `helix merge`); when it conflicts, this machine's work goes to the remote as
`BRANCH@HOST` and the branch here stays as it was: nothing is lost or overwritten, and
the daemon's log says so.

The network is never on the save path: a save returns after its local commit, and this
job only reads committed heads. With the remote unreachable the mount works on from
its local store; what is not yet pushed is simply what the tracking refs do not reach,
so catching up after an outage is the next round that gets through (rounds back off to
one every MAX_PAUSE seconds while it fails).

Each round also exchanges memory (memory/remote_sync.py, ADR 0065): what this store's
memory learnt goes up as a signed batch, and the trusted batches of other machines are
applied to the daemon's memory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from helixfs.errors import HelixError, RemoteUnavailable
from helixfs.ids import CommitId
from helixfs.vcs import remotes
from helixfs.vcs.sync import BranchSync, Sync, host_name, notice, tracked

if TYPE_CHECKING:
    from helixfs.memory import Memory
    from helixfs.memory.remote_sync import MemorySync, SharedMemory
    from helixfs.store.s3 import S3Store
    from helixfs.vcs.repo import Repository

log = logging.getLogger(__name__)

PAUSE = 1.0  # seconds between rounds while the remote answers
MAX_PAUSE = 30.0  # while it does not
# A branch still moving (saves coming in) is pushed once its head has stood still for a
# round, or once its oldest unpushed commit has waited this long: a run of saves costs
# one push every few seconds, not one a round (ADR 0070)
MOST_DEFERRED = 3.0
PROGRESS_EVERY = 0.5  # seconds between notes of a push's progress at the mount's end


class RemoteSyncer:
    def __init__(
        self,
        repo: Repository,
        store: Path,
        name: str,
        memory: Callable[[], Memory] | None = None,
    ) -> None:
        """`memory`: the daemon's memory, shared through the remote (None: not shared)."""
        self._repo = repo
        self._memory = memory
        self._shared: SharedMemory | None = None
        self._memory_failed = ""  # the last error of the memory exchange, logged once
        self._untrusted_said: set[str] = set()  # signers whose batches were said left
        self._store_path = store
        self._remote = remotes.get(store, name)
        self._opened: S3Store | None = None
        self._offline = False
        self._kept: dict[str, str | None] = {}  # branch -> the commit last kept apart
        self._waiting: dict[str, tuple[CommitId, float]] = {}  # branch -> (head seen, since)
        self.clock: Callable[[], float] = time.monotonic
        self.rounds = 0
        self._pushing = ""  # the branches a push under way sends ("": none)
        self._pushed_from = 0  # the remote store's `uploaded` when that push began
        self._told = threading.Event()  # set: the progress thread stops
        self._teller: threading.Thread | None = None

    async def run(self) -> None:
        pause = PAUSE
        try:
            while True:
                ok = await trio.to_thread.run_sync(self.sync_once)
                pause = PAUSE if ok else min(MAX_PAUSE, pause * 2)
                await trio.sleep(pause)
        finally:
            self._close()

    def sync_once(self) -> bool:
        """One round: push what is new here, then fetch. Whether the remote answered."""
        try:
            sync = self._sync()
            outgoing = self._outgoing()
            pushed = self._push(sync, outgoing)
            fetched = sync.fetch()
            shared = self._share_memory()
        except RemoteUnavailable as exc:
            if not self._offline:
                log.warning("remote %s unreachable; working locally: %s", self._remote.name, exc)
            self._offline = True
            self._close()
            return False
        except HelixError as exc:
            log.error("remote %s: a sync round failed: %s", self._remote.name, exc)
            self._close()
            return False
        if self._offline:
            log.warning("remote %s answers again: caught up", self._remote.name)
        self._offline = False
        self.rounds += 1
        self._report(pushed + fetched)
        self._report_memory(shared)
        return True

    def _push(self, sync: Sync, branches: list[str]) -> list[BranchSync]:
        """Push `branches` in one go each (every commit not pushed yet, their new
        objects in one stream of packs), noting what is under way for `progress`."""
        if not branches:
            return []
        self._pushed_from = self._opened.uploaded if self._opened is not None else 0
        self._pushing = ", ".join(branches)
        try:
            return sync.push(branches, merge=True, keep=True)
        finally:
            self._pushing = ""

    def progress(self) -> str:
        """What a push under way has done so far ("": no push under way)."""
        pushing, opened = self._pushing, self._opened
        if not pushing:
            return ""
        sent = (opened.uploaded - self._pushed_from) if opened is not None else 0
        return f"pushing {pushing} to {self._remote.name}: {sent:,} objects sent"

    # ------------------------------------------------------------ the mount's end

    def closing(self, note: Callable[[str], None]) -> None:
        """The FUSE loop has ended: until `finish` returns, say every PROGRESS_EVERY
        seconds how far the push is (`note`: the lock file, which `helix umount` reads
        and shows while it waits)."""

        def tell() -> None:
            said = None
            while not self._told.wait(PROGRESS_EVERY):
                now = self.progress()
                if now != said:
                    note(now)
                    said = now

        self._teller = threading.Thread(target=tell, name="helix-push-progress", daemon=True)
        self._teller.start()

    def finish(self) -> None:
        """After the mount's last saves are committed (the daemon's way out): push every
        branch not pushed yet, none deferred, once. Unreachable (or already offline), or
        interrupted: what is not pushed stays in the store, as every unpushed commit does,
        and goes with the next `helix push` or `mount --remote` (the tracking refs say
        what the remote lacks, ADR 0056)."""
        try:
            moved = list(self._heads_moved())
            if not moved:
                return
            if self._offline:
                self._left_unpushed(moved, "the remote was unreachable")
                return
            log.info("remote %s: pushing %s before exiting", self._remote.name, ", ".join(moved))
            try:
                self._report(self._push(self._sync(), moved))
            except Exception as exc:  # on the daemon's way out: said, never raised over it
                self._left_unpushed(moved, f"{type(exc).__name__}: {exc}")
        finally:
            self._told.set()
            if self._teller is not None:
                self._teller.join()
            self._close()

    def _left_unpushed(self, branches: list[str], why: str) -> None:
        log.warning(
            "remote %s: %s left unpushed at exit (%s); the commits stay in the store and "
            "go with the next `helix push` or `helix mount --remote`",
            self._remote.name,
            ", ".join(branches),
            why,
        )

    def _share_memory(self) -> MemorySync | None:
        if self._memory is None:
            return None
        if self._shared is None:
            from helixfs.memory.remote_sync import SharedMemory

            sealer = remotes.sealer(self._store_path, self._remote)
            location = self._remote.location
            self._shared = SharedMemory(self._store_path, location, self._memory(), sealer)
        try:
            shared = self._shared.exchange()
        except RemoteUnavailable:
            raise
        except HelixError as exc:  # the branches still sync; said once, not every round
            if str(exc) != self._memory_failed:
                log.error("remote %s: memory not shared: %s", self._remote.name, exc)
            self._memory_failed = str(exc)
            return None
        self._memory_failed = ""
        return shared

    def _report_memory(self, shared: MemorySync | None) -> None:
        if shared is None:
            return
        for refused in shared.refused:  # each once: a refused batch is not read again
            text = f"remote {self._remote.name}: memory {refused}"
            log.warning("%s", text)
            notice(self._repo, text)
        for signer in sorted(set(shared.untrusted) - self._untrusted_said):
            self._untrusted_said.add(signer)
            log.info(
                "remote %s: memory batches of %s are not applied: not a trusted key "
                "(helix remote trust KEY)",
                self._remote.name,
                signer,
            )
        if shared.sent or shared.applied:
            log.info("remote %s: %s", self._remote.name, shared.summary())

    def _sync(self) -> Sync:
        if self._opened is None:
            self._opened = remotes.open_store(self._store_path, self._remote)
        name, host = self._remote.name, host_name(self._repo.settings)
        return Sync(self._repo, self._opened, name, host, lazy=self._remote.lazy)

    def _outgoing(self) -> list[str]:
        """The branches to push this round: moved since pushed, and either still since
        the last round or waiting for MOST_DEFERRED seconds."""
        now = self.clock()
        moved = self._heads_moved()
        ready = []
        for branch, head in moved.items():
            seen, since = self._waiting.get(branch, (None, now))
            if seen == head or now - since >= MOST_DEFERRED:
                ready.append(branch)
            self._waiting[branch] = (head, since)
        for branch in (set(self._waiting) - set(moved)) | set(ready):
            del self._waiting[branch]
        return ready

    def _heads_moved(self) -> dict[str, CommitId]:
        """Branches whose head is not where the remote was last seen, and their heads."""
        seen = tracked(self._repo, self._remote.name)
        return {
            info.name: info.commit
            for info in self._repo.branches()
            if seen.get(info.name) != info.commit
        }

    def _report(self, results: list[BranchSync]) -> None:
        for result in results:
            if result.status == "kept":
                if self._kept.get(result.branch) == result.commit:
                    continue  # said already: the next rounds keep meeting the same conflict
                self._kept[result.branch] = result.commit
                text = (
                    f"remote {self._remote.name}: {result.branch} conflicts with the "
                    f"remote's; this machine's work is on the remote as {result.kept_as}, "
                    f"and {result.branch} here is unchanged"
                )
                log.warning("%s", text)
                notice(self._repo, text)
            elif result.status == "diverged":
                log.info(
                    "remote %s: %s diverged (merged at the next push)",
                    self._remote.name,
                    result.branch,
                )
            elif result.status not in ("up-to-date", "ahead"):
                log.info("remote %s: %s %s", self._remote.name, result.branch, result.status)

    def _close(self) -> None:
        if self._shared is not None:
            self._shared.close()
            self._shared = None
        if self._opened is not None:
            self._opened.close()
            self._opened = None
