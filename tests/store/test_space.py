"""A full disk: the store refuses a write before RocksDB sees it, writes nothing of it,
and takes writes again once there is room; RocksDB's own failures become StoreFull or
DiskFailed, with the errno a mount answers."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helixfs.cli.output import human_bytes
from helixfs.errors import DiskFailed, StoreFull
from helixfs.ids import ObjectId, object_id
from helixfs.store import RefUpdate
from helixfs.store.rocks import RocksStore
from helixfs.store.rocksdb_open import disk_error
from helixfs.store.space import RESERVE_BYTES
from helixfs.vcs.objects import encode_blob
from helixfs.vcs.repo import Repository

pytestmark = pytest.mark.timeout(60)


class Disk:
    """os.statvfs with a settable amount of free space (the one OS call the guard makes)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.free = 10 << 30
        real = os.statvfs

        def statvfs(path: str | Path) -> os.statvfs_result:
            found = real(path)
            fields = list(found)
            fields[4] = self.free // found.f_frsize  # f_bavail
            return os.statvfs_result(fields)

        monkeypatch.setattr(os, "statvfs", statvfs)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Disk:
    return Disk(monkeypatch)


@pytest.fixture
def store(tmp_path: Path, disk: Disk) -> Iterator[RocksStore]:
    opened = RocksStore(tmp_path / "store")
    yield opened
    opened.close()


def record(data: bytes) -> tuple[ObjectId, bytes]:
    return object_id(data), data


def test_a_write_that_would_fill_the_disk_is_refused_and_changes_nothing(
    store: RocksStore, disk: Disk
) -> None:
    oid, data = record(os.urandom(1 << 20))
    disk.free = RESERVE_BYTES + (1 << 20)  # room for the record, not for its flush too
    with pytest.raises(StoreFull, match="no space left") as refused:
        store.write({oid: data}, [RefUpdate("branches/main", oid)])
    assert refused.value.errno == errno.ENOSPC
    assert not store.contains(oid) and store.ref("branches/main") is None

    disk.free = RESERVE_BYTES + (3 << 20)  # space freed: taken at once, no reopen
    store.write({oid: data}, [RefUpdate("branches/main", oid)])
    assert store.get(oid) == data and store.ref("branches/main") == oid


def test_the_guard_looks_at_the_disk_again_when_its_count_runs_out(
    store: RocksStore, disk: Disk
) -> None:
    disk.free = RESERVE_BYTES + (7 << 20)
    for _ in range(3):  # 3 x 2 x 1 MiB counted against 7 MiB of room
        store.write(dict([record(os.urandom(1 << 20))]))
    disk.free = RESERVE_BYTES  # someone else filled the disk meanwhile
    with pytest.raises(StoreFull):
        store.write(dict([record(os.urandom(1 << 20))]))


def test_rocksdb_failures_become_store_errors(tmp_path: Path) -> None:
    full = disk_error(tmp_path, Exception("IO error: No space left on device: x.log"))
    assert isinstance(full, StoreFull) and full.errno == errno.ENOSPC
    assert "opened again" in str(full)
    failed = disk_error(tmp_path, Exception("IO error: Input/output error: x.log"))
    assert isinstance(failed, DiskFailed) and failed.errno == errno.EIO


def mount_tmpfs(disk: Path, size: str) -> None:
    """A real tmpfs of `size` at `disk` (the tests run as root, as the mount tests do)."""
    disk.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a small tmpfs: {done.stderr}")


