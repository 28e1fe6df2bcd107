"""Large files are chunked by content: edits store few chunks, range reads fetch few."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

from helixfs.ids import ObjectId
from helixfs.store.memory import MemoryStore
from helixfs.store.rocks import RocksStore
from helixfs.vcs import Repository, content
from helixfs.vcs.content import (
    CHUNK_THRESHOLD,
    MAX_CHUNK,
    ZERO_CHUNK,
    ContentReader,
    Stored,
    pack_bytes,
    store_edited,
    store_stream,
)
from helixfs.vcs.objects import KIND_CHUNKED, decode_chunked, kind_of

from .conftest import CountingStore


def _random(size: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(size)


def test_small_files_are_one_blob() -> None:
    stored = pack_bytes(b"hello")
    assert len(stored.objects) == 1 and stored.size == 5


def test_mid_file_edit_of_a_big_file_stores_only_nearby_chunks(
    repo: Repository, store: CountingStore
) -> None:
    data = _random(24 << 20)
    repo.commit({b"big.bin": data}, "big")
    before = set(store.ids())
    middle = len(data) // 2
    edited = data[:middle] + b"an edit in the middle" + data[middle + 5 :]
    repo.commit({b"big.bin": edited}, "edit")
    new = set(store.ids()) - before
    # the index, at most a few chunks around the edit, the tree and the commit
    assert len(new) <= 8, len(new)
    assert repo.read("HEAD", "big.bin") == edited
    assert repo.read("HEAD~1", "big.bin") == data


def test_range_read_fetches_only_the_chunks_it_needs(
    repo: Repository, store: CountingStore
) -> None:
    data = _random(8 << 20, seed=2)
    repo.commit({b"big.bin": data}, "big")
    oid = repo.entry("HEAD", "big.bin").oid  # type: ignore[union-attr]
    reader = ContentReader(store)
    starts, ids = reader.chunks(oid)  # type: ignore[misc]
    assert len(ids) > 50
    store.gets.clear()
    offset = starts[10] + 100
    assert reader.read(oid, offset, 1000) == data[offset : offset + 1000]
    assert set(store.gets) <= {ids[10], ids[11]}
    store.gets.clear()
    assert reader.read(oid, starts[20], starts[23] - starts[20]) == data[starts[20] : starts[23]]
    assert store.gets == ids[20:23]


def test_streamed_store_equals_in_memory_store(store: CountingStore) -> None:
    data = _random(3 * CHUNK_THRESHOLD + 12345, seed=3)
    written: dict[bytes, bytes] = {}
    streamed = store_stream(io.BytesIO(data), written.update)
    assert streamed.oid == pack_bytes(data).oid
    store.write({**written, **streamed.objects})
    assert ContentReader(store).read(streamed.oid) == data
    assert kind_of(streamed.objects[streamed.oid]) == KIND_CHUNKED


def test_resize_truncates_and_extends_without_rewriting(store: CountingStore) -> None:
    data = _random(4 << 20, seed=4)
    stored = pack_bytes(data)
    store.write(stored.objects)
    reader = ContentReader(store)
    for size in (0, 10, CHUNK_THRESHOLD, CHUNK_THRESHOLD + 7, 3 << 20, 9 << 20):
        resized = reader.resize(stored.oid, len(data), size)
        assert len(resized.objects) <= 3 + (size // (1 << 20))
        store.write(resized.objects)
        expect = data[:size] + bytes(max(0, size - len(data)))
        assert resized.size == size
        assert reader.read(resized.oid) == expect
    small = pack_bytes(b"abc")
    store.write(small.objects)
    grown = reader.resize(small.oid, 3, 2 * CHUNK_THRESHOLD)
    store.write(grown.objects)
    assert reader.read(grown.oid) == b"abc" + bytes(2 * CHUNK_THRESHOLD - 3)


def test_sequential_reads_fetch_each_chunk_once_whatever_the_request_size(
    store: CountingStore,
) -> None:
    data = _random(4 << 20, seed=6)
    stored = pack_bytes(data)
    store.write(stored.objects)
    for request in (4096, 100_000, 128 << 10, 1 << 20):
        reader = ContentReader(store)
        starts, ids = reader.chunks(stored.oid)  # type: ignore[misc]
        store.gets.clear()
        out = bytearray()
        while piece := reader.read(stored.oid, len(out), request):
            out += piece
        assert out == data
        assert store.gets == ids, request  # edge chunks came from the kept records


def test_streamed_chunks_stay_out_of_the_store_caches(tmp_path: Path) -> None:
    """A big read must not push the trees and delta bases others reuse out of the store."""
    data = _random(4 << 20, seed=7)
    stored = pack_bytes(data)
    with RocksStore(tmp_path / "objects") as store:
        store.write(stored.objects)
    with RocksStore(tmp_path / "objects") as store:
        assert ContentReader(store).read(stored.oid) == data
        extra = store.stats().extra
        index_bytes = len(stored.objects[stored.oid])
        assert extra["record_cache_bytes"] < index_bytes + 4096  # the index only
        assert extra["frame_cache_bytes"] < index_bytes + 4096


def _index(stored: Stored) -> tuple[list[int], list[ObjectId]]:
    chunked = decode_chunked(stored.objects[stored.oid])
    starts, ids, pos = [], [], 0
    for oid, length in chunked.chunks:
        starts.append(pos)
        ids.append(oid)
        pos += length
    return [*starts, pos], ids


def _edit(rng: random.Random, data: bytearray) -> list[tuple[int, int]]:
    """Random in-place writes and size changes, as a spool sees them: the changed ranges."""
    ranges = []
    for _ in range(rng.choice([1, 1, 2, 5, 40])):
        kind = rng.random()
        if kind < 0.1:  # truncate or extend
            size = rng.randrange(CHUNK_THRESHOLD + 1, 6 << 20)
            ranges.append((min(size, len(data)), max(size, len(data))))
            del data[size:]
            data.extend(bytes(size - len(data)))
        else:
            at = rng.randrange(len(data))
            piece = rng.randbytes(rng.choice([1, 100, 4096, 70_000]))
            end = at + len(piece)
            ranges.append((at, end))
            data[at:end] = piece
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for low, high in ranges:
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def test_storing_only_the_edits_gives_the_same_content_as_storing_it_all() -> None:
    """Re-cutting around the edits must give the very chunks a full store gives: the
    file id is the same, so history and dedup cannot tell the two paths apart."""
    rng = random.Random(5)
    data = bytearray(_random(5 << 20, seed=9))
    stored = pack_bytes(bytes(data))
    sunk: dict[ObjectId, bytes] = {}
    for _ in range(60):
        edits = _edit(rng, data)
        fresh = pack_bytes(bytes(data))
        edited = store_edited(
            io.BytesIO(bytes(data)), len(data), _index(stored), edits, sunk.update
        )
        assert edited.oid == fresh.oid and edited.size == len(data)
        # every chunk it did not keep is among the records it hands back
        needed = set(decode_chunked(fresh.objects[fresh.oid]).chunks)
        kept = set(decode_chunked(stored.objects[stored.oid]).chunks)
        assert {oid for oid, _ in needed - kept} <= set(edited.objects) | set(sunk)
        # each hint is a new record of this write onto a chunk of the old content
        assert set(edited.bases) <= set(edited.objects) - {edited.oid}
        assert set(edited.bases.values()) <= {oid for oid, _ in kept}
        assert all(new != old for new, old in edited.bases.items())
        stored = fresh


def test_an_edit_in_a_big_file_reads_only_the_chunks_around_it() -> None:
    data = bytearray(_random(64 << 20, seed=3))
    stored = pack_bytes(bytes(data))
    data[(32 << 20) : (32 << 20) + 4096] = bytes(4096)
    source = io.BytesIO(bytes(data))
    edited = store_edited(source, len(data), _index(stored), [(32 << 20, (32 << 20) + 4096)], print)
    assert edited.oid == pack_bytes(bytes(data)).oid
    assert len(edited.objects) <= 5  # a few new chunks and the index


def test_a_file_cut_back_to_an_old_chunk_edge_keeps_no_chunk_past_its_end() -> None:
    data = _random(5 << 20, seed=9)
    stored = pack_bytes(data)
    starts, ids = _index(stored)
    for n in (20, 30, 40):
        cut = starts[n]  # the new end is a cut of the old file
        new = bytearray(data[:cut])
        new[cut - 1000 : cut - 10] = bytes(990)  # and an edit re-cut up to it
        edits = [(cut - 1000, cut - 10), (cut, len(data))]
        edited = store_edited(io.BytesIO(bytes(new)), cut, (starts, ids), edits, print)
        assert edited.oid == pack_bytes(bytes(new)).oid


def test_an_edit_starting_at_an_old_cut_gives_the_ids_of_a_whole_store() -> None:
    """FastCDC decides a cut at c from the bytes since the last cut and byte c itself.
    Re-cutting began with the chunk starting at the edit and kept the chunk before it:
    a write starting exactly at an old cut that changed the cut's byte stored chunks a
    whole store does not cut (the same bytes, but another file id)."""
    data = bytearray(_random(3 << 20, seed=4))
    starts, ids = _index(pack_bytes(bytes(data)))
    cut = starts[10]
    for value in range(256):  # a byte at the cut that removes it
        data[cut] = value
        fresh = pack_bytes(bytes(data))
        if cut not in _index(fresh)[0]:
            break
    assert cut not in _index(fresh)[0]
    edited = store_edited(
        io.BytesIO(bytes(data)), len(data), (starts, ids), [(cut, cut + 1)], print
    )
    assert edited.oid == fresh.oid


@pytest.mark.parametrize("seed", range(4))
def test_edits_at_and_around_every_old_cut_give_the_ids_of_a_whole_store(seed: int) -> None:
    """Hundreds of edits: starting or ending on an old cut, a byte either side, one
    chunk apart or two, past the end, and a change of size."""
    rng = random.Random(seed)
    data = bytearray(_random(6 << 20, seed=seed))
    starts, ids = _index(pack_bytes(bytes(data)))
    edits: list[tuple[int, int]] = []
    for n in sorted(rng.sample(range(1, len(ids)), len(ids) // 2)):
        low = starts[n] + rng.choice([-1, 0, 0, 1, 300])
        high = rng.choice([low + 1, starts[n + 1], starts[n + 1] + 1, low + 4096])
        if edits and low <= edits[-1][1]:
            continue
        edits.append((low, high))
        data[low:high] = rng.randbytes(high - low)
    if seed % 2:
        del data[len(data) - 100_000 :]
        edits.append((len(data), len(data) + 100_000))
    edited = store_edited(io.BytesIO(bytes(data)), len(data), (starts, ids), _merged(edits), print)
    assert edited.oid == pack_bytes(bytes(data)).oid


class _CountedBytes(io.BytesIO):
    """A file in memory that counts the bytes read from it."""

    read_bytes = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.read_bytes += len(data)
        return data

    def readinto(self, buffer: Any, /) -> int:
        n = super().readinto(buffer)
        self.read_bytes += n
        return n


@pytest.mark.parametrize("gap", [0, 1, 3])
def test_scattered_edits_read_each_byte_of_the_source_once(gap: int) -> None:
    """Re-cutting started afresh at each edit, and FastCDC reads 512 KiB ahead of where
    it starts: a 1 GiB file with 40,000 page writes was read 3 times over (through the
    spool's view: the stored content, pieced together). Edits `gap` chunks apart."""
    rng = random.Random(gap)
    data = bytearray(_random(8 << 20, seed=gap))
    starts, ids = _index(pack_bytes(bytes(data)))
    edits = []
    for n in range(1, len(ids) - 1, gap + 1):
        low = rng.randrange(starts[n], starts[n + 1])
        data[low : low + 100] = rng.randbytes(100)
        edits.append((low, low + 100))
    source = _CountedBytes(bytes(data))
    edited = store_edited(source, len(data), (starts, ids), _merged(edits), print)
    assert edited.oid == pack_bytes(bytes(data)).oid
    assert source.read_bytes <= len(data)


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


class _SparseSource(io.RawIOBase):
    """A file of `size` bytes: `data` at given offsets, zeros elsewhere, made up as read
    (a 64 GiB one fits no test disk); counts the bytes read from it."""

    def __init__(self, size: int, data: dict[int, bytes]) -> None:
        self.size, self.data, self.pos, self.read_bytes = size, data, 0, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset
        return self.pos

    def readinto(self, buffer: Any) -> int:
        n = max(0, min(len(buffer), self.size - self.pos))
        window = bytearray(n)
        for at, piece in self.data.items():
            low, high = max(at, self.pos), min(at + len(piece), self.pos + n)
            if low < high:
                window[low - self.pos : high - self.pos] = piece[low - at : high - at]
        buffer[:n] = window
        self.pos += n
        self.read_bytes += n
        return n

    def holes(self) -> list[tuple[int, int]]:
        holes, pos = [], 0
        for at, piece in sorted(self.data.items()):
            if at > pos:
                holes.append((pos, at))
            pos = at + len(piece)
        return holes + ([(pos, self.size)] if pos < self.size else [])

    def dense(self) -> bytes:
        self.seek(0)
        return self.read()


def test_a_chunk_of_zeros_is_cut_at_the_largest_size() -> None:
    """What storing a hole without reading it relies on (content._chunks)."""
    lengths = [chunk.length for chunk in content._CDC.cut_buf(bytes(3 * MAX_CHUNK + 5))]
    assert lengths == [MAX_CHUNK] * 3 + [5]


@pytest.mark.parametrize("seed", range(4))
def test_holes_are_stored_with_the_ids_of_their_zeros_without_reading_them(seed: int) -> None:
    rng = random.Random(seed)
    m = MAX_CHUNK
    for _ in range(12):
        data, pos = {}, rng.choice([0, 1, m])
        while pos < 40 * m:
            if rng.random() < 0.6:
                data[pos] = rng.randbytes(rng.choice([1, 4096, m - 1, m + 1, 3 * m]))
                pos += len(data[pos])
            pos += rng.choice([1, 100, m - 1, m, 2 * m - 1, 2 * m, 2 * m + 1, 5 * m])
        source = _SparseSource(pos + rng.choice([0, 7, 3 * m]), data)
        dense = pack_bytes(source.dense())
        source.read_bytes = 0
        sparse = store_stream(io.BufferedReader(source), {}.update, source.holes())
        assert sparse.oid == dense.oid  # same chunks: dedup, fsck and old stores agree
        written = sum(map(len, data.values()))
        assert source.read_bytes <= written + (len(source.holes()) + 1) * 4 * m
        # st_blocks: what ZERO_CHUNK holds, counted without decoding the index
        chunks = decode_chunked(sparse.objects[sparse.oid]).chunks
        zeros = sum(n for oid, n in chunks if oid == ZERO_CHUNK[0])
        assert ContentReader(MemoryStore(), pending=sparse.objects).hole_bytes(sparse.oid) == zeros


def test_a_64_gib_sparse_file_costs_its_data() -> None:
    size = 64 << 30
    data = {0: _random(4096), 5 << 30: _random(100_000, seed=2), size - 10: b"0123456789"}
    source = _SparseSource(size, data)
    sunk: dict[ObjectId, bytes] = {}
    stored = store_stream(io.BufferedReader(source), sunk.update, source.holes())
    assert source.read_bytes < 8 << 20
    store = MemoryStore()
    store.write({**sunk, **stored.objects})
    reader = ContentReader(store)
    assert reader.read(stored.oid, 0, 4096) == data[0]
    assert reader.read(stored.oid, (5 << 30) - 5, 100_010) == bytes(5) + data[5 << 30] + bytes(5)
    assert reader.read(stored.oid, 40 << 30, 1 << 20) == bytes(1 << 20)
    assert reader.read(stored.oid, size - 20) == bytes(10) + b"0123456789"
    # a hole is the zero chunk over and over: stored once
    assert len(sunk) < 10 and ZERO_CHUNK[0] in sunk


def test_an_edit_of_a_sparse_file_cuts_its_holes_without_reading_them() -> None:
    m = MAX_CHUNK
    old = _SparseSource(200 * m, {0: _random(3 * m), 100 * m: _random(m, seed=2)})
    stored = pack_bytes(old.dense())
    # grown by ftruncate, written at the new end: what a spool hands over on close
    new = _SparseSource(4000 * m + 3, {**old.data, 4000 * m - 5: b"the end!"})
    edits = [(200 * m, 4000 * m + 3)]
    sunk: dict[ObjectId, bytes] = {}
    edited = store_edited(
        io.BufferedReader(new), new.size, _index(stored), edits, sunk.update, new.holes()
    )
    assert new.read_bytes < 16 * m
    assert edited.oid == pack_bytes(new.dense()).oid


@pytest.mark.parametrize("old_size", [0, 5000, CHUNK_THRESHOLD + 1, 5 << 20])
def test_extending_by_truncate_gives_the_id_of_the_dense_bytes(old_size: int) -> None:
    store = MemoryStore()
    data = _random(old_size, seed=old_size)
    base = pack_bytes(data)
    store.write(base.objects)
    for new_size in (CHUNK_THRESHOLD + 3, 9 << 20, (9 << 20) + MAX_CHUNK):
        if new_size <= old_size:
            continue
        grown = ContentReader(store).resize(base.oid, old_size, new_size)
        assert grown.oid == pack_bytes(data + bytes(new_size - old_size)).oid
        assert len(grown.objects) <= 5  # the re-cut tail, one zero chunk, the index
