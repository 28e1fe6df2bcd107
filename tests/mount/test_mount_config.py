"""`helix config` on a mounted store: the mount reads the files at start, a `set` goes
to its daemon and applies what can change live, and says what waits for a remount."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mount_harness import MountFactory, helix

pytestmark = [pytest.mark.mount, pytest.mark.timeout(180)]


def test_config_on_a_mount_applies_live_and_names_what_needs_a_remount(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    store = tmp_path / "configured"
    helix("init", store)
    helix("--store", store, "config", "set", "cache.records", "2MiB")  # read at mount
    mnt = make_mount(0, store=store)
    (mnt.path / "a.txt").write_text("saved through the mount\n" * 100)

    said = mnt.helix("config", "set", "cache.frames", "3MiB").stdout
    assert "applied cache.frames to the running mount" in said
    for days in ("7d", "8d"):  # the mount keeps its half-life: both times a remount
        said = mnt.helix("config", "set", "memory.half_life", days).stdout
        assert "memory.half_life takes effect when the store is mounted again" in said
    said = mnt.helix("config", "set", "mount.quiet_window", "5s").stdout
    assert "the mount's flag keeps mount.quiet_window at 0.0" in said  # --quiet-window 0
    bad = mnt.helix("config", "set", "cache.frames", "lots", check=False)
    assert bad.returncode == 1 and "the keys are:" in bad.stderr

    doc = json.loads(mnt.helix("--json", "stats").stdout)
    assert doc["caches"]["records"]["limit_bytes"] == 2 << 20
    assert doc["caches"]["frames"]["limit_bytes"] == 3 << 20
    assert doc["daemon"]["rss_bytes"] > 0
    assert doc["activity"]["commits_last_hour"] >= 2  # init + the save
