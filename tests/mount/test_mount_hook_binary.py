"""The compiled hook launcher (cli/hook_launch.c, ADR 0080) against a real mount: for
every event it prints what the Python launcher prints, byte for byte; with no daemon it
runs the Python launcher; on a socket that does not answer it exits 0 and prints nothing."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mount_harness import Mount, MountFactory, helix

from helixfs.agents import claude_hooks, hook_binary

pytestmark = pytest.mark.timeout(240)
REPO = Path(__file__).resolve().parents[2]
LEXICAL = {"HELIX_MEMORY_LEXICAL": "1"}


@pytest.fixture
def binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if hook_binary.compiler() is None:
        reason = "no C compiler: the hooks run the Python launcher"
        if os.environ.get("CI", "").lower() == "true":  # .ci/run installs build-essential
            pytest.fail(f"the compiled launcher cannot be tested in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    built = hook_binary.build()
    assert built is not None and built.parent == tmp_path / "cache" / "helixfs"
    return built


def payload(event: str, session: str, cwd: Path, **fields: Any) -> str:
    data = {
        "session_id": session,
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    return json.dumps(data, ensure_ascii=False)


def run(command: str, text: str | bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """An installed command, run by a shell as Claude Code runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HELIX_STORE")}
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=text.encode() if isinstance(text, str) else text,
        capture_output=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def events(mnt: Mount) -> dict[str, dict[str, Any]]:
    auth = str(mnt.path / "auth.py")
    return {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": "why is the token refreshed — «lock» \U0001d11e?"},
        "PreToolUse": {"tool_name": "Read", "tool_input": {"file_path": auth}},
        "PostToolUse": {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "1 failed\tFAILED auth.py::test_refresh\n"},
        },
        "PostToolUseFailure": {
            "tool_name": "Bash",
            "tool_input": {"command": "pytest -q"},
            "error": "exit 1",
        },
        "PreCompact": {"trigger": "auto"},
        "SubagentStart": {"agent_id": "a1", "agent_type": "Explore"},
        "Stop": {"stop_hook_active": False},
    }


def test_the_compiled_launcher_prints_what_the_python_one_prints(
    make_mount: MountFactory, binary: Path
) -> None:
    mnt = make_mount(0, env={**os.environ, **LEXICAL})
    (mnt.path / "auth.py").write_text("def refresh_token(user):\n    return user\n")
    mnt.helix("remember", "--source", "auth.py:1", "--", "Tokens are refreshed under the lock")
    mnt.helix("remember", "--", "refresh_token is called by the «scheduler» only")
    answered = {}
    for event, fields in events(mnt).items():
        python = claude_hooks.hook_command(mnt.store, event)
        # no interpreter to fall back on: what it prints, the daemon answered
        compiled = claude_hooks.hook_command(mnt.store, event, binary)
        compiled = compiled.replace(shlex.quote(sys.executable), "/nonexistent/python")
        outputs = []
        for side, command in (("python", python), ("compiled", compiled)):
            done = run(command, payload(event, f"{side}-{event}", mnt.path, **fields), mnt.path)
            assert (done.returncode, done.stderr) == (0, b""), (event, side)
            outputs.append(done.stdout)
        assert outputs[0] == outputs[1], event
        answered[event] = outputs[0]
    said = {event for event, out in answered.items() if out}
    assert said >= {"SessionStart", "PreToolUse", "UserPromptSubmit"}
    assert b"refreshed under the lock" in answered["PreToolUse"]
    assert b"\\u00absched" in answered["PreToolUse"] or "«sched".encode() in answered["PreToolUse"]
    assert not (mnt.store / "hooks.log").exists()


def test_input_that_is_not_utf8_goes_to_the_python_launcher(
    make_mount: MountFactory, binary: Path
) -> None:
    mnt = make_mount(0, env={**os.environ, **LEXICAL})
    mnt.helix("remember", "--", "Tokens are refreshed under the lock")
    outputs = []
    for side, chosen in (("python", None), ("compiled", binary)):
        command = claude_hooks.hook_command(mnt.store, "UserPromptSubmit", chosen)
        text = payload("UserPromptSubmit", f"{side}-p", mnt.path, prompt="token lock XX")
        done = run(command, text.encode().replace(b"XX", b"\xff\xfe"), mnt.path)
        assert (done.returncode, done.stderr) == (0, b"")
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and b"refreshed under the lock" in outputs[0]


def test_with_no_daemon_the_compiled_launcher_runs_the_python_one(
    tmp_path: Path, binary: Path
) -> None:
    store = tmp_path / "store"
    helix("init", store)
    outputs = []
    for side, chosen in (("python", None), ("compiled", binary)):
        command = claude_hooks.hook_command(store, "SessionStart", chosen)
        text = payload("SessionStart", f"{side}-start", tmp_path, source="startup")
        done = run(command, text, tmp_path)
        assert (done.returncode, done.stderr) == (0, b"")
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and b"Branch main" in outputs[0]


@pytest.fixture
def bad_socket(tmp_path: Path) -> Iterator[Path]:
    """A store whose control.sock accepts, reads the request and hangs up."""
    store = tmp_path / "store"
    helix("init", store)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(store / "control.sock"))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(1 << 16)
                conn.sendall(b"\x00\x00")  # half a frame's length

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield store
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout=10)


def test_on_a_socket_that_does_not_answer_it_exits_0_and_prints_nothing(
    bad_socket: Path, binary: Path, tmp_path: Path
) -> None:
    command = claude_hooks.hook_command(bad_socket, "SessionStart", binary)
    done = run(command, payload("SessionStart", "s", tmp_path, source="startup"), tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    log = (bad_socket / "hooks.log").read_text()
    assert "SessionStart ConnectionError: the daemon closed the connection" in log


def test_a_missing_binary_runs_the_python_launcher(tmp_path: Path, binary: Path) -> None:
    store = tmp_path / "store"
    helix("init", store)
    command = claude_hooks.hook_command(store, "SessionStart", tmp_path / "gone")
    assert claude_hooks.launcher_of(command) == "python (compiled launcher missing)"
    assert claude_hooks.launcher_of(claude_hooks.hook_command(store, "Stop", binary)) == "compiled"
    done = run(command, payload("SessionStart", "s", tmp_path, source="startup"), tmp_path)
    assert (done.returncode, done.stderr) == (0, b"") and b"Branch main" in done.stdout
    assert shlex.split(command)[3] == str(tmp_path / "gone")


def test_a_store_past_the_socket_address_limit_is_reached_through_its_folder(
    make_mount: MountFactory, binary: Path, tmp_path: Path
) -> None:
    deep = tmp_path / ("a-rather-long-folder-name-" * 4) / ("and-another-one-" * 3) / "store"
    deep.parent.mkdir(parents=True)
    helix("init", deep)
    mnt = make_mount(0, store=deep, env={**os.environ, **LEXICAL})
    assert len(str(mnt.store / "control.sock")) > 108
    compiled = claude_hooks.hook_command(mnt.store, "SessionStart", binary)
    compiled = compiled.replace(shlex.quote(sys.executable), "/nonexistent/python")
    text = payload("SessionStart", "deep", mnt.path, source="startup")
    done = run(compiled, text, mnt.path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert b"Branch main at " + mnt.head()[:12].encode() in done.stdout  # the daemon's answer
