"""Packs on the remote (ADR 0064): a push's objects in a few S3 objects, read with the
loose layout beside them, by racing pushers, and past damage."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from cli.conftest import fails, ok, run_helix

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId, object_id
from helixfs.store import RefUpdate
from helixfs.store.s3 import LAYOUT_KEY
from helixfs.store.s3packs import PACK_MIN
from helixfs.vcs.objects import is_structure
from helixfs.vcs.repo import Repository
from helixfs.vcs.sync import Sync

from .conftest import Place, helix_on, new_store

FILES = 120  # well above PACK_MIN: a push of them is packed


def many(repo: Repository, tag: str, files: int = FILES) -> None:
    repo.commit({f"{tag}/f{i}.txt": f"{tag} file {i}\n".encode() for i in range(files)}, tag)


def clone_of(place: Place, folder: Path) -> Repository:
    ok(run_helix("clone", place.url, folder, "--endpoint", place.endpoint, store=None))
    ok(helix_on(folder)("fsck"))
    return Repository.open(folder)


def under(place: Place, folder: str) -> list[str]:
    listed = place.keys()
    return [key for key in listed if key.startswith(folder)]


def packs_of(place: Place) -> list[str]:
    return under(place, "packs/")


def spread(repo: Repository, tag: str, folders: int = 30) -> None:
    """FILES files in `folders` folders: a push of it has more than PACK_MIN of both
    kinds, commits and folders, file contents."""
    files = {f"{tag}/d{i % folders}/f{i}.txt": f"{tag} file {i}\n".encode() for i in range(FILES)}
    repo.commit(files, tag)


def packed_kinds(place: Place) -> list[set[bool]]:
    """For each pack of the remote: whether its records are commits and folders (True)
    or file contents (False), as a set."""
    with place.store() as remote:
        remote._packs.ensure()
        by_pack: dict[str, set[bool]] = {}
        for oid, slot in remote._packs.entries().items():
            by_pack.setdefault(slot.pack, set()).add(is_structure(remote.get(oid)))
    return list(by_pack.values())


def test_a_push_is_a_few_packs_and_a_clone_reads_them(tmp_path: Path, place: Place) -> None:
    """ADR 0081: commits and folders in packs of their own, file contents in others."""
    helix = new_store(tmp_path / "a", place)
    with Repository.open(tmp_path / "a") as repo:
        spread(repo, "one")
        head = repo.branch_head("main")
    pushed = ok(helix("push", "--json")).json()["branches"][0]
    assert pushed["objects"] > FILES
    assert len(packs_of(place)) == 4  # two packs and their indexes
    assert not under(place, "objects/")
    assert sorted(packed_kinds(place), key=min) == [{False}, {True}]
    cache = list((tmp_path / "a" / "remote-cache").glob("origin-*/*"))
    assert len(cache) == 2  # the indexes it wrote, kept for the next run
    with clone_of(place, tmp_path / "b") as other:
        assert other.branch_head("main") == head
        assert other.read("main", "one/d7/f7.txt") == b"one file 7\n"


def test_a_few_folders_go_loose_beside_a_pack_of_contents(tmp_path: Path, place: Place) -> None:
    """Fewer than PACK_MIN records of one kind go loose, as a small push does."""
    helix = new_store(tmp_path / "a", place)
    with Repository.open(tmp_path / "a") as repo:
        many(repo, "one")  # FILES files in one folder
    ok(helix("push"))
    assert len(packs_of(place)) == 2
    assert packed_kinds(place) == [{False}]
    # the init's commit and empty tree, the new commit, its root and its one folder
    assert len(under(place, "objects/")) == 5
    with clone_of(place, tmp_path / "b") as other:
        assert other.read("main", "one/f7.txt") == b"one file 7\n"


def test_old_mixed_packs_are_read_by_full_and_lazy_clones(tmp_path: Path, place: Place) -> None:
    """A push from before ADR 0081 packed commits, folders and contents together (an
    upload without grouping, as its Uploader did): clones of both kinds read it."""
    with Repository.init(tmp_path / "a") as repo, place.store() as remote:
        remote.ensure_layout()
        spread(repo, "old")
        head = repo.branch_head("main")
        sync = Sync(repo, remote, "origin", "alpha")
        wanted = sync.outgoing(head)
        remote.upload((oid, repo.store.get(oid)) for oid in wanted)
        remote.write({}, [RefUpdate("branches/main", head), RefUpdate("HEAD", b"main")])
    assert len(packs_of(place)) == 2
    assert packed_kinds(place) == [{False, True}]
    with clone_of(place, tmp_path / "full") as other:
        assert other.branch_head("main") == head
        assert other.read("main", "old/d3/f33.txt") == b"old file 33\n"
    lazy = tmp_path / "lazy"
    ok(run_helix("clone", "--lazy", place.url, lazy, "--endpoint", place.endpoint, store=None))
    assert ok(helix_on(lazy)("cat", "main", "old/d4/f34.txt")).out == "old file 34\n"
    assert ok(helix_on(lazy)("fsck", "--json")).json()["problems"] == []
    # and a new push on top of it packs apart
    with Repository.open(lazy) as repo:
        spread(repo, "new")
    ok(helix_on(lazy)("push"))
    assert sorted(packed_kinds(place), key=lambda kinds: (len(kinds), min(kinds))) == [
        {False},
        {True},
        {False, True},
    ]
    with clone_of(place, tmp_path / "again") as other:
        assert other.read("main", "new/d5/f5.txt") == b"new file 5\n"
        assert other.read("main", "old/d5/f5.txt") == b"old file 5\n"


def test_old_loose_remotes_are_read_and_upgraded_by_the_first_pack(
    tmp_path: Path, place: Place
) -> None:
    """A remote written before packs (layout 1, loose objects) reads as it is; the
    first pack makes it layout 2, which a HelixFS without packs refuses ('upgrade')."""
    with Repository.init(tmp_path / "a") as repo, place.store() as remote:
        many(repo, "old", 3)  # few objects: sent loose, as every push before packs
        remote._client.put(
            LAYOUT_KEY,
            json.dumps({"format": "helix-remote", "version": 1, "sealed": False}).encode(),
            if_none_match=True,
            size=0,
        )
        Sync(repo, remote, "origin", "alpha").push(["main"])
        assert packs_of(place) == []
        many(repo, "new")
        Sync(repo, remote, "origin", "alpha").push(["main"])
        head = repo.branch_head("main")
    assert len(packs_of(place)) == 2
    assert under(place, "objects/")
    with place.store() as remote:
        layout = json.loads(remote._client.get(LAYOUT_KEY) or b"")
    assert layout["version"] == 2
    with clone_of(place, tmp_path / "b") as other:
        assert other.branch_head("main") == head
        assert other.read("main", "old/f1.txt") == b"old file 1\n"
        assert other.read("main", "new/f1.txt") == b"new file 1\n"


def test_a_newer_layout_is_refused_with_upgrade_advice(tmp_path: Path, place: Place) -> None:
    with place.store() as remote:
        record = {"format": "helix-remote", "version": 3, "sealed": False}
        remote._client.put(LAYOUT_KEY, json.dumps(record).encode(), if_none_match=True, size=0)
    fails(
        run_helix("clone", place.url, tmp_path / "b", "--endpoint", place.endpoint, store=None),
        says="upgrade HelixFS",
    )


def test_pushers_packing_at_once_lose_no_object(tmp_path: Path, place: Place) -> None:
    """Two machines push branches that share most of their objects, at the same moment:
    each sends its own packs (random names), and every object of both is readable."""
    heads = {}
    folders = {}
    for host in ("alpha", "beta"):
        folders[host] = tmp_path / host
        with Repository.init(folders[host]) as repo:
            many(repo, "shared")
            many(repo, host)
            repo.create_branch(host, "main")
            heads[host] = repo.branch_head(host)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def push(host: str) -> None:
        try:
            with Repository.open(folders[host]) as repo, place.store() as remote:
                start.wait()
                Sync(repo, remote, "origin", host).push([host])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=push, args=(host,)) for host in heads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not errors, errors
    assert len(packs_of(place)) == 4
    with clone_of(place, tmp_path / "c") as other:
        for host, head in heads.items():
            assert other.branch_head(host) == head
            assert other.read(host, f"{host}/f9.txt") == f"{host} file 9\n".encode()
            assert other.read(host, "shared/f9.txt") == b"shared file 9\n"


def _flip(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0x55]) + blob[at + 1 :]


def test_a_damaged_index_is_read_from_its_pack_else_named(tmp_path: Path, place: Place) -> None:
    helix = new_store(tmp_path / "a", place)
    with Repository.open(tmp_path / "a") as repo:
        many(repo, "one")
    ok(helix("push"))
    pack, index = sorted(packs_of(place))
    with place.store() as remote:
        stored = remote._client.get(index) or b""
        remote._client.raw_put(index, _flip(stored, 40))
    with clone_of(place, tmp_path / "b") as other:  # from the pack's own copy
        assert other.read("main", "one/f3.txt") == b"one file 3\n"
    with place.store() as remote:
        body = remote._client.get(pack) or b""
        remote._client.raw_put(pack, _flip(body, len(body) - 20))  # its copy too
    failed = fails(
        run_helix("clone", place.url, tmp_path / "c", "--endpoint", place.endpoint, store=None)
    )
    assert "is damaged" in failed.err and "Traceback" not in failed.err
    assert not (tmp_path / "c").exists()


def test_a_corrupt_copy_is_refused_and_another_read(tmp_path: Path, place: Place) -> None:
    """An object in a pack and loose: its packed bytes damaged, the loose copy serves;
    both damaged, the read is refused."""
    records = {object_id(r): r for r in (b"HLX record %d " % i * 40 for i in range(PACK_MIN))}
    target = ObjectId(next(iter(records)))
    with place.store() as remote:
        remote.upload(records)
        remote.write({target: records[target]})  # a loose copy as well
        pack = next(k for k in packs_of(place) if not k.endswith(".idx"))
        slot = remote._packs.slots(target)[0]
        body = remote._client.get(pack) or b""
        remote._client.raw_put(pack, _flip(body, slot.offset + slot.length - 1))
    with place.store() as fresh:
        assert fresh.get(target) == records[target]
        assert fresh.get_run(list(records)) == list(records.values())
        key = fresh._key(target)
        fresh._client.raw_put(key, _flip(fresh._client.get(key) or b"", -1))
    with place.store() as fresh, pytest.raises(CorruptObject, match="corrupt"):
        fresh.get(target)


def test_sealed_packs_show_no_id_and_no_content(tmp_path: Path, place: Place) -> None:
    """ADR 0057 with packs: records sealed one by one, the index sealed whole."""
    helix = new_store(tmp_path / "a", place, "--encrypt")
    with Repository.open(tmp_path / "a") as repo:
        many(repo, "swordfish")
        ids = list(repo.store.ids())
    ok(helix("push"))
    blobs = []
    with place.store() as remote:
        for key in packs_of(place):
            blobs.append(remote._client.get(key) or b"")
    assert len(blobs) == 2 and all(blob for blob in blobs)
    for blob in blobs:
        assert b"swordfish" not in blob
        assert not [oid for oid in ids if oid in blob or oid.hex().encode() in blob]
    key = tmp_path / "key.txt"
    key.write_text(ok(helix("remote", "key", "export", "origin")).out)
    clone = tmp_path / "b"
    ok(run_helix("clone", place.url, clone, "--endpoint", place.endpoint, "--key", key, store=None))
    assert ok(helix_on(clone)("cat", "main", "swordfish/f5.txt")).out == "swordfish file 5\n"


def test_a_corrupt_packed_copy_is_read_from_another_pack(place: Place) -> None:
    """Two pushers that packed the same records at once: one pack's copy damaged, the
    other pack's serves."""
    records = {object_id(r): r for r in (b"HLX twice %d " % i * 40 for i in range(PACK_MIN))}
    target = ObjectId(next(iter(records)))
    with place.store() as first, place.store() as second:
        first._packs.ensure()
        second._packs.ensure()  # neither knows of the other's pack: both send
        first.upload(records)
        second.upload(records)
        slot = first._packs.slots(target)[0]
    assert len(packs_of(place)) == 4
    with place.store() as remote:
        key = f"packs/{slot.pack}"
        body = remote._client.get(key) or b""
        remote._client.raw_put(key, _flip(body, slot.offset + 10))
    with place.store() as fresh:
        assert len(fresh.get_run([target])) == 1
        assert fresh.get(target) == records[target]
        assert fresh.get_run(list(records)) == list(records.values())


def test_a_reader_open_before_a_pack_was_stored_finds_it(place: Place) -> None:
    """A mount's remote store lives across rounds: another machine's pack, stored
    since it listed, is found by one new listing, not object by object."""
    records = {object_id(r): r for r in (b"HLX later %d " % i * 40 for i in range(PACK_MIN))}
    with place.store() as reader:
        reader._packs.ensure()
        with place.store() as writer:
            writer.upload(records)
        assert reader.get_run(list(records)) == list(records.values())
        assert reader._packs.has(ObjectId(next(iter(records))))
