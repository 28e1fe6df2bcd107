"""Does FUSE over io_uring lower the C floor here? (issue 28, ADR 0050)

    python benchmarks/bench_uring.py LIBFUSE_PREFIX            # 5 rounds, 5,000 files, 1 GiB
    python benchmarks/bench_uring.py LIBFUSE_PREFIX --quick    # 1 round, 1,000 files, 128 MiB

LIBFUSE_PREFIX is where a libfuse >= 3.18 built with io_uring was installed (the folder
holding lib/<arch>/pkgconfig/fuse3.pc). This script does not build libfuse; ADR 0050
says how it was built for the figures there. floorfs.c is built twice, against Debian's
libfuse 3.14 and against that libfuse, and mounted as five sides, in turns (ABCDE EDCBA):

  3.14           the C floor as bench_floor.py and bench_peers.py run it
  /dev/fuse      the 3.18 binary, its operations under one lock (--locked), polling loop
  /dev/fuse blk  the same, sleeping in read() at once (--block), as the ring's threads do
  /dev/fuse 1 CPU  the same, it and every client on CPU 0: no cross-CPU wake-up, the
                 best case of ADR 0041 (bench_floor.py's "C floor, one CPU")
  io_uring       the same binary with -o io_uring (--uring): a thread per CPU queue,
                 pinned to its CPU, so a request is served on the CPU that made it

Workloads as in bench_peers.py: 10 KB write+close and write+fsync+close p50/p95, `tar x` /
`git status` / `rm -rf` of bench_fs's tree with its .git, a 1 GiB write (then fsync)
and its cold read after drop_caches. Each mount prints its request counters at unmount;
`off main` is the share of requests served off the main thread, all but FORGET and
INIT over io_uring, 0 on /dev/fuse: proof of which transport was used.

Needs root: switches /sys/module/fuse/parameters/enable_uring on for the run and back to
what it was. Medians with min-max; load beside each round. Nothing asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import bench_fs
from bench_ab import order, write_synced
from bench_floor import _archive, build_c_floor
from bench_peers import FULL, QUICK, Figures, Sizes, _cell, metadata, saves
from common import write_results

HERE = Path(__file__).resolve().parent
KNOB = Path("/sys/module/fuse/parameters/enable_uring")
SIDES = {  # name: (libfuse, floorfs flags, daemon and client on CPU 0 only)
    "3.14": ("system", [], False),
    "/dev/fuse": ("new", ["--locked"], False),
    "/dev/fuse blk": ("new", ["--locked", "--block"], False),
    "/dev/fuse 1 CPU": ("new", ["--locked", "--block"], True),
    "io_uring": ("new", ["--uring"], False),
}


def build_against(prefix: Path, folder: Path) -> Path:
    """floorfs.c linked to the libfuse under `prefix` (found by its fuse3.pc, run by rpath)."""
    pcs = sorted(prefix.glob("lib*/**/pkgconfig/fuse3.pc"))
    if not pcs:
        raise SystemExit(f"no fuse3.pc under {prefix}/lib*: not a libfuse install prefix")
    env = {**os.environ, "PKG_CONFIG_PATH": str(pcs[0].parent)}
    pkg = ["pkg-config", "fuse3"]
    version = subprocess.run([*pkg, "--modversion"], env=env, capture_output=True, text=True)
    flags = subprocess.run([*pkg, "--cflags", "--libs"], env=env, capture_output=True, text=True)
    binary = folder / "floorfs-new"
    libdir = pcs[0].parent.parent
    cmd = ["gcc", "-O2", "-Wall", str(HERE / "floorfs.c"), *flags.stdout.split()]
    subprocess.run([*cmd, f"-Wl,-rpath,{libdir}", "-o", str(binary)], check=True)
    print(f"floorfs.c built against libfuse {version.stdout.strip()} in {libdir}")
    return binary


@contextmanager
def floor_mounted(
    binary: Path, base: Path, flags: list[str], served: list[float]
) -> Iterator[Path]:
    """A floorfs mount; at unmount, appends the share of requests served off the main thread."""
    target = base / "mnt"
    target.mkdir()
    log = base / "floorfs.err"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [str(binary), str(target), *flags], stdout=subprocess.PIPE, stderr=err, text=True
        )
    try:
        bench_fs._wait_ready(proc)
        yield target
    finally:
        bench_fs.unmount(proc, target)
        target.rmdir()
        found = re.search(r"TOTAL=(\d+) off_main=(\d+)", log.read_text())
        if found:
            served.append(100.0 * int(found[2]) / max(1, int(found[1])))


def one_round(where: Path, sizes: Sizes, archive: Path) -> Figures:
    figures: Figures = {"load": os.getloadavg()[0]}
    figures |= saves(where, sizes, watch=False)
    figures |= metadata(where, archive)
    path = where / "big.bin"
    figures["write MB/s"] = write_synced(path, sizes.big_mb)
    figures["cold read MB/s"] = bench_fs.read_file(path, cold=True)
    path.unlink()
    return figures


@contextmanager
def on_cpus(cpus: set[int]) -> Iterator[None]:
    """This process, and the daemon and commands it starts meanwhile, on `cpus` only."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def uring_enabled() -> Iterator[None]:
    """The kernel's knob on for the run, then back to what it was."""
    try:
        before = KNOB.read_text().strip()
        KNOB.write_text("1")
    except OSError as err:
        raise SystemExit(f"cannot switch {KNOB} on (root, kernel >= 6.14 needed): {err}") from err
    try:
        yield
    finally:
        KNOB.write_text("1" if before == "Y" else "0")


