"""The read path on a real RocksDB store: large chunked files read back exactly, at any
offset and size, and a damaged chunk is refused however much around it is cached."""

from __future__ import annotations

import errno
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from fs_client import CTX, Client, expect_errno, make_ops

from helixfs.fs.operations import Operations
from helixfs.ids import ObjectId
from helixfs.store.frame import Codec, codec_of, parse_body
from helixfs.store.rocksdb_open import open_db
from helixfs.vcs.repo import Repository

SIZE = (3 << 20) + 12345  # chunked (above the 1 MiB threshold), ~50 chunks, a ragged end
DATA = random.Random(5).randbytes(SIZE)


def chunk_layout(repo: Repository, path: bytes) -> tuple[list[int], list[ObjectId]]:
    entry = repo.entry("HEAD", path)
    assert entry is not None
    layout = repo.contents.chunks(entry.oid)
    assert layout is not None, "the file should be chunked"
    return layout


async def open_read(ops: Operations, path: str) -> int:
    ino = await Client(ops).ino(path)
    return (await ops.open(ino, os.O_RDONLY, CTX)).fh


@pytest.fixture
def reopened(store: Path, repo: Repository, ops: Operations) -> Iterator[Operations]:
    """`big.bin` written through the fs, then the store closed and opened afresh: every
    read below comes from RocksDB, through no cache filled by the write."""
    trio.run(Client(ops).write_file, "big.bin", DATA)
    ops.close()
    repo.close()
    fresh = Repository.open(store)
    fresh_ops = make_ops(fresh)
    yield fresh_ops
    fresh_ops.close()
    fresh.close()


def flip_last_byte(store: Path, oid: ObjectId) -> None:
    """Damage a stored frame behind the store's back (closed): same length, one bit off,
    so only the hash check can tell."""
    db = open_db(store / "objects")
    family, key = db.get_column_family("objects"), bytes(oid)
    if codec_of(oid, family[key]) is Codec.BODY:  # the frame itself is in `bodies`
        family, key = db.get_column_family("bodies"), parse_body(oid, family[key]).key
    frame = family[key]
    family[key] = frame[:-1] + bytes([frame[-1] ^ 1])
    del family
    db.close()


def alignments(starts: list[int]) -> Iterator[tuple[int, int]]:
    """(offset, size) pairs around chunk edges, request sizes the kernel uses, the end."""
    sizes = (1, 4095, 4096, 65536, 131072, 1 << 20, (1 << 20) + 1)
    for edge in [*starts[:4], starts[len(starts) // 2], starts[-2], starts[-1]]:
        for offset in (edge - 1, edge, edge + 1):
            for size in sizes:
                if offset >= 0:
                    yield offset, size


async def test_chunked_file_reads_exactly_at_every_alignment(reopened: Operations) -> None:
    starts, _ = chunk_layout(reopened.repo, b"big.bin")
    fh = await open_read(reopened, "big.bin")
    try:
        for offset, size in alignments(starts):
            got = await reopened.read(fh, offset, size)
            assert got == DATA[offset : offset + size], (offset, size)
        for step in (4096, 131072, 1 << 20):  # sequential passes, misaligned on purpose
            out = bytearray()
            offset = 4095
            while chunk := await reopened.read(fh, offset, step):
                out += chunk
                offset += len(chunk)
            assert out == DATA[4095:], step
    finally:
        await reopened.release(fh)


async def test_a_corrupt_chunk_is_refused_even_with_its_neighbours_cached(
    store: Path, reopened: Operations
) -> None:
    repo = reopened.repo
    starts, ids = chunk_layout(repo, b"big.bin")
    victim = len(ids) // 2
    fh = await open_read(reopened, "big.bin")
    try:  # the path, the open handle, the index and the neighbours are all cached now
        for i in (victim - 1, victim + 1):
            size = starts[i + 1] - starts[i]
            assert await reopened.read(fh, starts[i], size) == DATA[starts[i] : starts[i + 1]]
    finally:
        await reopened.release(fh)
    reopened.close()
    repo.close()
    flip_last_byte(store, ids[victim])
    damaged = Repository.open(store)
    ops = make_ops(damaged)
    try:
        fh = await open_read(ops, "big.bin")
        before = starts[victim] - 10
        assert await ops.read(fh, 0, 100) == DATA[:100]
        for _ in range(2):  # refused every time: a failed check never lands in a cache
            await expect_errno(errno.EIO, ops.read(fh, starts[victim] + 1, 10))
            await expect_errno(errno.EIO, ops.read(fh, before, 1 << 20))
        assert await ops.read(fh, before, 10) == DATA[before : before + 10]
        after = starts[victim + 1]
        assert await ops.read(fh, after, 4096) == DATA[after : after + 4096]
        await ops.release(fh)
    finally:
        ops.close()
        damaged.close()


def count_gets(repo: Repository) -> list[int]:
    """A running count of the store's single-object gets (a spy: the real get runs)."""
    store, counter = repo.store, [0]
    real_get = store.get

    def get(oid: ObjectId, *, keep: bool = True) -> bytes:
        counter[0] += 1
        return real_get(oid, keep=keep)

    store.get = get  # type: ignore[method-assign]
    return counter


async def test_chunk_runs_read_exactly_after_an_overwrite_in_the_middle(
    store: Path, reopened: Operations
) -> None:
    """A request's chunks are read in one run over `bodies` in write order (ADR 0035).
    After an overwrite in the middle, the new chunks are stored later (or as deltas),
    out of the file's order: the run must still give every chunk's own bytes, at chunk
    edges, at the file's end, and across the edit."""
    middle = SIZE // 2
    patch = random.Random(6).randbytes(100_000)
    fh = (await reopened.open(await Client(reopened).ino("big.bin"), os.O_WRONLY, CTX)).fh
    assert await reopened.write(fh, middle, patch) == len(patch)
    await reopened.flush(fh)
    await reopened.release(fh)
    reopened.close()
    reopened.repo.close()
    expected = DATA[:middle] + patch + DATA[middle + len(patch) :]
    fresh = Repository.open(store)
    ops = make_ops(fresh)
    try:
        starts, ids = chunk_layout(fresh, b"big.bin")
        gets = count_gets(fresh)
        fh = await open_read(ops, "big.bin")
        for step in (1 << 20, 131072, (1 << 20) + 1):  # each pass from a cold record cache
            fresh.contents.records.clear()
            gets[0] = 0
            out = bytearray()
            while chunk := await ops.read(fh, len(out), step):
                out += chunk
            assert out == expected, step
            if step == 1 << 20:  # most chunks came from runs, not one get each
                assert gets[0] < len(ids) // 2, (gets[0], len(ids))
        for edge in (starts[1], starts[-2], middle, middle + len(patch)):
            fresh.contents.records.clear()
            got = await ops.read(fh, edge - 5000, 70_000)
            assert got == expected[edge - 5000 : edge + 65_000], edge
        await ops.release(fh)
    finally:
        ops.close()
        fresh.close()
