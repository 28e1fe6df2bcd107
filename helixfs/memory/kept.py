"""A long-lived process's memory, opened on first use or on a thread of its own.

Apart from the engine: the daemon makes one when a hook or a `.helix/` read first asks
for memory, and answers that first call from a reader (memory/reader.py) while the
engine's imports (numpy: ~100 ms) run on the opening thread, not in the call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from helixfs.memory.engine import Memory
    from helixfs.memory.types import Embedder

log = logging.getLogger(__name__)


class KeptOpen:
    """A long-lived process's memory (the mount's daemon, `helix mcp`): opened on first
    use and kept open. Its in-RAM vector indexes are built then, by that first use,
    rather than by the second search as a one-shot process would (1.5-2.4 s at 100,000
    memories, once). A caller that must not wait that long (the FUSE loop) asks for it
    with `ready()` and has it opened by `open_in_background()`."""

    def __init__(self, path: Path, embedder: Callable[[], Embedder | None]) -> None:
        self.path = path
        self._embedder = embedder
        self._memory: Memory | None = None  # set once open and warm
        self._lock = threading.Lock()
        self._opener: threading.Thread | None = None
        self._starting = threading.Lock()
        self._closed = False  # a background opening after close() opens nothing

    def __call__(self) -> Memory:
        with self._lock:
            return self._open()

    def _open(self) -> Memory:
        if self._memory is None:
            from helixfs.memory.engine import Memory

            memory = Memory.open(self.path, self._embedder())
            try:
                memory.warm()
            except Exception as exc:  # a busy or damaged database: a search retries
                log.warning("vector indexes not built ahead: %s", exc)
            self._memory = memory
        return self._memory

    def ready(self) -> Memory | None:
        """The memory if it is open and warm; never waits for an opening under way."""
        return self._memory

    def open_in_background(self) -> None:
        """Open it on a thread of its own, unless it is open or being opened. A failure
        is logged; the next call tries again."""
        with self._starting:  # not self._lock: the opening holds that for seconds
            if self._memory is not None or self._closed:
                return
            if self._opener is None or not self._opener.is_alive():
                self._opener = threading.Thread(
                    target=self._open_logged, name="helix-memory-open", daemon=True
                )
                self._opener.start()

    def _open_logged(self) -> None:
        try:
            with self._lock:
                if not self._closed:
                    self._open()
        except Exception as exc:
            log.warning("the memory at %s did not open: %s", self.path, exc)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._memory is not None:
                self._memory.close()
                self._memory = None