def report(runs: dict[str, list[Figures]], served: dict[str, list[float]]) -> None:
    """Medians (min-max) per side, and io_uring over the 3.14 floor and over its own
    binary on /dev/fuse (for MB/s above 1 is better, for times below 1)."""
    measures = [m for m in next(iter(runs.values()))[0] if m != "load"]
    width = 27
    ratios = ("ring/3.14", "ring/devfuse")
    head = "".join(f"{name:>{width}}" for name in runs) + "".join(f"{r:>13}" for r in ratios)
    print(f"\n{'median (min-max)':20}{head}")
    for measure in [*measures, "off main %"]:
        cells, medians = [], {}
        for name, rs in runs.items():
            values = served[name] if measure == "off main %" else [r[measure] for r in rs]
            cells.append(_cell(values) if values else "-")
            medians[name] = statistics.median(values) if values else 0.0
        line = f"{measure:20}" + "".join(f"{cell:>{width}}" for cell in cells)
        if measure != "off main %":
            for other in ("3.14", "/dev/fuse"):
                line += f"{medians['io_uring'] / max(medians[other], 1e-9):13.2f}"
        print(line)
    for name, rs in runs.items():
        loads = ", ".join(f"{r['load']:.1f}" for r in rs)
        print(f"load at the start of each {name} round: {loads}")
    print(f"load average at the end {os.getloadavg()} on {os.cpu_count()} CPUs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("libfuse", type=Path, help="install prefix of libfuse >= 3.18")
    parser.add_argument("--quick", action="store_true", help="1 round, 1,000 files, 128 MiB")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--store-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.libfuse.is_dir():
        parser.error(f"{args.libfuse} is not a folder")
    sizes = QUICK if args.quick else FULL
    rounds = args.rounds or (1 if args.quick else 5)
    everywhere = os.sched_getaffinity(0)
    runs: dict[str, list[Figures]] = {name: [] for name in SIDES}
    served: dict[str, list[float]] = {name: [] for name in SIDES}
    with (
        tempfile.TemporaryDirectory(dir=args.store_dir, prefix="helix-uring-") as base_dir,
        uring_enabled(),
    ):
        base = Path(base_dir)
        binaries = {"system": build_c_floor(base), "new": build_against(args.libfuse, base)}
        archive = _archive(base, sizes.files)
        for name in order(list(SIDES), rounds):
            which, flags, pinned = SIDES[name]
            mount = floor_mounted(binaries[which], base, flags, served[name])
            with on_cpus({0} if pinned else everywhere), mount as where:
                runs[name].append(one_round(where, sizes, archive))
            cells = "  ".join(f"{k} {v:,.3g}" for k, v in runs[name][-1].items())
            print(f"{name:14} {cells}", flush=True)
    report(runs, served)
    doc = {"sizes": sizes.__dict__, "sides": SIDES, "runs": runs, "off_main_pct": served}
    print(f"\nJSON: {write_results('bench_uring', doc, quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
