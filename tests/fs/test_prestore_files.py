"""Big files written from their start are stored while written (ADR 0048): what the
close stores, reads back and survives a gc is exactly the file."""

from __future__ import annotations

import io
import os
import random
import time

import pytest
from fs_client import CTX, ROOT, Client

from helixfs.fs.operations import Operations
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
