"""WAL checkpoints on a thread of their own, off the write path.

SQLite's auto-checkpoint runs inside the commit that grows the WAL past 1000 pages: that
one write copies ~4 MB back into the database file and waits for an fsync. A memory write
touches 20-60 pages (row, indexes, FTS, vector chunk, history), so about one write in 20
paid for it: at 100,000 memories, exactly the p95 of write latency. Here a commit only
wakes a thread, which runs a PASSIVE checkpoint on its own connection (it never blocks
writers or readers; SQLite releases the GIL meanwhile). Closing the last connection still
checkpoints and removes the WAL, as before.
"""

from __future__ import annotations

import threading

import apsw

from helixfs.memory.db import BUSY_TIMEOUT_MS

WAL_PAGES = 1000  # SQLite's own auto-checkpoint threshold


class Checkpointer:
    """Replaces `conn`'s auto-checkpoint by a background one (a file database in WAL)."""

    def __init__(self, conn: apsw.Connection, pages: int = WAL_PAGES) -> None:
        self._path = conn.filename
        self._pages = pages
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        self.checkpoints = 0  # completed by the thread (tests read it)
        conn.set_wal_hook(self._on_commit)

    def _on_commit(self, conn: apsw.Connection, dbname: str, pages: int) -> int:
        """SQLite's WAL hook, inside the commit: no SQL here, only a wake-up."""
        if pages >= self._pages and not self._closing:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="helix-memory-checkpoint", daemon=True
                )
                self._thread.start()
            self._wake.set()
        return apsw.SQLITE_OK

    def _run(self) -> None:
        conn = apsw.Connection(self._path)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closing:
                    return
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except apsw.BusyError:
                    continue  # another checkpoint is running; the next commit retries
                self.checkpoints += 1
        finally:
            conn.close()

    def close(self) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        self._closing = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
