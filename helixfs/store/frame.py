"""The value frame: how one record sits on disk, and how it comes back verified.

Layout, byte by byte::

    0..2  b"HXS"        magic: a value from some other program is refused, not misread
    3     version      FRAME_VERSION; a newer HelixFS may add codecs or fields
    4     codec        Codec below
    5..   payload

Payload per codec:

* RAW   - the record itself (tiny or incompressible records: LZ4 would only add bytes).
* LZ4   - an LZ4 block with its 4-byte little-endian uncompressed size in front.
* ZSTD  - a zstd frame with the same 4-byte size in front (`store.compression = "zstd"`:
  smaller, slower to write; a store may hold both, each frame says which it is).
* DELTA - base id (32) + chain depth (1) + varint prefix + varint suffix + varint middle
  length + an LZ4 block of the middle, compressed with the base's middle as dictionary
  (or made of the middle as literals alone: a short middle, a patch; ADR 0095).
  The record is base[:prefix] + middle + base[len(base)-suffix:].
* BODY  - not a frame but where one is: the key of a RAW or LZ4 frame stored apart
  (RocksStore's ``bodies``, ADR 0018) (8) + that frame's length (4) + the record's size
  (4), all big-endian. Only the store that wrote it resolves it.

Why this delta and not a line diff: an AI edit touches a few lines. Trimming the common
prefix and suffix (found with C-speed `startswith`/`endswith` binary searches, no byte
loops in Python) isolates the edited span, and LZ4-with-dictionary then finds the
unchanged lines between several edits at C speed. For a 14 KB source file with 1-3 edits
this measured ~10 us and ~110 bytes, against ~24 us and ~5.9 KB for plain LZ4.
"""

from __future__ import annotations

import struct
import threading
from enum import IntEnum
from typing import TYPE_CHECKING, NamedTuple, cast

import lz4.block

from helixfs.errors import CorruptObject, UnsupportedVersion

if TYPE_CHECKING:
    import zstandard
from helixfs.ids import ID_SIZE, ObjectId, hex_id, object_id

MAGIC = b"HXS"
FRAME_VERSION = 1
HEADER_SIZE = len(MAGIC) + 2
LZ4_WINDOW = 65536  # LZ4 matches reach back at most 64 KiB: a longer dictionary is dead weight
MAX_LZ4_RATIO = 255  # LZ4 cannot expand more than this; a larger claimed size is corruption
MIN_COMPRESS = 32  # below this LZ4's own framing eats any gain
_SIZE = struct.Struct("<I")


class Codec(IntEnum):
    RAW = 0
    LZ4 = 1
    DELTA = 2
    BODY = 3
    ZSTD = 4


class Compression(NamedTuple):
    """How new plain frames are compressed: `codec` LZ4, ZSTD or RAW (none)."""

    codec: Codec = Codec.LZ4
    level: int = 3  # zstd's

    @classmethod
    def named(cls, name: str, level: int = 3) -> Compression:
        codecs = {"lz4": Codec.LZ4, "zstd": Codec.ZSTD, "none": Codec.RAW}
        return cls(codecs[name], level)


LZ4 = Compression()


_HEADERS = {codec: MAGIC + bytes((FRAME_VERSION, codec)) for codec in Codec}
_CODECS = tuple(sorted(Codec))  # by value: the codecs are numbered 0, 1, 2, ...
assert [int(c) for c in _CODECS] == list(range(len(_CODECS)))
_DELTA_HEADER = _HEADERS[Codec.DELTA]
_DEPTHS = [bytes((n,)) for n in range(256)]
_BODY = struct.Struct(">QII")
DELTA_FIXED = HEADER_SIZE + ID_SIZE + 1  # header + base id + depth, before the varints
# No delta of a smaller record can be at most half its size (encode_delta's test): a
# small file's save need not look for a base at all.
MIN_DELTA_RECORD = 2 * (DELTA_FIXED + 3)
TRIM_FROM = 4096  # below this, LZ4's dictionary alone finds the same matches faster
LITERAL_MIDDLE = 512  # a delta's middle this short is stored as literals, without LZ4
TRIM_STEP = 128  # trims stop this close to exact: LZ4 codes the rest as one dictionary match


class Delta(NamedTuple):
    """A parsed DELTA payload; `block` is a view into the frame, not a copy.

    A NamedTuple, not a dataclass: one is built per link of every chain read, and a
    frozen dataclass's constructor cost as much as the rest of the parse.
    """

    base: ObjectId
    depth: int
    prefix: int
    suffix: int
    middle_size: int
    block: memoryview

    @property
    def size(self) -> int:
        return self.prefix + self.middle_size + self.suffix


