"""`kill -9` of the daemon during a write storm loses no file whose close() returned."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time

import pytest
from mount_harness import MountFactory, helix, is_mounted

pytestmark = [pytest.mark.mount, pytest.mark.timeout(240)]

# Writes files until it fails (the mount dies under it); prints each one after close()
# returned, so what it printed is exactly what the filesystem promised to keep.
STORM = r"""
import hashlib, os, sys
i = 0
while True:
    name = f"storm/d{i % 8}/f{i:05d}"
    data = (f"{i}:" * (1 + i % 500)).encode()
    try:
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "wb") as f:
            f.write(data)
            if i % 5 == 0:
                f.write(os.urandom(70_000))  # some larger, chunked files too
                data = None
            if i % 40 == 20:  # and big ones, whose chunks skip the write-ahead log
                f.write(os.urandom(20 << 20))
        if data is None:
            data = open(name, "rb").read()
    except OSError:
        break
    print(name, hashlib.sha256(data).hexdigest(), flush=True)
    i += 1
"""


@pytest.mark.parametrize("quiet_window_ms", [0, 60_000])
def test_kill9_during_write_storm_keeps_every_closed_file(
    make_mount: MountFactory, quiet_window_ms: int
) -> None:
    mount = make_mount(quiet_window_ms)
    writer = subprocess.Popen(
        [sys.executable, "-c", STORM], cwd=mount.path, stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    first = writer.stdout.readline()  # the storm is under way
    assert first
    time.sleep(1.5)  # let it run; not a timing assertion, only the size of the storm
    mount.kill9()
    rest, _ = writer.communicate(timeout=60)
    promised = dict(line.split(" ") for line in (first + rest).splitlines() if " " in line)
    assert len(promised) > 10

    remounted = make_mount(quiet_window_ms, store=mount.store)
    missing, wrong = [], []
    for name, digest in promised.items():
        try:
            data = (remounted.path / name).read_bytes()
        except FileNotFoundError:
            missing.append(name)
            continue
        if hashlib.sha256(data).hexdigest() != digest:
            wrong.append(name)
    assert not missing and not wrong, f"missing {missing[:5]}, wrong {wrong[:5]}"
    # The recovered state is committed, not only visible.
    committed = json.loads(remounted.helix("ls", "HEAD", "storm/d0", "--json").stdout)
    names = {f"storm/d0/{entry['name']}" for entry in committed}
    assert {n for n in promised if n.startswith("storm/d0/")} <= names
    remounted.stop()
    fsck = helix("--store", mount.store, "fsck", check=False)
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


def test_dead_mount_after_kill9_is_reported_and_umount_clears_it(
    make_mount: MountFactory,
) -> None:
    mount = make_mount(0)
    (mount.path / "kept.txt").write_text("kept\n")
    mount.kill9(leave_dead_mount=True)
    again = helix("mount", mount.store, mount.path, check=False)
    assert again.returncode == 1
    assert "helix umount" in again.stderr
    helix("umount", mount.path)
    assert not is_mounted(mount.path)
    mount.start("--quiet-window", "0")
    assert (mount.path / "kept.txt").read_text() == "kept\n"
