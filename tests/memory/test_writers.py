"""Several connections on one memory.db: the daemon, the CLI, the MCP server, threads.

A writer waits for another's write instead of failing, and opening never writes."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
from conftest import Clock

from helixfs.memory import Memory
from helixfs.memory.db import connect


@contextmanager
def another_writer(db_path: Path) -> Iterator[apsw.Connection]:
    """A second connection in the middle of a write transaction, committed on leaving."""
    other = apsw.Connection(str(db_path))
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO meta(key, value) VALUES ('other', 'writer')")
    try:
        yield other
    finally:
        other.execute("COMMIT")
        other.close()


def test_a_write_waits_for_another_connections_write_instead_of_failing(
    mem: Memory, db_path: Path
) -> None:
    """QA (CI, stop 25): a write read first (is the fact already stored?) and then wrote,
    in a deferred transaction; when another connection was writing, SQLite refused at
    once with "database is locked", whatever the busy timeout, and `helix remember` said
    "memory.db is locked by another process" while the daemon indexed."""
    mem.remember("The deploy runs from the release branch")
    results: list[object] = []

    def remember() -> None:
        try:
            results.append(mem.remember("CI runs on two cores").action)
        except Exception as exc:
            results.append(exc)

    with another_writer(db_path):
        writer = threading.Thread(target=remember)
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and not results, "the write must wait its turn"
    writer.join(30)
    assert results == ["add"]
    assert [h.content for h in mem.search("cores")] == ["CI runs on two cores"]


def test_a_recall_during_another_processs_long_write_answers_without_reinforcing(
    mem: Memory, db_path: Path, clock: Clock
) -> None:
    """A recall marks its hits seen, a write: behind a long import in another process
    it waited the whole busy timeout (10 s) and then failed. Now it answers."""
    stored = mem.remember("The deploy runs from the release branch")
    before = mem.get(stored.id)
    clock.advance(1)
    with another_writer(db_path):
        hits = mem.recall("deploy")
    assert [h.id for h in hits] == [stored.id]
    assert mem.get(stored.id).last_seen == before.last_seen  # not reinforced, not failed
    mem.recall("deploy")
    assert mem.get(stored.id).last_seen > before.last_seen  # the next recall is


def test_opening_the_memory_writes_nothing_so_it_opens_during_another_write(
    mem: Memory, db_path: Path
) -> None:
    """QA (CI, stop 25): each open ran the schema's `CREATE ... IF NOT EXISTS` and an
    insert in one transaction, so a lexical `.helix/search` opened while the daemon's
    kept memory was opening failed with "database is locked"."""
    mem.remember("The deploy runs from the release branch")
    with another_writer(db_path), Memory.open(db_path, None, warn_lexical=False) as reader:
        assert [h.content for h in reader.search("deploy", reinforce=False)] == [
            "The deploy runs from the release branch"
        ]


def test_a_new_database_gets_its_schema_once_and_an_old_one_gets_what_it_lacks(
    db_path: Path,
) -> None:
    with Memory.open(db_path, None, warn_lexical=False) as memory:
        memory.remember("The deploy runs from the release branch")
    conn = apsw.Connection(str(db_path))
    conn.execute("DROP TABLE embed_cache")  # as a database made before it existed
    conn.close()
    with Memory.open(db_path, None, warn_lexical=False) as memory:
        assert [h.content for h in memory.search("deploy")]
    conn = apsw.Connection(str(db_path))
    assert conn.execute("SELECT count(*) FROM embed_cache").fetchone() == (0,)
    conn.close()


WORKER = """
import sys
from helixfs.memory import Memory
from helixfs.memory.db import connect
with Memory.open(sys.argv[1], None, warn_lexical=False) as memory:
    for n in range(40):
        memory.remember(f"Service {sys.argv[2]}{n} listens on port {n}")
        memory.search(f"service {sys.argv[2]}{n}")
"""


def test_three_processes_remember_and_recall_at_once_and_none_is_refused(
    mem: Memory, db_path: Path
) -> None:
    """QA: three processes, each remembering and recalling 40 facts, saw 12-14 of their
    calls refused with "database is locked" before writes took the lock first."""
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db_path), tag],
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("alpha", "beta", "gamma")
    ]
    errors = [worker.communicate(timeout=120)[1] for worker in workers]
    assert [w.returncode for w in workers] == [0, 0, 0], errors
    assert sum(mem.stats()["memories"].values()) == 120  # each write stored (or superseded)


def _open_at_once(path: Path, openers: int) -> list[Exception]:
    start = threading.Barrier(openers)
    errors: list[Exception] = []

    def open_it() -> None:
        start.wait()
        try:
            connect(path).close()
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


def test_connections_creating_the_database_at_once_all_open_it(tmp_path: Path) -> None:
    """QA: the daemon's first search opens memory.db on a thread while a lexical read
    opens it beside it; on a new file, switching to WAL deadlocked in the rollback
    journal's locks and SQLite refused one at once ("database is locked", 12 rounds in
    100 of four threads here; a daemon test failed so, now and then)."""
    for round_ in range(40):
        assert _open_at_once(tmp_path / f"round{round_}" / "memory.db", 4) == [], round_