def verify(oid: ObjectId, record: bytes) -> bytes:
    """The record itself if it hashes to `oid`; CorruptObject naming the id otherwise."""
    if object_id(record) != oid:
        raise CorruptObject(
            f"object {hex_id(oid)} is corrupt: its bytes do not hash to its id "
            "(run `helix fsck`; restore the store from a backup if it persists)"
        )
    return record


def codec_of(oid: ObjectId, frame: bytes) -> Codec:
    """The frame's codec, after refusing foreign, newer or unknown frames."""
    if len(frame) < HEADER_SIZE or frame[:3] != MAGIC:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: its stored frame has no HXS magic")
    version, codec = frame[3], frame[4]
    if version != FRAME_VERSION:
        raise UnsupportedVersion(
            f"object {hex_id(oid)} uses frame version {version}, this HelixFS reads only "
            f"version {FRAME_VERSION}: upgrade HelixFS to open this store"
        )
    try:
        return _CODECS[codec]  # not Codec(codec): an enum call per chunk read showed
    except IndexError:
        raise UnsupportedVersion(
            f"object {hex_id(oid)} uses unknown codec {codec}: it was written by a newer "
            "HelixFS; upgrade to read it"
        ) from None


# ---------------------------------------------------------------- plain (raw / lz4)


SAMPLE_FROM = 32 << 10
"""Records this large are first tried on samples: a chunk of random or already
compressed bytes (an archive, an image, model weights) is stored RAW without LZ4
running over all of it (ADR 0048)."""
SAMPLE_BYTES = 4 << 10
SAMPLE_GAIN = 0.97
"""A sample compressed to more than this share of its size does not compress."""


def compresses(record: bytes) -> bool:
    """Whether LZ4 may gain on `record`: large records are judged by two samples (their
    start and their middle), and skipped when neither shrinks."""
    if len(record) < SAMPLE_FROM:
        return len(record) >= MIN_COMPRESS
    view = memoryview(record)
    middle = len(record) // 2
    for sample in (view[:SAMPLE_BYTES], view[middle : middle + SAMPLE_BYTES]):
        if len(lz4.block.compress(sample)) < SAMPLE_GAIN * SAMPLE_BYTES:
            return True
    return False


def encode_plain(record: bytes, compression: Compression = LZ4) -> bytes:
    """RAW or compressed, whichever is smaller (RAW at once for what does not compress)."""
    if compression.codec is not Codec.RAW and compresses(record):
        packed: bytes = (
            lz4.block.compress(record)
            if compression.codec is Codec.LZ4
            else _SIZE.pack(len(record)) + _ZSTD.compressor(compression.level).compress(record)
        )
        if len(packed) < len(record):
            return _HEADERS[compression.codec] + packed
    return _HEADERS[Codec.RAW] + record


class _Zstd(threading.local):
    """zstandard's (de)compressors are not for concurrent use: one set per thread."""

    def __init__(self) -> None:
        self.levels: dict[int, zstandard.ZstdCompressor] = {}
        self._decompressor: zstandard.ZstdDecompressor | None = None

    @property
    def decompressor(self) -> zstandard.ZstdDecompressor:
        """Made (and zstandard imported) at the first zstd frame: a store of LZ4 frames
        never loads it (~5 ms of a hook's start)."""
        if self._decompressor is None:
            import zstandard

            self._decompressor = zstandard.ZstdDecompressor()
        return self._decompressor

    def compressor(self, level: int) -> zstandard.ZstdCompressor:
        import zstandard

        found = self.levels.get(level)
        if found is None:
            found = self.levels[level] = zstandard.ZstdCompressor(level=level)
        return found


_ZSTD = _Zstd()


def encode_raw(record: bytes) -> bytes:
    return _HEADERS[Codec.RAW] + record


def decode_plain(oid: ObjectId, frame: bytes, codec: Codec) -> bytes:
    """The record held by a RAW or LZ4 frame (not yet verified)."""
    if codec is Codec.RAW:
        return frame[HEADER_SIZE:]
    if codec is Codec.ZSTD:
        return _decode_zstd(oid, frame)
    if codec is not Codec.LZ4:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: a {codec.name} frame stored whole")
    size = _lz4_size(oid, frame)
    try:
        return bytes(lz4.block.decompress(memoryview(frame)[HEADER_SIZE + 4 :], size))
    except lz4.block.LZ4BlockError as err:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: LZ4 block unreadable") from err


