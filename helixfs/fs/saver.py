"""The commit policy: saves are persisted at once and committed after a quiet window.

Two promises pull in different directions. "A file whose close() returned survives
kill -9" wants every save written to the store immediately; "one editor save = one
commit" wants the several operations of a save (write a temp file, fsync it, rename it
over the target, remove the backup) folded into one commit. So a save does
`Worktree.save()` right away (objects + `work/BRANCH`, one batch: its journal is
replayed after a crash, see docs/decisions/0001 and 0032), and `Worktree.commit()` only
once the branch has been quiet for `window` seconds, or has been busy for
MAX_WAIT_SECONDS since its first uncommitted change. window = 0 commits on every
operation.

A change (create, mkdir, unlink, chmod, utimens...) is committed the same way but not
persisted on its own: the next save, close or fsync of the branch persists it with
everything else, so a `tar x` pays one save per file, not three (docs/decisions/0006).

The timer needs the trio loop: the daemon starts `run()` in its nursery and calls
`flush_now()` on shutdown. Tests drive it with trio's MockClock or call `commit_due()`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from helixfs import config
from helixfs.errors import HelixError, is_failure

if TYPE_CHECKING:
    from helixfs.vcs.worktree import Worktree

log = logging.getLogger(__name__)

DEFAULT_WINDOW = float(config.default("mount.quiet_window"))  # seconds
RETRY_SECONDS = 5.0  # a commit the store refused (a full disk) is tried again this late
# A branch never quiet (a build, a loop of saves) still gets a commit this often, at the
# latest: the window folds one save's operations, it must not hold history back for good.
MAX_WAIT_SECONDS = 10.0
MAX_WAIT_WINDOWS = 10  # ... or this many windows, for a long window


@dataclass
class _Pending:
    worktree: Worktree
    deadline: float
    latest: float  # the deadline no later operation moves past


class Saver:
    """Saves now, commits after a quiet window; one pending entry per branch worktree."""

    def __init__(self, window: float = DEFAULT_WINDOW) -> None:
        if window < 0:
            raise ValueError("the quiet window cannot be negative")
        self.window = window
        self._pending: dict[int, _Pending] = {}
        self._unpersisted: set[int] = set()  # id(worktree) with changes not yet saved
        self._wakeup = trio.Event()
        self.commits = 0  # commits cut by this saver (for stats and tests)

    def saved(
        self, worktree: Worktree, meta: dict[str, Any] | None = None, *, sync: bool = False
    ) -> None:
        """A save happened on `worktree`: persist it now, commit when quiet. `sync`
        (an fsync that stored its file): durable against power loss, in the same write."""
        if self.window == 0:
            self._commit(worktree, meta)  # a commit persists the work tree too
            if sync:
                worktree.save(sync=True)  # nothing left unsaved: only syncs the store
            return
        self._save(worktree, sync=sync)
        self._schedule(worktree, meta)

    def _schedule(self, worktree: Worktree, meta: dict[str, Any] | None) -> None:
        # Who saved is noted on the worktree: whoever cuts the commit (this timer, or
        # the settle before an out-of-band reset or merge) names the saving process.
        worktree.note_meta(meta or {})
        entry = self._pending.get(id(worktree))
        now = trio.current_time()
        if entry is None:
            latest = now + max(MAX_WAIT_SECONDS, MAX_WAIT_WINDOWS * self.window)
            entry = _Pending(worktree, now + self.window, latest)
            self._pending[id(worktree)] = entry
            self._wakeup.set()  # the timer may be asleep with nothing pending
        else:
            # A later deadline needs no wakeup: the timer finds it when the old one
            # passes (waking it per operation cost a task switch per request).
            entry.deadline = min(now + self.window, entry.latest)

    def changed(self, worktree: Worktree, meta: dict[str, Any] | None = None) -> None:
        """A change that is not a save on its own (create, mkdir, unlink, chmod, utimens):
        committed when quiet like a save; persisted by the next save, close or fsync."""
        if self.window == 0:
            self._commit(worktree, meta)
            return
        self._unpersisted.add(id(worktree))
        self._schedule(worktree, meta)

    def closed(self, worktree: Worktree) -> None:
        """A file of `worktree` was closed: whatever it holds unsaved is persisted now
        (`touch f`, or create + chmod + close, returns only once the file is stored)."""
        if id(worktree) in self._unpersisted:
            self._save(worktree)

    def persist(self, worktree: Worktree) -> None:
        """fsync: durable against power loss, without cutting the commit early."""
        self._unpersisted.discard(id(worktree))
        worktree.save(sync=True)

    def _save(self, worktree: Worktree, *, sync: bool = False) -> None:
        self._unpersisted.discard(id(worktree))
        worktree.save(sync=sync)

    def commit_now(self, worktree: Worktree) -> None:
        """Commit `worktree`'s pending saves now (before a branch, snapshot or switch).
        If the store refuses even to save them (a full disk, a bug), they stay pending:
        the window tries again, and an unmount still commits them."""
        key = id(worktree)
        entry = self._pending.pop(key, None)
        if entry is None and not worktree.dirty:
            return
        try:
            self._commit(worktree)
        except BaseException:
            if entry is not None:
                self._pending.setdefault(key, entry)
            raise

    def forget(self, worktree: Worktree) -> None:
        """The branch went away (deleted, reloaded out of band): drop its pending commit."""
        self._pending.pop(id(worktree), None)
        self._unpersisted.discard(id(worktree))

    def flush_now(self) -> None:
        """Commit everything pending (daemon shutdown); one branch the store refuses
        does not keep the others from being committed."""
        while self._pending:
            _, entry = self._pending.popitem()
            try:
                self._commit(entry.worktree)
            except HelixError as exc:
                log.error(
                    "branch %s: pending changes lost at unmount: %s", entry.worktree.branch, exc
                )

    def commit_due(self, now: float) -> None:
        for key, entry in list(self._pending.items()):
            if entry.deadline <= now:
                del self._pending[key]
                try:
                    self._commit(entry.worktree)
                except BaseException as exc:
                    # Not even saved (the disk is full; a bug, a panic in the store):
                    # kept pending and tried again, so the changes land once there is
                    # room. The timer must live on: the mount dies with it.
                    if not is_failure(exc):
                        raise
                    log.warning(
                        "branch %s: pending changes not saved, retrying in %.0f s: %s",
                        entry.worktree.branch,
                        RETRY_SECONDS,
                        exc,
                        exc_info=not isinstance(exc, HelixError),
                    )
                    entry.deadline = now + RETRY_SECONDS
                    self._pending.setdefault(key, entry)

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def run(self) -> None:
        """Cut due commits for as long as the mount lives (a task in the daemon nursery)."""
        while True:
            if not self._pending:
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                continue
            next_deadline = min(entry.deadline for entry in self._pending.values())
            with trio.move_on_at(next_deadline):
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                continue
            self.commit_due(trio.current_time())

    def _commit(self, worktree: Worktree, meta: dict[str, Any] | None = None) -> None:
        self._unpersisted.discard(id(worktree))  # a commit persists the work tree too
        try:
            if worktree.commit(meta=meta or None) is not None:
                self.commits += 1
        except HelixError as exc:
            # Saved (work/BRANCH), nothing is lost: the next save, or the recovery on the
            # next open, commits it. If saving fails too, the caller hears of it.
            log.warning(
                "commit of branch %s failed, saving its state instead: %s", worktree.branch, exc
            )
            worktree.save()
