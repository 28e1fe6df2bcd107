"""Memory that follows the tree through a real mount (ADR 0063): an edit saved in the
mount turns a memory about the file stale; a memory written in a branch's folder is
that branch's until `helix merge` brings it into the trunk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_client import call, helix_mcp
from mount_harness import Mount, MountFactory, helix, wait_until

pytestmark = pytest.mark.timeout(240)
LEXICAL = {"HELIX_MEMORY_LEXICAL": "1"}
REPO = Path(__file__).resolve().parents[2]


def in_folder(folder: Path, *argv: str) -> Any:
    """`helix --json ARGV` run in `folder` of the mount, with no --store: the daemon
    answers, in that folder's branch."""
    done = helix("--json", *argv, cwd=folder, env={**os.environ, **LEXICAL})
    return json.loads(done.stdout)


def committed(mnt: Mount, rev: str, path: str, text: str) -> bool:
    done = mnt.helix("cat", rev, f"/{path}", check=False)
    return done.returncode == 0 and done.stdout == text


def hook(mnt: Mount, cwd: Path, tool: str, path: Path | None = None, **tool_input: str) -> str:
    """A PreToolUse hook as Claude Code sends it, through the launcher to the daemon."""
    if path is not None:
        tool_input["file_path"] = str(path)
    data = {
        "session_id": f"s-{cwd.name}-{tool}-{len(tool_input)}",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
    }
    argv = [sys.executable, "-P", "-S", "-m", "helixfs.cli.hook_launch", "--store"]
    done = subprocess.run(
        [*argv, str(mnt.store), "PreToolUse"],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert (done.returncode, done.stderr) == (0, "")
    if not done.stdout:
        return ""
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])


async def _remember_through_mcp(folder: Path, other: str) -> None:
    async with helix_mcp(cwd=folder, env=LEXICAL) as client:  # no --store: the mount's
        made = await call(client, "memory_remember", text="the banner hides behind a toggle")
        assert made["memory"]["branch"] == "feat"
        hits = (await call(client, "memory_search", query="feat flag", workspace=False))["hits"]
        assert other in [h["id"] for h in hits]


def test_memory_follows_edits_and_branches_in_a_mount(make_mount: MountFactory) -> None:
    mnt = make_mount(0, env={**os.environ, **LEXICAL})
    (mnt.path / "src").mkdir()
    (mnt.path / "src" / "auth.py").write_text("def login(): pass\n")
    wait_until(lambda: committed(mnt, "HEAD", "src/auth.py", "def login(): pass\n"))
    made = in_folder(mnt.path / "src", "remember", "--source", "auth.py:1", "--", "login is a stub")
    assert made["memory"]["source"]["file"] == "src/auth.py"  # from the folder it ran in
    absolute = str(mnt.path / "src" / "auth.py")  # as agents name files
    same = in_folder(
        mnt.path, "remember", "--source", absolute, "--", "passwords are hashed with argon2"
    )
    assert same["memory"]["source"]["file"] == "src/auth.py"

    (mnt.path / "src" / "auth.py").write_text("def login(): return token()\n")
    wait_until(lambda: committed(mnt, "HEAD", "src/auth.py", "def login(): return token()\n"))
    (hit,) = in_folder(mnt.path, "recall", "login", "stub")
    assert hit["stale"]["how"] == "changed" and hit["stale"]["commit"] == mnt.head()
    stale = in_folder(mnt.path, "memories", "--stale")
    assert sorted(m["id"] for m in stale) == sorted([made["id"], same["id"]])
    searched = (mnt.path / ".helix" / "search" / "login stub").read_text()
    assert f"(stale: src/auth.py changed in {mnt.head()[:12]})" in searched
    read = hook(mnt, mnt.path, "Read", mnt.path / "src" / "auth.py")
    assert f"(stale: src/auth.py changed in {mnt.head()[:12]}) [fact] login is a stub" in read

    feat = mnt.path / ".helix" / "branches" / "feat"
    feat.mkdir()
    (feat / "flag.txt").write_text("off\n")
    wait_until(lambda: committed(mnt, "feat", "flag.txt", "off\n"))
    on_feat = in_folder(feat, "remember", "--", "the feat flag is off in tests")
    assert on_feat["memory"]["branch"] == "feat"
    assert in_folder(mnt.path, "recall", "feat", "flag") == []
    assert [h["id"] for h in in_folder(feat, "recall", "feat", "flag")] == [on_feat["id"]]
    assert "feat flag is off" in hook(mnt, feat, "Read", feat / "flag.txt")  # its stem
    assert "feat flag is off" not in hook(mnt, mnt.path, "Grep", pattern="flag")

    anyio.run(_remember_through_mcp, feat, on_feat["id"])  # started in the branch folder

    merged = in_folder(mnt.path, "merge", "feat")
    assert len(merged["memories"]["moved"]) == 2
    assert [h["id"] for h in in_folder(mnt.path, "recall", "feat", "flag")] == [on_feat["id"]]
    assert (mnt.path / "flag.txt").read_text() == "off\n"

    spike = mnt.path / ".helix" / "branches" / "spike"
    spike.mkdir()
    made = in_folder(spike, "remember", "--", "the spike caches with a bloom filter")
    (spike.parent / "spike").rename(spike.parent / "spike2")  # the memory follows the name
    wait_until(lambda: bool(in_folder(mnt.path, "memories", "--branch", "spike2")))
    (spike.parent / "spike2").rmdir()  # its memories are archived, never lost
    wait_until(lambda: bool(in_folder(mnt.path, "memories", "--archived", "--branch", "spike2")))
    archived = in_folder(mnt.path, "memories", "--archived", "--branch", "spike2")
    assert [m["id"] for m in archived] == [made["id"]]
