"""The mount's syncer (daemon/syncer.py) round by round, against SeaweedFS: a branch
still moving is pushed once it stands still for a round or has waited MOST_DEFERRED
seconds (ADR 0070); the network is never on the save path either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from helixfs.daemon.syncer import MOST_DEFERRED, RemoteSyncer
from helixfs.ids import CommitId
from helixfs.vcs.refs import BRANCHES
from helixfs.vcs.repo import Repository

from .conftest import Place, new_store

pytestmark = pytest.mark.timeout(180)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def remote_main(place: Place) -> CommitId | None:
    with place.store() as remote:
        value = remote.ref(BRANCHES + "main")
    return CommitId(value) if value is not None else None


def test_a_run_of_saves_is_pushed_when_it_pauses_or_has_waited(
    tmp_path: Path, place: Place
) -> None:
    store = tmp_path / "s"
    new_store(store, place)
    clock = Clock()
    with Repository.open(store) as repo:
        syncer = RemoteSyncer(repo, store, "origin")
        syncer.clock = clock
        try:
            first = repo.commit({"a.txt": b"1\n"}, "one")
            assert syncer.sync_once()
            assert remote_main(place) is None  # just moved: it may still be moving
            clock.now += 1
            assert syncer.sync_once()
            assert remote_main(place) == first  # stood still for a round: pushed

            heads = []
            for k in range(int(MOST_DEFERRED) + 2):  # a save every round
                heads.append(repo.commit({"a.txt": b"run %d\n" % k}, f"run {k}"))
                assert syncer.sync_once()
                if clock.now - 1001.0 < MOST_DEFERRED:
                    assert remote_main(place) == first
                clock.now += 1
            assert remote_main(place) in heads  # waited MOST_DEFERRED: pushed mid-run
            assert syncer.sync_once()
            assert remote_main(place) == heads[-1]  # the run stopped: the last one is up
        finally:
            syncer._close()
