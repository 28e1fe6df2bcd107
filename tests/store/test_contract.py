"""The ObjectStore contract, run against every backend: MemoryStore, RocksStore, and
S3Store on SeaweedFS, plain and encrypted (whose object names are keyed: it lists no ids)."""

from __future__ import annotations

import pytest
from store_backends import Backend

from helixfs.errors import CorruptObject, InvalidInput, NotFound, RefConflict
from helixfs.ids import ObjectId, object_id
from helixfs.store import ANY, Patch, RefUpdate


def obj(data: bytes) -> tuple[ObjectId, bytes]:
    return object_id(data), data


SIZES = [0, 1, 31, 32, 100, 4096, 70_000, 1 << 20]


@pytest.mark.parametrize("size", SIZES)
def test_roundtrip_any_size(backend: Backend, size: int) -> None:
    oid, data = obj(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    backend.store.write({oid: data})
    assert backend.store.get(oid) == data
    assert backend.store.contains(oid)
    assert backend.reopen().get(oid) == data


def test_incompressible_roundtrip(backend: Backend) -> None:
    import os

    oid, data = obj(os.urandom(50_000))
    backend.store.write({oid: data})
    assert backend.reopen().get(oid) == data


def test_missing_object_is_not_found(backend: Backend) -> None:
    oid, _ = obj(b"never written")
    assert not backend.store.contains(oid)
    with pytest.raises(NotFound, match=oid.hex()):
        backend.store.get(oid)


def test_malformed_id_is_refused(backend: Backend) -> None:
    with pytest.raises(InvalidInput):
        backend.store.get(ObjectId(b"short"))


def test_record_that_does_not_hash_to_its_id_is_refused_and_nothing_written(
    backend: Backend,
) -> None:
    good_id, good = obj(b"good")
    bad_id, _ = obj(b"claimed")
    with pytest.raises(InvalidInput):
        backend.store.write({good_id: good, bad_id: b"other bytes"}, [RefUpdate("x", b"1")])
    assert not backend.store.contains(good_id)
    assert not backend.store.contains(bad_id)
    assert backend.store.ref("x") is None


@pytest.mark.parametrize("size", [10, 5000])
def test_corruption_is_detected_and_names_the_object(backend: Backend, size: int) -> None:
    oid, data = obj(b"precious " * size)
    backend.store.write({oid: data})

    def flip_last_byte(frame: bytes) -> bytes:
        return frame[:-1] + bytes([frame[-1] ^ 0x55])

    backend.tamper(oid, flip_last_byte)
    with pytest.raises(CorruptObject, match=oid.hex()):
        backend.store.get(oid)


def test_truncated_frame_is_corrupt(backend: Backend) -> None:
    oid, data = obj(b"abc" * 1000)
    backend.store.write({oid: data})
    backend.tamper(oid, lambda frame: frame[:3])
    with pytest.raises(CorruptObject, match=oid.hex()):
        backend.store.get(oid)


# ---------------------------------------------------------------- refs


def test_create_only_ref(backend: Backend) -> None:
    store = backend.store
    store.write({}, [RefUpdate("branches/main", b"c1", expected=None)])
    assert store.ref("branches/main") == b"c1"
    with pytest.raises(RefConflict, match="branches/main"):
        store.write({}, [RefUpdate("branches/main", b"c2", expected=None)])
    assert store.ref("branches/main") == b"c1"


def test_compare_and_swap_success_and_conflict(backend: Backend) -> None:
    store = backend.store
    store.write({}, [RefUpdate("HEAD", b"main")])
    store.write({}, [RefUpdate("HEAD", b"dev", expected=b"main")])
    assert store.ref("HEAD") == b"dev"
    with pytest.raises(RefConflict):
        store.write({}, [RefUpdate("HEAD", b"other", expected=b"main")])
    assert store.ref("HEAD") == b"dev"
    with pytest.raises(RefConflict):
        store.write({}, [RefUpdate("missing", b"x", expected=b"something")])
    assert store.ref("missing") is None


def test_ref_delete_with_and_without_compare(backend: Backend) -> None:
    store = backend.store
    store.write({}, [RefUpdate("a", b"1"), RefUpdate("b", b"2")])
    with pytest.raises(RefConflict):
        store.write({}, [RefUpdate("a", None, expected=b"9")])
    store.write({}, [RefUpdate("a", None, expected=b"1"), RefUpdate("b", None, expected=ANY)])
    assert store.ref("a") is None and store.ref("b") is None
    store.write({}, [RefUpdate("gone", None)])  # deleting nothing is fine with ANY
    assert backend.reopen().ref("a") is None


def test_conflict_writes_neither_objects_nor_other_refs(backend: Backend) -> None:
    store = backend.store
    store.write({}, [RefUpdate("branches/main", b"old")])
    oid, data = obj(b"would-be commit")
    with pytest.raises(RefConflict):
        store.write(
            {oid: data},
            [
                RefUpdate("work/main", b"tree", expected=None),
                RefUpdate("branches/main", b"new", expected=b"stale"),
            ],
        )
    assert not store.contains(oid)
    assert store.ref("work/main") is None
    assert store.ref("branches/main") == b"old"


def test_updates_in_one_write_apply_in_order(backend: Backend) -> None:
    store = backend.store
    store.write({}, [RefUpdate("r", b"1", expected=None), RefUpdate("r", b"2", expected=b"1")])
    assert store.ref("r") == b"2"


def test_refs_prefix_listing_is_sorted(backend: Backend) -> None:
    store = backend.store
    names = ["branches/zeta", "branches/alpha", "snapshots/s1", "branches/mid", "HEAD", "work/a"]
    store.write({}, [RefUpdate(n, n.encode()) for n in names])
    assert [n for n, _ in store.refs("branches/")] == [
        "branches/alpha",
        "branches/mid",
        "branches/zeta",
    ]
    assert [n for n, _ in store.refs()] == sorted(names)
    assert dict(store.refs("snapshots/")) == {"snapshots/s1": b"snapshots/s1"}
    assert list(store.refs("nothing/")) == []


@pytest.mark.parametrize("name", ["", "a\x00b", "line\nbreak", "bad\udcff"])
def test_bad_ref_name_is_refused(backend: Backend, name: str) -> None:
    with pytest.raises(InvalidInput):
        backend.store.write({}, [RefUpdate(name, b"x")])
    assert list(backend.store.refs()) == []


def test_unicode_ref_names_roundtrip(backend: Backend) -> None:
    names = ["branches/café", "branches/ветка", "branches/分支", "snapshots/🚀"]
    backend.store.write({}, [RefUpdate(n, n.encode()) for n in names])
    assert [n for n, _ in backend.reopen().refs()] == sorted(names)


# ---------------------------------------------------------------- objects


def test_ids_and_delete(backend: Backend) -> None:
    store = backend.store
    items = dict(obj(f"object {i}".encode() * 50) for i in range(20))
    store.write(items)
    if backend.lists_ids:
        assert set(store.ids()) == set(items)
    doomed = list(items)[:5]
    store.delete(doomed)
    store.delete(doomed)  # deleting what is gone is a no-op
    for oid in doomed:
        assert not store.contains(oid)
    assert all(backend.reopen().contains(oid) for oid in set(items) - set(doomed))
    if backend.lists_ids:
        assert set(backend.store.ids()) == set(items) - set(doomed)


def test_ids_with_a_prefix(backend: Backend) -> None:
    items = dict(obj(f"object {i}".encode()) for i in range(300))
    backend.store.write(items)
    if not backend.lists_ids:  # an encrypted remote's names are keyed (ADR 0057)
        with pytest.raises(InvalidInput, match="do not reveal ids"):
            list(backend.store.ids())
        return
    for prefix in (b"", next(iter(items))[:1], next(iter(items))[:2], b"\xff\xff\xff"):
        expected = {oid for oid in items if oid.startswith(prefix)}
        assert set(backend.store.ids(prefix)) == expected


def test_rewriting_an_existing_object_is_harmless(backend: Backend) -> None:
    oid, data = obj(b"same bytes" * 100)
    backend.store.write({oid: data})
    backend.store.write({oid: data})
    assert backend.store.get(oid) == data
    assert backend.store.stats().objects == 1


def test_delta_hints_roundtrip(backend: Backend) -> None:
    store = backend.store
    lines = [f"line {i}: some source text here\n".encode() for i in range(400)]
    base_id, base = obj(b"".join(lines))
    store.write({base_id: base})
    versions = [(base_id, base)]
    for i in range(30):
        lines[(i * 37) % 400] = f"edited {i}\n".encode()
        new_id, new = obj(b"".join(lines))
        store.write({new_id: new}, delta_bases={new_id: versions[-1][0]})
        versions.append((new_id, new))
    reopened = backend.reopen()
    for oid, data in versions:
        assert reopened.get(oid) == data


def test_delta_hint_for_unwritten_object_is_refused(backend: Backend) -> None:
    a, data = obj(b"a")
    b, _ = obj(b"b")
    with pytest.raises(InvalidInput):
        backend.store.write({a: data}, delta_bases={b: a})
    assert not backend.store.contains(a)


def test_delta_hint_to_missing_base_still_stores(backend: Backend) -> None:
    a, data = obj(b"payload" * 100)
    missing, _ = obj(b"not there")
    backend.store.write({a: data}, delta_bases={a: missing})
    assert backend.reopen().get(a) == data


def patched(base: bytes, at: int, cut: int, middle: bytes) -> tuple[bytes, Patch]:
    """`base` with `cut` bytes at `at` replaced by `middle`, and the patch saying so."""
    record = base[:at] + middle + base[at + cut :]
    return record, Patch(object_id(base), at, len(base) - at - cut)


def test_patch_hints_roundtrip(backend: Backend) -> None:
    """A chain of patched versions (past any depth limit) reads back, reopened too; so
    does a patch whose base is missing (a hint: the record is stored whole)."""
    store = backend.store
    base = bytes(range(256)) * 30
    store.write({object_id(base): base})
    versions = [base]
    for i in range(40):
        record, patch = patched(versions[-1], (i * 97) % 7000, i % 5, b"entry %d" % i)
        store.write({object_id(record): record}, patches={object_id(record): patch})
        versions.append(record)
    orphan, patch = patched(b"never stored" * 300, 10, 3, b"x")
    store.write({object_id(orphan): orphan}, patches={object_id(orphan): patch})
    reopened = backend.reopen()
    for record in [*versions, orphan]:
        assert reopened.get(object_id(record)) == record


def test_a_patch_on_an_object_stored_already_changes_nothing(backend: Backend) -> None:
    base = b"a" * 5000
    record, patch = patched(base, 100, 10, b"b" * 10)
    backend.store.write({object_id(record): record})
    backend.store.write(
        {object_id(base): base}, patches={object_id(base): Patch(object_id(record), 100, 4890)}
    )
    assert backend.reopen().get(object_id(base)) == base


@pytest.mark.parametrize(
    "patch",
    [
        Patch(ObjectId(b"short"), 0, 0),
        Patch(object_id(b"x"), -1, 0),
        Patch(object_id(b"x"), 60, 50),
    ],
)
def test_bad_patches_are_refused_and_nothing_written(backend: Backend, patch: Patch) -> None:
    oid, data = obj(b"y" * 100)
    with pytest.raises(InvalidInput):
        backend.store.write({oid: data}, [RefUpdate("x", b"1")], patches={oid: patch})
    with pytest.raises(InvalidInput):  # for a record the write does not hold
        backend.store.write({}, patches={oid: Patch(object_id(b"x"), 0, 0)})
    assert not backend.store.contains(oid)
    assert backend.store.ref("x") is None


def test_stats_count_objects_and_logical_bytes(backend: Backend) -> None:
    store = backend.store
    items = dict(obj(f"record {i} ".encode() * 100) for i in range(10))
    store.write(items)
    stats = store.stats()
    assert stats.objects == 10
    assert stats.logical_bytes == sum(len(v) for v in items.values())
    assert stats.stored_bytes > 0
    for oid in items:
        store.get(oid)
    assert 0.0 <= store.stats().cache_hit_ratio <= 1.0


def test_sync_write_and_sync(backend: Backend) -> None:
    oid, data = obj(b"durable")
    backend.store.write({oid: data}, [RefUpdate("HEAD", b"main")], sync=True)
    backend.store.sync()
    reopened = backend.reopen()
    assert reopened.get(oid) == data
    assert reopened.ref("HEAD") == b"main"


def test_ref_lookups_refuse_non_strings(backend: Backend) -> None:
    with pytest.raises(InvalidInput):
        backend.store.ref(b"HEAD")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        list(backend.store.refs(b"branches/"))  # type: ignore[arg-type]


def test_racing_compare_and_swap_loses_no_update(backend: Backend) -> None:
    """Threads increment one ref by CAS; every increment lands exactly once."""
    import threading

    store = backend.store
    store.write({}, [RefUpdate("counter", b"0", expected=None)])
    per_thread, threads = 50, 4

    def bump() -> None:
        done = 0
        while done < per_thread:
            current = store.ref("counter")
            assert current is not None
            try:
                store.write({}, [RefUpdate("counter", b"%d" % (int(current) + 1), current)])
            except RefConflict:
                continue
            done += 1

    workers = [threading.Thread(target=bump) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert store.ref("counter") == b"%d" % (per_thread * threads)


def test_repack_never_changes_what_objects_read_as(backend: Backend) -> None:
    """A backend may keep objects as deltas after a repack, or whole: reads are the same."""
    versions = [
        b"".join(b"line %d of version %d\n" % (n, min(n, v)) for n in range(200)) for v in range(6)
    ]
    ids = [object_id(data) for data in versions]
    backend.store.write(dict(zip(ids, versions, strict=True)), uncompressed=set(ids))
    backend.store.repack(list(zip(ids[1:], ids[:-1], strict=True)))
    assert all(backend.store.delta_base(oid) in (None, *ids) for oid in ids)
    assert [backend.store.get(oid) for oid in ids] == versions
    assert [backend.reopen().get(oid) for oid in ids] == versions


def test_a_run_returns_each_record_in_the_order_asked(backend: Backend) -> None:
    import os

    records = [os.urandom(size) for size in (70_000, 5, 20_000, 70_000)]
    ids = [object_id(data) for data in records]
    backend.store.write(dict(zip(ids, records, strict=True)))
    store = backend.reopen()
    order = [3, 0, 0, 1, 2, 3]
    assert store.get_run([ids[i] for i in order]) == [records[i] for i in order]
    assert store.get_run([]) == []
    with pytest.raises(NotFound):
        store.get_run([ids[0], object_id(b"absent")])