def _decode_zstd(oid: ObjectId, frame: bytes) -> bytes:
    import zstandard

    if len(frame) < HEADER_SIZE + 4:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: truncated zstd frame")
    (size,) = _SIZE.unpack_from(frame, HEADER_SIZE)
    try:
        record = _ZSTD.decompressor.decompress(
            memoryview(frame)[HEADER_SIZE + 4 :], max_output_size=size
        )
    except zstandard.ZstdError as err:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: zstd frame unreadable") from err
    if len(record) != size:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: zstd frame of the wrong size")
    return record


def _lz4_size(oid: ObjectId, frame: bytes) -> int:
    if len(frame) < HEADER_SIZE + 4:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: truncated LZ4 frame")
    (size,) = _SIZE.unpack_from(frame, HEADER_SIZE)
    if size > (len(frame) - HEADER_SIZE) * MAX_LZ4_RATIO + 64:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: impossible LZ4 size {size}")
    return int(size)


def logical_size(oid: ObjectId, frame: bytes) -> int:
    """The record's size, read from the header alone (for stats: no decompression)."""
    codec = codec_of(oid, frame)
    if codec is Codec.RAW:
        return len(frame) - HEADER_SIZE
    if codec is Codec.LZ4:
        return _lz4_size(oid, frame)
    if codec is Codec.ZSTD:
        return int(_SIZE.unpack_from(frame, HEADER_SIZE)[0]) if len(frame) >= HEADER_SIZE + 4 else 0
    if codec is Codec.BODY:
        return parse_body(oid, frame).size
    return parse_delta(oid, frame).size


# ---------------------------------------------------------------- body (a frame stored apart)


class Body(NamedTuple):
    key: bytes  # the frame's key among the bodies: its place in write order
    length: int  # the frame's length
    size: int  # the record's size


def encode_body(key: int, frame: bytes, size: int) -> bytes:
    """The BODY frame that stands for `frame`, stored under `key` (a sequence number)."""
    return _HEADERS[Codec.BODY] + _BODY.pack(key, len(frame), size)


def is_body(frame: bytes) -> bool:
    """Whether a stored value is a BODY frame (its frame is stored apart)."""
    return len(frame) > HEADER_SIZE and frame[4] == Codec.BODY


def body_key(key: int) -> bytes:
    return key.to_bytes(8, "big")


def parse_body(oid: ObjectId, frame: bytes) -> Body:
    if len(frame) != HEADER_SIZE + _BODY.size:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: a BODY frame of {len(frame)} bytes")
    key, length, size = _BODY.unpack_from(frame, HEADER_SIZE)
    return Body(body_key(key), length, size)


# ---------------------------------------------------------------- delta


def encode_delta(record: bytes, base_id: ObjectId, base: bytes, base_depth: int) -> bytes | None:
    """A DELTA frame for `record` against `base`, or None when it would not be small.

    "Small" is judged against the record itself: a delta over half its size usually
    means an unrelated base, and plain LZ4 is then the better, chain-free choice.
    """
    if len(record) >= TRIM_FROM and len(base) >= TRIM_FROM:
        prefix = common_prefix(base, record, TRIM_STEP)
        limit = min(len(base), len(record)) - prefix
        suffix = common_suffix(base, record, limit, TRIM_STEP) if limit else 0
    else:
        prefix = suffix = 0
    middle_size = len(record) - prefix - suffix
    middle = memoryview(record)[prefix : len(record) - suffix]
    block: bytes
    if middle_size > LITERAL_MIDDLE:
        block = lz4.block.compress(
            middle,
            store_size=False,
            dict=memoryview(base)[prefix : len(base) - suffix][-LZ4_WINDOW:],
        )
    else:  # an edit of a line or two: its bytes as they are cost less than LZ4's start
        block = _literals(middle) if middle_size else b""
    lengths = _varint(prefix) + _varint(suffix) + _varint(middle_size)
    if DELTA_FIXED + len(lengths) + len(block) > len(record) // 2:
        return None
    return b"".join((_DELTA_HEADER, base_id, _DEPTHS[base_depth + 1], lengths, block))


def encode_patch(
    record: bytes, base_id: ObjectId, base_depth: int, prefix: int, suffix: int
) -> bytes | None:
    """A DELTA frame for `record` from trims its writer knows (ADR 0095): the record is
    base[:prefix] + its middle + the base's last `suffix` bytes. Nothing is searched or
    compressed: the middle (a changed folder entry, ~75 bytes) goes in as an LZ4 block of
    literals only, which every LZ4 decoder reads, so the frame is a DELTA frame like any
    other. None when it would not be small (as encode_delta's test)."""
    middle = len(record) - prefix - suffix
    lengths = _varint(prefix) + _varint(suffix) + _varint(middle)
    if DELTA_FIXED + len(lengths) + middle + 2 + middle // 255 > len(record) // 2:
        return None
    block = _literals(memoryview(record)[prefix : len(record) - suffix]) if middle else b""
    return b"".join((_DELTA_HEADER, base_id, _DEPTHS[base_depth + 1], lengths, block))


