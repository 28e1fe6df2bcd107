"""Fixtures for the real-mount tests; the harness itself is in mount_harness.py (a
uniquely named module: several test folders have a `conftest`, so importing helpers
`from conftest` could pick up another folder's)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_harness import Mount, MountFactory, helix, helix_mounts_under, require_fuse


@pytest.fixture(scope="session", autouse=True)
def no_mount_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Belt and braces: whatever a test did, no HelixFS mount under pytest's tmp outlives
    the session (a stuck one would hang the next `rm -rf` of the tmp dir)."""
    yield
    for target in helix_mounts_under(tmp_path_factory.getbasetemp()):
        subprocess.run(["fusermount3", "-u", "-z", target], capture_output=True, check=False)


@pytest.fixture
def make_mount(tmp_path: Path) -> Iterator[MountFactory]:
    """`make_mount(quiet_window_ms=0, *extra_args)`: a fresh store, mounted for real."""
    require_fuse()
    mounts: list[Mount] = []

    def factory(
        quiet_window_ms: float = 0,
        *extra: str,
        store: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Mount:
        index = len(mounts)
        if store is None:
            store = tmp_path / f"store{index}"
            helix("init", store)
        target = tmp_path / f"mnt{index}"
        target.mkdir()
        mount = Mount(store, target)
        mounts.append(mount)
        mount.start("--quiet-window", str(quiet_window_ms), *extra, env=env)
        return mount

    try:
        yield factory
    finally:
        for mount in mounts:
            mount.stop()
            # pytest shows a test's captured output only when it fails: then the daemon's
            # log (a traceback, why it died) is right there in the report
            print(f"--- daemon of {mount.path}: {mount.ended}; its output:")
            print("".join(mount.output))


@pytest.fixture
def mnt(make_mount: MountFactory) -> Mount:
    """A mount committing on every operation (quiet window 0)."""
    return make_mount(0)
