"""A damaged store still serves what is intact (issue 27, ADR 0046).

One data block of the `objects` table and one stretch of a blob file are damaged while
the store is closed. fsck names every path that cannot be read and the commits holding
it, the mount serves every other file (the damaged ones give EIO, logged once each with
the path), and `fsck --salvage` builds a clean store of what reads.
"""

from __future__ import annotations

import errno
import os
import random
from pathlib import Path

import pytest
from mount_harness import MountFactory, helix

from helixfs.errors import CorruptObject, NotFound
from helixfs.ids import hex_id
from helixfs.store import rocksdb_open
from helixfs.vcs.repo import OBJECTS_DIR, Repository

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]

FILES = 3000  # small files: ~80 per 16 KiB table block, with ~50 trees and commits in all
BIG = "big/video.bin"  # chunked: its chunks are in a blob file


def _build(store: Path) -> dict[str, bytes]:
    """Two commits (the second changes a few files), compacted: one table."""
    rng = random.Random(27)
    files = {f"d{n % 20}/f{n}.txt": rng.randbytes(150) + b"%d\n" % n for n in range(FILES)}
    files[BIG] = rng.randbytes(3 << 20)
    with Repository.init(store) as repo:
        repo.commit(files, "first")
        edited = {name: files[name] + b"second\n" for name in list(files)[:5]}
        files.update(edited)
        repo.commit(edited, "second")
        repo.store.compact()
    return files


def _objects_table(store: Path) -> Path:
    db = rocksdb_open.open_db(store / OBJECTS_DIR)
    try:
        (name,) = [f["name"] for f in db.live_files() if len(f["start_key"]) == 32]
    finally:
        db.close()
    return store / OBJECTS_DIR / name.lstrip("/")


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    for at in range(offset, offset + 8):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _damage(store: Path, files: list[str]) -> None:
    """8 bytes of a data block of `objects` that holds neither a commit nor a tree (those
    take what is below them: fsck names that too, but nothing is left to serve), and 8
    bytes in the middle of the blob file."""
    table = _objects_table(store)
    clean = table.read_bytes()
    for offset in range(len(clean) // 8, len(clean) * 3 // 4, 16 << 10):
        _flip(table, offset)
        if _only_files_lost(store, files):
            break
        table.write_bytes(clean)
    else:
        raise AssertionError("no block of the table holds only file contents")
    (blob,) = (store / OBJECTS_DIR).glob("*.blob")
    _flip(blob, blob.stat().st_size // 2)


def _only_files_lost(store: Path, files: list[str]) -> bool:
    with Repository.open(store) as repo:
        try:
            for commit in repo.log("HEAD"):
                for _ in repo.trees.walk(commit.tree):
                    pass
        except CorruptObject:
            return False
        return bool(_unreadable(repo, files))


def _unreadable(repo: Repository, paths: list[str]) -> set[str]:
    lost = set()
    for path in paths:
        try:
            repo.read("HEAD", path)
        except CorruptObject:
            lost.add(path)
    return lost


def test_a_damaged_store_serves_what_is_intact(make_mount: MountFactory, tmp_path: Path) -> None:
    store = tmp_path / "store"
    files = _build(store)
    _damage(store, list(files))
    with Repository.open(store) as repo:
        lost = _unreadable(repo, list(files))  # read by the API: the truth to compare with
        head = hex_id(repo.resolve("HEAD"))[:12]
    assert BIG in lost and 0 < len(lost) < len(files) // 2, lost

    checked = helix("--store", store, "fsck", check=False)
    assert checked.returncode == 1
    named = [line for line in checked.stdout.splitlines() if "unreadable object" in line]
    for path in lost:
        assert any(f"{path}" in line and head in line for line in named), path

    mount = make_mount(0, store=store)
    for _ in range(2):  # the second read of a damaged file is not logged again
        for path, data in files.items():
            if path in lost:
                with pytest.raises(OSError) as failed:
                    (mount.path / path).read_bytes()
                assert failed.value.errno == errno.EIO, path
            else:
                assert (mount.path / path).read_bytes() == data, path
    assert sorted(os.listdir(mount.path)) == sorted({p.split("/")[0] for p in files})
    mount.stop()
    log = "".join(mount.output)
    for path in lost:
        assert log.count(f"unreadable in main: {path} (EIO)") == 1, path

    salvaged = tmp_path / "salvaged"
    done = helix("--store", store, "fsck", "--salvage", salvaged, check=False)
    assert done.returncode == 1  # the problems are still reported
    assert all(f"left out: branches/main: {path}" in done.stdout for path in lost)
    helix("--store", salvaged, "fsck")
    with Repository.open(salvaged) as clean:
        for path, data in files.items():
            if path in lost:
                with pytest.raises(NotFound):
                    clean.entry("main", path)
            else:
                assert clean.read("main", path) == data


def _spoil(store: Path, oid: bytes) -> None:
    """One record's stored bytes changed (its last byte flipped): it reads as a damaged
    block's records do, CorruptObject (ADR 0036), wherever in the table it is."""
    db = rocksdb_open.open_db(store / OBJECTS_DIR)
    try:
        objects = db.get_column_family("objects")
        value = bytearray(objects[oid])
        value[-1] ^= 0xFF
        objects[oid] = bytes(value)
    finally:
        db.close()


def test_a_damaged_head_is_served_from_its_newest_readable_ancestor(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    """The head's root tree unreadable: the mount starts and shows the newest ancestor
    that reads, read-only, and says so once; other branches are served as usual. The
    head commit itself unreadable (its parents are named only in it): an empty folder."""
    store = tmp_path / "store"
    with Repository.init(store) as repo:
        repo.commit({"kept/a": b"a", "b": b"b"}, "first")
        repo.create_branch("other")
        repo.commit({"kept/c": b"c"}, "second")
        head = repo.resolve("HEAD")
        older = hex_id(repo.commit_info(head).parents[0])[:12]
        tree = repo.commit_info(head).tree
    _spoil(store, tree)
    mount = make_mount(0, store=store)
    assert (mount.path / "kept" / "a").read_bytes() == b"a"
    assert not (mount.path / "kept" / "c").exists()  # only in the head that cannot be read
    with pytest.raises(OSError) as refused:
        (mount.path / "new").write_bytes(b"x")
    assert refused.value.errno == errno.EROFS
    (mount.path / ".helix" / "branches" / "other" / "more").write_bytes(b"m")  # served
    assert mount.stop() == 0
    log = "".join(mount.output)
    assert log.count(f"head {hex_id(head)[:12]} cannot be read; showing its ancestor {older}") == 1

    _spoil(store, head)
    mount = make_mount(0, store=store)
    assert os.listdir(mount.path) == []
    assert (mount.path / ".helix" / "branches" / "other" / "more").read_bytes() == b"m"
    assert mount.stop() == 0
    assert "showing an empty folder (no ancestor can be read)" in "".join(mount.output)
