"""Property tests of the HXS value frame: whatever goes in comes back, or is refused."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helixfs.errors import CorruptObject, UnsupportedVersion
from helixfs.ids import ObjectId, object_id
from helixfs.store import frame
from helixfs.store.frame import (
    Codec,
    apply_delta,
    codec_of,
    common_prefix,
    common_suffix,
    decode_plain,
    encode_delta,
    encode_plain,
    encode_raw,
    logical_size,
    parse_delta,
    verify,
)

BASE_ID = ObjectId(b"\x01" * 32)


def roundtrip_plain(record: bytes) -> bytes:
    oid = object_id(record)
    frame = encode_plain(record)
    assert logical_size(oid, frame) == len(record)
    return verify(oid, decode_plain(oid, frame, codec_of(oid, frame)))


def roundtrip_delta(record: bytes, base: bytes) -> bytes | None:
    oid = object_id(record)
    frame = encode_delta(record, BASE_ID, base, base_depth=3)
    if frame is None:
        return None
    delta = parse_delta(oid, frame)
    assert delta.base == BASE_ID and delta.depth == 4
    assert logical_size(oid, frame) == len(record)
    return verify(oid, apply_delta(oid, delta, base))


@st.composite
def edited(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A base and a version of it with a few splices: what an agent's save looks like."""
    line = st.binary(min_size=0, max_size=60).map(lambda b: b + b"\n")
    base = b"".join(draw(st.lists(line, min_size=0, max_size=300)))
    record = bytearray(base)
    for _ in range(draw(st.integers(0, 4))):
        start = draw(st.integers(0, len(record)))
        end = draw(st.integers(start, min(len(record), start + 200)))
        record[start:end] = draw(st.binary(max_size=80))
    return base, bytes(record)


@given(st.binary(max_size=20_000))
def test_plain_roundtrip(record: bytes) -> None:
    assert roundtrip_plain(record) == record


@given(st.binary(max_size=2000).map(lambda b: b * 10))
def test_plain_roundtrip_compressible(record: bytes) -> None:
    assert roundtrip_plain(record) == record


@settings(max_examples=300)
@given(edited())
def test_delta_roundtrip_on_edits(pair: tuple[bytes, bytes]) -> None:
    base, record = pair
    assert roundtrip_delta(record, base) in (record, None)


@given(st.binary(max_size=5000), st.binary(max_size=5000))
def test_delta_roundtrip_on_anything(base: bytes, record: bytes) -> None:
    assert roundtrip_delta(record, base) in (record, None)


def test_delta_beyond_the_lz4_window() -> None:
    base = b"".join(b"line %d of a large generated file\n" % i for i in range(20_000))
    record = base[:300_000] + b"an edit\n" + base[300_010:]
    frame = encode_delta(record, BASE_ID, base, 0)
    assert frame is not None and len(frame) < 200
    assert roundtrip_delta(record, base) == record


def test_unrelated_base_gives_no_delta() -> None:
    import os

    assert encode_delta(os.urandom(4000), BASE_ID, os.urandom(4000), 0) is None


@given(st.binary(max_size=300), st.binary(max_size=300))
def test_common_prefix_and_suffix_match_a_naive_scan(a: bytes, b: bytes) -> None:
    naive = 0
    while naive < min(len(a), len(b)) and a[naive] == b[naive]:
        naive += 1
    assert common_prefix(a, b) == naive
    limit = min(len(a), len(b)) - naive
    tail = 0
    while tail < limit and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    assert common_suffix(a, b, limit) == tail


@given(st.binary(max_size=600), st.binary(max_size=600), st.integers(1, 200))
def test_coarse_trims_fall_short_of_exact_by_less_than_a_step(
    a: bytes, b: bytes, step: int
) -> None:
    exact = common_prefix(a, b)
    coarse = common_prefix(a, b, step)
    assert coarse <= exact < coarse + step
    limit = min(len(a), len(b)) - coarse
    exact_tail = common_suffix(a, b, limit)
    coarse_tail = common_suffix(a, b, limit, step)
    assert coarse_tail <= exact_tail < coarse_tail + step


@given(st.binary(max_size=100), st.integers(0, 255), st.integers(0, 255))
def test_header_bytes_are_checked(record: bytes, version: int, codec: int) -> None:
    oid = object_id(record)
    frame = bytearray(encode_raw(record))
    frame[3], frame[4] = version, codec
    if version == 1 and codec in {c.value for c in Codec}:
        codec_of(oid, bytes(frame))
    else:
        with pytest.raises(UnsupportedVersion):
            codec_of(oid, bytes(frame))


@given(st.binary(max_size=4))
def test_short_or_foreign_frames_are_corrupt(frame: bytes) -> None:
    with pytest.raises(CorruptObject):
        codec_of(ObjectId(b"\x02" * 32), frame)


@given(st.binary(min_size=40, max_size=400), st.integers(0, 10_000))
def test_damaged_delta_never_passes_verification(record: bytes, flip: int) -> None:
    base = record[::-1] + record
    oid = object_id(record)
    frame = encode_delta(record, BASE_ID, base, 0)
    if frame is None:
        return
    damaged = bytearray(frame)
    damaged[5 + flip % (len(frame) - 5)] ^= 0x40
    try:
        result = apply_delta(oid, parse_delta(oid, bytes(damaged)), base)
    except CorruptObject:
        return
    if result != record:
        with pytest.raises(CorruptObject):
            verify(oid, result)


def test_absurd_sizes_in_a_delta_are_corrupt_not_a_huge_allocation() -> None:
    base = b"".join(b"line %d\n" % i for i in range(2000))
    record = base.replace(b"line 1000\n", b"edited\n")
    oid = object_id(record)
    frame = encode_delta(record, BASE_ID, base, 0)
    assert frame is not None
    delta = parse_delta(oid, frame)
    huge = type(delta)(delta.base, delta.depth, delta.prefix, delta.suffix, 1 << 40, delta.block)
    with pytest.raises(CorruptObject):
        apply_delta(oid, huge, base)


def test_large_records_that_do_not_compress_are_stored_raw_without_lz4_over_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ADR 0048: two 4 KiB samples decide; random bytes never go through LZ4 whole."""
    rng = random.Random(9)
    noise = rng.randbytes(64 << 10)
    text = b"def f(x):\n    return x + 1\n" * 2400
    half = rng.randbytes(32 << 10) + text[: 32 << 10]  # compressible from its middle on
    compressed: list[int] = []
    real = frame.lz4.block.compress

    def counting(data: Any, *args: Any, **kwargs: Any) -> bytes:
        compressed.append(len(data))
        return bytes(real(data, *args, **kwargs))

    monkeypatch.setattr(frame.lz4.block, "compress", counting)
    assert frame.encode_plain(noise)[4] == frame.Codec.RAW
    assert max(compressed) <= frame.SAMPLE_BYTES  # only the samples were compressed
    for record in (text, half):
        encoded = frame.encode_plain(record)
        assert encoded[4] == frame.Codec.LZ4 and len(encoded) < len(record)
        assert frame.decode_plain(ObjectId(bytes(32)), encoded, frame.Codec.LZ4) == record
