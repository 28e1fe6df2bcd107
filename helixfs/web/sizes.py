"""Store size against logical size, over time, for the stats page.

No record of past sizes exists in the store, and `Repository.stats()` scans every
object and walks every head's tree (seconds at 100,000 commits, far too slow for a
page), so a thread of the web server takes a sample when it starts and every INTERVAL
after, appending it to STORE/web-sizes.jsonl (one JSON object a line); the page only
reads the samples. The file is the web view's own: nothing else reads it, and a
damaged line is skipped.

`stats()` holds the repository lock throughout, and in a mount's daemon every FUSE
request waits for that lock: there (`holds_mount`), once a sample took longer than
MOUNT_PAUSE_SECONDS, no more are taken by that process, and the page says why.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from helixfs.vcs import Repository

log = logging.getLogger(__name__)

FILE_NAME = "web-sizes.jsonl"
INTERVAL = 600.0  # seconds between samples
MOUNT_PAUSE_SECONDS = 0.25  # the longest pause of the mount a sample may cost
KEEP = 2000  # samples drawn at most (the newest)


@dataclass(frozen=True)
class SizeSample:
    at: float  # unix seconds
    disk_bytes: int  # the store folder on disk
    logical_bytes: int  # the records it holds, uncompressed
    referenced_bytes: int  # the file bytes the heads show (before dedup)


class SizeSamples:
    def __init__(self, repo: Repository, path: Path | None, *, holds_mount: bool = False) -> None:
        self.repo = repo
        self.path = path
        self.holds_mount = holds_mount
        self.stopped_because = ""  # why sampling stopped, for the page
        self._samples = self._load()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def samples(self) -> list[SizeSample]:
        return list(self._samples[-KEEP:])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="helix-web-sizes", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                self.take()
            except Exception:  # a store closing under it, a full disk: try again later
                log.warning("could not sample the store's size", exc_info=True)
            took = time.perf_counter() - started
            if self.holds_mount and took > MOUNT_PAUSE_SECONDS:
                self.stopped_because = (
                    f"sampling stopped: a sample took {took:.1f} s, during which the mount"
                    " waited (Repository.stats() holds the repository lock)"
                )
                log.warning("%s", self.stopped_because)
                return
            self._stop.wait(INTERVAL)

    def take(self) -> SizeSample:
        stats = self.repo.stats(last=1)
        sample = SizeSample(
            time.time(), stats.disk_bytes, stats.logical_bytes, stats.referenced_bytes
        )
        self._samples.append(sample)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as file:
                file.write(json.dumps(sample.__dict__) + "\n")
        return sample

    def _load(self) -> list[SizeSample]:
        if self.path is None or not self.path.exists():
            return []
        found = []
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                found.append(SizeSample(**json.loads(line)))
            except (ValueError, TypeError):
                continue
        return found[-KEEP:]
