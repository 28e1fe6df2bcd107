"""Reads through a real mount: an unchanged file is read again from the kernel's page
cache (keep_cache); a changed one never shows its old pages."""

from __future__ import annotations

import os
from pathlib import Path

from mount_harness import Mount

SIZE = 4 << 20  # chunked in the store, and several kernel read requests


def replied_bytes(pid: int) -> int:
    """Bytes the daemon has written so far: its replies to the kernel are most of them,
    so a read it served shows up here, a read the page cache served does not."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/PID/io")


def read_all(path: Path) -> bytes:
    with open(path, "rb", buffering=0) as f:
        return f.read()


def test_an_unchanged_file_is_read_again_from_the_page_cache(mnt: Mount) -> None:
    data = os.urandom(SIZE)
    path = mnt.path / "big.bin"
    path.write_bytes(data)
    mnt.stop()  # the written pages may stay cached (they saw every write): start afresh
    mnt.start("--quiet-window", "0")

    before = replied_bytes(mnt.pid)
    assert read_all(path) == data  # nothing cached by this mount yet: from the daemon
    first = replied_bytes(mnt.pid) - before
    assert first >= SIZE

    before = replied_bytes(mnt.pid)
    assert read_all(path) == data  # unchanged since: the kernel keeps its pages
    assert replied_bytes(mnt.pid) - before < SIZE // 4

    changed = os.urandom(SIZE)
    path.write_bytes(changed)
    assert read_all(path) == changed  # changed: never the old pages


def test_new_times_on_a_closed_file_keep_its_pages(mnt: Mount) -> None:
    """tar, cp -p and rsync set a file's times right after they close it. The bytes
    are the ones the kernel saw written, so the next read comes from its pages: a
    grep -r after a tar x used to read every file again from the daemon."""
    data = os.urandom(SIZE)
    path = mnt.path / "extracted.bin"
    path.write_bytes(data)
    os.utime(path, ns=(1_600_000_000 * 10**9, 1_600_000_000 * 10**9))

    before = replied_bytes(mnt.pid)
    assert read_all(path) == data
    assert replied_bytes(mnt.pid) - before < SIZE // 4
    assert path.stat().st_mtime_ns == 1_600_000_000 * 10**9

    changed = os.urandom(SIZE)
    path.write_bytes(changed)
    os.utime(path, ns=(1_500_000_000 * 10**9, 1_500_000_000 * 10**9))
    assert read_all(path) == changed  # new bytes, then new times: never the old pages
