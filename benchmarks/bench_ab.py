"""Two commits of HelixFS on the same short workloads, in interleaved rounds.

    python benchmarks/bench_ab.py OLD NEW            # e.g. 3516175 HEAD, 3 rounds each
    python benchmarks/bench_ab.py OLD NEW --rounds 4 --files 2000 --mb 512

A regression check: each commit is checked out (git worktree, detached, in a temporary
folder) and mounted in turn, OLD NEW NEW OLD OLD NEW..., so that a host that drifts
within the run slows both alike. Each round runs `tar x` / `git status` / `rm -rf` of
bench_fs's tree with its .git, a sequential write of `--mb` MiB (then fsync and close),
its cold read after drop_caches and 4 KiB random cold reads, with the daemon's CPU
seconds per phase; floorfs.py runs the same round beside them as a control for the
host's speed, and `--disk` a plain folder on the same disk (floorfs.py keeps its data in
a dict, so its "cold" read never touches a disk; a store's does). The load average is
printed beside every round. Nothing is asserted.
"""

from __future__ import annotations

import argparse
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
from typing import Any

import bench_fs
from bench_floor import _archive
from bench_fs import cpu_seconds, floor_mounted, mounted, timed
from common import touch_guest_memory, write_results

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@contextmanager
def checkout(rev: str, base: Path, side: str) -> Iterator[Path]:
    """`rev` as a detached worktree under `base`, removed afterwards (one per side: the
    same commit on both sides measures the noise)."""
    where = base / f"src-{side}-{rev.replace('/', '_')}"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where), rev],
        check=True,
        capture_output=True,
    )
    try:
        yield where
    finally:
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)],
            check=False,
            capture_output=True,
        )


@contextmanager
def helix_at(
    source: Path, base: Path, environ: dict[str, str] | None = None
) -> Iterator[tuple[Path, int]]:
    """HelixFS from the checkout at `source`: the daemon imports that tree's package,
    with `environ` (settings such as HELIX_FUSE_WAIT) added to its environment."""
    changes = {"PYTHONPATH": str(source), **(environ or {})}
    saved = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        with mounted(base, "ab", 300) as mount:
            yield mount.path, mount.proc.pid
        shutil.rmtree(mount.path, ignore_errors=True)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def environment(pairs: list[str]) -> dict[str, str]:
    """`NAME=VALUE` arguments as a dict; anything else is refused."""
    found = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"--old-env/--new-env take NAME=VALUE, not {pair!r}")
        found[name] = value
    return found


@contextmanager
def floor_at(base: Path) -> Iterator[tuple[Path, int]]:
    with floor_mounted(base) as path:
        yield path, 0


@contextmanager
def disk_at(base: Path) -> Iterator[tuple[Path, int]]:
    """A plain folder beside the stores: what the disk itself gives a cold read, which
    floorfs.py (its data in a dict, never on a disk) cannot show."""
    where = base / "disk"
    where.mkdir()
    try:
        yield where, 0
    finally:
        shutil.rmtree(where, ignore_errors=True)


def one_round(
    where: Path, pid: int, archive: Path, mb: int, reads: int, only: list[str]
) -> dict[str, float]:
    """The workloads on one mount: seconds for the metadata steps, MB/s, IOPS, CPU s."""
    figures: dict[str, float] = {}
    if "metadata" in only:
        metadata(where, archive, figures)
    if "saves" in only:
        saves(where, figures)
    if "throughput" in only:
        throughput(where, pid, mb, reads, figures)
    return figures


SAVES = 200  # 10 KB saves per kind and round


def saves(where: Path, figures: dict[str, float]) -> None:
    """p50 / p95 ms of a 10 KB save until close() returned (HelixFS with its window of
    300 ms, as a user mounts it), with and without fsync."""
    folder = where / "saves"
    folder.mkdir()
    for fsync, label in ((False, "save"), (True, "save+fsync")):
        samples = bench_fs.save_latencies(folder, SAVES, fsync, watch=False)
        figures[f"{label} p50 ms"] = bench_fs.percentile(samples, 50)
        figures[f"{label} p95 ms"] = bench_fs.percentile(samples, 95)
    shutil.rmtree(folder)


def metadata(where: Path, archive: Path, figures: dict[str, float]) -> None:
    steps = {
        "tar x": f"mkdir t && tar xf {archive} -C t",
        "git status": "cd t && git status --porcelain > /dev/null",
        "rm -rf": "rm -rf t",
    }
    for name, command in steps.items():
        figures[f"{name} s"] = timed(command, where)


def throughput(where: Path, pid: int, mb: int, reads: int, figures: dict[str, float]) -> None:
    def cpu() -> float:
        return cpu_seconds(pid) if pid else 0.0

    sizes = bench_fs.Sizes(0, (), mb, reads, 0, 0, 0, 0)
    path = where / "big.bin"
    before = cpu()
    figures["write MB/s"] = write_synced(path, mb)
    figures["write cpu s"] = cpu() - before
    before = cpu()
    figures["cold read MB/s"] = bench_fs.read_file(path, cold=True)
    figures["cold read cpu s"] = cpu() - before
    figures["random read IOPS"] = bench_fs.random_reads(path, sizes.random_reads)
    path.unlink()


