"""Claude Code's hooks in a mounted workspace: the launcher hands each event to the
mount's daemon (which holds the store: a hook answering by itself could not open it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mount_harness import Mount, MountFactory

pytestmark = pytest.mark.timeout(240)
REPO = Path(__file__).resolve().parents[2]
LEXICAL = {"HELIX_MEMORY_LEXICAL": "1"}


@pytest.fixture
def lexical_mount(make_mount: MountFactory) -> Mount:
    return make_mount(0, env={**os.environ, **LEXICAL})


def hook(mnt: Mount, event: str, cwd: Path, **fields: Any) -> str:
    data = {
        "session_id": f"s-{event}",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    argv = [sys.executable, "-P", "-S", "-m", "helixfs.cli.hook_launch", "--store"]
    done = subprocess.run(
        [*argv, str(mnt.store), event],
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
    text: str = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    return text


def test_hooks_are_answered_by_the_daemon_in_the_mount(lexical_mount: Mount) -> None:
    mnt = lexical_mount
    (mnt.path / "auth.py").write_text("def refresh_token(user):\n    return user\n")
    mnt.helix("remember", "--source", "auth.py:1", "--", "Tokens are refreshed under the lock")
    mnt.helix("remember", "--", "refresh_token is called by the scheduler only")
    start = hook(mnt, "SessionStart", mnt.path, source="startup")
    assert f"Branch main at {mnt.head()[:12]}" in start  # the daemon's repository
    read = hook(
        mnt,
        "PreToolUse",
        mnt.path,
        tool_name="Read",
        tool_input={"file_path": str(mnt.path / "auth.py")},
        tool_use_id="toolu_1",
    )
    assert "Tokens are refreshed under the lock" in read  # its source
    assert "called by the scheduler" in read  # a symbol of the file, read from the mount
    assert not (mnt.store / "hooks.log").exists()


def test_a_hook_in_a_branch_folder_briefs_that_branch(lexical_mount: Mount) -> None:
    mnt = lexical_mount
    (mnt.path / ".helix" / "branches" / "try").mkdir()
    folder = mnt.path / ".helix" / "branches" / "try"
    (folder / "idea.txt").write_text("an idea\n")
    text = hook(mnt, "SessionStart", folder, source="startup")
    assert "Branch try at " in text
