"""mount/mount.helixfs, the mount(8) helper behind an /etc/fstab line."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
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


# mount(8) itself, in a private mount namespace whose /sbin (where it looks for helpers)
# is overlaid with mount/'s helpers as the README installs them: the real path of an
# fstab mount, environment cleaning included, without touching the system.
MOUNT_8 = r"""
set -eu
mount -t overlay overlay -o "lowerdir=$HELPERS:$(realpath /sbin)" "$(realpath /sbin)"
for type in helixfs fuse.helixfs; do
    mount -t "$type" -o "defaults,noauto,quiet_window=0" "$STORE" "$TARGET"
    echo "$type" > "$TARGET/by-$type.txt"
    umount "$TARGET"
    until flock -n "$STORE/mount.lock" true; do sleep 0.1; done  # the daemon has exited
done
"""


def test_mount_8_runs_the_helper_for_both_type_names(tmp_path: Path) -> None:
    """`mount -t helixfs` and `mount -t fuse.helixfs` (the type /proc/mounts shows) both
    reach the helper, and it finds helix although mount(8) drops PATH from its helpers'
    environment: it used to fall back to the system python3, which has no pyfuse3."""
    require_fuse()
    store, target, helpers = tmp_path / "store", tmp_path / "work", tmp_path / "sbin"
    helix("init", store)
    target.mkdir()
    helpers.mkdir()
    for name in HELPER.parent.glob("mount.*"):
        shutil.copy(name, helpers / name.name, follow_symlinks=False)
    helix_bin = shutil.which("helix", path=str(Path(sys.executable).parent)) or "helix"
    env = {**os.environ, "HELPERS": str(helpers), "STORE": str(store), "TARGET": str(target)}
    env["HELIX_BIN"] = shutil.which(helix_bin) or helix_bin
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", MOUNT_8],
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        log = helix("--store", store, "log", "--json").stdout
        assert "by-helixfs.txt" in log and "by-fuse.helixfs.txt" in log
    finally:
        _end_daemon(store)


def test_without_helix_the_helper_says_what_to_do(tmp_path: Path) -> None:
    """What mount(8) gives a helper when helix is in a virtualenv: no helix on PATH."""
    store, target = tmp_path / "store", tmp_path / "work"
    target.mkdir()
    done = subprocess.run(
        ["/bin/sh", str(HELPER), str(store), str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(tmp_path)},
    )
    assert done.returncode == 1
    assert "HELIX_BIN" in done.stderr and "Traceback" not in done.stderr


def _end_daemon(store: Path) -> None:
    """A daemon left in the namespace (the script failed half-way) is not reachable by
    fusermount3 from here: end it by the pid its lock names; its mount goes with it."""
    lock = store / "mount.lock"
    text = lock.read_text() if lock.exists() else ""
    if '"pid"' in text:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(json.loads(text)["pid"]), signal.SIGKILL)