def still_mounted(where: Path) -> None:
    """A round whose mount went away meanwhile measured the folder under it: refused.
    (On a shared machine another process's cleanup once unmounted one mid-run.)"""
    if not os.path.ismount(where):
        raise RuntimeError(f"{where} was unmounted during the round: its figures are void")


def write_synced(path: Path, size_mb: int) -> float:
    """MB/s of `size_mb` MiB written in 1 MiB writes, then fsync and close (all timed)."""
    blocks = [bench_fs.block(i) for i in range(min(size_mb, 64))]
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for i in range(size_mb):
            os.write(fd, blocks[i % len(blocks)] if i < len(blocks) else bench_fs.block(i))
        os.fsync(fd)
    finally:
        os.close(fd)
    return size_mb / (time.perf_counter() - start)


def order(names: list[str], rounds: int) -> Iterator[str]:
    """ABBA...: every side goes first as often as last."""
    for n in range(rounds):
        yield from (names if n % 2 == 0 else list(reversed(names)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=2_000)
    parser.add_argument("--mb", type=int, default=512)
    parser.add_argument("--random-reads", type=int, default=5_000)
    parser.add_argument("--no-floor", action="store_true", help="skip the floorfs.py control")
    parser.add_argument(
        "--disk", action="store_true", help="also a plain folder on the stores' disk (control)"
    )
    parser.add_argument("--store-dir", type=Path, default=None)
    parser.add_argument("--old-env", nargs="*", default=[], help="NAME=VALUE for OLD's daemon")
    parser.add_argument("--new-env", nargs="*", default=[], help="NAME=VALUE for NEW's daemon")
    parser.add_argument(
        "--only",
        nargs="*",
        default=["metadata", "throughput"],
        choices=["metadata", "saves", "throughput"],
    )
    args = parser.parse_args(argv)
    old_env, new_env = environment(args.old_env), environment(args.new_env)
    with tempfile.TemporaryDirectory(dir=args.store_dir, prefix="helix-ab-") as base_dir:
        base = Path(base_dir)
        archive = _archive(base, args.files)
        touch_guest_memory()  # before the first side: else it pays the VM alone
        with checkout(args.old, base, "old") as old_src, checkout(args.new, base, "new") as new_src:
            sides: dict[str, Callable[[], AbstractContextManager[tuple[Path, int]]]] = {
                f"old {args.old}": lambda: helix_at(old_src, base, old_env),
                f"new {args.new}": lambda: helix_at(new_src, base, new_env),
            }
            if not args.no_floor:
                sides["floorfs.py"] = lambda: floor_at(base)
            if args.disk:
                sides["disk"] = lambda: disk_at(base)
            runs = run_rounds(sides, archive, args)
    print_report(runs, args)
    path = write_results(
        "bench_ab",
        {
            "old": args.old,
            "new": args.new,
            "old_env": old_env,
            "new_env": new_env,
            "files": args.files,
            "mb": args.mb,
            "rounds": runs,
        },
        quick=False,
    )
    print(f"\nJSON: {path}")
    return 0


def run_rounds(
    sides: dict[str, Callable[[], AbstractContextManager[tuple[Path, int]]]],
    archive: Path,
    args: argparse.Namespace,
) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    for name in order(list(sides), args.rounds):
        load = os.getloadavg()[0]
        with sides[name]() as (where, pid):
            figures = one_round(where, pid, archive, args.mb, args.random_reads, args.only)
            if name != "disk":  # the one side that is a plain folder
                still_mounted(where)
            shutil.rmtree(where / "t", ignore_errors=True)
        figures["load"] = load
        runs[name].append(figures)
        cells = "  ".join(f"{k} {v:,.3g}" for k, v in figures.items())
        print(f"{name:20} {cells}", flush=True)
    return runs


def print_report(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    measures = [k for k in next(iter(runs.values()))[0] if k != "load"]
    print(f"\nmedian (min-max) of {args.rounds} interleaved rounds, {args.files:,} files")
    print(f"{'measure':18}" + "".join(f"{name:>28}" for name in runs))
    for measure in measures:
        cells = []
        for rounds in runs.values():
            values = [r[measure] for r in rounds]
            med = statistics.median(values)
            cells.append(f"{med:,.3g} ({min(values):,.3g}-{max(values):,.3g})")
        print(f"{measure:18}" + "".join(f"{c:>28}" for c in cells))
    loads = [r["load"] for rounds in runs.values() for r in rounds]
    print(f"load average at each round's start: {min(loads):.2f}-{max(loads):.2f}")


if __name__ == "__main__":
    sys.exit(main())
