"""Big files written from their start are stored while written (ADR 0048): what the
close stores, reads back and survives a gc is exactly the file."""

from __future__ import annotations

import io
import os
import random
import time

import pytest
from fs_client import CTX, ROOT, Client, Fields

from helixfs.fs.operations import Operations
from helixfs.fs.spool import DROP_STEP, PAGE, Spool
from helixfs.vcs.content import store_stream
from helixfs.vcs.prestore import FEED_BYTES, Prestore
from helixfs.vcs.repo import Repository

MiB = 1 << 20


def _wait_fed(ops: Operations, fewest: int = 1) -> None:
    """Until the feeder thread has stored `fewest` chunks of an open file (no timing
    is asserted: a loaded machine only waits longer)."""
    deadline = time.monotonic() + 120
    while len(ops.spools.prestored()) < fewest:
        assert time.monotonic() < deadline, "the feeder stored nothing"
        time.sleep(0.01)


def _whole_id(data: bytes) -> bytes:
    return store_stream(io.BytesIO(data), lambda objects: None).oid


@pytest.fixture
def heads(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each prestore's finish gave the close."""
    seen: list[object] = []
    finish = Prestore.finish

    def spy(self: Prestore) -> object:
        head = finish(self)
        seen.append(head)
        return head

    monkeypatch.setattr(Prestore, "finish", spy)
    return seen


async def _create(ops: Operations, name: bytes) -> int:
    fi, _ = await ops.create(ROOT, name, 0o644, os.O_WRONLY, CTX)
    return int(fi.fh)


async def _close(ops: Operations, fh: int) -> None:
    await ops.flush(fh)
    await ops.release(fh)


async def test_a_file_written_in_order_is_stored_ahead_and_reads_back_exactly(
    ops: Operations, client: Client, repo: Repository, heads: list[object]
) -> None:
    data = random.Random(5).randbytes(3 * FEED_BYTES + 12345)
    fh = await _create(ops, b"big.bin")
    for at in range(0, len(data), MiB):
        await ops.write(fh, at, data[at : at + MiB])
        if at == 2 * FEED_BYTES:
            _wait_fed(ops)
    await _close(ops, fh)
    assert heads and heads[0] is not None  # the close resumed from the stored head
    assert await client.read_file("big.bin") == data
    tree = repo.worktree()
    node = tree.lookup(tree.root, b"big.bin")
    assert tree.content_id(node) == _whole_id(data)


async def test_a_write_behind_the_end_voids_it_and_the_file_is_still_right(
    ops: Operations, client: Client, heads: list[object]
) -> None:
    rng = random.Random(6)
    data = bytearray(rng.randbytes(2 * FEED_BYTES + 5000))
    fh = await _create(ops, b"db.bin")
    for at in range(0, len(data), MiB):
        await ops.write(fh, at, bytes(data[at : at + MiB]))
    _wait_fed(ops)
    patch = rng.randbytes(4096)
    await ops.write(fh, 100, patch)  # into the stored head
    data[100 : 100 + len(patch)] = patch
    await _close(ops, fh)
    assert heads == []  # voided: the close stored the file whole
    assert await client.read_file("db.bin") == bytes(data)


async def test_a_gc_while_the_file_is_written_keeps_its_stored_head(
    ops: Operations, client: Client, repo: Repository
) -> None:
    data = random.Random(7).randbytes(2 * FEED_BYTES + 777)
    fh = await _create(ops, b"kept.bin")
    for at in range(0, 2 * FEED_BYTES, MiB):
        await ops.write(fh, at, data[at : at + MiB])
    _wait_fed(ops)
    repo.gc()  # no ref reaches the stored head yet: the mount names it
    for at in range(2 * FEED_BYTES, len(data), MiB):
        await ops.write(fh, at, data[at : at + MiB])
    await _close(ops, fh)
    assert await client.read_file("kept.bin") == data
    assert not repo.fsck().problems


# -- the memory file of a prestored spool (ADR 0090) ---------------------------------


def _wait_stored(spool: Spool, size: int) -> None:
    """Until the feeder thread has stored `size` bytes of the spool's file (no timing is
    asserted: a loaded machine only waits longer)."""
    deadline = time.monotonic() + 120
    while (prestore := spool._prestore) is not None and prestore.pos < size:
        assert time.monotonic() < deadline, "the feeder stored too little"
        time.sleep(0.01)


def _spool_of(ops: Operations) -> Spool:
    (spool,) = [spool for _, spool in ops.spools._spools.values()]
    return spool


async def _write_letting_go(ops: Operations, name: bytes, data: bytes) -> tuple[int, Spool]:
    """`data` written in MiB writes, waiting for the feeder halfway, so that the spool's
    memory file lets go of stored bytes on the writes after."""
    fh = await _create(ops, name)
    half = len(data) // 2 // MiB * MiB
    for at in range(0, half, MiB):
        await ops.write(fh, at, data[at : at + MiB])
    _wait_stored(_spool_of(ops), DROP_STEP + PAGE)
    for at in range(half, len(data), MiB):
        await ops.write(fh, at, data[at : at + MiB])
    spool = _spool_of(ops)
    assert spool._punched >= DROP_STEP and spool._dropped == spool._punched
    return fh, spool


async def test_a_prestored_file_lives_in_memory_and_reads_back_what_it_let_go_of(
    ops: Operations, client: Client, repo: Repository, heads: list[object]
) -> None:
    data = random.Random(8).randbytes(4 * FEED_BYTES + 4321)
    fh, spool = await _write_letting_go(ops, b"mem.bin", data)
    assert spool._in_memory_file
    edge = spool._dropped  # across the edge of what the memory file let go of
    assert spool.read(edge - 5000, 10000) == data[edge - 5000 : edge + 5000]
    assert spool.read(0, len(data)) == data
    assert await client.read_file("mem.bin") == data  # a reader's close stores the file
    await _close(ops, fh)
    assert heads and heads[0] is not None
    assert await client.read_file("mem.bin") == data
    tree = repo.worktree()
    assert tree.content_id(tree.lookup(tree.root, b"mem.bin")) == _whole_id(data)
    assert ops.spools.file_budget.used == 0


async def test_a_write_into_what_was_let_go_of_makes_it_the_base_of_the_file(
    ops: Operations, client: Client, repo: Repository, heads: list[object]
) -> None:
    rng = random.Random(9)
    data = bytearray(rng.randbytes(4 * FEED_BYTES + 999))
    fh, spool = await _write_letting_go(ops, b"patched.bin", bytes(data))
    dropped = spool._dropped
    for at in (100, dropped - 2000):  # inside, and across the edge of what was let go
        patch = rng.randbytes(4096)
        await ops.write(fh, at, patch)
        data[at : at + len(patch)] = patch
    assert not spool._in_memory_file  # no prestore left: the spool went to the disk
    assert await client.read_file("patched.bin") == bytes(data)
    repo.gc()  # the stored head is the base now: still kept
    await _close(ops, fh)
    assert heads == []  # voided: stored whole
    assert await client.read_file("patched.bin") == bytes(data)
    assert not repo.fsck().problems


async def test_a_truncate_into_what_was_let_go_of_then_more_writes(
    ops: Operations, client: Client
) -> None:
    rng = random.Random(10)
    data = rng.randbytes(4 * FEED_BYTES + 55)
    fh, spool = await _write_letting_go(ops, b"cut.bin", data)
    ino = await client.ino("cut.bin")
    attrs = await ops.getattr(ino, CTX)
    attrs.st_size = cut = spool._dropped // 2 + 7
    await ops.setattr(ino, attrs, Fields(update_size=True), None, CTX)
    tail = rng.randbytes(3 * MiB)
    await ops.write(fh, cut + 10, tail)  # leaves a hole of 10 zeros
    expected = data[:cut] + bytes(10) + tail
    assert await client.read_file("cut.bin") == expected
    await _close(ops, fh)
    assert await client.read_file("cut.bin") == expected


async def test_an_fsync_in_the_middle_then_more_writes(
    ops: Operations, client: Client, repo: Repository, heads: list[object]
) -> None:
    rng = random.Random(11)
    data = rng.randbytes(4 * FEED_BYTES + 77)
    more = rng.randbytes(2 * FEED_BYTES + 5)
    fh, spool = await _write_letting_go(ops, b"synced.bin", data)
    await ops.fsync(fh, False)  # the head is taken: what was let go of is the base now
    assert heads and heads[0] is not None
    assert await client.read_file("synced.bin") == data
    for at in range(0, len(more), MiB):
        await ops.write(fh, len(data) + at, more[at : at + MiB])
    assert not spool._in_memory_file
    await _close(ops, fh)
    assert await client.read_file("synced.bin") == data + more
    tree = repo.worktree()
    assert tree.content_id(tree.lookup(tree.root, b"synced.bin")) == _whole_id(data + more)


async def test_past_the_mounts_budget_the_memory_file_moves_to_the_disk(
    ops: Operations, client: Client, heads: list[object]
) -> None:
    ops.spools.file_budget.limit = FEED_BYTES - MiB  # held before the first feed starts
    data = random.Random(12).randbytes(4 * FEED_BYTES + 31)
    fh = await _create(ops, b"budget.bin")
    for at in range(0, len(data), MiB):
        await ops.write(fh, at, data[at : at + MiB])
    spool = _spool_of(ops)
    assert not spool._in_memory_file and spool._file is not None
    assert ops.spools.file_budget.used == 0
    assert await client.read_file("budget.bin") == data
    await _close(ops, fh)
    assert heads and heads[0] is not None  # the prestore lived on, on the disk
    assert await client.read_file("budget.bin") == data
