"""Backends under test (shared by the store tests), each able to damage a stored object."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import rocksdict

from helixfs.ids import ObjectId
from helixfs.store import ObjectStore
from helixfs.store.frame import FRAME_VERSION, Codec, parse_body
from helixfs.store.memory import MemoryStore
from helixfs.store.rocks import RocksStore
from helixfs.store.rocksdb_open import COLUMN_FAMILIES


@dataclass
class Backend:
    """A store plus the backend-specific moves a contract test cannot make via the protocol."""

    current: Callable[[], ObjectStore]
    reopen: Callable[[], ObjectStore]  # close and open again (memory: the same object)
    tamper: Callable[[ObjectId, Callable[[bytes], bytes]], None]  # edit the stored frame
    lists_ids: bool = True  # False: ids() is refused (an encrypted remote's keyed names)

    @property
    def store(self) -> ObjectStore:
        return self.current()


def raw_rocks_edit(path: Path, oid: ObjectId, change: Callable[[bytes], bytes]) -> None:
    """Rewrite a stored frame straight in RocksDB, behind the store's back."""
    families = {name: rocksdict.Options(raw_mode=True) for name in COLUMN_FAMILIES}
    db = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True), column_families=families)
    family, key = db.get_column_family("objects"), bytes(oid)
    frame = family.get(key)
    assert isinstance(frame, bytes), "tampering with an object that is not stored"
    if frame[3:5] == bytes((FRAME_VERSION, Codec.BODY)):  # the frame is stored apart
        family, key = db.get_column_family("bodies"), parse_body(oid, frame).key
        frame = family[key]
    family[key] = change(frame)
    del family
    db.close()


def memory_backend() -> Iterator[Backend]:
    store = MemoryStore()

    def tamper(oid: ObjectId, change: Callable[[bytes], bytes]) -> None:
        store._objects[oid] = change(store._objects[oid])

    yield Backend(lambda: store, lambda: store, tamper)


def rocks_backend(path: Path) -> Iterator[Backend]:
    holder: list[RocksStore] = [RocksStore(path)]

    def reopen() -> ObjectStore:
        holder[0].close()
        holder[0] = RocksStore(path)
        return holder[0]

    def tamper(oid: ObjectId, change: Callable[[bytes], bytes]) -> None:
        holder[0].close()
        raw_rocks_edit(path, oid, change)
        holder[0] = RocksStore(path)

    backend = Backend(lambda: holder[0], reopen, tamper)
    yield backend
    holder[0].close()


def raw_rows(path: Path, family: str) -> dict[bytes, bytes]:
    """Every row of one column family, read straight from RocksDB (store closed)."""
    families = {name: rocksdict.Options(raw_mode=True) for name in COLUMN_FAMILIES}
    db = rocksdict.Rdict(str(path), rocksdict.Options(raw_mode=True), column_families=families)
    rows = {
        bytes(key): bytes(value)  # type: ignore[arg-type]  # raw mode: always bytes
        for key, value in db.get_column_family(family).items()
    }
    db.close()
    return rows


def s3_backend(endpoint: str, prefix: str, *, sealed: bool = False) -> Iterator[Backend]:
    """An S3Store on its own prefix of the session's SeaweedFS bucket; `sealed`: an
    encrypted remote's (ADR 0057), whose stored objects are sealed under keyed names."""
    from helixfs.store.s3 import S3Store
    from helixfs.store.s3client import S3Location
    from helixfs.store.seal import Sealed, new_key

    location = S3Location("helix", prefix, endpoint)
    sealer = Sealed(new_key()) if sealed else None
    holder: list[S3Store] = [S3Store(location, sealer=sealer)]

    def reopen() -> ObjectStore:
        holder[0].close()
        holder[0] = S3Store(location, sealer=sealer)
        return holder[0]

    def tamper(oid: ObjectId, change: Callable[[bytes], bytes]) -> None:
        client = holder[0]._client
        key = holder[0]._key(oid)  # sealed: the keyed name, and `change` hits ciphertext
        frame = client.get(key)
        assert frame is not None, "tampering with an object that is not stored"
        client.raw_put(key, change(frame))

    yield Backend(lambda: holder[0], reopen, tamper, lists_ids=not sealed)
    holder[0].close()
