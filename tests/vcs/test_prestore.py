"""A file stored ahead of its close (ADR 0048) is stored exactly as at close."""

from __future__ import annotations

import io
import random

import pytest

from helixfs.ids import ObjectId
from helixfs.store.memory import MemoryStore
from helixfs.vcs import content
from helixfs.vcs.content import MAX_CHUNK, store_stream
from helixfs.vcs.prestore import FEED_BYTES, Prestore


def _stored_whole(data: bytes) -> ObjectId:
    return store_stream(io.BytesIO(data), lambda objects: None).oid


@pytest.mark.parametrize("seed", range(4))
def test_fed_in_any_steps_the_file_gets_the_id_storing_it_whole_gives(seed: int) -> None:
    rng = random.Random(seed)
    size = rng.randrange(FEED_BYTES, 3 * FEED_BYTES)
    data = rng.randbytes(size // 2) + bytes(rng.randrange(1 << 20)) + rng.randbytes(size // 2)
    store = MemoryStore()
    prestore = Prestore(lambda objects: store.write(objects, bulk=True))
    written = 0
    while written < len(data):
        written = min(len(data), written + rng.choice([4096, 1 << 20, 3 << 20]))
        prestore.feed(lambda pos, n: data[pos : pos + n], lambda w=written: w)  # type: ignore[misc]
    head = prestore.finish()
    # a chunk kept starts MAX_CHUNK or more before the end of what was written then: it
    # may end nearer than that (the bound was on the head's end, and seed 10 failed it)
    assert head is not None and head[0] > 0 and head[0] - head[1][-1][1] + MAX_CHUNK <= len(data)
    assert all(store.get(oid) for oid, _ in head[1])  # the head's chunks are in the store
    assert store_stream(io.BytesIO(data), lambda objects: None, head=head).oid == (
        _stored_whole(data)
    )


def test_a_void_prestore_gives_no_head_and_stores_nothing_more() -> None:
    data = random.Random(1).randbytes(2 * FEED_BYTES)
    stored: list[int] = []
    prestore = Prestore(lambda objects: stored.append(len(objects)))
    prestore.void()
    prestore.feed(lambda pos, n: data[pos : pos + n], lambda: len(data))
    assert prestore.finish() is None and stored == []


def test_a_void_during_a_feed_drops_the_batch_it_was_storing() -> None:
    data = random.Random(2).randbytes(2 * FEED_BYTES)
    prestore: Prestore

    def sink(objects: object) -> None:
        prestore.void()  # a write elsewhere than at the end, while the batch is stored

    prestore = Prestore(sink)
    prestore.feed(lambda pos, n: data[pos : pos + n], lambda: len(data))
    assert prestore.ids() == [] and prestore.finish() is None


def test_a_failing_store_voids_the_prestore_and_the_close_stores_it_whole() -> None:
    data = random.Random(3).randbytes(2 * FEED_BYTES)

    def sink(objects: object) -> None:
        raise OSError(28, "No space left on device")

    prestore = Prestore(sink)
    prestore.feed(lambda pos, n: data[pos : pos + n], lambda: len(data))
    assert prestore.finish() is None


def test_a_head_past_the_end_is_ignored() -> None:
    data = random.Random(4).randbytes(3 << 20)
    fake = (len(data) + 1, [(ObjectId(bytes(32)), len(data) + 1)])
    assert store_stream(io.BytesIO(data), lambda objects: None, head=fake).oid == (
        _stored_whole(data)
    )
    assert len(data) > content.CHUNK_THRESHOLD


def test_an_unexpected_error_in_a_feed_voids_it_and_is_not_raised() -> None:
    data = random.Random(5).randbytes(2 * FEED_BYTES)

    def sink(objects: object) -> None:
        raise RuntimeError("a bug in the sink")

    prestore = Prestore(sink)
    prestore.feed(lambda pos, n: data[pos : pos + n], lambda: len(data))
    assert not prestore.valid and prestore.finish() is None
