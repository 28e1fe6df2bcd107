"""Run hooks as Claude Code does: the command `helix hooks install` wrote, JSON on stdin."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
HELIX = [sys.executable, "-m", "helixfs.cli.main"]


def helix(
    store: Path, *args: str, cwd: Path | None = None, **kw: Any
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HELIX_MEMORY_LEXICAL": "1", **kw.pop("env", {})}
    return subprocess.run(
        [*HELIX, "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        **kw,
    )


def launcher(store: Path, event: str) -> list[str]:
    return [
        sys.executable,
        "-P",
        "-S",
        "-m",
        "helixfs.cli.hook_launch",
        "--store",
        str(store),
        event,
    ]


def payload(event: str, session: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    """An input of exactly the shape Claude Code sends: the common fields, then the event's."""
    return {
        "session_id": session,
        "transcript_path": str(cwd / ".transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


def run_hook(
    store: Path, event: str, data: dict[str, Any] | str, cwd: Path, command: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The launcher (or an installed `command`, run by a shell as Claude Code does)."""
    text = data if isinstance(data, str) else json.dumps(data)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HELIX_STORE")}
    if command is None:
        env["PYTHONPATH"] = str(REPO)
        argv: list[str] | str = launcher(store, event)
    else:
        argv = command
    return subprocess.run(
        argv if isinstance(argv, list) else ["/bin/sh", "-c", argv],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def context_of(done: subprocess.CompletedProcess[str], event: str) -> str:
    """The additionalContext of a hook's answer ("" when it printed nothing)."""
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return ""
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    text: str = answer["hookSpecificOutput"]["additionalContext"]
    return text


def quoted(command: str) -> list[str]:
    return shlex.split(command)
