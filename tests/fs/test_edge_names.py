"""The saver's name, read from a /proc/PID/comm kept open (edge._CommFiles)."""

from __future__ import annotations

import subprocess
import time

import pytest

from helixfs.fs import edge


def _wait_for(check: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_kept_name_follows_an_exec_and_ends_with_the_process() -> None:
    # bash waits for a line, then execs sleep: the same pid under a new name
    child = subprocess.Popen(
        ["bash", "-c", "read line; exec sleep 30"], stdin=subprocess.PIPE, text=True
    )
    try:
        _wait_for(lambda: edge.process_name(child.pid) == "bash", "bash's name")
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        _wait_for(lambda: edge.process_name(child.pid) == "sleep", "the name after exec")
    finally:
        child.kill()
        child.wait(timeout=10)
    assert edge.process_name(child.pid) is None  # gone: no name, and no stale one kept


def test_past_its_limit_the_reader_starts_over_and_still_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    comms = edge._CommFiles()
    monkeypatch.setattr(edge._CommFiles, "LIMIT", 2)
    children = [subprocess.Popen(["sleep", "30"]) for _ in range(4)]
    try:
        for child in children:  # each read anew until its exec of sleep is done
            _wait_for(lambda c=child: comms.read(c.pid) == b"sleep\n", "sleep's name")
        assert len(comms._open) <= 2
        assert comms.read(children[0].pid) == b"sleep\n"
    finally:
        for child in children:
            child.kill()
            child.wait(timeout=10)
        comms._close_all()
