"""Shared memory through a remote (ADR 0065): two stores' memories and one prefix of the
real SeaweedFS, exchanged as signed batches (memory/remote_sync.py). One test drives the
CLI (trust, keys, push and pull), the others the core calls the CLI and the syncer make."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cli.conftest import fails, ok, run_helix

from helixfs.errors import InvalidInput
from helixfs.memory import Memory, MemoryRecord, Source
from helixfs.memory import remote_sync as shared
from helixfs.store.s3client import S3Client, S3Location
from helixfs.store.seal import Sealed, new_key
from remote.conftest import Place, new_store


class Clock:
    """A clock each store's memory reads: B's facts can be learnt after A's."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


class Machine:
    def __init__(self, folder: Path, place: Place, clock: Clock, sealer: Sealed | None) -> None:
        folder.mkdir()
        self.folder = folder
        self.memory = Memory.open(folder / "memory.db", None, clock=clock, warn_lexical=False)
        location = S3Location(place.server.bucket, place.prefix, place.endpoint)
        self.shared = shared.SharedMemory(folder, location, self.memory, sealer)
        self.key = shared.own_key(folder)
        self.sealer = sealer

    def opened(self, name: str, blob: bytes) -> bytes:
        """A batch as stored, unsealed with the remote's key if it is encrypted."""
        return blob if self.sealer is None else self.sealer.unseal(name, blob, name.encode())

    def sync(self) -> shared.MemorySync:
        return self.shared.exchange()

    def active(self) -> list[str]:
        return sorted(m.content for m in self.memory.memories(status="active"))


@pytest.fixture(params=["plain", "sealed"])
def machines(
    request: pytest.FixtureRequest, place: Place, tmp_path: Path
) -> Iterator[tuple[Machine, Machine]]:
    clock = Clock()
    sealer = Sealed(new_key()) if request.param == "sealed" else None
    a = Machine(tmp_path / "a", place, clock, sealer)
    b = Machine(tmp_path / "b", place, clock, sealer)
    shared.trust(a.folder, b.key)
    shared.trust(b.folder, a.key)
    yield a, b
    for machine in (a, b):
        machine.shared.close()
        machine.memory.close()


@contextmanager
def _raw(place: Place) -> Iterator[S3Client]:
    client = S3Client(S3Location(place.server.bucket, place.prefix, place.endpoint))
    try:
        yield client
    finally:
        client.close()