def resize(disk: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 250 MB tmpfs."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "250m")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.timeout(180)
def test_gc_compaction_never_fills_the_disk_it_was_run_to_free(small_disk: Path) -> None:
    """Live and deleted chunks share blob files; moving the live ones out rewrites
    them all before the old files go. With less room than that, the compaction after
    gc's deletes filled the disk: RocksDB then refused every write until the store was
    opened again, and each later gc did the same, so the space never came back."""
    store = RocksStore(small_disk / "store")
    try:
        kept, dropped = {}, []
        for n in range(1_600):  # 100 MiB kept, 50 MiB deleted, interleaved in blob files
            oid, data = record(os.urandom(96 << 10))
            store.write({oid: data}, bulk=n % 3 != 2)
            if n % 3 == 1:
                dropped.append(oid)
            else:
                kept[oid] = data
        store.write({}, [RefUpdate("refs/x", b"1", expected=None)])  # lands the bulk writes
        store.delete(dropped)
        store.compact()
        oid, data = record(b"written after gc")
        store.write({oid: data}, [RefUpdate("refs/x", b"2", expected=b"1")])
        assert store.get(oid) == data
        assert all(store.get(oid) == data for oid, data in kept.items())
    finally:
        store.close()


def used(disk: Path) -> int:
    found = os.statvfs(disk)
    return (found.f_blocks - found.f_bfree) * found.f_frsize


def interleaved_repo(path: Path, size: str) -> dict[str, bytes]:
    """A repository on a disk of `size` whose blob files hold 100 MiB of live files and
    100 MiB of files no ref reaches, interleaved as a mount's saves of several branches
    leave them. The files' blob records are stored first, as one stream; the commit of the live ones
    finds them stored (made on a larger disk: the commit claims room for them all).
    Returns the live files."""
    kept: dict[str, bytes] = {}
    resize(path.parent, "600m")
    with Repository.init(path) as repo:
        for n in range(2_134):
            data = os.urandom(96 << 10)
            repo.store.write(dict([record(encode_blob(data))]), bulk=True)
            if n % 2:
                kept[f"f{n}"] = data
        repo.commit(dict(kept), "the live half")
    resize(path.parent, size)
    return kept


@pytest.mark.timeout(300)
def test_gc_on_a_disk_without_room_for_every_live_chunk_frees_in_steps(
    tmp_path: Path,
) -> None:
    """gc's compaction moved every live chunk out of the shared blob files in one go, so
    with less room than the live chunks it moved none (since the disk-full fix) and a
    full disk got nothing back from gc, ever. It now moves the oldest files' chunks
    first, as many as the room allows, and the room grows as the old files go."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "300m")
    try:
        kept = interleaved_repo(disk / "store", "300m")
        before = used(disk)
        assert os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize < (100 << 20) + RESERVE_BYTES
        with Repository.open(disk / "store") as repo:
            report = repo.gc()
            assert report.unreachable == 1_067
            assert before - used(disk) > 90 << 20  # of the 100 MiB no ref reaches
            assert report.free_needed_bytes == 0 == report.kept_on_disk_bytes
            assert repo.fsck().ok
            repo.commit({"after": b"written after gc"}, "writable")
            assert all(repo.read("HEAD", name) == data for name, data in kept.items())
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.timeout(300)
def test_gc_says_when_deleted_data_stays_on_disk_and_frees_it_once_there_is_room(
    tmp_path: Path,
) -> None:
    """With too little room for even one step, gc printed its freed bytes as if all
    went well: the user who ran it because the disk was full learnt nothing (only a log
    line said the deleted chunks stayed). And a gc with nothing left to delete did not
    compact, so making room and running gc again gave nothing back either."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "250m")
    try:
        interleaved_repo(disk / "store", "250m")
        report = json.loads(helix(disk / "store", "gc", "--json"))
        assert report["unreachable"] == 1_067
        assert report["kept_on_disk_bytes"] > 90 << 20
        needed = report["free_needed_bytes"]
        assert needed > 0
        human = helix(disk / "store", "gc")
        assert f"needs {human_bytes(needed)} more free space" in human
        assert "run `helix gc` again" in human
        before = used(disk)
        resize(disk, "400m")  # the user frees room outside the store
        again = json.loads(helix(disk / "store", "gc", "--json"))
        assert again["unreachable"] == 0 and again["free_needed_bytes"] == 0
        assert again["kept_on_disk_bytes"] == 0 and before - used(disk) > 90 << 20
        assert helix(disk / "store", "fsck").startswith("ok:")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.timeout(300)
def test_a_gc_killed_between_its_steps_leaves_the_store_whole(tmp_path: Path) -> None:
    """Each step is one RocksDB compaction: a kill between or during them loses nothing
    and leaves a store fsck finds clean, whose next gc frees the rest."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, "300m")
    try:
        kept = interleaved_repo(disk / "store", "300m")
        gc = subprocess.Popen(
            [sys.executable, "-c", KILLED_GC, str(disk / "store")],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert gc.stderr is not None
        for line in gc.stderr:
            if "moved live chunks out of" in line:
                gc.kill()  # the first step is done, the next one under way (or not yet)
                break
        gc.wait()
        assert gc.returncode == -signal.SIGKILL
        with Repository.open(disk / "store") as repo:
            assert repo.fsck().ok
            assert all(repo.read("HEAD", name) == data for name, data in kept.items())
            assert repo.gc().kept_on_disk_bytes == 0  # nothing left to delete: it compacts
            assert repo.fsck().ok
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


KILLED_GC = """
import logging, sys
from helixfs.vcs.repo import Repository
logging.basicConfig(level=logging.INFO)
with Repository.open(sys.argv[1]) as repo:
    repo.gc()
"""


def helix(store: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "helixfs.cli.main", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.timeout(300)
def test_gc_on_a_full_disk_says_its_trees_were_not_repacked(small_disk: Path) -> None:
    """The repack of trees (ADR 0027) the space guard refused on a full disk was only
    logged: gc printed repacked 0 as if there were nothing to pack. It leaves the trees
    whole, loses nothing, and a gc once there is room packs them."""
    with Repository.init(small_disk / "store") as repo:
        for n in range(40):
            repo.commit({f"dir/f{i}": b"%d" % (n * (i % 7 == n % 7)) for i in range(300)}, f"c{n}")
        files = {
            entry.name: repo.read("HEAD", b"dir/" + entry.name) for entry in repo.ls("HEAD", "dir")
        }
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    (small_disk / "filler").write_bytes(bytes(free - RESERVE_BYTES + (4 << 20)))
    report = json.loads(helix(small_disk / "store", "gc", "--json"))
    assert report["repacked"] == 0 and "no space left" in report["not_repacked"]
    assert "warning: trees were not repacked: no space left" in helix(small_disk / "store", "gc")
    (small_disk / "filler").unlink()
    again = json.loads(helix(small_disk / "store", "gc", "--json"))
    assert again["repacked"] > 0 and again["not_repacked"] is None
    assert helix(small_disk / "store", "fsck").startswith("ok:")
    with Repository.open(small_disk / "store") as repo:
        assert all(repo.read("HEAD", b"dir/" + name) == data for name, data in files.items())


@pytest.mark.timeout(120)
def test_a_store_closed_on_a_full_disk_closes_and_opens_again(small_disk: Path) -> None:
    """Unlogged chunks of a save under way could not be flushed at close on a full disk:
    close raised RocksDB's bare Exception (a traceback at a daemon's exit) and left the
    store locked in this process for good."""
    store = RocksStore(small_disk / "store")
    oid, data = record(encode_blob(b"committed before the disk filled"))
    store.write({oid: data}, [RefUpdate("refs/x", b"1", expected=None)])
    for _ in range(200):  # 12.5 MiB in the memtable, no write-ahead log
        store.write(dict([record(encode_blob(os.urandom(64 << 10)))]), bulk=True)
    with open(small_disk / "filler", "wb") as filler, pytest.raises(OSError):
        while True:
            filler.write(bytes(1 << 20))
    store.close()
    (small_disk / "filler").unlink()
    with RocksStore(small_disk / "store") as again:
        assert again.ref("refs/x") == b"1" and again.get(oid) == data
