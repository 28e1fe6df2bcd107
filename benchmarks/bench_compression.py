"""`store.compression`: what zstd saves on disk and costs in time, beside LZ4 (the default).

    python benchmarks/bench_compression.py           # the HelixFS source tree x 20 copies
    python benchmarks/bench_compression.py --quick   # x 4

Each side imports the same corpus into a fresh store (`helix import` in process, the
real RocksDB store) with one codec: lz4 (the baseline: what every store used before),
zstd at levels 3 and 19, none. The corpus is this repository's `helixfs/` and `docs/`
files, each copy with its paths and one line per file changed, so content dedup does
not hide the codec (a copy would otherwise store nothing new). Figures: the stored
bytes of the records (`stored_bytes`, framing included, before RocksDB's own block
compression) and the store's disk after compaction, the import's wall time, and a cold
read of every file (a new process's caches: the store reopened). Two rounds, the sides
in turn and then in reverse (ABC CBA), the faster time of each kept; the load average is
printed. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from common import print_table, write_results

from helixfs import config
from helixfs.vcs import transfer
from helixfs.vcs.repo import Repository

ROOT = Path(__file__).resolve().parent.parent
SIDES = (("lz4 (baseline)", "lz4", 3), ("zstd 3", "zstd", 3), ("zstd 19", "zstd", 19))
SIDES += (("none", "none", 3),)


def corpus(dest: Path, copies: int) -> int:
    """`copies` variants of helixfs/ and docs/: one line per file differs per copy."""
    count = 0
    for copy in range(copies):
        for top in ("helixfs", "docs"):
            for source in sorted((ROOT / top).rglob("*")):
                if not source.is_file() or "__pycache__" in source.parts:
                    continue
                target = dest / f"copy{copy}" / source.relative_to(ROOT)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read_bytes() + f"\n# variant {copy}\n".encode())
                count += 1
    return count


def measure(folder: Path, store: Path, codec: str, level: int) -> dict[str, float]:
    Repository.init(store).close()
    config.set_value(config.store_file(store), "store.compression", codec)
    config.set_value(config.store_file(store), "store.zstd_level", str(level))
    with Repository.open(store) as repo:
        started = time.perf_counter()
        transfer.import_dir(repo, folder, message="corpus")
        imported = time.perf_counter() - started
        repo.store.compact()  # type: ignore[attr-defined]
        stats = repo.store.stats()
    with Repository.open(store) as repo:
        paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
        started = time.perf_counter()
        for path in paths:
            repo.read("HEAD", path)
        read = time.perf_counter() - started
    return {
        "stored_bytes": stats.stored_bytes,
        "logical_bytes": stats.logical_bytes,
        "disk_bytes": stats.disk_bytes,
        "import_s": imported,
        "cold_read_s": read,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    copies = 4 if args.quick else 20
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-compression-") as tmp:
        folder = Path(tmp) / "corpus"
        files = corpus(folder, copies)
        results: dict[str, dict[str, float]] = {}
        for side in [*SIDES, *reversed(SIDES)]:
            label, codec, level = side
            store = Path(tmp) / f"store-{codec}{level}"
            figures = measure(folder, store, codec, level)
            shutil.rmtree(store)
            if label in results:
                for timing in ("import_s", "cold_read_s"):
                    figures[timing] = min(figures[timing], results[label][timing])
            results[label] = figures
    base = results["lz4 (baseline)"]
    rows = [
        [
            label,
            r["stored_bytes"] / 1e6,
            r["stored_bytes"] / base["stored_bytes"],
            r["disk_bytes"] / 1e6,
            r["import_s"],
            r["cold_read_s"],
        ]
        for label, r in results.items()
    ]
    title = f"{files:,} files, {base['logical_bytes'] / 1e6:.1f} MB; load {load[0]:.1f}"
    headers = ["codec", "stored MB", "vs lz4", "disk MB", "import s", "cold read s"]
    print_table(title, headers, rows)
    path = write_results(
        "bench_compression", {"files": files, "load": load, "results": results}, quick=args.quick
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
