"""An in-process vector index in front of sqlite-vec, for a long-lived process.

sqlite-vec's vec0 scans every vector through SQLite pages: ~100 ms for 100,000 x 384
floats here, too slow for a 50 ms recall budget. This index keeps two compact copies in
RAM and answers in about a millisecond:

- sign bits, stored bit-plane by bit-plane (one uint64 row per 64 dimensions), so the
  Hamming distance to a query is a handful of vectorised XOR + popcount passes;
- int8 vectors (per-row scale), to rescore the best Hamming candidates by cosine.

At 100,000 x 384 that is ~4.8 MB of bits + ~38 MB of int8. sqlite-vec stays the durable
store and the answer for one-shot processes (the CLI), which never build this index.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from helixfs.memory.db import fetch_all, fetch_one, table_exists, unpack_vector

RESCORE_MIN = 1000  # Hamming candidates rescored by int8 cosine, at least
RESCORE_PER_K = 40
# Changed chunks are read back one by one (~8 us each from vec0, plus the upsert) up to
# a fifth of the index: past that, reloading it all (~5 us a row) is cheaper.
CHUNK_RELOAD_SHARE = 5
_INITIAL = 1024


class VectorIndex:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._words = (dim + 63) // 64
        self._size = 0
        self._pos: dict[int, int] = {}
        self._free: list[int] = []  # slots of removed rows, for the next new row
        self._rowids = np.zeros(_INITIAL, dtype=np.int64)
        self._bits = np.zeros((self._words, _INITIAL), dtype=np.uint64)
        self._i8 = np.zeros((_INITIAL, dim), dtype=np.int8)
        self._scale = np.ones(_INITIAL, dtype=np.float32)
        self._active = np.zeros(_INITIAL, dtype=bool)

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, rowid: int) -> bool:
        return rowid in self._pos

    @classmethod
    def load(cls, conn: apsw.Connection, table: str, dim: int) -> VectorIndex:
        index = cls(dim)
        if not table_exists(conn, table):
            return index
        has_active = table == "memory_vec"
        columns = "rowid, embedding" + (", active" if has_active else ", 1")
        rows = fetch_all(conn, f"SELECT {columns} FROM {table}")
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            index.fill(
                np.array([r[0] for r in rows], dtype=np.int64),
                matrix.reshape(len(rows), dim),
                np.array([bool(r[2]) for r in rows], dtype=bool),
            )
        return index

    def fill(
        self,
        rowids: npt.NDArray[np.int64],
        matrix: npt.NDArray[np.float32],
        active: npt.NDArray[np.bool_],
    ) -> None:
        """Bulk load into an empty index (vectorised: 100,000 rows in well under a second)."""
        count = len(rowids)
        capacity = max(_INITIAL, 1 << (count - 1).bit_length())
        self._rowids = np.zeros(capacity, dtype=np.int64)
        self._rowids[:count] = rowids
        self._bits = np.zeros((self._words, capacity), dtype=np.uint64)
        padded = np.zeros((count, self._words * 64), dtype=bool)
        padded[:, : self.dim] = matrix > 0
        self._bits[:, :count] = np.packbits(padded, axis=1).view(np.uint64).T
        peaks = np.max(np.abs(matrix), axis=1)
        peaks[peaks == 0] = 1.0
        self._scale = np.ones(capacity, dtype=np.float32)
        self._scale[:count] = peaks / 127.0
        self._i8 = np.zeros((capacity, self.dim), dtype=np.int8)
        self._i8[:count] = np.round(matrix / self._scale[:count, None]).astype(np.int8)
        self._active = np.zeros(capacity, dtype=bool)
        self._active[:count] = active
        self._size = count
        self._pos = {int(r): i for i, r in enumerate(rowids)}

    def _grow(self) -> None:
        capacity = 2 * len(self._rowids)
        self._rowids = np.resize(self._rowids, capacity)
        bits = np.zeros((self._words, capacity), dtype=np.uint64)
        bits[:, : self._size] = self._bits[:, : self._size]
        self._bits = bits
        i8 = np.zeros((capacity, self.dim), dtype=np.int8)
        i8[: self._size] = self._i8[: self._size]
        self._i8 = i8
        self._scale = np.resize(self._scale, capacity)
        self._active = np.resize(self._active, capacity)

    def upsert(self, rowid: int, vector: Sequence[float] | npt.NDArray[Any], active: bool) -> None:
        vec = np.asarray(vector, dtype=np.float32)
        position = self._pos.get(rowid)
        if position is None and self._free:
            position = self._free.pop()
            self._pos[rowid] = position
        elif position is None:
            if self._size == len(self._rowids):
                self._grow()
            position = self._size
            self._size += 1
            self._pos[rowid] = position
        self._rowids[position] = rowid
        self._bits[:, position] = _sign_words(vec, self._words)
        peak = float(np.max(np.abs(vec))) or 1.0
        self._scale[position] = peak / 127.0
        self._i8[position] = np.round(vec / self._scale[position]).astype(np.int8)
        self._active[position] = active

    def vectors(self, rowids: Sequence[int]) -> dict[int, list[float]]:
        """Dequantised vectors of the given rows (for MMR), skipping unknown rows."""
        found: dict[int, list[float]] = {}
        for rowid in rowids:
            position = self._pos.get(rowid)
            if position is not None:
                vector = self._i8[position].astype(np.float32) * self._scale[position]
                found[rowid] = vector.tolist()
        return found

    def set_active(self, rowid: int, active: bool) -> None:
        position = self._pos.get(rowid)
        if position is not None:
            self._active[position] = active

    def remove(self, rowid: int) -> None:
        """Mark gone; the slot goes to the next new row (a workspace's chunks come and
        go with every save)."""
        position = self._pos.pop(rowid, None)
        if position is not None:
            self._active[position] = False
            self._rowids[position] = -1
            self._free.append(position)

    def search(
        self, query: Sequence[float], k: int, *, active_only: bool, rescore: int | None = None
    ) -> list[tuple[int, float]]:
        """(rowid, cosine distance) best first, like vec0's `distance`.

        `rescore` Hamming candidates get an int8 cosine (default: max(1000, 40 k))."""
        if self._size == 0:
            return []
        q = np.asarray(query, dtype=np.float32)
        n = self._size
        mask = self._active[:n] if active_only else self._rowids[:n] >= 0
        pool = min(n, rescore or max(RESCORE_MIN, RESCORE_PER_K * k))
        exhaustive = pool >= n
        candidates = np.nonzero(mask)[0] if exhaustive else self._hamming_candidates(q, pool, mask)
        if len(candidates) == 0:
            return []
        # einsum casts the int8 rows block by block: no float32 copy of the whole pool
        scores = np.einsum("ij,j->i", np.take(self._i8, candidates, axis=0), q)
        scores *= self._scale[candidates]
        take = min(k, len(candidates))
        best = np.argpartition(-scores, take - 1)[:take]
        best = best[np.argsort(-scores[best])]
        rowids = self._rowids[candidates[best]].tolist()
        return list(zip(rowids, (1.0 - scores[best]).tolist(), strict=True))

    def _hamming_candidates(
        self, q: npt.NDArray[np.float32], pool: int, mask: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.intp]:
        """The `pool` rows of `mask` nearest to `q` in Hamming distance.

        Distances are small integers (0..dim), so a histogram finds the cut-off distance
        in one pass: cheaper than a partial sort of every row (argpartition over 100,000
        rows was ~1.3 ms of a ~2.5 ms search). Ties at the cut-off go in row order."""
        n = self._size
        q_words = _sign_words(q, self._words)
        distance = np.zeros(n, dtype=np.uint16)
        for word in range(self._words):
            distance += np.bitwise_count(self._bits[word, :n] ^ q_words[word])
        distance[~mask] = self.dim + 1  # beyond any real distance: never under the cut-off
        within = np.cumsum(np.bincount(distance, minlength=self.dim + 2))
        # The first distance reaching `pool` rows (at most dim: masked rows never count).
        cutoff = min(int(np.searchsorted(within, pool)), self.dim)
        closer = np.flatnonzero(distance < cutoff)
        ties = np.flatnonzero(distance == cutoff)[: pool - len(closer)]
        kept: npt.NDArray[np.intp] = np.concatenate([closer, ties])
        return kept


def _sign_words(vector: npt.NDArray[np.float32], words: int) -> npt.NDArray[np.uint64]:
    padded = np.zeros(words * 64, dtype=bool)
    padded[: len(vector)] = vector > 0
    packed: npt.NDArray[np.uint64] = np.packbits(padded).view(np.uint64)
    return packed


class IndexCache:
    """The memory and chunk indexes of one connection, kept fresh without polling disk.

    Built on the second vector use, so a one-shot CLI process never pays for loading
    them. Our own writes are tracked through SQLite's update hook (rows of `memories`
    and `chunks` that changed); another process's writes through `PRAGMA data_version`,
    which changes only when some other connection committed: then we rebuild.
    """

    def __init__(self, conn: apsw.Connection, dim: int) -> None:
        self._conn = conn
        self._dim = dim
        self._uses = 0
        self._memories: VectorIndex | None = None
        self._chunks: VectorIndex | None = None
        self._dirty: set[int] = set()
        self._written: dict[int, Sequence[float] | npt.NDArray[Any]] = {}
        self._dirty_chunks: set[int] = set()  # added or deleted (a chunk never changes)
        self._data_version: int | None = None
        if dim:
            conn.set_update_hook(self._on_row_change)

    def _on_row_change(self, op: int, dbname: str, table: str, rowid: int) -> None:
        """SQLite update hook: note what changed (no SQL may run in here)."""
        if table == "memories":
            self._dirty.add(rowid)
        elif table == "chunks" and op != apsw.SQLITE_UPDATE:  # an update changes no vector
            self._dirty_chunks.add(rowid)

    def vector_written(self, rowid: int, vector: Sequence[float] | npt.NDArray[Any]) -> None:
        """This connection just stored `vector` for memory `rowid`, in the transaction that
        changed the row. Every rewrite of an existing row's vector must be reported here:
        for a row it already holds, the refresh only re-reads the status."""
        if self._memories is not None:
            self._written[rowid] = vector

    def drop(self) -> None:
        """Forget both indexes; the next use reloads them (and every row) from the tables."""
        self._memories = self._chunks = None
        self._dirty.clear()
        self._written.clear()
        self._dirty_chunks.clear()

    def rebuild(self) -> None:
        """Reload both indexes from the tables now if they were built (a long-lived
        process), else leave them to be built on use."""
        built = self._memories is not None
        self.drop()
        if built:
            self.warm()

    @contextmanager
    def untracked(self) -> Iterator[None]:
        """Row changes that touch neither status nor vector (recall reinforcement)."""
        before = set(self._dirty)
        try:
            yield
        finally:
            self._dirty = before

    def warm(self) -> None:
        self._uses = max(self._uses, 1)
        self.current()

    def current(self) -> Indexes:
        row = fetch_one(self._conn, "PRAGMA data_version")
        version = int(row[0]) if row else 0
        if version != self._data_version:
            self._data_version = version
            self.drop()
        self._uses += 1
        if self._memories is None or self._chunks is None:
            if self._uses < 2:
                return Indexes()
            self._dirty.clear()
            self._dirty_chunks.clear()
            self._memories = VectorIndex.load(self._conn, "memory_vec", self._dim)
            self._chunks = VectorIndex.load(self._conn, "chunk_vec", self._dim)
        self._refresh_rows(self._memories)
        self._refresh_chunks()
        return Indexes(self._memories, self._chunks)

    def _refresh_chunks(self) -> None:
        """Apply the workspace indexer's changes: each pass deletes a changed file's
        chunks and adds its new ones. Reloading the whole index instead made the first
        search after each pass take 72 ms at 10,000 chunks and 404 ms at 50,000 (6 and
        12 ms now), on the mount's FUSE loop; a pass is mostly a few chunks."""
        dirty, self._dirty_chunks = self._dirty_chunks, set()
        assert self._chunks is not None
        if len(dirty) > max(100, len(self._chunks) // CHUNK_RELOAD_SHARE):
            self._chunks = VectorIndex.load(self._conn, "chunk_vec", self._dim)
            return
        for rowid in dirty:  # gone, or gone and added again: its vector is read anew
            self._chunks.remove(rowid)
            row = fetch_one(self._conn, "SELECT embedding FROM chunk_vec WHERE rowid=?", (rowid,))
            if row is not None:
                self._chunks.upsert(rowid, np.frombuffer(row[0], dtype=np.float32), True)

    def _refresh_rows(self, index: VectorIndex) -> None:
        """Apply the rows changed since the last use: statuses in one query; a vector is
        read back from vec0 (slow: it sits in a chunk blob) only for a row new to the
        index whose vector was not handed over by `vector_written`."""
        dirty, self._dirty = self._dirty, set()
        written, self._written = self._written, {}
        if not dirty:
            return
        rowids = list(dirty)
        rows = fetch_all(
            self._conn,
            f"SELECT rowid, status FROM memories WHERE rowid IN ({','.join('?' * len(rowids))})",
            rowids,
        )
        statuses = {int(r[0]): str(r[1]) for r in rows}
        for rowid in rowids:
            status = statuses.get(rowid)
            if status is None:
                index.remove(rowid)
            elif rowid in written:
                index.upsert(rowid, written[rowid], status == "active")
            elif rowid in index:
                index.set_active(rowid, status == "active")
            else:
                self._load_row(index, rowid, status == "active")

    def _load_row(self, index: VectorIndex, rowid: int, active: bool) -> None:
        vector = fetch_one(self._conn, "SELECT embedding FROM memory_vec WHERE rowid=?", (rowid,))
        if vector is None:
            index.remove(rowid)
        else:
            index.upsert(rowid, unpack_vector(vector[0]), active)


from helixfs.memory.retrieval import Indexes as Indexes  # noqa: E402 - was defined here
