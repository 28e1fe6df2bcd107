"""Faults on the way to S3: the server killed mid-push, two machines racing one branch.

The server of the kill test is its own (tests/seaweed.py), never the session's.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli.conftest import ok, run_helix
from seaweed import SeaweedServer, serving

from helixfs.ids import CommitId, hex_id
from helixfs.store.s3 import S3Store
from helixfs.store.s3client import S3Location
from helixfs.vcs.repo import Repository
from helixfs.vcs.sync import Sync

from .conftest import Place, helix_on

FILES = 2000  # enough objects that a push is still sending when it is stopped
PACKED = 8  # records per pack in the push that is cut: many packs, so it lasts a while
# `helix` with packs of PACKED records (store/s3packs.py reads its bound at each push)
SMALL_PACKS = (
    f"import sys, helixfs.store.s3packs as p; p.PACK_OBJECTS = {PACKED}; "
    "from helixfs.cli.main import main; sys.exit(main())"
)


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[SeaweedServer]:
    with serving(tmp_path / "seaweed") as started:
        yield started


def objects_on(server: SeaweedServer, prefix: str) -> int:
    """Objects stored: loose, and in packs whose index is stored."""
    with S3Store(S3Location(server.bucket, prefix, server.endpoint)) as remote:
        remote._packs.refresh()
        return sum(1 for _ in remote._client.listing("objects/")) + len(remote._packs.entries())


def test_a_push_cut_by_a_dead_server_loses_nothing_and_resumes(
    tmp_path: Path, own_server: SeaweedServer
) -> None:
    store = tmp_path / "a"
    with Repository.init(store) as repo:
        repo.commit({f"d{i % 30}/f{i}.txt": b"file %d\n" % i for i in range(FILES)}, "many")
        head = repo.branch_head("main")
    url = f"s3://{own_server.bucket}/kill"
    helix = helix_on(store)
    ok(helix("remote", "add", "origin", url, "--endpoint", own_server.endpoint))
    argv = [sys.executable, "-c", SMALL_PACKS, "--store", str(store), "push", "--json"]
    push = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while objects_on(own_server, "kill") == 0:  # sending has begun
            assert push.poll() is None, push.communicate()
            time.sleep(0.05)
        push.send_signal(signal.SIGSTOP)  # it cannot finish while the server dies
        own_server.kill()
        push.send_signal(signal.SIGCONT)
        out, err = push.communicate(timeout=240)
    finally:
        if push.poll() is None:
            push.kill()
    assert push.returncode == 1, (out, err)
    assert b"cannot be reached" in err and b"Traceback" not in err
    ok(helix("fsck"))  # the local store is whole
    own_server.start()  # back, with what it had stored
    with S3Store(S3Location(own_server.bucket, "kill", own_server.endpoint)) as remote:
        assert remote.ref("branches/main") is None  # the ref never moved
    partial = objects_on(own_server, "kill")
    assert partial > 0
    resumed = ok(helix("push", "--json")).json()["branches"][0]
    assert resumed["status"] == "created" and resumed["commit"] == hex_id(head)
    assert resumed["objects"] <= FILES + 64 - partial  # what was there is not sent again
    clone = tmp_path / "b"
    ok(run_helix("clone", url, clone, "--endpoint", own_server.endpoint, store=None))
    other = helix_on(clone)
    ok(other("fsck"))
    assert ok(other("cat", "main", "d7/f7.txt")).out == "file 7\n"


def _machine(folder: Path, place: Place, host: str) -> tuple[Repository, Sync]:
    repo = Repository.open(folder)
    return repo, Sync(repo, place.store(), "origin", host)


def _race(place: Place, tmp_path: Path, rounds: int, *, shared: bool) -> dict[str, list[CommitId]]:
    """Two stores committing and pushing `main` at once, `rounds` times each."""
    seed = tmp_path / "seed"
    with Repository.init(seed) as repo:
        repo.commit({"README": b"race\n"}, "seed")
        Sync(repo, place.store(), "origin", "seed").push(["main"])
    made: dict[str, list[CommitId]] = {"alpha": [], "beta": []}
    errors: list[BaseException] = []
    folders = {}
    for host in made:
        folders[host] = tmp_path / host
        ok(run_helix("clone", place.url, folders[host], "--endpoint", place.endpoint, store=None))

    def work(host: str) -> None:
        repo, sync = _machine(folders[host], place, host)
        try:
            for i in range(rounds):
                path = "shared.txt" if shared else f"{host}/{i}.txt"
                made[host].append(repo.commit({path: f"{host} {i}\n".encode()}, f"{host} {i}"))
                sync.push_branch("main", merge=True, keep=True)
        except BaseException as exc:
            errors.append(exc)
        finally:
            sync.remote.close()  # type: ignore[attr-defined]
            repo.close()

    threads = [threading.Thread(target=work, args=(host,)) for host in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not errors, errors
    return made


def _remote_history(place: Place, tmp_path: Path) -> set[CommitId]:
    """Every commit the remote's branches reach, read from a fresh clone."""
    clone = tmp_path / "check"
    ok(run_helix("clone", place.url, clone, "--endpoint", place.endpoint, store=None))
    ok(helix_on(clone)("fsck"))
    with Repository.open(clone) as repo:
        found: set[CommitId] = set()
        for info in repo.branches():
            found.update(c.id for c in repo.log(f"branches/{info.name}", first_parent=False))
        return found


def test_two_machines_pushing_one_branch_lose_no_commit(tmp_path: Path, place: Place) -> None:
    made = _race(place, tmp_path, 100, shared=False)
    history = _remote_history(place, tmp_path)
    for host, commits in made.items():
        assert not set(commits) - history, f"{host} lost commits"
    for host in made:
        ok(helix_on(tmp_path / host)("fsck"))
        pulled = ok(helix_on(tmp_path / host)("pull", "--json")).json()["branches"]
        assert {b["status"] for b in pulled} <= {"up-to-date", "fast-forward", "new", "merged"}


def test_two_machines_conflicting_on_one_file_keep_the_loser_apart(
    tmp_path: Path, place: Place
) -> None:
    made = _race(place, tmp_path, 20, shared=True)
    history = _remote_history(place, tmp_path)
    for host, commits in made.items():
        assert not set(commits) - history, f"{host} lost commits"
    with place.store() as remote:
        names = {name for name, _ in remote.refs("branches/")}
    assert names & {"branches/main@alpha", "branches/main@beta"}
