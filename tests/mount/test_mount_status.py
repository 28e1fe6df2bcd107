"""`helix status`, `show` and `revert` in a running mount: through its daemon (ADR 0002)."""

from __future__ import annotations

import json
from typing import Any

from mount_harness import Mount, MountFactory, helix


def _status(mount: Mount) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(mount.helix("status", "--json").stdout)
    return doc


def test_status_lists_pending_saves_without_committing_them(make_mount: MountFactory) -> None:
    mount = make_mount(60_000)  # the timer commits nothing during the test
    head = mount.head()
    clean = _status(mount)
    assert clean["mounted"] is True and clean["pending"] is False and clean["commit"] == head
    assert clean["branch"] == "main" and clean["pending_paths"] == []
    (mount.path / "a.txt").write_text("one\n")
    (mount.path / "d").mkdir()
    (mount.path / "d" / "b.txt").write_text("two\n")
    doc = _status(mount)
    assert doc["pending"] is True and doc["commit"] == head  # status committed nothing
    assert {"a.txt", "d/b.txt"} <= set(doc["pending_paths"])
    human = mount.helix("status").stdout
    assert "saves pending" in human and "a.txt" in human
    shown = json.loads(mount.helix("show", "--json").stdout)  # a read settles, as log does
    assert "a.txt" in shown["meta"]["changed"] and shown["processes"]
    assert _status(mount)["pending"] is False


def test_helix_status_file_shows_the_same(make_mount: MountFactory) -> None:
    mount = make_mount(60_000)
    status_file = mount.path / ".helix" / "status"
    assert "no saves pending" in status_file.read_text()
    (mount.path / "new.txt").write_text("x\n")
    text = status_file.read_text()
    assert text.startswith("on branch main at ") and "    new.txt\n" in text
    assert text == mount.helix("status").stdout  # one text, two surfaces
    assert "    new.txt\n" in status_file.read_text()  # reading committed nothing


def test_revert_in_a_mount_changes_its_files(make_mount: MountFactory) -> None:
    mount = make_mount(60_000)  # each read of the log cuts one commit of the saves
    (mount.path / "f.txt").write_text("good\n")
    mount.head()
    (mount.path / "f.txt").write_text("bad\n")
    bad = mount.head()
    (mount.path / "g.txt").write_text("later\n")
    done = json.loads(mount.helix("revert", "--json", bad).stdout)
    assert done["status"] == "applied"
    assert (mount.path / "f.txt").read_text() == "good\n"
    assert (mount.path / "g.txt").read_text() == "later\n"
    mount.stop()
    assert helix("--store", mount.store, "cat", "HEAD", "f.txt").stdout == "good\n"
