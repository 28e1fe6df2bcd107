"""A lazy clone from the CLI (ADR 0064): contents read through, made whole by
`fetch --contents`, and its remote not removed while it is the only source."""

from __future__ import annotations

from pathlib import Path

from cli.conftest import fails, ok, run_helix, store_state

from helixfs.vcs.repo import Repository

from .conftest import Place, helix_on, new_store

BIG = bytes(range(256)) * 6000  # 1.5 MB: a chunked file, its chunks known once it is here


def test_a_lazy_clone_is_made_whole_by_fetch_contents(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    with Repository.open(tmp_path / "a") as repo:
        repo.commit({f"f{i}.txt": b"small %d\n" % i for i in range(20)} | {"big.bin": BIG}, "x")
    ok(helix("push"))
    clone = tmp_path / "b"
    ok(run_helix("clone", "--lazy", place.url, clone, "--endpoint", place.endpoint, store=None))
    lazy = helix_on(clone)
    with Repository.open(clone) as repo:
        files = {e.name: e.oid for e in repo.ls("main")}
        assert not [n for n, oid in files.items() if repo.store.contains(oid)]
    assert ok(lazy("cat", "main", "f2.txt")).out == "small 2\n"
    before = store_state(clone)
    fails(lazy("remote", "remove", "origin"), says="fetch --contents origin")
    assert store_state(clone) == before
    filled = ok(lazy("fetch", "--contents", "--json")).json()
    assert filled["contents"] >= 20 + 2  # the rest of the files, big.bin's record and chunks
    assert ok(lazy("remote", "list", "--json")).json()["remotes"][0]["lazy"] is False
    ok(lazy("remote", "remove", "origin"))  # whole now: nothing is read from it any more
    assert ok(lazy("fsck", "--json")).json()["problems"] == []
    with Repository.open(clone) as repo:
        assert repo.read("main", "big.bin") == BIG
        assert repo.read("main", "f19.txt") == b"small 19\n"
