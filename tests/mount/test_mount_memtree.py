"""Memory that follows the tree through a real mount (ADR 0063): an edit saved in the
mount turns a memory about the file stale; a memory written in a branch's folder is
that branch's until `helix merge` brings it into the trunk."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from mount_harness import Mount, MountFactory, helix, wait_until

pytestmark = pytest.mark.timeout(240)
LEXICAL = {"HELIX_MEMORY_LEXICAL": "1"}


def in_folder(folder: Path, *argv: str) -> Any:
    """`helix --json ARGV` run in `folder` of the mount, with no --store: the daemon
    answers, in that folder's branch."""
    done = helix("--json", *argv, cwd=folder, env={**os.environ, **LEXICAL})
    return json.loads(done.stdout)


def committed(mnt: Mount, rev: str, path: str, text: str) -> bool:
    done = mnt.helix("cat", rev, f"/{path}", check=False)
    return done.returncode == 0 and done.stdout == text


def test_memory_follows_edits_and_branches_in_a_mount(make_mount: MountFactory) -> None:
    mnt = make_mount(0, env={**os.environ, **LEXICAL})
    (mnt.path / "src").mkdir()
    (mnt.path / "src" / "auth.py").write_text("def login(): pass\n")
    wait_until(lambda: committed(mnt, "HEAD", "src/auth.py", "def login(): pass\n"))
    made = in_folder(mnt.path / "src", "remember", "--source", "auth.py:1", "--", "login is a stub")
    assert made["memory"]["source"]["file"] == "src/auth.py"  # from the folder it ran in

    (mnt.path / "src" / "auth.py").write_text("def login(): return token()\n")
    wait_until(lambda: committed(mnt, "HEAD", "src/auth.py", "def login(): return token()\n"))
    (hit,) = in_folder(mnt.path, "recall", "login", "stub")
    assert hit["stale"]["how"] == "changed" and hit["stale"]["commit"] == mnt.head()
    assert [m["id"] for m in in_folder(mnt.path, "memories", "--stale")] == [made["id"]]

    feat = mnt.path / ".helix" / "branches" / "feat"
    feat.mkdir()
    (feat / "flag.txt").write_text("off\n")
    wait_until(lambda: committed(mnt, "feat", "flag.txt", "off\n"))
    on_feat = in_folder(feat, "remember", "--", "the feat flag is off in tests")
    assert on_feat["memory"]["branch"] == "feat"
    assert in_folder(mnt.path, "recall", "feat", "flag") == []
    assert [h["id"] for h in in_folder(feat, "recall", "feat", "flag")] == [on_feat["id"]]

    merged = in_folder(mnt.path, "merge", "feat")
    assert merged["memories"]["moved"] == [on_feat["id"]]
    assert [h["id"] for h in in_folder(mnt.path, "recall", "feat", "flag")] == [on_feat["id"]]
    assert (mnt.path / "flag.txt").read_text() == "off\n"
