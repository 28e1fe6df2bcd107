"""How the FUSE loop's wait for requests (mount.fuse_wait, ADR 0074) shares the CPU.

    python benchmarks/bench_wait.py helix:spin helix:trio floor:spin floor:trio
    python benchmarks/bench_wait.py helix@/work/old:auto helix:auto --rounds 4 --hogs 1

Each side is KIND[@SOURCE]:WAIT: KIND `helix` (a HelixFS mount, quiet window 300 ms) or
`floor` (benchmarks/floorfs.py, which uses HelixFS's wait too), SOURCE a checkout whose
code the daemon runs (this one by default), WAIT the HELIX_FUSE_WAIT it gets. The sides
run in interleaved rounds (ABC CBA ...), each a fresh mount that takes bench_fs's tree
with its .git through `tar x`, `git status` and `rm -rf`. For every step it gives the
wall time, the daemon's CPU (its FUSE loop's thread, and its other threads apart), the
client's CPU (tar, git, rm, with their children) and how busy the machine's CPUs were;
the load average is printed beside every round. `--hogs N` runs N `yes > /dev/null`
beside the whole run (killed at the end), as an artificial load. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bench_fs
from bench_ab import helix_at
from bench_floor import _archive
from common import write_results

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STEPS = {
    "tar x": "mkdir t && tar xf {archive} -C t",
    "git status": "cd t && git status --porcelain > /dev/null",
    "rm -rf": "rm -rf t",
}
MEASURES = (
    "wall s",
    "daemon cpu s",
    "loop cpu s",
    "threads cpu s",
    "client cpu s",
    "busy",
    "steal",
)


def thread_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds of the process's main thread (the FUSE loop) and of all its others."""
    tick = os.sysconf("SC_CLK_TCK")
    main = rest = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = text.rsplit(")", 1)[1].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick
        if int(tid) == pid:
            main = seconds
        else:
            rest += seconds
    return main, rest


def cpu_times() -> tuple[int, int, int]:
    """(busy, total, steal) jiffies of all CPUs since boot, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])
    return total - idle, total, fields[7]


def step(command: str, cwd: Path, pid: int) -> dict[str, float]:
    loop0, rest0 = thread_seconds(pid)
    busy0, total0, steal0 = cpu_times()
    start = time.perf_counter()
    child = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise RuntimeError(f"{command!r} failed ({child.returncode})")
    busy1, total1, steal1 = cpu_times()
    loop1, rest1 = thread_seconds(pid)
    return {
        "wall s": wall,
        "daemon cpu s": loop1 - loop0 + rest1 - rest0,
        "loop cpu s": loop1 - loop0,
        "threads cpu s": rest1 - rest0,
        "client cpu s": usage.ru_utime + usage.ru_stime,
        "busy": (busy1 - busy0) / max(1, total1 - total0),
        "steal": (steal1 - steal0) / max(1, total1 - total0),
    }


@contextmanager
def side_mounted(spec: str, base: Path) -> Iterator[tuple[Path, int]]:
    """The mount a side names, and its daemon's pid."""
    kind_src, _, wait = spec.rpartition(":")
    kind, _, source = kind_src.partition("@")
    src = Path(source) if source else REPO
    if kind == "helix":
        with helix_at(src, base, {"HELIX_FUSE_WAIT": wait}) as mounted:
            yield mounted
    elif kind == "floor":
        yield from _floor(src, base, wait)
    else:
        raise SystemExit(f"a side is helix[@SRC]:WAIT or floor[@SRC]:WAIT, not {spec!r}")


def _floor(src: Path, base: Path, wait: str) -> Iterator[tuple[Path, int]]:
    target = base / "floor-mnt"
    target.mkdir()
    proc = subprocess.Popen(
        [sys.executable, str(src / "benchmarks" / "floorfs.py"), str(target)],
        env={**os.environ, "PYTHONPATH": str(src), "HELIX_FUSE_WAIT": wait},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        bench_fs._wait_ready(proc)
        yield target, proc.pid
    finally:
        bench_fs.unmount(proc, target)
        target.rmdir()


@contextmanager
def hogs(count: int) -> Iterator[None]:
    """`count` CPU hogs (`yes > /dev/null`) meanwhile, each killed by its pid after."""
    procs = [
        subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, start_new_session=True)
        for _ in range(count)
    ]
    try:
        if procs:
            time.sleep(2)
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
            proc.wait()


def order(names: list[str], rounds: int) -> Iterator[str]:
    for n in range(rounds):
        yield from (names if n % 2 == 0 else list(reversed(names)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sides", nargs="+")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--hogs", type=int, default=0)
    parser.add_argument("--store-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in args.sides}
    with tempfile.TemporaryDirectory(dir=args.store_dir, prefix="helix-wait-") as base_dir:
        base = Path(base_dir)
        archive = _archive(base, args.files)
        with hogs(args.hogs):
            for side in order(args.sides, args.rounds):
                load = os.getloadavg()[0]
                figures: dict[str, Any] = {"load": load}
                with side_mounted(side, base) as (where, pid):
                    for name, command in STEPS.items():
                        figures[name] = step(command.format(archive=archive), where, pid)
                    shutil.rmtree(where / "t", ignore_errors=True)
                runs[side].append(figures)
                cells = "  ".join(
                    f"{name} {f['wall s']:.3f}s d{f['daemon cpu s']:.2f}"
                    f"(l{f['loop cpu s']:.2f}) c{f['client cpu s']:.2f} b{f['busy']:.2f}"
                    for name, f in figures.items()
                    if name != "load"
                )
                print(f"load {load:4.2f}  {side:28} {cells}", flush=True)
    print_report(runs, args)
    path = write_results(
        "bench_wait",
        {"sides": args.sides, "files": args.files, "hogs": args.hogs, "rounds": runs},
        quick=False,
    )
    print(f"\nJSON: {path}")
    return 0


def print_report(runs: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    print(f"\nmedians of {args.rounds} interleaved rounds, {args.files:,} files, {args.hogs} hogs")
    for name in STEPS:
        print(f"\n{name:14}" + "".join(f"{m:>15}" for m in MEASURES))
        for side, rounds in runs.items():
            cells = [statistics.median(r[name][m] for r in rounds) for m in MEASURES]
            print(f"{side:14}" + "".join(f"{c:15.3f}" for c in cells))
    loads = [r["load"] for rounds in runs.values() for r in rounds]
    print(f"load average at each round's start: {min(loads):.2f}-{max(loads):.2f}")


if __name__ == "__main__":
    sys.exit(main())
