"""An ObjectStore on an S3-compatible object store: the remote of many machines.

Objects are immutable by id, which is what object stores are good at. A push's objects
(`upload`) go as packs, `PREFIX/packs/NAME` with an index `PREFIX/packs/NAME.idx`
(store/pack.py, store/s3packs.py, ADR 0064): a request costs far more than its bytes.
A few objects, and every object given to `write`, are loose: one S3 object each,
`PREFIX/objects/HEX`, written with `If-None-Match: *` (a second upload of the same id
changes nothing). Reads look in the packs first, then loose, and take the first copy
that checks. Nothing ever deletes a pack (a remote's gc is not written yet); `delete`
removes loose copies only. Refs are S3 objects too, `PREFIX/refs/NAME`, moved by
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
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from helixfs.errors import (
    CorruptObject,
    InvalidInput,
    NotFound,
    RefConflict,
    UnsupportedVersion,
)
from helixfs.ids import ObjectId, hex_id
from helixfs.store import Patch, RefUpdate, StoreStats
from helixfs.store.frame import codec_of, decode_plain, encode_plain, verify
from helixfs.store.pack import PackBuilder, Slot, index_bound_to
from helixfs.store.s3client import S3Client, S3Location
from helixfs.store.s3packs import (
    IN_FLIGHT,
    Grouping,
    RemotePacks,
    cut,
    index_key,
    pack_key,
)
from helixfs.store.validate import (
    check_bulk,
    check_delta_bases,
    check_objects,
    check_oid,
    check_patches,
    check_ref_name,
    check_ref_prefix,
    plan_refs,
)
from helixfs.store.whole import WholeRecords

log = logging.getLogger(__name__)

LAYOUT_KEY = "helix-remote.json"  # {"format", "version", "sealed"}: what the remote is
LAYOUT_FORMAT, LAYOUT_VERSION = "helix-remote", 2  # 2: packs/ (ADR 0064)
READ_VERSIONS = (1, 2)  # 1: loose objects only, read as they are
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

    def __init__(
        self, location: S3Location, *, sealer: Sealer | None = None, cache: Path | None = None
    ) -> None:
        """`cache`: a folder of this machine's where pack indexes are kept between runs."""
        self.location = location
        self._client = S3Client(location)
        self._sealer = sealer
        self._packs = RemotePacks(self._client, self._unseal_index, cache)
        self._layout_version: int | None = None
        self._layout_etag: str | None = None
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="helix-s3")
        self._lock = threading.Lock()
        self._gets = 0
        self.uploaded = 0  # objects this store sent (a re-sent one counts once)
        self.uploaded_bytes = 0  # their records' sizes

    # ------------------------------------------------------------ objects

    def _key(self, oid: ObjectId) -> str:
        name = hex_id(oid) if self._sealer is None else self._sealer.object_name(oid)
        return f"objects/{name}"

    def get(self, oid: ObjectId, *, keep: bool = True) -> bytes:
        oid = check_oid(oid)
        self._packs.ensure()
        problems: list[str] = []
        record = self._first_good(oid, problems)
        for pause in ABSENT_RETRIES if record is None and not problems else ():
            time.sleep(pause)  # a 404 for an object a ref reaches is asked about again,
            self._packs.refresh()  # and a pack stored since may hold it
            record = self._first_good(oid, problems)
            if record is not None:
                break
        with self._lock:
            self._gets += 1
        if record is not None:
            return record
        if problems:
            raise CorruptObject(problems[0])
        raise NotFound(f"object {hex_id(oid)} is not in the remote {self.location}{self._damage()}")

    def _first_good(
        self, oid: ObjectId, problems: list[str], skip: Slot | None = None
    ) -> bytes | None:
        """The first copy of `oid` that checks: in its packs, then loose. A damaged
        copy is refused (noted in `problems`) and the next one tried."""
        for slot in self._packs.slots(oid):
            blob = None if slot == skip else self._packs.read_one(slot)
            if blob is not None:
                record = self._checked(oid, blob, problems, f"pack {slot.pack}")
                if record is not None:
                    return record
        blob = self._client.get(self._key(oid))
        return None if blob is None else self._checked(oid, blob, problems, "a loose copy")

    def _checked(self, oid: ObjectId, blob: bytes, problems: list[str], where: str) -> bytes | None:
        try:
            return self._decode(oid, blob)
        except CorruptObject as err:
            log.info("remote %s: %s (%s); trying another copy", self.location, err, where)
            problems.append(str(err))
            return None

    def _damage(self) -> str:
        damaged = sorted(self._packs.damaged)
        if not damaged:
            return ""
        return (
            f" (the index of pack {damaged[0]} is damaged: a push from a machine that "
            "has the object sends it again)"
        )

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
        """Records in order: packed ones read by pack (store/s3packs.py), the others
        loose; those neither answers are looked for in packs stored since (one listing),
        then one by one, as is any packed copy that does not check."""
        wanted = [check_oid(oid) for oid in oids]
        self._packs.ensure()
        found: dict[ObjectId, bytes] = {}
        tried = self._read_packed(wanted, found)
        unknown = [oid for oid in dict.fromkeys(wanted) if oid not in tried]
        for oid, blob in zip(unknown, self._pool.map(self._loose, unknown), strict=True):
            record = None if blob is None else self._checked(oid, blob, [], "a loose copy")
            if record is not None:
                found[oid] = record
        if any(oid not in found for oid in unknown):
            self._packs.refresh()  # another machine's packs, stored since we listed
            tried.update(self._read_packed([o for o in unknown if o not in found], found))
        rest = [oid for oid in dict.fromkeys(wanted) if oid not in found]
        found.update(zip(rest, self._pool.map(self._get_elsewhere(tried), rest), strict=True))
        return [found[oid] for oid in wanted]

    def _read_packed(
        self, oids: list[ObjectId], found: dict[ObjectId, bytes]
    ) -> dict[ObjectId, Slot]:
        """Read the packed ones of `oids` into `found`, by pack; the slots tried."""
        packed = {oid: slots[0] for oid in oids if (slots := self._packs.slots(oid))}
        for oid, blob in self._packs.read(packed.items()).items():
            record = self._checked(oid, blob, [], f"pack {packed[oid].pack}")
            if record is not None:
                found[oid] = record
        return packed

    def _loose(self, oid: ObjectId) -> bytes | None:
        return self._client.get(self._key(oid))

    def _get_elsewhere(self, packed: Mapping[ObjectId, Slot]) -> Callable[[ObjectId], bytes]:
        def get(oid: ObjectId) -> bytes:
            if oid not in packed:
                return self.get(oid, keep=False)
            problems: list[str] = []
            record = self._first_good(oid, problems, skip=packed[oid])
            if record is None:
                return self.get(oid, keep=False)  # asked again, and the answer explained
            return record

        return get

    def contains(self, oid: ObjectId) -> bool:
        oid = check_oid(oid)
        self._packs.ensure()
        if self._packs.has(oid) or self._client.exists(self._key(oid)):
            return True
        self._packs.refresh()  # a pack stored since this process last looked
        return self._packs.has(oid)

    def missing(self, oids: Iterable[ObjectId]) -> list[ObjectId]:
        """Which of `oids` the remote lacks, in the order given: the pack indexes (listed
        anew) answer first, HEADs in parallel for the rest (loose copies)."""
        wanted = [check_oid(oid) for oid in oids]
        self._packs.refresh()
        unpacked = [oid for oid in wanted if not self._packs.has(oid)]
        loose = self._pool.map(lambda oid: self._client.exists(self._key(oid)), unpacked)
        there = {oid for oid, found in zip(unpacked, loose, strict=True) if found}
        return [oid for oid in unpacked if oid not in there]

    def upload(
        self,
        objects: Mapping[ObjectId, bytes] | Iterable[tuple[ObjectId, bytes]],
        *,
        apart: Grouping | None = None,
    ) -> tuple[int, int]:
        """Send the objects no pack of the remote holds: as packs of many records, or
        loose when there are few (store/s3packs.py); the records `apart` is true of
        (vcs: commits and folders) in packs of their own, which a lazy clone reads
        without the file contents (ADR 0081). Returns (objects, their records' bytes)
        sent; once it returns, every one is stored (packs before their indexes)."""
        items = objects.items() if isinstance(objects, Mapping) else objects
        self._packs.ensure()
        fresh = ((check_oid(oid), r) for oid, r in items if not self._packs.has(oid))
        sent = [0, 0]
        in_flight: deque[Future[tuple[int, int]]] = deque()

        def count(done: tuple[int, int]) -> None:
            sent[0] += done[0]
            sent[1] += done[1]
            with self._lock:  # as each pack is stored: a push's progress (daemon/syncer.py)
                self.uploaded += done[0]
                self.uploaded_bytes += done[1]

        for part in cut(fresh, self._new_pack, self._stored, apart):
            if isinstance(part, PackBuilder):
                self._allow_packs()
                in_flight.append(self._pool.submit(self._put_pack, part))
                while len(in_flight) > IN_FLIGHT:
                    count(in_flight.popleft().result())
            else:
                for done in self._pool.map(self._put_object, part):
                    count(done)
        for future in in_flight:
            count(future.result())
        return sent[0], sent[1]

    def _stored(self, oid: ObjectId, record: bytes) -> bytes:
        """A record as the remote holds it, loose or in a pack."""
        blob = encode_plain(bytes(record))
        return blob if self._sealer is None else self._sealer.seal(blob, oid)

    def _new_pack(self) -> PackBuilder:
        return PackBuilder(self._seal_index)

    def _seal_index(self, name: str, plain: bytes) -> bytes:
        return plain if self._sealer is None else self._sealer.seal(plain, index_bound_to(name))

    def _unseal_index(self, name: str, stored: bytes) -> bytes:
        if self._sealer is None:
            return stored
        return self._sealer.unseal(f"the index of pack {name}", stored, index_bound_to(name))

    def _put_pack(self, pack: PackBuilder) -> tuple[int, int]:
        """The pack, then its index (what makes it visible), then it is known here."""
        blob, index = pack.finish()
        self._client.put(pack_key(pack.name), blob, if_none_match=True, size=len(blob))
        self._client.put(index_key(pack.name), index, if_none_match=True, size=len(index))
        self._packs.added(pack.name, index)
        return len(pack), pack.record_bytes

    def _put_object(self, item: tuple[ObjectId, bytes]) -> tuple[int, int]:
        oid, record = item
        blob = self._stored(oid, record)
        if self._client.put(self._key(oid), blob, if_none_match=True, size=len(record)):
            return 1, len(record)
        return 0, 0

    def put_again(self, objects: Iterable[tuple[ObjectId, bytes]]) -> int:
        """A good loose copy of each record, over whatever loose copy is there (a
        damaged one, which `If-None-Match` would keep): the mend of `push --verify`
        (vcs/verify.py). Each record is checked against its id first: only the right
        bytes are ever written under an id. How many were written."""
        checked = [(check_oid(oid), verify(oid, bytes(record))) for oid, record in objects]

        def put(item: tuple[ObjectId, bytes]) -> None:
            oid, record = item
            self._client.put(self._key(oid), self._stored(oid, record), if_none_match=False,
                             size=len(record))  # fmt: skip

        list(self._pool.map(put, checked))
        return len(checked)

    def check_room(self, nbytes: int) -> None:
        """An object store has no disk of ours to fill."""

    def write(
        self,
        objects: Mapping[ObjectId, bytes],
        refs: Sequence[RefUpdate] = (),
        *,
        delta_bases: Mapping[ObjectId, ObjectId] | None = None,
        uncompressed: Collection[ObjectId] = (),
        patches: Mapping[ObjectId, Patch] | None = None,
        sync: bool = False,
        bulk: bool = False,
    ) -> None:
        if bulk:
            check_bulk(refs, sync)
        check_objects(objects)
        check_delta_bases(objects, delta_bases)
        check_patches(objects, patches)  # a hint: records are kept whole here
        planned = self._plan(refs)
        list(self._pool.map(self._put_object, objects.items()))  # loose: see the module
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
        key (or a plain one with a key), or a newer layout. Version 1 (no packs) is read
        as it is, and upgraded by the first pack stored (`_allow_packs`)."""
        want = self._layout_record(LAYOUT_VERSION)
        found = self._client.get_with_etag(LAYOUT_KEY)
        if found is None:
            self._client.put(LAYOUT_KEY, want, if_none_match=True, size=0)
            found = self._client.get_with_etag(LAYOUT_KEY)
        blob, etag = found if found is not None else (b"", None)
        try:
            record = json.loads(blob)
        except ValueError:
            record = None
        if not isinstance(record, dict) or record.get("format") != LAYOUT_FORMAT:
            raise InvalidInput(f"{self.location} holds something that is not a HelixFS remote")
        if record.get("version") not in READ_VERSIONS:
            raise UnsupportedVersion(
                f"{self.location} is a version {record.get('version')!r} remote: upgrade HelixFS"
            )
        if bool(record.get("sealed")) != self.sealed:
            raise InvalidInput(
                f"{self.location} is encrypted: give its key (clone --key FILE, or "
                "`helix remote add --encrypt` then `helix remote key import`)"
                if record.get("sealed")
                else f"{self.location} is not encrypted: add it without --encrypt"
            )
        self._layout_version, self._layout_etag = int(record["version"]), etag

    def _layout_record(self, version: int) -> bytes:
        record = {"format": LAYOUT_FORMAT, "version": version, "sealed": self.sealed}
        return json.dumps(record).encode()

    def _allow_packs(self) -> None:
        """Before the first pack: a version 1 remote becomes version 2, so that a HelixFS
        that cannot read packs refuses it with "upgrade" instead of missing objects."""
        for _ in range(3):
            if self._layout_version is None:
                self.ensure_layout()
            if self._layout_version == LAYOUT_VERSION:
                return
            won, _ = self._client.put_etag(
                LAYOUT_KEY, self._layout_record(LAYOUT_VERSION), if_match=self._layout_etag
            )
            self._layout_version = None  # read again: ours, or another machine's upgrade
        raise RefConflict(f"the layout record of {self.location} keeps changing: try again")

    @property
    def sealed(self) -> bool:
        return self._sealer is not None

    # ------------------------------------------------------------ listing, maintenance

    def ids(self, prefix: bytes = b"") -> Iterator[ObjectId]:
        if self._sealer is not None:
            raise InvalidInput("an encrypted remote's object names do not reveal ids")
        start = len("objects/")
        loose = {
            ObjectId(bytes.fromhex(key[start:]))
            for key, _ in self._client.listing(f"objects/{prefix.hex()}")
        }
        self._packs.refresh()
        packed = {oid for oid in self._packs.entries() if oid.startswith(prefix)}
        return iter(sorted(loose | packed))

    def delete(self, oids: Iterable[ObjectId]) -> None:
        """Loose copies only: a pack is never rewritten (the remote's gc is not written)."""
        self._client.delete([self._key(check_oid(oid)) for oid in oids])

    def stats(self) -> StoreStats:
        listed = list(self._client.listing("objects/"))
        sizes = list(self._pool.map(lambda item: self._client.logical_size(item[0]), listed))
        self._packs.refresh()
        packed = self._packs.entries()
        pack_bytes = sum(size for key, size in self._client.listing("packs/"))
        with self._lock:
            gets = self._gets
        return StoreStats(
            objects=len(listed) + len(packed),
            logical_bytes=sum(sizes) + sum(slot.size for slot in packed.values()),
            stored_bytes=sum(size for _, size in listed) + pack_bytes,
            disk_bytes=0,
            cache_hits=0,
            cache_misses=gets,
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._packs.close()
        self._client.close()
