"""WAL checkpoints run on a background thread, never inside a write's commit."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw

from helixfs.memory import Memory
from helixfs.memory.checkpoint import Checkpointer
from helixfs.memory.db import connect


def _wal_pages(path: Path) -> int:
    wal = Path(str(path) + "-wal")
    return wal.stat().st_size // 4096 if wal.exists() else 0


def checkpointers() -> list[threading.Thread]:
    # by name, not a count of all threads: another test's threads (an embedder, a
    # spool closer) may start or end meanwhile, and CI once saw the count drop by one
    return [t for t in threading.enumerate() if t.name == "helix-memory-checkpoint"]


def test_commits_leave_the_checkpoint_to_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    conn = connect(path)
    checkpointer = Checkpointer(conn, pages=10)
    threads_before = checkpointers()
    try:
        conn.execute("CREATE TABLE t(x)")
        for _ in range(200):
            with conn:
                conn.execute("INSERT INTO t VALUES (randomblob(4000))")
        # The thread was woken; on a loaded host it may not have run yet (CI, once).
        deadline = time.monotonic() + 30
        while not checkpointer.checkpoints and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(checkpointers()) == len(threads_before) + 1
    finally:
        checkpointer.close()
    assert checkpointer.checkpoints > 0
    assert checkpointers() == threads_before
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] >= 200
    conn.close()
    assert _wal_pages(path) == 0  # the last close still checkpoints and removes the WAL


def test_a_commit_below_the_threshold_starts_no_thread(tmp_path: Path) -> None:
    conn = connect(tmp_path / "memory.db")
    checkpointer = Checkpointer(conn)
    with conn:
        conn.execute("CREATE TABLE t(x)")
    checkpointer.close()
    assert checkpointer.checkpoints == 0
    conn.close()


def test_memory_close_stops_the_checkpointer(db_path: Path) -> None:
    before = checkpointers()
    with Memory.open(db_path, None) as memory:
        memory._checkpointer._pages = 1  # every commit wakes the thread
        for n in range(30):
            memory.remember(f"Service number {n} listens on port {8000 + n}.")
        assert len(checkpointers()) == len(before) + 1
    assert checkpointers() == before
    check = apsw.Connection(str(db_path))
    assert check.execute("SELECT count(*) FROM memories").fetchone()[0] == 30
    check.close()
