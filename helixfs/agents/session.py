"""What the hooks of one agent session remember between calls (keyed by `session_id`).

Each hook call is a process of its own (or a command in the daemon): the session's state
lives in `STORE/hooks/sessions/KEY.json`, KEY a hash of the session id, read and written
under an flock so that parallel tool calls do not lose each other's updates. A session
untouched for EXPIRY_SECONDS starts afresh (its file is swept at the next SessionStart).

State: `injected` (memory id -> times shown: nothing is injected twice), `files`
(touched by Edit/Write), `failures` (a build or test command -> its error lines),
`started_ns`, `last_prompt`, `compact` (what PreCompact kept for after compaction),
`reminded`, `checkpoint` (the last automatic checkpoint's signature).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXPIRY_SECONDS = 6 * 3600
STATE_FOLDER = ("hooks", "sessions")
PROJECTS_FOLDER = ("hooks", "projects")


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


class Session:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @property
    def injected(self) -> dict[str, int]:
        found: dict[str, int] = self.data.setdefault("injected", {})
        return found

    def fresh(self, ids: list[str]) -> list[str]:
        return [i for i in ids if i not in self.injected]

    def mark(self, ids: list[str]) -> None:
        for memory_id in ids:
            self.injected[memory_id] = self.injected.get(memory_id, 0) + 1

    def touched(self, path: str) -> None:
        files: list[str] = self.data.setdefault("files", [])
        if path not in files and len(files) < 200:
            files.append(path)


def _load(path: Path, now: float) -> dict[str, Any]:
    try:
        if now - path.stat().st_mtime > EXPIRY_SECONDS:
            return {}
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def locked_json(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON object in `path` (expired: empty), saved back when the body ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _load(path, time.time())
        before = json.dumps(data, sort_keys=True)
        yield data
        if json.dumps(data, sort_keys=True) != before:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data))
            os.replace(tmp, path)


@contextlib.contextmanager
def session(store: Path, session_id: str) -> Iterator[Session]:
    with locked_json(store.joinpath(*STATE_FOLDER, _key(session_id) + ".json")) as data:
        data.setdefault("started_ns", time.time_ns())
        yield Session(data)


@contextlib.contextmanager
def project(store: Path, cwd: str) -> Iterator[dict[str, Any]]:
    """What the hooks keep per project folder (its last session start)."""
    with locked_json(store.joinpath(*PROJECTS_FOLDER, _key(cwd) + ".json")) as data:
        yield data


SWEEP_EVERY_SECONDS = 600.0
SWEPT_MARK = ".swept"


def sweep(store: Path, now: float | None = None) -> int:
    """Remove the state of sessions idle for longer than EXPIRY_SECONDS. At most once
    every SWEEP_EVERY_SECONDS (the mark's mtime says when): a stat of every session's
    file at each session start cost a busy store's SessionStart more than its answer."""
    folder = store.joinpath(*STATE_FOLDER)
    moment = now or time.time()
    mark = folder / SWEPT_MARK
    with contextlib.suppress(OSError):
        if 0 <= moment - mark.stat().st_mtime < SWEEP_EVERY_SECONDS:
            return 0
    with contextlib.suppress(OSError):
        mark.touch()
        os.utime(mark, (moment, moment))
    limit = moment - EXPIRY_SECONDS
    removed = 0
    for entry in folder.glob("*.json") if folder.is_dir() else ():
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < limit:
                entry.unlink()
                entry.with_suffix(".lock").unlink(missing_ok=True)
                removed += 1
    return removed
