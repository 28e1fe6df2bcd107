"""`.helix/search/QUERY` and `.helix/context`: the memory engine, as files in the mount.

The filesystem layer does not know the memory engine (fs may import only vcs), so the
daemon builds these two entries and hands them to `Operations(helix_entries=...)`.

The memory database and the embedder are opened on first use, not at mount time: most
mounts never search, and the embedding model costs seconds and a hundred MB of RSS.
`HELIX_MEMORY_LEXICAL=1` keeps search lexical (no model), as in the CLI.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from helixfs.errors import InvalidInput
from helixfs.fs.helixdir import Entry, QueryDir, TextFile

if TYPE_CHECKING:
    from helixfs.memory import Embedder, Hit, Memory

log = logging.getLogger(__name__)

MEMORY_DB = "memory.db"
ENV_LEXICAL = "HELIX_MEMORY_LEXICAL"
SEARCH_RESULTS = 10
CONTEXT_BUDGET = 2000  # tokens: what `.helix/context` packs


class MemoryFiles:
    """Lazily opened memory engine behind the two `.helix/` entries."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self._memory: Memory | None = None
        self._lock = threading.Lock()

    def entries(self) -> Mapping[bytes, Entry]:
        return {
            b"search": QueryDir(self.search),
            b"context": TextFile(self.context, cheap=False),
        }

    def memory(self) -> Memory:
        with self._lock:
            if self._memory is None:
                from helixfs.memory import Memory

                self._memory = Memory.open(self.store / MEMORY_DB, _embedder())
            return self._memory

    def search(self, query: str) -> str:
        query = query.strip()
        if not query:
            raise InvalidInput("an empty search")
        hits = self.memory().search(query, k=SEARCH_RESULTS, reinforce=False)
        if not hits:
            return f"# no results for {query!r}\n"
        return "".join(_format_hit(rank, hit) for rank, hit in enumerate(hits, 1))

    def context(self) -> str:
        block = self.memory().context(CONTEXT_BUDGET)
        return block.text if block.text.endswith("\n") or not block.text else block.text + "\n"

    def close(self) -> None:
        with self._lock:
            if self._memory is not None:
                self._memory.close()
                self._memory = None


def _embedder() -> Embedder | None:
    if os.environ.get(ENV_LEXICAL, "") not in ("", "0"):
        return None
    from helixfs.memory.embed import load_embedder

    return load_embedder()


def _format_hit(rank: int, hit: Hit) -> str:
    """One result: a header line saying where it comes from, then the text, indented."""
    if hit.kind == "memory":
        where = f"memory {hit.id} ({hit.type or 'note'})"
    else:
        lines = f":{hit.start_line}-{hit.end_line}" if hit.start_line is not None else ""
        where = f"{hit.path}{lines}"
    body = "\n".join("    " + line for line in hit.content.splitlines())
    return f"{rank}. [{hit.score:.3f}] {where}\n{body}\n\n"
