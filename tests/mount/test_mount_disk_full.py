"""A full disk under the store: saves fail with ENOSPC, the mount lives on, and saves
work again once space is freed. Before, the first refused write took the daemon down
(the mount vanished, later writes went into the bare mount point), and RocksDB refused
every write after it until the store was opened again."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_harness import HELIX, MountFactory, helix, is_mounted, wait_until

from helixfs.store.space import RESERVE_BYTES

pytestmark = [pytest.mark.mount, pytest.mark.timeout(240)]

DISK_MB = 160  # the store keeps 64 MiB free (store/space.py)
FILE_BYTES = 4_000_000


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs (the tests run as root: CI does, and FUSE mounts need it here)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a small tmpfs for the full-disk test: {done.stderr}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def leave_free(disk: Path, filler: Path, free: int) -> None:
    """Fill `disk` with `filler` until only `free` bytes are left on it."""
    stats = os.statvfs(disk)
    filler.write_bytes(b"\1" * (stats.f_bavail * stats.f_frsize - free))


def tag_files(folder: Path, count: int) -> list[Path]:
    """Files with two big xattrs each (120 KB): a change persisted by no save (no close
    comes after it), held by the quiet window until a commit writes their folder's
    tree. Setting them after the files are closed keeps the store's disk still: each
    close would save the folder with the xattrs so far, megabytes of tree each time."""
    folder.mkdir()
    paths = [folder / f"f{n}" for n in range(count)]
    for path in paths:
        path.touch()
    for n, path in enumerate(paths):
        for name in ("user.a", "user.b"):
            os.setxattr(path, name, bytes([n]) * 60_000)
    return paths


def fill(folder: Path, stop_at: int) -> tuple[dict[str, bytes], OSError | None]:
    """Write files until the disk refuses one: the files whose close returned, and
    the refusal."""
    written: dict[str, bytes] = {}
    for n in range(stop_at):
        data = os.urandom(FILE_BYTES)
        try:
            with open(folder / f"f{n}.bin", "wb") as out:
                out.write(data)
        except OSError as exc:
            return written, exc
        written[f"f{n}.bin"] = data
    return written, None


@pytest.mark.parametrize("quiet_window_ms", [0, 300])
def test_a_full_disk_gives_enospc_and_the_mount_recovers_when_space_is_freed(
    make_mount: MountFactory, small_disk: Path, quiet_window_ms: int
) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(os.urandom(40 << 20))
    store = small_disk / "store"
    helix("init", store)
    mnt = make_mount(quiet_window_ms, store=store)
    try:
        written, refused = fill(mnt.path, stop_at=2 * DISK_MB * 1_000_000 // FILE_BYTES)
        assert refused is not None and refused.errno == errno.ENOSPC, refused
        assert written, "the disk refused even the first file"
        assert is_mounted(mnt.path), "the daemon died on a full disk"
        for name, data in written.items():
            assert (mnt.path / name).read_bytes() == data
        assert mnt.helix("log", "-n", "1").returncode == 0

        filler.unlink()  # room again: the next save works, without a remount
        (mnt.path / "after.txt").write_text("saved once there was room\n")
        wait_until(lambda: "after.txt" in mnt.helix("log", "-n", "1").stdout, what="commit")
        assert (mnt.path / "after.txt").read_text() == "saved once there was room\n"
    finally:
        assert mnt.stop() == 0, "".join(mnt.output)
    assert helix("--store", store, "fsck").returncode == 0
    for name, data in written.items():
        stored = subprocess.run(
            [*HELIX, "--store", str(store), "cat", "HEAD", name], capture_output=True, check=True
        )
        assert stored.stdout == data


def test_a_head_switch_the_disk_has_no_room_for_fails_the_write(
    make_mount: MountFactory, small_disk: Path
) -> None:
    """`echo feat > .helix/HEAD` on a full disk exited 0 with HEAD unchanged: the switch
    failed at close, whose error the shell ignores. The write itself now fails with
    ENOSPC and nothing changes; once there is room, the same command switches. The
    room checked covers the commit of the pending saves that the switch makes first:
    with room for the ref move only, that commit failed at close just the same."""
    store = small_disk / "store"
    helix("init", store)
    helix("--store", store, "branch", "feat")
    mnt = make_mount(60_000, store=store)  # saves stay pending until the switch
    filler = small_disk / "filler"
    try:
        leave_free(small_disk, filler, RESERVE_BYTES - (32 << 20))  # no room at all
        refused = mnt.sh("echo feat > .helix/HEAD", check=False)
        assert refused.returncode != 0, "the shell reported a switch that did not happen"
        assert "No space left on device" in refused.stderr
        assert (mnt.path / ".helix" / "HEAD").read_text() == "main\n"
        assert mnt.sh("echo main > .helix/HEAD", check=False).returncode == 0  # no switch

        filler.unlink()
        tagged = tag_files(mnt.path / "tagged", count=40)  # a commit of ~5 MB pending
        leave_free(small_disk, filler, RESERVE_BYTES + (1 << 20))  # a ref move fits
        refused = mnt.sh("echo feat > .helix/HEAD", check=False)
        assert refused.returncode != 0, "the shell reported a switch that did not happen"
        assert "No space left on device" in refused.stderr
        assert (mnt.path / ".helix" / "HEAD").read_text() == "main\n"
        assert all(os.getxattr(path, "user.b") for path in tagged)  # still pending
        unsettled = mnt.helix("log", "main", "-n", "1", "--json")  # reads the last commit
        assert "saves not committed yet" in unsettled.stderr
        assert json.loads(unsettled.stdout)[0]["message"] == "init"

        filler.unlink()
        mnt.sh("echo feat > .helix/HEAD")
        assert (mnt.path / ".helix" / "HEAD").read_text() == "feat\n"
        assert "tagged/f0" in mnt.log("main", limit=1)[0]["meta"]["changed"]
    finally:
        filler.unlink(missing_ok=True)
        assert mnt.stop() == 0, "".join(mnt.output)
