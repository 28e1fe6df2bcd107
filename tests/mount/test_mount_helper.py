"""mount/mount.helixfs, the mount(8) helper behind an /etc/fstab line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mount_harness import detach, helix, is_mounted, require_fuse

pytestmark = [pytest.mark.mount, pytest.mark.timeout(120)]

HELPER = Path(__file__).resolve().parents[2] / "mount" / "mount.helixfs"


def run_helper(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HELPER), *map(str, args)], capture_output=True, text=True, timeout=60
    )


def test_fstab_style_options_mount_and_unmount(tmp_path: Path) -> None:
    require_fuse()
    store, target = tmp_path / "store", tmp_path / "work"
    helix("init", store)
    target.mkdir()
    try:
        done = run_helper(store, target, "-o", "defaults,user,noauto,_netdev,quiet_window=0")
        assert done.returncode == 0, done.stderr
        assert is_mounted(target)
        (target / "from-fstab.txt").write_text("hi\n")
        # quiet_window=0 reached the daemon: the save is a commit already
        assert "from-fstab.txt" in helix("--store", store, "log", "--json").stdout
        helix("umount", target)
        assert not is_mounted(target)
    finally:
        detach(target)


def test_fake_and_usage(tmp_path: Path) -> None:
    store, target = tmp_path / "store", tmp_path / "work"
    target.mkdir()
    fake = run_helper(store, target, "-f", "-v", "-o", "ro")
    assert fake.returncode == 0
    assert "mount" in fake.stderr and "-o ro" in fake.stderr
    assert not is_mounted(target)
    assert run_helper(store).returncode == 2
    assert run_helper(store, target, "--bogus").returncode == 2


def test_mount_errors_come_back_from_the_helper(tmp_path: Path) -> None:
    require_fuse()
    target = tmp_path / "work"
    target.mkdir()
    done = run_helper(tmp_path / "no-store", target, "-o", "defaults")
    assert done.returncode == 1
    assert "helix" in done.stderr
    assert not is_mounted(target)