def _literals(data: memoryview) -> bytes:
    """An LZ4 block holding `data` as one run of literals: a token whose high nibble is
    the run's length (15: more length bytes follow, 255 each until one is less)."""
    size = len(data)
    if size < 15:
        return b"".join((_SMALL_TOKENS[size], data))
    rest = size - 15
    return b"".join((b"\xf0", b"\xff" * (rest // 255), _DEPTHS[rest % 255], data))


_SMALL_TOKENS = [bytes((n << 4,)) for n in range(15)]


def delta_depth(frame: bytes) -> int:
    """The chain depth a frame records: a DELTA frame's depth byte, 0 for any other."""
    return frame[DELTA_FIXED - 1] if len(frame) >= DELTA_FIXED and frame[4] == Codec.DELTA else 0


def parse_delta(oid: ObjectId, frame: bytes) -> Delta:
    view = memoryview(frame)
    pos = HEADER_SIZE + ID_SIZE + 1
    if len(frame) < pos + 3:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: truncated delta frame")
    base = cast(ObjectId, frame[HEADER_SIZE : HEADER_SIZE + ID_SIZE])
    depth = frame[pos - 1]
    prefix, pos = _read_varint(oid, frame, pos)
    suffix, pos = _read_varint(oid, frame, pos)
    middle, pos = _read_varint(oid, frame, pos)
    return Delta(base, depth, prefix, suffix, middle, view[pos:])


def apply_delta(oid: ObjectId, delta: Delta, base: bytes) -> bytes:
    """The record a delta describes, given its base's record (result not yet verified)."""
    if delta.prefix + delta.suffix > len(base):
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: delta overruns its base")
    if delta.middle_size > len(delta.block) * MAX_LZ4_RATIO + 64:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: impossible delta size")
    base_middle = memoryview(base)[delta.prefix : len(base) - delta.suffix][-LZ4_WINDOW:]
    try:
        middle = (
            lz4.block.decompress(delta.block, delta.middle_size, dict=base_middle)
            if delta.middle_size
            else b""
        )
    except lz4.block.LZ4BlockError as err:
        raise CorruptObject(f"object {hex_id(oid)} is corrupt: delta block unreadable") from err
    return b"".join((base[: delta.prefix], middle, base[len(base) - delta.suffix :]))


def common_prefix(a: bytes, b: bytes, step: int = 1) -> int:
    """Length of the longest common prefix, by binary search over zero-copy memcmp.

    With `step` > 1 the answer may fall short of exact by less than `step` (fewer
    Python-level probes: each costs more than memcmp-ing a few hundred bytes).
    """
    limit = min(len(a), len(b))
    view = memoryview(a)
    if b.startswith(view[:limit]):
        return limit
    low, high = 0, limit  # invariant: a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > step:
        mid = (low + high) >> 1
        if b.startswith(view[low:mid], low):
            low = mid
        else:
            high = mid
    return low


def common_suffix(a: bytes, b: bytes, limit: int, step: int = 1) -> int:
    """Length of the longest common suffix, at most `limit` (so it never overlaps a
    prefix); `step` as for common_prefix."""
    end_a, end_b = len(a), len(b)
    view = memoryview(a)
    if b.endswith(view[end_a - limit :]):
        return limit
    low, high = 0, limit  # invariant: last `low` bytes equal, last `high` bytes differ
    while high - low > step:
        mid = (low + high) >> 1
        if b.endswith(view[end_a - mid : end_a - low], 0, end_b - low):
            low = mid
        else:
            high = mid
    return low


def _varint(value: int) -> bytes:
    if value < 0x80:
        return _SMALL_VARINTS[value]
    if value < 0x4000:  # two bytes: any prefix or suffix of a record under 16 KiB
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = [bytes((n,)) for n in range(0x80)]


def _read_varint(oid: ObjectId, frame: bytes, pos: int) -> tuple[int, int]:
    if pos < len(frame) and frame[pos] < 0x80:
        return frame[pos], pos + 1  # one byte: the common case for prefix/suffix/middle
    value = shift = 0
    while pos < len(frame) and shift < 64:
        byte = frame[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
    raise CorruptObject(f"object {hex_id(oid)} is corrupt: bad length in delta frame")
