"""Maintenance beside work: gc under a live mount, merge bases and line merges in big
histories and files; each with its baseline measured in the same run.

    python benchmarks/bench_maint.py            # a 20,000-commit history
    python benchmarks/bench_maint.py --quick    # 2,000 commits, a smoke run

Prints tables and writes JSON to benchmarks/results/bench_maint[-quick]-TIMESTAMP.json.

What is measured, and how:
- gc beside saves: a store holding a long history plus ~200 MiB of garbage (a deleted
  branch) is mounted; a probe saves a small file and stats a folder every 5 ms. Its
  latency while `helix gc` runs, against the same probe on the idle mount just before.
- merge base: `merge_bases` of main and a branch forked 5 commits below its tip, cold
  (the process's commit cache emptied), with recorded generations and for a store from
  before them (computed once, then kept). Baseline: `git merge-base` in a git
  repository of the same shape (a process start included: git has no in-process API).
- line merge: a 50,000-line file (a third blank, `}` lines) edited at 20 places on each
  side, `merge_lines` against `git merge-file` on the same three files.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fs import HELIX, _wait_ready, helix, unmount  # noqa: E402
from bench_vcs import fast_import, git  # noqa: E402
from common import dir_bytes, print_table, summary, write_results  # noqa: E402

from helixfs.ids import CommitId, ObjectId, object_id  # noqa: E402
from helixfs.vcs.ancestry import merge_bases  # noqa: E402
from helixfs.vcs.merge import merge_lines  # noqa: E402
from helixfs.vcs.objects import Commit, encode_commit  # noqa: E402
from helixfs.vcs.repo import Repository  # noqa: E402

PROBE_EVERY = 0.005
IDLE_SECONDS = 5.0


def history(store: Path, commits: int, garbage_mib: int) -> None:
    """A 5,000-file project edited one file per commit, plus a deleted branch's garbage."""
    rng = random.Random(7)
    files = {
        f"src/d{i % 50}/f{i}.py": (f"# {i}\n" + "x = 1\n" * rng.randrange(10, 200)).encode()
        for i in range(5000)
    }
    with Repository.init(store) as repo:
        repo.commit(dict(files), "project")
        paths = list(files)
        for n in range(commits):
            path = rng.choice(paths)
            files[path] += f"y{n} = {n}\n".encode()
            repo.commit({path: files[path]}, f"edit {n}")
        repo.create_branch("scratch")
        for n in range(garbage_mib // 2):
            repo.commit({f"big/{n}.bin": os.urandom(2 << 20)}, f"scratch {n}", branch="scratch")
        repo.delete_branch("scratch")


@contextmanager
def mounted(store: Path, target: Path) -> Iterator[None]:
    target.mkdir()
    command = [*HELIX, "mount", "--foreground", "-o", "gc_growth=0", str(store), str(target)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_ready(proc)
        yield
    finally:
        unmount(proc, target)


class Probe:
    """Saves a small file and stats a folder every 5 ms; keeps each round's latency (ms)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            started = time.perf_counter()
            (self.root / f"probe{n % 10}.txt").write_text(f"probe {n}\n")
            os.stat(self.root / "src" / "d1")
            self.samples.append((time.perf_counter() - started) * 1000)
            n += 1
            time.sleep(PROBE_EVERY)


def bench_gc(work: Path, commits: int, garbage_mib: int) -> dict[str, Any]:
    store, target = work / "gc-store", work / "gc-mnt"
    history(store, commits, garbage_mib)
    before = dir_bytes(store)
    with mounted(store, target), Probe(target) as probe:
        time.sleep(IDLE_SECONDS)
        idle = list(probe.samples)
        started = time.perf_counter()
        report = helix("--store", store, "gc", "--json")
        seconds = time.perf_counter() - started
        during = probe.samples[len(idle) :]
    return {
        "commits": commits,
        "store_bytes_before": before,
        "store_bytes_after": dir_bytes(store),
        "gc_seconds": seconds,
        "gc_report": report,
        "idle_ms": summary(idle) | {"max": max(idle)},
        "during_gc_ms": summary(during) | {"max": max(during)},
    }


def bench_merge_base(work: Path, commits: int) -> dict[str, Any]:
    store, gitdir = work / "mb-store", work / "mb-git"
    with Repository.init(store) as repo:
        for n in range(commits):
            repo.commit({"f": f"{n}\n".encode()}, f"c{n}")
        repo.create_branch("side", "HEAD~5")
        side = repo.commit({"g": b"side\n"}, "side", branch="side")
        main = repo.resolve("main")
        recorded = _cold_ms(repo, main, side)
        # the same shape without recorded generations, as in a store from before them
        tree = repo.commit_info(main).tree
        old = [_put(repo, Commit(tree, (), 0, "t", "root"))]
        for n in range(1, commits):
            old.append(_put(repo, Commit(tree, (old[-1],), n, "t", f"old {n}")))
        fork = _put(repo, Commit(tree, (old[-6],), 0, "t", "side"))
        first = _cold_ms(repo, old[-1], fork)
        again = _cold_ms(repo, old[-1], fork, keep_generations=True)
    fast_import(gitdir, [{"f": f"{n}\n".encode()} for n in range(commits)])
    git(gitdir, "branch", "side", "main~5")
    git(gitdir, "checkout", "-q", "side")
    (gitdir / "g").write_text("side\n")
    git(gitdir, "add", "g")
    git(gitdir, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "-m", "side")
    git_ms = []
    for _ in range(5):
        started = time.perf_counter()
        git(gitdir, "merge-base", "main", "side")
        git_ms.append((time.perf_counter() - started) * 1000)
    return {
        "commits": commits,
        "helix_recorded_ms": recorded,
        "helix_old_store_first_ms": first,
        "helix_old_store_again_ms": again,
        "git_ms": min(git_ms),
    }


def _put(repo: Repository, commit: Commit) -> CommitId:
    """A commit record written as it is: no generation recorded."""
    record = encode_commit(commit)
    cid = CommitId(object_id(record))
    repo.store.write({ObjectId(cid): record})
    return cid


def _cold_ms(repo: Repository, a: CommitId, b: CommitId, keep_generations: bool = False) -> float:
    repo._commits.clear()
    if not keep_generations:
        repo.generations.clear()
    started = time.perf_counter()
    merge_bases(repo, a, b)
    return (time.perf_counter() - started) * 1000


def bench_line_merge(work: Path, lines: int) -> dict[str, Any]:
    rng = random.Random(3)
    base = [
        b"\n" if n % 3 == 0 else b"    }\n" if n % 7 == 0 else f"v{n} = {rng.random()}\n".encode()
        for n in range(lines)
    ]
    ours, theirs = list(base), list(base)
    for _ in range(20):
        ours[rng.randrange(lines)] = b"ours\n"
        theirs[rng.randrange(lines)] = b"theirs\n"
    texts = [b"".join(side) for side in (ours, base, theirs)]
    started = time.perf_counter()
    merge_lines(texts[1], texts[0], texts[2])
    helix_ms = (time.perf_counter() - started) * 1000
    paths = [work / name for name in ("ours.txt", "base.txt", "theirs.txt")]
    for path, text in zip(paths, texts, strict=True):
        path.write_bytes(text)
    started = time.perf_counter()
    subprocess.run(["git", "merge-file", "-p", *map(str, paths)], capture_output=True, check=False)
    git_ms = (time.perf_counter() - started) * 1000
    return {"lines": lines, "helix_ms": helix_ms, "git_ms": git_ms}


def report(doc: dict[str, Any]) -> None:
    gc = doc["gc"]
    print_table(
        f"gc beside saves ({gc['commits']:,} commits; a save + stat every 5 ms, ms)",
        ["probe", "p50", "p95", "max", "n"],
        [
            ["idle mount (baseline)", *(gc["idle_ms"][k] for k in ("p50", "p95", "max", "n"))],
            ["while helix gc runs", *(gc["during_gc_ms"][k] for k in ("p50", "p95", "max", "n"))],
        ],
    )
    print(
        f"  gc took {gc['gc_seconds']:.1f} s; store {gc['store_bytes_before'] / 2**20:,.0f} MiB"
        f" -> {gc['store_bytes_after'] / 2**20:,.0f} MiB"
    )
    mb = doc["merge_base"]
    print_table(
        f"merge base, a fork 5 below the tip of {mb['commits']:,} commits (ms)",
        ["case", "helix", "git merge-base"],
        [
            ["generations recorded", mb["helix_recorded_ms"], mb["git_ms"]],
            ["store from before them, first", mb["helix_old_store_first_ms"], mb["git_ms"]],
            ["store from before them, again", mb["helix_old_store_again_ms"], mb["git_ms"]],
        ],
    )
    lm = doc["line_merge"]
    print_table(
        f"line merge of a {lm['lines']:,}-line file edited on both sides (ms)",
        ["", "helix merge_lines", "git merge-file"],
        [["time", lm["helix_ms"], lm["git_ms"]]],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    args = parser.parse_args(argv)
    commits, garbage = (2_000, 40) if args.quick else (20_000, 200)
    started = time.time()
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR", "/var/tmp")) as tmp:
        work = Path(tmp)
        doc: dict[str, Any] = {
            "gc": bench_gc(work, commits, garbage),
            "merge_base": bench_merge_base(work, commits),
            "line_merge": bench_line_merge(work, 50_000),
        }
    doc["seconds"] = round(time.time() - started, 1)
    report(doc)
    print(f"\nwrote {write_results('bench_maint', doc, quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
