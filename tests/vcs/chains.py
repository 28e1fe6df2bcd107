"""A walk of every delta chain a RocksStore holds, as a reader walks it (tests only)."""

from __future__ import annotations

from helixfs.ids import ObjectId, hex_id
from helixfs.store.frame import Codec, codec_of, parse_delta
from helixfs.store.rocks import MAX_DELTA_DEPTH, RocksStore
from helixfs.store.rocksdb_open import scan


def chain_problems(store: RocksStore, limit: int = MAX_DELTA_DEPTH) -> list[str]:
    """Every frame's chain as walked: no loop, no missing base, at most `limit` links,
    and never more links than the depth byte says (writes trust that byte to bound the
    chains they extend)."""
    frames = {ObjectId(key): frame for key, frame in scan(store._objects_cf, b"")}
    problems: list[str] = []
    for oid, frame in frames.items():
        if codec_of(oid, frame) is not Codec.DELTA:
            continue
        recorded = parse_delta(oid, frame).depth
        walked, current, seen = 0, oid, {oid}
        while current in frames and codec_of(current, frames[current]) is Codec.DELTA:
            current = parse_delta(current, frames[current]).base
            walked += 1
            if current in seen:
                problems.append(f"{hex_id(oid)}: its chain loops")
                break
            seen.add(current)
        else:
            if current not in frames:
                problems.append(f"{hex_id(oid)}: base {hex_id(current)} is missing")
        if walked > limit:
            problems.append(f"{hex_id(oid)}: {walked} links walked, limit {limit}")
        if walked > recorded:
            problems.append(f"{hex_id(oid)}: {walked} links walked, depth byte says {recorded}")
    return problems
