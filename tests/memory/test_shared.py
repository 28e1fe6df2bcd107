"""The memory's side of sharing (memory/shared.py, ADR 0065), without a remote: facts
learnt elsewhere at their own time, and batches of operations applied once."""

from __future__ import annotations

from typing import Any

import nacl.signing
import pytest

from helixfs.errors import InvalidInput, UnsupportedVersion
from helixfs.memory import Memory, Source, remote_sync


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


def _signed(ops: list[dict[str, Any]], version: int | None = None) -> tuple[bytes, str]:
    """`ops` as batch 1 of a new key, at the version given (or the one encode picks)."""
    key = nacl.signing.SigningKey.generate()
    data = remote_sync.encode(ops, 1, key)
    if version is not None:  # signed again with another version byte
        signed = data[: len(remote_sync.MAGIC)] + bytes((version,)) + data[9:-64]
        data = signed + key.sign(signed).signature
    return data, key.verify_key.encode().hex()


@pytest.mark.parametrize(
    ("op", "says"),
    [
        ({"op": "edit", "state": {"status": "active"}}, "columns an edit does not set"),
        ({"op": "rollback", "state": {"status": "gone"}}, "unknown status"),
        ({"op": "rollback", "state": {"confidence": 7}}, "between 0 and 1"),
        ({"op": "edit", "state": {}}, "sets no state"),
        ({"op": "relate", "to": ["01B"], "rel": "supersedes"}, "set by consolidation"),
        ({"op": "relate", "rel": "uses"}, "names no memory"),
    ],
)
def test_a_batch_with_a_change_that_does_not_check_is_refused(
    op: dict[str, Any], says: str
) -> None:
    data, signer = _signed([{"ids": ["01A"], "at": 1_700_000_000.0, **op}])
    assert data[len(remote_sync.MAGIC)] == 2
    with pytest.raises(InvalidInput, match=says):
        remote_sync.decode(data, signer, 1)


def test_a_version_1_batch_holds_only_what_version_1_had() -> None:
    archive = {"op": "archive", "ids": ["01A"], "at": 1_700_000_000.0}
    data, signer = _signed([archive], version=1)
    with pytest.raises(InvalidInput, match="not one of remember, forget, purge"):
        remote_sync.decode(data, signer, 1)
    data, signer = _signed([archive], version=3)
    with pytest.raises(UnsupportedVersion, match="upgrade HelixFS"):
        remote_sync.decode(data, signer, 1)


def test_a_relation_to_a_memory_not_here_changes_nothing(mem: Memory) -> None:
    here = mem.remember("The queue is RabbitMQ").id
    relate = {"op": "relate", "ids": [here], "at": 1.0e9, "to": ["01NOTHERE"], "rel": "uses"}
    assert mem.apply_batch("k" * 64, 1, [relate]) == {"unknown": 1}
    assert mem.edges(here) == []


def test_an_edit_from_elsewhere_is_embedded_again(vmem: Memory, clock: Any) -> None:
    came = _remember("The web server is nginx behind a load balancer", clock.now, ["01OTHER"])
    assert vmem.apply_batch("k" * 64, 1, [came]) == {"add": 1}
    text = "Payments are settled through Stripe every night"
    edit = {"op": "edit", "ids": ["01OTHER"], "at": clock.now + 1, "state": {"content": text}}
    assert vmem.apply_batch("k" * 64, 2, [edit]) == {"edit": 1}
    vmem.remember("The reverse proxy in front of the app is nginx")
    # by meaning alone: the old text's vector would match the proxy, not the payments
    hits = vmem.search("card payment provider", mode="vector", k=1, reinforce=False)
    assert hits and hits[0].content == text
    hits = vmem.search("nginx web server", mode="vector", k=1, reinforce=False)
    assert hits and hits[0].content != text
