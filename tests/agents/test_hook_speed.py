"""What keeps a hook cheap in the daemon: the sweep of idle sessions at most once per
SWEEP_EVERY_SECONDS, the `hook` command's parser kept (hooks29)."""

from __future__ import annotations

import os
from pathlib import Path

from helixfs.agents import session
from helixfs.cli import main


def _idle_session(store: Path, name: str, age: float) -> Path:
    folder = store.joinpath(*session.STATE_FOLDER)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text("{}")
    old = path.stat().st_mtime - age
    os.utime(path, (old, old))
    return path


def test_idle_sessions_are_swept_at_most_once_a_while(tmp_path: Path) -> None:
    first = _idle_session(tmp_path, "a", session.EXPIRY_SECONDS + 60)
    now = first.stat().st_mtime + session.EXPIRY_SECONDS + 120
    assert session.sweep(tmp_path, now) == 1 and not first.exists()
    second = _idle_session(tmp_path, "b", session.EXPIRY_SECONDS + 60)
    assert session.sweep(tmp_path, now + 1) == 0 and second.exists()  # swept a moment ago
    later = now + session.SWEEP_EVERY_SECONDS + 1
    assert session.sweep(tmp_path, later) == 1 and not second.exists()


def test_the_daemon_keeps_the_hook_parser_and_no_other() -> None:
    hook = ["hook", "Stop", "--input", "{}"]
    first = main._parse(hook, keep=True)
    assert first.event == "Stop" and first.input == "{}"
    kept = dict(main._KEPT_PARSERS)
    again = main._parse(["hook", "PreCompact", "--input", '{"a": 1}'], keep=True)
    assert again.event == "PreCompact" and again.input == '{"a": 1}'
    assert kept == main._KEPT_PARSERS and len(kept) == 1
    main._parse(["commit", "-m", "m", "a=x"], keep=True)  # a list default: never kept
    assert kept == main._KEPT_PARSERS
