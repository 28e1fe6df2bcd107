"""Packs: many records in one S3 object, so that a push costs a few requests (ADR 0064).

A remote charges per request far more than per byte (each is ~7 ms of botocore CPU
here), so a push of thousands of small records sends them as a few packs instead of one
object each. A pack is stored twice over in its index: once as `packs/NAME.idx` (the
small object a reader fetches and caches) and once at the pack's own end, so that a
damaged index object can be read again from the pack.

Pack, byte by byte::

    0..3   b"HXP\\x01"     magic + version
    4..    records        each as the remote stores a loose object: an `HXS` frame, or
                          sealed (store/seal.py, bound to its object id)
    ..     index          the stored index, exactly as `packs/NAME.idx` holds it
    last 8 index length (4, big-endian) + b"HXPZ"

Index, before sealing (a sealed remote seals it whole, bound to the pack's name, so the
ids it lists are ciphertext to the server)::

    0..3   b"HXI\\x01"     magic + version
    4..7   count          big-endian
    8..    count entries  object id (32) + offset in the pack (8) + stored length (4)
                          + record size (4), big-endian
    last 32               BLAKE3 of everything before: a damaged index is refused whole

Names are random (128 bits): two machines packing at once never meet on one name, and
a name says nothing of what the pack holds.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import blake3

from helixfs.errors import CorruptObject, UnsupportedVersion
from helixfs.ids import ID_SIZE, ObjectId

PACK_MAGIC = b"HXP\x01"
INDEX_MAGIC = b"HXI\x01"
TRAILER_MAGIC = b"HXPZ"
_TRAILER = struct.Struct(">I4s")
_COUNT = struct.Struct(">I")
_ENTRY = struct.Struct(f">{ID_SIZE}sQII")
_SUM = 32
TRAILER_SIZE = _TRAILER.size


@dataclass(frozen=True)
class Slot:
    """Where one record lies: in pack `pack`, `length` stored bytes from `offset`."""

    pack: str
    offset: int
    length: int
    size: int  # the record's own size (what stats count)


def new_name() -> str:
    return os.urandom(16).hex()


def index_bound_to(name: str) -> bytes:
    """What a sealed index is bound to: its pack, so an index copied under another
    pack's name fails to open."""
    return b"helix pack index " + name.encode()


def encode_index(entries: list[tuple[ObjectId, int, int, int]]) -> bytes:
    body = INDEX_MAGIC + _COUNT.pack(len(entries))
    body += b"".join(_ENTRY.pack(*entry) for entry in entries)
    return body + blake3.blake3(body).digest()


def decode_index(name: str, plain: bytes) -> Iterator[tuple[ObjectId, Slot]]:
    """The entries of pack `name`'s index, refused whole (CorruptObject) if damaged."""
    what = f"the index of pack {name}"
    if plain[:3] != INDEX_MAGIC[:3] or len(plain) < len(INDEX_MAGIC) + _COUNT.size + _SUM:
        raise CorruptObject(f"{what} is not a pack index")
    if plain[3:4] != INDEX_MAGIC[3:]:
        raise UnsupportedVersion(f"{what} was written by a newer HelixFS: upgrade to read it")
    body, checksum = plain[:-_SUM], plain[-_SUM:]
    if blake3.blake3(body).digest() != checksum:
        raise CorruptObject(f"{what} is damaged (its checksum does not match)")
    (count,) = _COUNT.unpack_from(body, len(INDEX_MAGIC))
    start = len(INDEX_MAGIC) + _COUNT.size
    if len(body) != start + count * _ENTRY.size:
        raise CorruptObject(f"{what} is damaged (its length does not match its count)")
    for oid, offset, length, size in _ENTRY.iter_unpack(body[start:]):
        yield ObjectId(oid), Slot(name, offset, length, size)


class PackBuilder:
    """Stored records appended into one pack; `seal_index` makes the stored index of a
    plain index (the identity on a plain remote)."""

    def __init__(self, seal_index: Callable[[str, bytes], bytes]) -> None:
        self.name = new_name()
        self._seal_index = seal_index
        self._parts: list[bytes] = [PACK_MAGIC]
        self._entries: list[tuple[ObjectId, int, int, int]] = []
        self.nbytes = len(PACK_MAGIC)
        self.record_bytes = 0  # the records' own sizes, before framing

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, oid: ObjectId, stored: bytes, size: int) -> None:
        self._entries.append((oid, self.nbytes, len(stored), size))
        self._parts.append(stored)
        self.nbytes += len(stored)
        self.record_bytes += size

    def ids(self) -> list[ObjectId]:
        return [entry[0] for entry in self._entries]

    def finish(self) -> tuple[bytes, bytes]:
        """(the pack, its stored index)."""
        index = self._seal_index(self.name, encode_index(self._entries))
        trailer = _TRAILER.pack(len(index), TRAILER_MAGIC)
        return b"".join([*self._parts, index, trailer]), index


def index_length(name: str, trailer: bytes) -> int:
    """The stored index's length, from a pack's last TRAILER_SIZE bytes."""
    if len(trailer) != TRAILER_SIZE:
        raise CorruptObject(f"pack {name} is too short to be a pack")
    length, magic = _TRAILER.unpack(trailer)
    if magic != TRAILER_MAGIC:
        raise CorruptObject(f"pack {name} has no index at its end (damaged)")
    return int(length)
