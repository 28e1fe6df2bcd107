"""Read a store with one bit flipped in a RocksDB table (not a test: run by test_rocks.py).

    python tests/store/damage_check.py STORE objects|bodies OFFSET BIT [--scan]

Writes records made from a fixed seed into a new store at STORE (small ones stay in
the `objects` table, chunk-sized ones have a body in `bodies`), compacts it, flips bit
BIT of byte OFFSET of that family's table, then reads every record back (inside a
maintenance scan with `--scan`, as fsck and gc read). Prints what it read as JSON.
Run in its own process because the damage this looks for is a segfault inside
RocksDB, which no `except` catches.
"""

from __future__ import annotations

import argparse
import json
import random
from contextlib import nullcontext
from pathlib import Path

from helixfs.errors import CorruptObject
from helixfs.ids import ObjectId
from helixfs.store import rocksdb_open
from helixfs.store.frame import object_id
from helixfs.store.rocks import RocksStore

KEY_LENGTHS = {"objects": 32, "bodies": 8}


def records(family: str) -> dict[ObjectId, bytes]:
    """The same records on every run, so that a flip lands where it did when found."""
    rng = random.Random(7)
    if family == "bodies":
        chunks = [rng.randbytes(16 << 10) for _ in range(600)]
        return {object_id(chunk): chunk for chunk in chunks}
    small = [
        (b"tree entry %d " % n) * rng.randint(1, 30) + rng.randbytes(rng.randint(0, 40))
        for n in range(400)
    ]
    return {object_id(record): record for record in small}


def flip(store: Path, family: str, offset: int, bit: int) -> None:
    db = rocksdb_open.open_db(store)
    (name,) = [f["name"] for f in db.live_files() if len(f["start_key"]) == KEY_LENGTHS[family]]
    db.close()
    table = store / name.lstrip("/")
    data = bytearray(table.read_bytes())
    data[offset] ^= 1 << bit
    table.write_bytes(bytes(data))


def read_all(store: Path, wanted: dict[ObjectId, bytes], *, scan: bool) -> dict[str, int]:
    counts = {"read": 0, "corrupt": 0}
    with RocksStore(store) as reopened, reopened.scanning() if scan else nullcontext():
        for oid, record in wanted.items():
            try:
                assert reopened.get(oid) == record
                counts["read"] += 1
            except CorruptObject:
                counts["corrupt"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store", type=Path)
    parser.add_argument("family", choices=KEY_LENGTHS)
    parser.add_argument("offset", type=int)
    parser.add_argument("bit", type=int)
    parser.add_argument("--scan", action="store_true")
    args = parser.parse_args()
    wanted = records(args.family)
    with RocksStore(args.store) as store:
        store.write(wanted)
        store.compact()
    flip(args.store, args.family, args.offset, args.bit)
    print(json.dumps(read_all(args.store, wanted, scan=args.scan)))


if __name__ == "__main__":
    main()
