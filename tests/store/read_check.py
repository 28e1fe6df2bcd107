"""Cold read check of a large file in the store, in process (not a test; root only).

    python tests/store/read_check.py --mb 1024 --where /var/tmp [--layout inline|blob]

Stores a file of distinct incompressible MiBs (as bench_fs.py writes) through
`store_stream`, closes the store, drops the page cache, reopens it and reads the file
sequentially in 1 MiB requests, again with the page cache warm (the CPU's
share), then `--random` 4 KiB reads at random offsets (cold
again). Prints MB/s and IOPS as JSON. `--layout inline` opens the store with the
options from before blob files (values inside the SSTs), to compare layouts in turns.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import blake3

from helixfs.ids import ObjectId
from helixfs.store import rocksdb_open
from helixfs.store.rocks import RocksStore
from helixfs.vcs.content import ContentReader, store_stream

MiB = 1 << 20


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def make_source(path: Path, mb: int) -> None:
    with open(path, "wb") as f:
        for i in range(mb):
            f.write(blake3.blake3(i.to_bytes(8, "little")).digest(MiB))


def write(store_dir: Path, source: Path) -> tuple[ObjectId, float]:
    store = RocksStore(store_dir, verify_writes=False)
    start = time.perf_counter()

    def sink(objects: Mapping[ObjectId, bytes]) -> None:
        store.write(objects)

    with open(source, "rb") as f:
        stored = store_stream(f, sink)
    store.write(stored.objects, sync=True)
    elapsed = time.perf_counter() - start
    store.close()
    return stored.oid, stored.size / MiB / elapsed


def sequential(store_dir: Path, oid: ObjectId, *, cold: bool) -> tuple[float, float, int]:
    """MB/s and CPU seconds (this process) of one pass in 1 MiB requests, store caches
    empty; and the file's size."""
    if cold:
        drop_caches()
    store = RocksStore(store_dir, verify_writes=False)
    reader = ContentReader(store)
    start, cpu = time.perf_counter(), time.process_time()
    offset = 0
    while piece := reader.read(oid, offset, MiB):
        offset += len(piece)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    store.close()
    return offset / MiB / elapsed, cpu, offset


def random_reads(store_dir: Path, oid: ObjectId, size: int, randoms: int) -> float:
    drop_caches()
    store = RocksStore(store_dir, verify_writes=False)
    reader = ContentReader(store)
    rng = random.Random(7)
    offsets = [rng.randrange(0, size // 4096) * 4096 for _ in range(randoms)]
    start = time.perf_counter()
    for at in offsets:
        reader.read(oid, at, 4096)
    iops = randoms / (time.perf_counter() - start)
    store.close()
    return iops


def inline_layout() -> None:
    """Values inside the SSTs, as stores were written before blob files."""
    plain = rocksdb_open.db_options

    def options(cache: object, *, blobs: bool = False) -> object:
        opts = plain(cache)  # type: ignore[arg-type]
        opts.set_enable_blob_files(False)
        opts.set_advise_random_on_open(True)
        return opts

    rocksdb_open.db_options = options  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--random", type=int, default=2000)
    parser.add_argument("--where", type=Path, default=Path("/var/tmp"))
    parser.add_argument("--layout", choices=["inline", "blob"], default="blob")
    parser.add_argument("--source", type=Path, default=Path("/dev/shm/read_check.bin"))
    args = parser.parse_args()
    if args.layout == "inline":
        inline_layout()
    if not args.source.exists() or args.source.stat().st_size != args.mb * MiB:
        make_source(args.source, args.mb)
    with tempfile.TemporaryDirectory(dir=args.where, prefix="read-check-") as tmp:
        store_dir = Path(tmp) / "objects"
        oid, write_mbs = write(store_dir, args.source)
        cold, cold_cpu, size = sequential(store_dir, oid, cold=True)
        warm, warm_cpu, _ = sequential(store_dir, oid, cold=False)  # the page cache
        iops = random_reads(store_dir, oid, size, args.random)
        files = sorted(p.suffix for p in store_dir.iterdir())
        print(
            json.dumps(
                {
                    "layout": args.layout,
                    "mb": args.mb,
                    "write_MBps": round(write_mbs, 1),
                    "cold_read_MBps": round(cold, 1),
                    "warm_read_MBps": round(warm, 1),
                    "cold_read_cpu_s": round(cold_cpu, 2),
                    "warm_read_cpu_s": round(warm_cpu, 2),
                    "cold_random_4k_iops": round(iops),
                    "sst_files": files.count(".sst"),
                    "blob_files": files.count(".blob"),
                    "load": os.getloadavg()[0],
                }
            )
        )


if __name__ == "__main__":
    main()
