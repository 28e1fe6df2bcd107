"""An ObjectStore on an S3-compatible object store: the remote of many machines.

Objects are immutable by id, which is what object stores are good at: each is one S3
object, `PREFIX/objects/HEX`, written with `If-None-Match: *` (a second upload of the
same id changes nothing). Refs are S3 objects too, `PREFIX/refs/NAME`, moved by
conditional writes: `If-None-Match: *` to create, `If-Match: ETAG` to replace what was
read. A deleted ref is a tombstone (a conditional write too), since a conditional
delete is not something every S3 implementation has.

Atomicity is narrower than RocksDB's: every ref's expectation is checked before any
byte is uploaded, and a ref whose conditional write loses makes the write take back the
refs it had moved, then raise RefConflict. A crash between two refs of one write can
leave the first moved; vcs moves one ref per push, and objects uploaded by a write that
lost are unreachable garbage, never a dangling ref (objects go up before refs).

Written against the S3 API only (boto3: ADR 0055), so AWS S3, R2, Ceph and SeaweedFS
all serve. Credentials come from boto3's own chain (environment, ~/.aws, instance
roles) and are never part of a location, a message or anything stored.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from helixfs.errors import (
    CorruptObject,
    InvalidInput,
    NotFound,
    RefConflict,
    UnsupportedVersion,
)
from helixfs.ids import ObjectId, hex_id
from helixfs.store import RefUpdate, StoreStats
from helixfs.store.frame import codec_of, decode_plain, encode_plain, verify
from helixfs.store.s3client import S3Client, S3Location
from helixfs.store.validate import (
    check_bulk,
    check_delta_bases,
    check_objects,
    check_oid,
    check_ref_name,
    check_ref_prefix,
    plan_refs,
)
from helixfs.store.whole import WholeRecords

LAYOUT_KEY = "helix-remote.json"  # {"format", "version", "sealed"}: what the remote is
LAYOUT_FORMAT, LAYOUT_VERSION = "helix-remote", 1
REF_MAGIC = b"HXR\x01"  # + 1 (a value follows) or 0 (a tombstone)
_PRESENT, _GONE = b"\x01", b"\x00"
ABSENT_RETRIES = (0.2, 1.0)  # pauses before a missing object is taken as missing
WORKERS = 16  # requests in flight at once: S3 answers each in ~ms, the wire is the limit


class Sealer(Protocol):
    """How objects look on the remote: plain frames (none), or sealed (store/seal.py)."""

    def object_name(self, oid: ObjectId) -> str: ...

    def seal(self, data: bytes, bound_to: bytes) -> bytes: ...

    def unseal(self, what: str, blob: bytes, bound_to: bytes) -> bytes: ...


@dataclass(frozen=True)
class _RefState:
    value: bytes | None  # None: absent (never written, or a tombstone)
    etag: str | None  # None: no S3 object under the ref's key


class S3Store(WholeRecords):
    """The ObjectStore protocol over one bucket and prefix (tests/store/test_contract.py)."""

    def __init__(self, location: S3Location, *, sealer: Sealer | None = None) -> None:
        self.location = location
        self._client = S3Client(location)
        self._sealer = sealer
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="helix-s3")
        self._lock = threading.Lock()
        self._gets = 0
        self.uploaded = 0  # objects this store sent (a re-sent one counts once)
        self.uploaded_bytes = 0

    # ------------------------------------------------------------ objects

    def _key(self, oid: ObjectId) -> str:
        name = hex_id(oid) if self._sealer is None else self._sealer.object_name(oid)
        return f"objects/{name}"

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        oid = check_oid(oid)
        blob = self._client.get(self._key(oid))
        for pause in ABSENT_RETRIES if blob is None else ():
            time.sleep(pause)  # a 404 for an object a ref reaches is asked about again
            blob = self._client.get(self._key(oid))
            if blob is not None:
                break
        with self._lock:
            self._gets += 1
        if blob is None:
            raise NotFound(f"object {hex_id(oid)} is not in the remote {self.location}")
        return self._decode(oid, blob)

    def _decode(self, oid: ObjectId, blob: bytes) -> bytes:
        if self._sealer is not None:
            blob = self._sealer.unseal(f"object {hex_id(oid)}", blob, oid)
        record = decode_plain(oid, blob, codec_of(oid, blob))
        try:
            return verify(oid, record)
        except CorruptObject:
            raise CorruptObject(
                f"object {hex_id(oid)} is corrupt on the remote {self.location}: its "
                "bytes do not hash to its id (refused; another copy may be pushed again)"
            ) from None

    def get_run(self, oids: Sequence[ObjectId]) -> list[bytes]:
        return list(self._pool.map(lambda oid: self.get(oid, keep=False), oids))

    def contains(self, oid: ObjectId) -> bool:
        return self._client.exists(self._key(check_oid(oid)))

    def missing(self, oids: Iterable[ObjectId]) -> list[ObjectId]:
        """Which of `oids` the remote lacks (HEADs in parallel), in the order given."""
        wanted = [check_oid(oid) for oid in oids]
        present = list(self._pool.map(self.contains, wanted))
        return [oid for oid, there in zip(wanted, present, strict=True) if not there]

    def upload(self, objects: Mapping[ObjectId, bytes]) -> None:
        """Put objects, in parallel, each only if absent (If-None-Match: *)."""
        list(self._pool.map(self._put_object, objects.items()))

    def _put_object(self, item: tuple[ObjectId, bytes]) -> None:
        oid, record = item
        blob = encode_plain(bytes(record))
        if self._sealer is not None:
            blob = self._sealer.seal(blob, oid)
        if self._client.put(self._key(oid), blob, if_none_match=True, size=len(record)):
            with self._lock:
                self.uploaded += 1
                self.uploaded_bytes += len(blob)

    def check_room(self, nbytes: int) -> None:
        """An object store has no disk of ours to fill."""

    def write(
        self,
        objects: Mapping[ObjectId, bytes],
        refs: Sequence[RefUpdate] = (),
        *,
        delta_bases: Mapping[ObjectId, ObjectId] | None = None,
        uncompressed: Collection[ObjectId] = (),
        sync: bool = False,
        bulk: bool = False,
    ) -> None:
        if bulk:
            check_bulk(refs, sync)
        check_objects(objects)
        check_delta_bases(objects, delta_bases)
        planned = self._plan(refs)
        self.upload(objects)
        self._apply(planned)

    # ------------------------------------------------------------ refs

    def _ref_key(self, name: str) -> str:
        return f"refs/{name}"

    def _read_ref(self, name: str) -> _RefState:
        found = self._client.get_with_etag(self._ref_key(name))
        if found is None:
            return _RefState(None, None)
        blob, etag = found
        return _RefState(self._ref_value(name, blob), etag)

    def _ref_value(self, name: str, blob: bytes) -> bytes | None:
        if blob[: len(REF_MAGIC)] != REF_MAGIC or len(blob) < len(REF_MAGIC) + 1:
            raise CorruptObject(f"ref {name!r} on the remote {self.location} is not a ref")
        flag, body = blob[len(REF_MAGIC) : len(REF_MAGIC) + 1], blob[len(REF_MAGIC) + 1 :]
        if flag == _GONE:
            return None
        if self._sealer is None:
            return body
        return self._sealer.unseal(f"ref {name!r}", body, name.encode())

    def _ref_blob(self, name: str, value: bytes | None) -> bytes:
        if value is None:
            return REF_MAGIC + _GONE
        if self._sealer is not None:
            value = self._sealer.seal(value, name.encode())
        return REF_MAGIC + _PRESENT + value

    def _plan(self, updates: Sequence[RefUpdate]) -> list[tuple[str, _RefState, bytes | None]]:
        """(name, state read, final value) per ref, after checking every expectation
        against what the remote holds now: RefConflict before anything is sent."""
        states: dict[str, _RefState] = {}

        def current(name: str) -> bytes | None:
            states[name] = self._read_ref(name)
            return states[name].value

        finals = plan_refs(updates, current)
        return [(name, states[name], value) for name, value in finals.items()]

    def _apply(self, planned: list[tuple[str, _RefState, bytes | None]]) -> None:
        done: list[tuple[str, _RefState, str | None]] = []
        for name, state, new in planned:
            if new == state.value:
                continue
            won, etag = self._swap(name, state, new)
            if not won:
                self._take_back(done)
                raise RefConflict(f"ref {name!r} moved on the remote {self.location}")
            done.append((name, state, etag))

    def _swap(self, name: str, state: _RefState, new: bytes | None) -> tuple[bool, str | None]:
        """Conditional write of one ref over `state`: whether it won, and its ETag."""
        key, blob = self._ref_key(name), self._ref_blob(name, new)
        if state.etag is None:
            return self._client.put_etag(key, blob, if_none_match=True)
        return self._client.put_etag(key, blob, if_match=state.etag)

    def _take_back(self, done: list[tuple[str, _RefState, str | None]]) -> None:
        """Undo the refs a losing write had moved (each only if still ours)."""
        for name, state, etag in reversed(done):
            if etag is not None:
                blob = self._ref_blob(name, state.value)
                self._client.put_etag(self._ref_key(name), blob, if_match=etag)

    def ref(self, name: str) -> bytes | None:
        return self._read_ref(check_ref_name(name)).value

    def refs(self, prefix: str = "") -> Iterator[tuple[str, bytes]]:
        check_ref_prefix(prefix)
        names = sorted(key[len("refs/") :] for key, _ in self._client.listing(f"refs/{prefix}"))
        values = self._pool.map(self.ref, names)
        found = [(n, v) for n, v in zip(names, values, strict=True) if v is not None]
        return iter(found)

    # ------------------------------------------------------------ the remote's layout

    def ensure_layout(self) -> None:
        """Write the remote's layout record if it has none, then refuse to go on if it
        says otherwise than this store would write: a sealed remote opened without its
        key (or a plain one with a key), or a newer layout."""
        want = {"format": LAYOUT_FORMAT, "version": LAYOUT_VERSION, "sealed": self.sealed}
        blob = self._client.get(LAYOUT_KEY)
        if blob is None:
            self._client.put(LAYOUT_KEY, json.dumps(want).encode(), if_none_match=True, size=0)
            blob = self._client.get(LAYOUT_KEY)
        try:
            found = json.loads(blob or b"")
        except ValueError:
            found = None
        if not isinstance(found, dict) or found.get("format") != LAYOUT_FORMAT:
            raise InvalidInput(f"{self.location} holds something that is not a HelixFS remote")
        if found.get("version") != LAYOUT_VERSION:
            raise UnsupportedVersion(
                f"{self.location} is a version {found.get('version')!r} remote: upgrade HelixFS"
            )
        if bool(found.get("sealed")) != self.sealed:
            raise InvalidInput(
                f"{self.location} is encrypted: give its key (clone --key FILE, or "
                "`helix remote add --encrypt` then `helix remote key import`)"
                if found.get("sealed")
                else f"{self.location} is not encrypted: add it without --encrypt"
            )

    @property
    def sealed(self) -> bool:
        return self._sealer is not None

    # ------------------------------------------------------------ listing, maintenance

    def ids(self, prefix: bytes = b"") -> Iterator[ObjectId]:
        if self._sealer is not None:
            raise InvalidInput("an encrypted remote's object names do not reveal ids")
        start = len("objects/")
        return iter(
            [
                ObjectId(bytes.fromhex(key[start:]))
                for key, _ in self._client.listing(f"objects/{prefix.hex()}")
            ]
        )

    def delete(self, oids: Iterable[ObjectId]) -> None:
        self._client.delete([self._key(check_oid(oid)) for oid in oids])

    def stats(self) -> StoreStats:
        listed = list(self._client.listing("objects/"))
        sizes = self._pool.map(lambda item: self._client.logical_size(item[0]), listed)
        with self._lock:
            gets = self._gets
        return StoreStats(
            objects=len(listed),
            logical_bytes=sum(sizes),
            stored_bytes=sum(size for _, size in listed),
            disk_bytes=0,
            cache_hits=0,
            cache_misses=gets,
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()
