"""How close any FUSE filesystem can come to native on metadata work, here (ADR 0041).

    python benchmarks/bench_floor.py             # 3 alternated rounds, 5,000 files
    python benchmarks/bench_floor.py --quick     # 1 round, 1,000 files

Runs bench_fs's metadata workloads (`tar x` of a tree with its .git, `git status` in it,
`rm -rf` of it) on tmpfs, on the local disk, on HelixFS, and on two filesystems that
do nothing but keep a dict: floorfs.py (pyfuse3 + trio, HelixFS's binding and loop)
and floorfs.c (libfuse's low-level API, in C, built here with gcc). The C floor runs
twice: as any daemon runs, and pinned with its client to one CPU (taskset), which
spares the cross-CPU wake-up of each round trip, the best case a FUSE filesystem has.
Prints medians and the ratio to tmpfs; writes every round to JSON. Nothing asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import bench_fs
from bench_fs import RESULTS, floor_mounted, make_tree, mounted, timed

HERE = Path(__file__).resolve().parent
STEPS = ("tar x", "git status", "rm -rf")
PINNED = ["taskset", "-c", "0"]


def commands(archive: Path, prefix: list[str]) -> list[str]:
    run = " ".join(prefix)
    return [
        f"mkdir t && {run} tar xf {archive} -C t",
        f"cd t && {run} git status --porcelain > /dev/null",
        f"{run} rm -rf t",
    ]


def build_c_floor(folder: Path) -> Path:
    binary = folder / "floorfs"
    flags = subprocess.run(
        ["pkg-config", "fuse3", "--cflags", "--libs"], capture_output=True, text=True, check=True
    ).stdout.split()
    subprocess.run(
        ["gcc", "-O2", "-Wall", str(HERE / "floorfs.c"), *flags, "-o", str(binary)], check=True
    )
    return binary


@contextmanager
def c_floor_mounted(binary: Path, base: Path, prefix: list[str]) -> Iterator[Path]:
    """The C floor; pinned (a taskset prefix), it blocks instead of polling: polling on
    the one CPU would only take it from the client."""
    target = base / "c-floor-mnt"
    target.mkdir()
    proc = subprocess.Popen(
        [*prefix, str(binary), str(target), *(["--block"] if prefix else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        bench_fs._wait_ready(proc)
        yield target
    finally:
        bench_fs.unmount(proc, target)
        target.rmdir()


@contextmanager
def folder(path: Path) -> Iterator[Path]:
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def helix_mounted(base: Path) -> Iterator[Path]:
    with mounted(base, "helix", 300) as mount:
        yield mount.path
    shutil.rmtree(mount.path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 1,000 files")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--store-dir", type=Path, default=None, help="store and disk side")
    parser.add_argument("--native-dir", type=Path, default=Path("/dev/shm"))
    args = parser.parse_args(argv)
    files = 1_000 if args.quick else 5_000
    rounds = args.rounds or (1 if args.quick else 3)
    with (
        tempfile.TemporaryDirectory(dir=args.store_dir, prefix="helix-floor-") as base_dir,
        tempfile.TemporaryDirectory(dir=args.native_dir, prefix="helix-native-") as nat,
    ):
        base = Path(base_dir)
        archive = _archive(base, files)
        binary = build_c_floor(base)
        sides: dict[str, tuple[Callable[[], AbstractContextManager[Path]], list[str]]] = {
            "tmpfs": (lambda: folder(Path(nat) / "side"), []),
            "disk": (lambda: folder(base / "disk"), []),
            "helixfs": (lambda: helix_mounted(base), []),
            "python floor": (lambda: floor_mounted(base), []),
            "C floor": (lambda: c_floor_mounted(binary, base, []), []),
            "C floor, one CPU": (lambda: c_floor_mounted(binary, base, PINNED), PINNED),
        }
        runs: dict[str, list[list[float]]] = {name: [] for name in sides}
        for _ in range(rounds):
            for name, (side, prefix) in sides.items():
                with side() as where:
                    runs[name].append([timed(cmd, where) for cmd in commands(archive, prefix)])
    medians = {
        name: [statistics.median(r[i] for r in rs) for i in range(3)] for name, rs in runs.items()
    }
    print(_table(medians, files, rounds))
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = RESULTS / f"bench_floor-{'quick-' if args.quick else ''}{stamp}.json"
    doc = {
        "files": files,
        "rounds": runs,
        "medians_s": medians,
        "steps": STEPS,
        "time": stamp,
        "commit": bench_fs._commit(),
        "load_average": load,
    }
    out.write_text(json.dumps(doc, indent=2))
    print(f"\nJSON: {out}")
    return 0


def _archive(base: Path, files: int) -> Path:
    """bench_fs's tree, with its git repository, as a tar file."""
    source = base / "tarsrc"
    make_tree(source, files)
    git = "git init -q . && git add -A && git -c user.name=b -c user.email=b@b commit -qm tree"
    subprocess.run(["bash", "-c", git], cwd=source, check=True, capture_output=True)
    archive = base / "tree.tar"
    subprocess.run(["tar", "cf", str(archive), "-C", str(source), "."], check=True)
    shutil.rmtree(source)
    return archive


def _table(medians: dict[str, list[float]], files: int, rounds: int) -> str:
    tmpfs = medians["tmpfs"]
    head = f"{f'{files:,} files, median of {rounds}':28}" + "".join(
        f"{step:>12} {'x tmpfs':>8}" for step in STEPS
    )
    lines = [head]
    for name, seconds in medians.items():
        cells = "".join(
            f"{s * 1000:10.0f}ms {s / t:7.1f}x" for s, t in zip(seconds, tmpfs, strict=True)
        )
        lines.append(f"{name:28}{cells}")
    lines.append(
        f"{'target (3x tmpfs)':28}" + "".join(f"{3 * t * 1000:10.0f}ms {'':8}" for t in tmpfs)
    )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
