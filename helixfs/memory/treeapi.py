"""The part of `Memory` that follows the tree (ADR 0063): staleness listed and marked,
a branch's memories merged, renamed, archived. A mixin, so engine.py stays the one
class callers know without growing further; it uses the engine's connection, lock,
clock, vector index and decision."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import apsw

from helixfs.errors import InvalidInput
from helixfs.memory import branches, consolidate, records, tree, validate
from helixfs.memory.annindex import IndexCache
from helixfs.memory.db import writing
from helixfs.memory.extract import Candidate
from helixfs.memory.tree import TreeView
from helixfs.memory.types import MemoryRecord


class FollowsTree:
    _conn: apsw.Connection
    _lock: threading.RLock
    _clock: Callable[[], float]
    _index_cache: IndexCache

    def _decide(
        self,
        cand: Candidate,
        vector: list[float] | None,
        scope: str,
        branch: str | None,
        flagged: bool,
    ) -> consolidate.Decision:
        raise NotImplementedError  # the engine's

    def _marked(self, rows: list[dict[str, Any]], view: TreeView | None) -> list[MemoryRecord]:
        """Records of `rows`, each marked with its staleness in `view` (if given)."""
        found = [records.to_record(row) for row in rows]
        if view is None:
            return found
        return tree.with_staleness(found, tree.check_rows(self._conn, rows, view, self._clock()))

    def stale(self, view: TreeView, *, limit: int = 100) -> list[MemoryRecord]:
        """Active memories visible in `view` whose file changed, went or was renamed
        since they were written or confirmed, newest first."""
        validate.check_limit(limit)
        with self._lock:
            visible = tree.visible_sql(tree.visibility(self._conn, view))
            rows = tree.stale_rows(self._conn, visible)
            return [r for r in self._marked(rows, view) if r.stale is not None][:limit]

    def merge_branch(self, branch: str, into: str | None = None) -> branches.MergeReport:
        """Bring `branch`'s memories into `into` (None: the trunk) through consolidation:
        a duplicate is a NOOP, a contradiction supersedes. In one transaction."""
        validate.check_name("branch", branch)
        if into is not None:
            validate.check_name("branch", into)
        if into == branch:
            raise InvalidInput(f"cannot merge the memories of branch {branch!r} into itself")
        with self._lock, writing(self._conn):
            report = branches.merge(self._conn, branch, into, self._merge_decision, self._clock())
            for rowid, vector in report.vectors.items():
                self._index_cache.vector_written(rowid, vector)
        return report

    def _merge_decision(
        self,
        cand: Candidate,
        vector: list[float] | None,
        scope: str,
        into: str | None,
        flagged: bool,
    ) -> consolidate.Decision:
        return self._decide(cand, vector, scope, into, flagged)

    def rename_branch(self, old: str, new: str) -> list[str]:
        """A renamed branch's memories follow it (op `rename`); their ids."""
        validate.check_name("branch", old)
        validate.check_name("branch", new)
        with self._lock, writing(self._conn):
            return branches.rename(self._conn, old, new, self._clock())

    def branch_names(self) -> list[str]:
        """The branches that have memories (a deleted one's archived ones too)."""
        with self._lock:
            return tree.branch_names(self._conn)

    def archive_branch(self, branch: str) -> list[str]:
        """A deleted branch's active memories are archived (kept, not searched)."""
        validate.check_name("branch", branch)
        with self._lock, writing(self._conn):
            return branches.archive(self._conn, branch, self._clock())
