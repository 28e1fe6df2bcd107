"""The top memories without a query: a narrow scan ranks as the full rows did, and a
long-lived memory keeps the ranking only until the database changes (hooks29)."""

from __future__ import annotations

import random
from pathlib import Path

import apsw
from conftest import Clock

from helixfs.memory import Memory, records, retrieval
from helixfs.memory.ranking import (
    TOP_WEIGHT_ARGS,
    TOP_WEIGHT_SQL,
    KeptTop,
    memory_hit,
    top_memories,
)
from helixfs.memory.tree import TRUNK


def _top_by_full_rows(conn: apsw.Connection, limit: int, now: float) -> list[str]:
    """The ranking as it was computed before: every full row, weighed in Python (ties in
    the scan's order, the last seen first, then the newest)."""
    sql = (
        f"SELECT {records.COLUMNS} FROM memories WHERE status='active' AND (+branch IS NULL)"
        " ORDER BY last_seen DESC, rowid DESC LIMIT 5000"
    )
    scored = [
        (retrieval.memory_weight(row, now), row)
        for row in (records.row_dict(r) for r in conn.execute(sql))
    ]
    scored.sort(key=lambda item: item[0], reverse=True)
    return [memory_hit(row, weight).id for weight, row in scored[:limit]]


def test_the_narrow_scan_ranks_as_the_full_rows(mem: Memory, db_path: Path, clock: Clock) -> None:
    for n in range(60):
        if n % 7 == 0:
            clock.advance(3)
        mem.remember(
            f"fact number {n} about the parser",
            confidence=0.3 + (n % 5) / 10,
            salience=(n % 4) / 4,
        )
    mem.forget(mem.memories(limit=1)[0].id)
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        for limit in (1, 10, 200):
            hits = top_memories(conn, None, limit, clock())
            assert [h.id for h in hits] == _top_by_full_rows(conn, limit, clock())
    finally:
        conn.close()


def test_the_kept_top_is_read_again_once_the_memory_changes(
    mem: Memory, db_path: Path, clock: Clock
) -> None:
    mem.remember("the cache is flushed on every commit")
    first = [h.id for h in mem.context(400).hits]
    assert len(first) == 1
    mem.remember("retries back off exponentially")  # this connection's write
    assert len(mem.context(400).hits) == 2
    with Memory.open(db_path, None, clock=clock) as other:  # another connection's
        other.remember("the lock file names its holder's pid")
    assert len(mem.context(400).hits) == 3


def test_the_kept_top_expires_with_the_clock(db_path: Path, clock: Clock) -> None:
    with Memory.open(db_path, None, clock=clock) as memory:
        memory.remember("the schema is checked at open")
    conn = apsw.Connection(str(db_path))
    try:
        kept = KeptTop()
        now = clock()
        first = kept.get(conn, None, 5, now, TRUNK, 30.0)
        assert kept.get(conn, None, 5, now + 1, TRUNK, 30.0)[0] is first[0]  # kept
        later = kept.get(conn, None, 5, now + KeptTop.KEPT_SECONDS + 1, TRUNK, 30.0)
        assert later[0] is not first[0] and later[0].score < first[0].score
    finally:
        conn.close()


def test_sqlite_weighs_as_weight_of_to_the_last_bit() -> None:
    """top_memories weighs in SQL (TOP_WEIGHT_SQL): the same doubles as weight_of, for
    columns stored as REAL or INTEGER, ages from seconds to years, any half-life."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE memories(updated, salience, confidence)")
    rng = random.Random(29)
    now = 1_790_000_000.123
    rows = []
    for _ in range(5000):
        age = rng.random() * 86400 * rng.choice([0.0001, 1, 30, 400, 4000])
        updated = rng.choice([now - age, int(now - age), now + rng.random()])  # clock skew too
        rows.append((updated, rng.choice([rng.random(), 0, 1]), rng.choice([rng.random(), 1])))
    conn.executemany("INSERT INTO memories VALUES (?,?,?)", rows)
    for half_life in (30.0, 0.5, 365.25):
        constants = {
            "now": now,
            "day": retrieval.DAY,
            "half_life": half_life,
            "salience_half_life": retrieval.SALIENCE_HALF_LIFE_DAYS,
            "recency_weight": retrieval.RECENCY_WEIGHT,
            "salience_weight": retrieval.SALIENCE_WEIGHT,
            "status_weight": retrieval.STATUS_WEIGHT["active"],
        }
        args = [constants[name] for name in TOP_WEIGHT_ARGS]
        sql = f"SELECT updated, salience, confidence, {TOP_WEIGHT_SQL} FROM memories"
        for updated, salience, confidence, weight in conn.execute(sql, args):
            expected = retrieval.weight_of(updated, salience, confidence, "active", now, half_life)
            assert weight == expected, (updated, salience, confidence, half_life)
    conn.close()


def test_ties_keep_the_scans_order(mem: Memory, db_path: Path, clock: Clock) -> None:
    """Memories written at one instant, alike: the last seen first, then the newest."""
    facts = [
        "the lexer skips comments",
        "parsers never allocate per token",
        "the schema version lives beside the data",
        "cache entries expire after ten minutes",
        "the index is rebuilt nightly",
        "retries back off exponentially",
        "the lock file names its holder's pid",
        "queues drain on shutdown",
    ]
    for fact in facts:
        mem.remember(fact)
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        hits = top_memories(conn, None, 12, clock())
        assert [h.id for h in hits] == _top_by_full_rows(conn, 12, clock())
        assert len({h.score for h in hits}) == 1
        assert [h.content for h in hits] == facts[::-1]
    finally:
        conn.close()
