"""A full disk: the store refuses a write before RocksDB sees it, writes nothing of it,
and takes writes again once there is room; RocksDB's own failures become StoreFull or
DiskFailed, with the errno a mount answers."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helixfs.errors import DiskFailed, StoreFull
from helixfs.ids import ObjectId, object_id
from helixfs.store import RefUpdate
from helixfs.store.rocks import RocksStore
from helixfs.store.rocksdb_open import disk_error
from helixfs.store.space import RESERVE_BYTES

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


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 250 MB tmpfs (the tests run as root, as the mount tests do)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=250m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a small tmpfs: {done.stderr}")
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
