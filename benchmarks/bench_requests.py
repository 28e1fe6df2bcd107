"""What each metadata request costs in our own code, without the kernel (issue 28).

    python benchmarks/bench_requests.py              # 5,000 files, 3 runs
    python benchmarks/bench_requests.py --quick      # 1,000 files, 1 run
    OLD=/path/to/checkout python benchmarks/bench_requests.py   # that code, in turns
    python benchmarks/bench_requests.py --cpu        # CPU time: a busy host's waits out

Replays on the Operations class, called directly as the kernel calls it, the requests
`tar x`, `git status` and `rm -rf` of bench_fs's tree send to a mount (counted in the
daemon: per file a negative lookup, create, getxattr security.capability, write,
getattr, setattr uid+gid, getxattr, setattr mode, setattr mtime, flush, release,
getattr; then open, read, flush, release; then readdir, getattr, unlink, forget), on a
real store in a temporary folder with the mount's quiet window; then as many 10 KB saves
over 20 files as bench_ab's saves row makes (per save an open with O_TRUNC, getxattr
security.capability twice, write, flush, release; fsync before the flush in the second
kind), the window passing every 100 saves. Prints the microseconds per file (per save)
each kind of request took, median of the runs. With OLD set, each run is made
once with that checkout's package and once with this one's, alternated: the same
host drift for both. Each run is a process of its own. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import write_results

HERE = Path(__file__).resolve().parent
PHASES = ("tar x", "git status", "rm -rf", "save", "save+fsync")


@dataclass
class Attrs:
    st_mode: int = 0o100644
    st_uid: int = field(default_factory=os.getuid)
    st_gid: int = field(default_factory=os.getgid)
    st_size: int = 0
    st_atime_ns: int = 0
    st_mtime_ns: int = 1_700_000_000 * 10**9


def drive(coro: Any) -> Any:
    """A handler runs to its end without awaiting anything: one send finishes it."""
    import pyfuse3

    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    except pyfuse3.FUSEError as error:
        return error
    raise RuntimeError("a handler awaited")


def replay(files: int, cpu: bool = False) -> dict[str, dict[str, float]]:
    """One run in this process: µs per file, per phase and request kind (`cpu`: of this
    thread's CPU time, not of the wall clock)."""
    import trio

    from helixfs.fs.operations import Operations
    from helixfs.fs.saver import Saver
    from helixfs.vcs.repo import Repository

    sys.path.insert(0, str(HERE.parent / "tests" / "fs"))
    from fs_client import Ctx, Fields  # the stand-ins of pyfuse3's kernel-made objects

    spent: dict[str, collections.Counter[str]] = {p: collections.Counter() for p in PHASES}
    ctx: Any = Ctx()
    clock = time.thread_time_ns if cpu else time.perf_counter_ns

    def timed(phase: str, kind: str, coro: Any) -> Any:
        start = clock()
        result = drive(coro)
        spent[phase][kind] += clock() - start
        return result

    async def run(ops: Operations) -> None:
        tar = "tar x"
        top = drive(ops.mkdir(1, b"t", 0o755, ctx)).st_ino
        folders = [drive(ops.mkdir(top, b"s%d" % n, 0o755, ctx)).st_ino for n in range(50)]
        owner, mode, times = Attrs(), Attrs(), Attrs()
        inodes = []
        for i in range(files):
            parent, name = folders[i * 50 // files], b"f%d.txt" % i
            timed(tar, "lookup", ops.lookup(parent, name, ctx))
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
            fi, attrs = timed(tar, "create", ops.create(parent, name, 0o644, flags, ctx))
            ino = attrs.st_ino
            inodes.append(ino)
            timed(tar, "getxattr", ops.getxattr(ino, b"security.capability", ctx))
            timed(tar, "write", ops.write(fi.fh, 0, b"x%d\n" % i))
            timed(tar, "getattr", ops.getattr(ino, ctx))
            chown = Fields(update_uid=True, update_gid=True)
            timed(tar, "setattr", ops.setattr(ino, owner, chown, fi.fh, ctx))  # type: ignore[arg-type]
            timed(tar, "getxattr", ops.getxattr(ino, b"security.capability", ctx))
            chmod = Fields(update_mode=True)
            timed(tar, "setattr", ops.setattr(ino, mode, chmod, fi.fh, ctx))  # type: ignore[arg-type]
            utime = Fields(update_mtime=True)
            timed(tar, "setattr", ops.setattr(ino, times, utime, fi.fh, ctx))  # type: ignore[arg-type]
            timed(tar, "flush", ops.flush(fi.fh))
            timed(tar, "release", ops.release(fi.fh))
            timed(tar, "getattr", ops.getattr(ino, ctx))
        ops.saver.commit_now(ops.views.root.worktree)
        status = "git status"
        for ino in inodes:
            fo = timed(status, "open", ops.open(ino, os.O_RDONLY, ctx))
            timed(status, "read", ops.read(fo.fh, 0, 131072))
            timed(status, "flush", ops.flush(fo.fh))
            timed(status, "release", ops.release(fo.fh))
        remove(ops, top)
        saves(ops, "save", fsync=False)
        saves(ops, "save+fsync", fsync=True)

    def saves(ops: Operations, phase: str, *, fsync: bool) -> None:
        payload = os.urandom(10 * 1024)
        made = [
            ops.create(1, b"%s%d.bin" % (phase.encode(), n), 0o644, os.O_WRONLY, ctx)
            for n in range(20)
        ]
        inodes = []
        for coro in made:
            fi, attrs = drive(coro)
            drive(ops.release(fi.fh))
            inodes.append(attrs.st_ino)
        for i in range(files):
            ino = inodes[i % 20]
            fo = timed(phase, "open", ops.open(ino, os.O_WRONLY | os.O_TRUNC, ctx))
            timed(phase, "getxattr", ops.getxattr(ino, b"security.capability", ctx))
            timed(phase, "getxattr", ops.getxattr(ino, b"security.capability", ctx))
            timed(phase, "write", ops.write(fo.fh, 0, payload[:-8] + i.to_bytes(8, "little")))
            if fsync:
                timed(phase, "fsync", ops.fsync(fo.fh, False))
            timed(phase, "flush", ops.flush(fo.fh))
            timed(phase, "release", ops.release(fo.fh))
            if i % 100 == 99:  # the quiet window passes: the commit is no save's reply
                ops.saver.commit_due(trio.current_time() + 1)

    def remove(ops: Operations, folder: int) -> None:
        rm = "rm -rf"
        listed: list[tuple[bytes, int]] = []

        def reply(token: Any, name: bytes, attrs: Any, next_id: int) -> bool:
            listed.append((name, attrs.st_ino))
            return True

        ops.readdir_reply = reply
        fh = timed(rm, "opendir", ops.opendir(folder, ctx))
        timed(rm, "readdir", ops.readdir(fh, 0, None))  # type: ignore[arg-type]
        timed(rm, "releasedir", ops.releasedir(fh))
        for name, ino in [entry for entry in listed if entry[0] not in (b".", b"..")]:
            attrs = timed(rm, "getattr", ops.getattr(ino, ctx))
            if attrs.st_mode & 0o170000 == 0o040000:
                remove(ops, ino)
                timed(rm, "rmdir", ops.rmdir(folder, name, ctx))
            else:
                timed(rm, "unlink", ops.unlink(folder, name, ctx))
            timed(rm, "forget", ops.forget([(ino, 2)]))

    with tempfile.TemporaryDirectory(prefix="helix-requests-") as base:
        repo = Repository.init(Path(base) / "store")
        ops = Operations(repo, saver=Saver(0.3))
        trio.run(run, ops)
        repo.close()
    return {
        phase: {kind: ns / files / 1000 for kind, ns in counter.items()}
        for phase, counter in spent.items()
    }


def one_run(source: Path | None, files: int, cpu: bool = False) -> dict[str, dict[str, float]]:
    """A run in a process of its own, importing the package from `source`."""
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(files), *(["--cpu"] if cpu else [])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, dict[str, float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run of 1,000 files")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--files", type=int, default=None)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="time each request by this thread's CPU (a shared host's waits left out)",
    )
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(replay(args.child, args.cpu)))
        return 0
    files = args.files or (1_000 if args.quick else 5_000)
    runs = args.runs or (1 if args.quick else 3)
    old = os.environ.get("OLD")
    sides: dict[str, Path | None] = {"this": HERE.parent}
    if old:
        sides = {"old": Path(old), "new": HERE.parent}
    found: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in sides}
    loads = []
    for n in range(runs):
        for name in list(sides) if n % 2 == 0 else list(sides)[::-1]:
            loads.append(os.getloadavg()[0])
            found[name].append(one_run(sides[name], files, args.cpu))
    medians = {name: _medians(rounds) for name, rounds in found.items()}
    first = next(iter(sides))
    for phase in PHASES:
        what = "µs of CPU" if args.cpu else "µs"
        print(f"{phase}, {what} per file (median of {runs} runs, {files:,} files)")
        print(f"  {'':12}" + "".join(f"{name:>10}" for name in sides))
        shown = medians[first][phase]
        kinds = sorted((k for k in shown if k != "all"), key=lambda k: -shown[k])
        for kind in ["all", *kinds]:
            cells = "".join(f"{medians[name][phase].get(kind, 0.0):>10.1f}" for name in sides)
            print(f"  {kind:12}{cells}")
    print(f"sides: {', '.join(f'{n} {p}' for n, p in sides.items())}")
    print(f"load average at each run's start: {min(loads):.2f}-{max(loads):.2f}")
    path = write_results(
        "bench_requests",
        {
            "files": files,
            "cpu": args.cpu,
            "runs": found,
            "medians_us_per_file": medians,
            "loads": loads,
        },
        quick=args.quick,
    )
    print(f"JSON: {path}")
    return 0


def _medians(rounds: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for phase in PHASES:
        kinds = {kind for r in rounds for kind in r[phase]}
        per = {kind: statistics.median(r[phase].get(kind, 0.0) for r in rounds) for kind in kinds}
        per["all"] = statistics.median(sum(r[phase].values()) for r in rounds)
        out[phase] = per
    return out


if __name__ == "__main__":
    sys.exit(main())
