"""The memory's side of sharing (memory/shared.py, ADR 0065), without a remote: facts
learnt elsewhere at their own time, and batches of operations applied once."""

from __future__ import annotations

from typing import Any

from helixfs.memory import Memory, Source


def _remember(content: str, at: float, ids: list[str], **extra: Any) -> dict[str, Any]:
    args = {"content": content, "source": Source(agent="elsewhere", when=at)}
    return {"op": "remember", "ids": ids, "at": at, "args": args, **extra}


def test_an_older_fact_from_elsewhere_arrives_superseded(mem: Memory, clock: Any) -> None:
    newer = mem.remember("The database is MySQL 8").id
    older = mem.remember("The database is PostgreSQL 15", at=clock.now - 3600)
    assert older.action == "supersede" and older.superseded == ()
    assert older.memory.status == "superseded"
    assert mem.get(newer).status == "active"
    assert any(e.rel == "supersedes" and e.dst == older.id for e in mem.edges(newer))
    # a newer one from elsewhere supersedes as a local write does
    newest = mem.remember("The database is SQLite 3", at=clock.now + 60)
    assert newest.superseded == (newer,) and mem.get(newer).status == "superseded"


def test_the_newer_wins_with_the_model_too(vmem: Memory, clock: Any) -> None:
    newer = vmem.remember("The API server listens on port 9090").id
    older = vmem.remember("The API server listens on port 8080", at=clock.now - 3600)
    assert older.memory.status == "superseded"
    assert vmem.get(newer).status == "active"


def test_a_batch_applies_once_with_its_branch_and_is_never_sent_on(mem: Memory) -> None:
    assert mem.own_operations(0)[0] == []
    op = _remember("Feature flags live in flags.toml", 1_700_000_000.0, ["01ELSEWHERE"])
    op.update(branch="topic", base_commit="ab" * 32)
    assert mem.apply_batch("k" * 64, 1, [op]) == {"add": 1}
    assert mem.apply_batch("k" * 64, 1, [op]) is None
    (arrived,) = mem.memories(branch="topic")
    assert (arrived.branch, arrived.source.agent) == ("topic", "elsewhere")
    assert mem.own_operations(0)[0] == []  # what arrived is not this store's to send
    forget = {"op": "forget", "ids": ["01ELSEWHERE"], "at": 1_700_000_100.0, "reason": "old"}
    assert mem.apply_batch("k" * 64, 2, [forget]) == {"forget": 1}
    assert mem.get(arrived.id).status == "forgotten"
    mine = mem.remember("Releases are cut on Fridays").id
    ops, _ = mem.own_operations(0)
    assert [(o["op"], o["ids"]) for o in ops] == [("remember", [mine])]