def test_facts_travel_and_the_newer_value_wins_on_both(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    a.memory.remember("The build uses make, not ninja", source=Source(agent="alpha"))
    a.memory.remember("The database is PostgreSQL 15", tags=["db"])
    b.memory.remember("The database is MySQL 8")  # learnt after A's value
    sent = a.sync()
    assert (sent.sent, sent.batches_sent) == (2, 1)
    got = b.sync()
    assert got.applied == 1 and not got.refused
    assert "The build uses make, not ninja" in b.active()
    # A's older value arrived after B's newer one: kept, but superseded on arrival
    assert "The database is MySQL 8" in b.active()
    assert "The database is PostgreSQL 15" not in b.active()
    a.sync()
    assert "The database is MySQL 8" in a.active()
    assert "The database is PostgreSQL 15" not in a.active()
    made = b.memory.recall("build tool make")
    assert made and b.memory.get(made[0].id).source.agent == "alpha"
    # nothing came back as an echo, nothing is stored twice, nothing is left to send
    assert a.sync().sent == 0 and b.sync().sent == 0
    assert sorted(a.active()) == sorted(b.active())


def test_a_duplicate_is_a_noop_and_a_batch_twice_changes_nothing(
    machines: tuple[Machine, Machine], place: Place
) -> None:
    a, b = machines
    a.memory.remember("Deploys go out on Tuesdays")
    b.memory.remember("Deploys go out on Tuesdays")
    a.sync()
    report = b.sync()
    assert report.actions == {"noop": 1}
    assert b.active() == ["Deploys go out on Tuesdays"]
    history = len(b.memory.history(b.memory.memories()[0].id))
    # the same batch again: applied already, so nothing changes
    assert b.memory.apply_batch(a.key, 1, []) is None
    assert b.sync().applied == 0
    assert len(b.memory.history(b.memory.memories()[0].id)) == history
    # a batch that wrote nothing here claims no history row: B's next fact is sent
    assert b.memory.apply_batch(a.key, 99, []) == {}
    b.memory.remember("Rollbacks need a ticket")
    assert b.sync().sent == 1


def test_forget_and_purge_propagate(machines: tuple[Machine, Machine], place: Place) -> None:
    a, b = machines
    kept = a.memory.remember("The staging host is stage-3").id
    secret = a.memory.remember("The old API token lives in vault path ops/legacy").id
    a.memory.remember("The backup key is kept in locker 7")
    a.sync()
    b.sync()
    assert len(b.active()) == 3
    # forgotten on B (a memory that came from A), purged on A, and on B one of A's
    b.memory.forget(b.memory.recall("staging host")[0].id, reason="moved")
    a.memory.purge(secret)
    b.memory.purge(b.memory.recall("backup key locker")[0].id)
    a.sync()
    b.sync()
    a.sync()
    assert a.active() == [] and b.active() == []
    assert a.memory.get(kept).status == "forgotten"
    for machine in (a, b):
        kept_text = " ".join(m.content for m in machine.memory.memories(status=None))
        assert "vault" not in kept_text and "locker" not in kept_text
    # the purged contents are gone from the batches on the remote too: A wrote them
    # again without them, when it purged one and when it applied B's purge of the other
    with _raw(place) as client:
        stored = {key: client.get(key) or b"" for key, _ in client.listing("memory/")}
    opened = b"".join(a.opened(key, blob) for key, blob in stored.items())
    assert b"staging" in opened and b"ops/legacy" not in opened and b"locker" not in opened
    if a.sealer is not None:
        assert not any(b"staging" in blob for blob in stored.values())


def _held(machine: Machine, text: str) -> MemoryRecord:
    """The one memory of `machine` (any status) whose text holds `text`."""
    (found,) = [m for m in machine.memory.memories(status=None) if text in m.content]
    return found


def _state(machine: Machine) -> dict[str, tuple[str, str]]:
    """Every memory's (status, content) by its first words: what both must agree on."""
    return {
        " ".join(m.content.split()[:3]): (m.status, m.content)
        for m in machine.memory.memories(status=None)
    }


def _relations(machine: Machine) -> set[tuple[str, str, str]]:
    """Every hand-made edge, by the first words of the memories at its ends."""
    found = set()
    for m in machine.memory.memories(status=None):
        for edge in machine.memory.edges(m.id):
            if edge.rel in ("supersedes", "reasserts"):
                continue
            ends = (machine.memory.get(edge.src).content, machine.memory.get(edge.dst).content)
            found.add((ends[0].split()[1], edge.rel, ends[1].split()[1]))
    return found


def test_archive_edit_rollback_and_relations_travel(machines: tuple[Machine, Machine]) -> None:
    a, b = machines
    deploy = a.memory.remember("The deploy script is deploy.sh").id
    stage = a.memory.remember("Staging runs on stage-3").id
    cache = a.memory.remember("The cache is Redis 7").id
    a.sync()
    b.sync()
    a.memory.archive([cache])
    a.memory.relate(deploy, stage, "depends_on")
    a.memory.edit(deploy, "The deploy script is ship.sh")
    report = a.sync()
    assert report.sent == 3
    got = b.sync()
    assert got.actions == {"archive": 1, "relate": 1, "edit": 1} and not got.refused
    assert _held(b, "Redis").status == "archived"
    assert _held(b, "deploy script").content == "The deploy script is ship.sh"
    assert _relations(b) == {("deploy", "depends_on", "runs")}  # deploy script -> staging
    assert [h.op for h in b.memory.history(_held(b, "Redis").id)][-1] == "archive"
    # B undoes the edit that came from A, on its own copy: A's memory follows
    b.memory.rollback(_held(b, "deploy script").id)
    b.sync()
    assert a.sync().actions == {"rollback": 1}
    assert a.memory.get(deploy).content == "The deploy script is deploy.sh"
    # a rollback of an archive brings the memory back on both
    a.memory.rollback(cache)
    a.sync()
    b.sync()
    assert _held(b, "Redis").status == "active"
    assert _state(a) == _state(b) and _relations(a) == _relations(b)
    # nothing echoes, and each batch is applied once
    assert a.sync().sent == 0 and b.sync().sent == 0
    assert b.memory.apply_batch(a.key, 2, []) is None


def test_changes_made_apart_to_one_memory_end_with_the_later(
    machines: tuple[Machine, Machine],
) -> None:
    a, b = machines
    first = a.memory.remember("The CI runner image is ubuntu-22").id
    second = a.memory.remember("The linter is flake8 with defaults").id
    a.sync()
    b.sync()
    mine = _held(b, "CI runner").id
    # while apart: B forgets the first, then A edits it and archives it (later, so the
    # archive wins the status and A's edit the text); both edit the second, A last
    b.memory.forget(mine, reason="gone")
    b.memory.edit(_held(b, "linter").id, "The linter is ruff, set in pyproject")
    a.memory.edit(first, "The CI runner image is ubuntu-24")
    a.memory.archive([first])
    a.memory.edit(second, "The linter is ruff with rule set E F I")
    b.sync()
    a_got = a.sync()  # B's changes reach A after A's own later ones
    assert a_got.actions == {"older": 2}
    b_got = b.sync()
    assert b_got.actions == {"edit": 2, "archive": 1}
    assert a.memory.get(first).status == "archived"
    assert b.memory.get(mine).content == "The CI runner image is ubuntu-24"
    assert _state(a) == _state(b)
    assert _held(b, "linter").content == "The linter is ruff with rule set E F I"


def test_a_new_operation_is_a_version_2_batch_and_an_old_one_stays_1(
    machines: tuple[Machine, Machine], place: Place
) -> None:
    a, b = machines
    kept = a.memory.remember("Logs rotate daily at midnight").id
    a.sync()
    a.memory.archive([kept])
    a.sync()
    with _raw(place) as client:
        versions = [
            a.opened(name, client.get(name) or b"")[len(shared.MAGIC)]
            for name in (shared.batch_name(a.key, 1), shared.batch_name(a.key, 2))
        ]
    assert versions == [1, 2]  # a machine not yet upgraded still reads the first
    assert b.sync().actions == {"add": 1, "archive": 1}


def test_untrusted_and_tampered_batches_change_nothing(
    machines: tuple[Machine, Machine], place: Place
) -> None:
    a, b = machines
    shared.untrust(b.folder, a.key)
    a.memory.remember("Releases are tagged vYYYY.MM")
    a.sync()
    report = b.sync()
    assert report.untrusted == {a.key: 1} and report.applied == 0
    assert b.active() == []
    shared.trust(b.folder, a.key)
    name = shared.batch_name(a.key, 1)
    with _raw(place) as client:
        blob = bytearray(client.get(name) or b"")
        blob[len(blob) // 2] ^= 1
        client.raw_put(name, bytes(blob))
    report = b.sync()
    assert report.applied == 0 and len(report.refused) == 1
    assert name in report.refused[0]
    assert b.sync().refused == []  # not read again while it stays as it is
    assert b.active() == []
    with pytest.raises(InvalidInput, match="not a public key"):
        shared.trust(b.folder, "zz")


def test_cli_trust_keys_push_pull(place: Place, tmp_path: Path) -> None:
    helix_a = new_store(tmp_path / "a", place, host="alpha")
    helix_b = new_store(tmp_path / "b", place, host="beta")
    key_a = json.loads(ok(helix_a("remote", "keys", "--json")).out)["own"]
    ok(helix_a("remember", "Tests run with pytest -p no:cacheprovider"))
    ok(helix_a("push"))
    pulled = ok(helix_b("pull", "--json"))
    assert json.loads(pulled.out)["memory"]["untrusted"] == {key_a: 1}
    assert "untrusted" in ok(helix_b("pull")).out
    fails(helix_b("remote", "trust", "not-a-key"), says="not a public key")
    ok(helix_b("remote", "trust", key_a, "--label", "alpha"))
    listed = json.loads(ok(helix_b("remote", "keys", "--json")).out)
    assert [k["key"] for k in listed["trusted"]] == [key_a]
    assert "1 batch(es) applied" in ok(helix_b("pull")).out
    assert "pytest" in ok(helix_b("recall", "how are tests run")).out
    ok(helix_b("remote", "untrust", key_a))
    assert json.loads(ok(helix_b("remote", "keys", "--json")).out)["trusted"] == []
    (tmp_path / "b" / shared.TRUST_FILE).write_text("{not json")
    fails(helix_b("pull"), says="memory was not exchanged")


def test_clone_brings_the_trusted_memory(place: Place, tmp_path: Path) -> None:
    helix_a = new_store(tmp_path / "a", place, host="alpha")
    key_a = json.loads(ok(helix_a("remote", "keys", "--json")).out)["own"]
    ok(helix_a("remember", "Releases are tagged from the stable branch"))
    ok(helix_a("push"))
    url = ("clone", place.url, "--endpoint", place.endpoint)

    fails(run_helix(*url, tmp_path / "bad", "--trust", "zz", store=None), says="not a public key")
    assert not (tmp_path / "bad").exists()  # refused before anything was made

    untrusting = json.loads(ok(run_helix(*url, tmp_path / "b", "--json", store=None)).out)
    assert untrusting["memory"]["untrusted"] == {key_a: 1}
    assert "Releases" not in ok(run_helix("recall", "releases", store=tmp_path / "b")).out

    cloned = ok(run_helix(*url, tmp_path / "c", "--trust", key_a, store=None))
    assert "1 batch(es) applied" in cloned.out
    recalled = ok(run_helix("recall", "how are releases tagged", store=tmp_path / "c"))
    assert "stable branch" in recalled.out
    assert key_a in ok(run_helix("remote", "keys", store=tmp_path / "c")).out
