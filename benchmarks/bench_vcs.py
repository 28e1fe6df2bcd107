"""Version-store benchmarks of issue 2, each with git as the baseline in the same run.

    python benchmarks/bench_vcs.py            # the sizes of issue 2
    python benchmarks/bench_vcs.py --quick    # smaller sizes, a smoke run of a minute

Prints tables and writes JSON to benchmarks/results/bench_vcs[-quick]-TIMESTAMP.json.

What is measured, and how:
- commit: `Repository.commit` of one changed 10 KB file in a tree of 10,000 files, in
  process, on the real RocksDB store (no fsync, like git's default). The changed file is
  one of 100 "hot" 10 KB files, so caches are not flattered by one path. (Python's
  garbage collector is left as a daemon has it: a commit allocates almost no tracked
  containers, 2 young collections in 400 commits, so freezing the loaded tree out of it
  changed nothing measurable.) Baseline:
  `git add -A && git commit` on the same change in a git work tree of the same files
  (a shell command: git has no in-process API, so its figure includes process start).
- branch: `Repository.create_branch` from trees of 10, 1,000 and 100,000 files. Baseline:
  `git branch NAME` in a repository holding the same tree.
- storage: 1,000 AI-style variants of a 200-file project, committed one after another
  (each variant edits a few lines in one to three files). Bytes: the store's data files
  after `helix gc`, which stores trees as deltas (ADR 0027), and before it (compacted),
  against (a) the unique file versions each LZ4-compressed on their own and (b) git's
  `.git/objects` after `git gc` of the very same history.
- saves: a long session of small saves (5,000 one-line edits) in one folder of 150
  files, where the commit path's whole trees weigh most: the store before and after
  `helix gc`, against the unique versions LZ4-compressed and git after `git gc`.
- reset: `Repository.reset_hard` to the commit 1,000 commits back (and forth again, by
  full id), in process. Baseline: `git reset --hard` between the same two commits.
- blame: `Repository.blame` of a 2,000-line file with 1,000 commits of history (each
  replacing or inserting one to three lines, as an agent's edits), on a store opened
  afresh each round (the CLI's cold caches) and again at once (warm), and `helix blame`
  as a command. Baseline: `git blame` of the same history (fast-import), in turns.
  Target: 200 ms (issue 33). The cache (ADR 0066) is dropped before the first-ever
  side, and the walk without it is the code before the cache.
- host: the micro-costs the brief gives for the project machine (BLAKE3 and LZ4 of
  10 KB, a rocksdict WriteBatch of 3 puts), measured here, beside the brief's figures:
  hosts differ by 3-4x for the same code, and these tell which kind this one is.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import lz4.block
import rocksdict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import dir_bytes, print_table, summary, write_results  # noqa: E402

from helixfs.ids import object_id  # noqa: E402
from helixfs.store import RefUpdate  # noqa: E402
from helixfs.vcs.blame import blame as blame_walk  # noqa: E402
from helixfs.vcs.blamecache import BLAME  # noqa: E402
from helixfs.vcs.repo import Content, Repository  # noqa: E402

COMMIT_TARGET_P50_US = 100.0
BRANCH_TARGET_US = 50.0
STORAGE_TARGET_RATIO = 1.2
RESET_TARGET_MS = 1.0
SAVES_FOLDER_FILES = 150
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
WORDS = [
    *("token", "user", "session", "cache", "value", "index", "record", "buffer"),
    *("request", "handler", "config", "result", "error", "client", "server", "batch"),
    *("stream", "parser", "node", "tree", "commit", "branch", "path"),
]


# -- helpers ------------------------------------------------------------------------------


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = dict(os.environ, **GIT_ENV)
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {proc.stderr.decode()}")
    return proc.stdout


def shell_timed(command: str, cwd: Path) -> float:
    """Wall time of a shell command in µs (for the git baselines)."""
    env = dict(os.environ, **GIT_ENV)
    start = time.perf_counter_ns()
    subprocess.run(command, shell=True, cwd=cwd, env=env, check=True, capture_output=True)
    return (time.perf_counter_ns() - start) / 1000


def as_changes(files: dict[str, bytes]) -> dict[bytes | str, Content]:
    """The same mapping, typed as `Repository.commit` takes it (str or bytes paths)."""
    return dict(files.items())


def timed_us(action: Callable[[], object]) -> float:
    start = time.perf_counter_ns()
    action()
    return (time.perf_counter_ns() - start) / 1000


def code_line(rng: random.Random, n: int) -> str:
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    return f"    {a}_{n} = {b}.{c}({rng.randrange(1000)}, '{a}-{c}')  # {b} {n}\n"


def module_text(rng: random.Random, size: int) -> bytes:
    """Python-looking text of about `size` bytes: compressible the way source code is."""
    lines = [f"def {rng.choice(WORDS)}_{rng.randrange(10**6)}(x):\n"]
    total = len(lines[0])
    while total < size:
        line = code_line(rng, len(lines))
        lines.append(line)
        total += len(line)
    return "".join(lines).encode()[:size]


def edit_lines(rng: random.Random, text: bytes, edits: int) -> bytes:
    """An AI-style edit: a few lines replaced or inserted."""
    lines = text.decode().splitlines(keepends=True)
    for _ in range(edits):
        at = rng.randrange(1, max(2, len(lines)))
        new = code_line(rng, rng.randrange(10**6))
        if rng.random() < 0.5:
            lines[at : at + 1] = [new]
        else:
            lines.insert(at, new)
    return "".join(lines).encode()


@contextmanager
def scratch(base: str | None) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="helix-bench-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def fast_import(repo: Path, commits: list[dict[str, bytes]], start_ts: int = 1_700_000_000) -> None:
    """Build git history with one `git fast-import` (each commit: path -> new content)."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    parts: list[bytes] = []
    for n, changes in enumerate(commits):
        message = f"variant {n}".encode()
        who = b"bench <bench@example.org> %d +0000" % (start_ts + n)
        parts.append(b"commit refs/heads/main\nmark :%d\n" % (n + 1))
        parts.append(b"author %s\ncommitter %s\ndata %d\n%s\n" % (who, who, len(message), message))
        if n:
            parts.append(b"from :%d\n" % n)
        for path, data in changes.items():
            parts.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    git(repo, "fast-import", "--quiet", stdin=b"".join(parts))


# -- 0. the host --------------------------------------------------------------------------

# The brief's figures for the project machine, in µs.
BRIEF_US = {"blake3_10kb": 4.0, "lz4_10kb": 1.4, "write_batch_3_puts": 20.0}


def bench_host(work: Path) -> dict[str, dict[str, float]]:
    """p50 of each micro-cost the brief quotes, beside the brief's figure."""
    # random bytes, as such figures are taken (LZ4 of source code is ~6x slower)
    data = random.Random(0).randbytes(10_240)
    db = rocksdict.Rdict(str(work / "host-db"), rocksdict.Options(raw_mode=True))
    keys = itertools.count()

    def write_batch() -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for part in (data[:8192], data[8192:9216], data[9216:]):  # a blob, a tree, a commit
            batch.put(next(keys).to_bytes(8, "big"), part)
        db.write(batch)

    actions: dict[str, Callable[[], object]] = {
        "blake3_10kb": partial(object_id, data),
        "lz4_10kb": partial(lz4.block.compress, data),
        "write_batch_3_puts": write_batch,
    }
    try:
        return {
            name: {
                "here": summary([timed_us(act) for _ in range(2000)])["p50"],
                "brief": BRIEF_US[name],
            }
            for name, act in actions.items()
        }
    finally:
        db.close()


# -- 1. commit latency ---------------------------------------------------------------------


def project_of(rng: random.Random, files: int, hot: int) -> tuple[dict[str, bytes], list[str]]:
    tree: dict[str, bytes] = {}
    hot_paths: list[str] = []
    for i in range(files):
        path = f"pkg{i % 100:02d}/sub{(i // 100) % 10}/mod_{i}.py"
        size = 10_240 if i % (files // hot) == 0 and len(hot_paths) < hot else 1024
        if size == 10_240:
            hot_paths.append(path)
        tree[path] = module_text(rng, size)
    return tree, hot_paths


def bench_commit(work: Path, quick: bool) -> dict[str, Any]:
    rng = random.Random(1)
    tree, hot = project_of(rng, 10_000, 100)
    rounds, git_rounds = (60, 8) if quick else (400, 30)
    with Repository.init(work / "commit-store") as repo:
        repo.commit(as_changes(tree), "the 10,000-file project")
        samples = []
        for n in range(rounds + 10):
            path = rng.choice(hot)
            tree[path] = edit_lines(rng, tree[path], 1)
            change, message = {path: tree[path]}, f"edit {n}"
            took = timed_us(lambda: repo.commit(as_changes(change), message))  # noqa: B023 (called at once)
            if n >= 10:  # the first commits warm the caches, like a running daemon's
                samples.append(took)
    gitdir = work / "commit-git"
    write_tree(gitdir, tree)
    git(gitdir, "init", "-q", "-b", "main")
    git(gitdir, "add", "-A")
    git(gitdir, "commit", "-q", "-m", "the 10,000-file project")
    git_samples = []
    for n in range(git_rounds + 2):
        path = rng.choice(hot)
        tree[path] = edit_lines(rng, tree[path], 1)
        (gitdir / path).write_bytes(tree[path])
        took = shell_timed(f"git add -A && git commit -q -m 'edit {n}'", gitdir)
        if n >= 2:
            git_samples.append(took)
    return {"helix_us": summary(samples), "git_us": summary(git_samples), "files": len(tree)}


# -- 2. branch creation --------------------------------------------------------------------


def bench_branch(work: Path, quick: bool) -> list[dict[str, Any]]:
    sizes = (10, 1_000, 10_000) if quick else (10, 1_000, 100_000)
    rounds = 200 if quick else 1000
    rows = []
    for size in sizes:
        files = {f"d{i % 97}/f{i}.txt": f"file {i}\n".encode() for i in range(size)}
        with Repository.init(work / f"branch-{size}") as repo:
            repo.commit(as_changes(files), f"{size} files")
            for n in range(10):
                repo.create_branch(f"warm{n}")
            samples = [timed_us(partial(repo.create_branch, f"b{n}")) for n in range(rounds)]
        gitdir = work / f"branch-git-{size}"
        fast_import(gitdir, [files])
        git_samples = [shell_timed(f"git branch b{n}", gitdir) for n in range(20)]
        rows.append({"files": size, "helix_us": summary(samples), "git_us": summary(git_samples)})
    return rows


# -- 3. storage of variants, 4. reset -------------------------------------------------------


def variants(rng: random.Random, count: int) -> tuple[dict[str, bytes], list[dict[str, bytes]]]:
    base = {
        f"src/m{i // 20}/file_{i}.py": module_text(rng, rng.randrange(2000, 8000))
        for i in range(200)
    }
    current = dict(base)
    history = []
    for _ in range(count):
        changes = {}
        for path in rng.sample(sorted(current), rng.randint(1, 3)):
            current[path] = changes[path] = edit_lines(rng, current[path], rng.randint(1, 5))
        history.append(changes)
    return base, history


def helix_data_bytes(store: Path) -> int:
    """The store's data files (RocksDB tables, WAL, manifest), without its text logs."""
    total = 0
    for folder, _, files in os.walk(store):
        for name in files:
            if name.startswith("LOG") or name.endswith(".sock"):
                continue
            total += os.lstat(os.path.join(folder, name)).st_size
    return total


def bench_storage_and_reset(work: Path, quick: bool) -> dict[str, Any]:
    rng = random.Random(3)
    count = 200 if quick else 1000
    base, history = variants(rng, count)
    unique = {data for data in base.values()} | {d for c in history for d in c.values()}
    lz4_unique = sum(len(lz4.block.compress(data)) for data in unique)
    raw_unique = sum(len(data) for data in unique)
    store = work / "variants-store"
    with Repository.init(store) as repo:
        repo.commit(as_changes(base), "base project")
        for n, changes in enumerate(history):
            repo.commit(as_changes(changes), f"variant {n}", meta={"agent": "bench", "variant": n})
        stats = repo.stats()
        repo.store.compact()
        unpacked_bytes = helix_data_bytes(store)
        started = time.perf_counter()
        repacked = repo.gc().repacked  # as git gc packs its side: trees become deltas
        gc_seconds = time.perf_counter() - started
        reset = bench_reset(repo, count)
    helix_bytes = helix_data_bytes(store)
    gitdir = work / "variants-git"
    fast_import(gitdir, [base, *history])
    git(gitdir, "gc", "-q")
    git_bytes = dir_bytes(gitdir / ".git" / "objects")
    git(gitdir, "checkout", "-q", "-f", "main")
    tip = git(gitdir, "rev-parse", "HEAD").decode().strip()
    old = git(gitdir, "rev-parse", f"HEAD~{count}").decode().strip()
    git_reset = []
    for _ in range(10):
        git_reset.append(shell_timed(f"git reset -q --hard {old}", gitdir))
        shell_timed(f"git reset -q --hard {tip}", gitdir)
    return {
        "storage": {
            "variants": count,
            "unique_versions": len(unique),
            "unique_raw_bytes": raw_unique,
            "unique_lz4_bytes": lz4_unique,
            "helix_disk_bytes": helix_bytes,
            "helix_disk_bytes_before_gc": unpacked_bytes,
            "helix_trees_repacked": repacked,
            "helix_gc_seconds": gc_seconds,
            "helix_stored_bytes": stats.stored_bytes,
            "git_objects_bytes_after_gc": git_bytes,
            "helix_vs_lz4_unique": helix_bytes / lz4_unique,
            "helix_vs_git": helix_bytes / git_bytes,
        },
        "reset": {"back": count, "helix_us": reset, "git_us": summary(git_reset)},
    }


def bench_saves(work: Path, quick: bool) -> dict[str, Any]:
    """A long session of small saves in one big folder, where trees weigh most."""
    rng = random.Random(5)
    count = 1000 if quick else 5000
    names = [f"app/service/handlers/h{i:03}.py" for i in range(SAVES_FOLDER_FILES)]
    current = {name: module_text(rng, rng.randrange(500, 3000)) for name in names}
    history = [dict(current)]
    for _ in range(count):
        name = rng.choice(names)
        current[name] = edit_lines(rng, current[name], 1)
        history.append({name: current[name]})
    unique = {data for changes in history for data in changes.values()}
    store = work / "saves-store"
    with Repository.init(store) as repo:
        for n, changes in enumerate(history):
            repo.commit(as_changes(changes), f"save {n}")
        repo.store.compact()
        before = helix_data_bytes(store)
        started = time.perf_counter()
        repacked = repo.gc().repacked
        gc_seconds = time.perf_counter() - started
    gitdir = work / "saves-git"
    fast_import(gitdir, history)
    git(gitdir, "gc", "-q")
    return {
        "saves": count,
        "folder_files": SAVES_FOLDER_FILES,
        "unique_lz4_bytes": sum(len(lz4.block.compress(data)) for data in unique),
        "helix_disk_bytes_before_gc": before,
        "helix_disk_bytes": helix_data_bytes(store),
        "helix_trees_repacked": repacked,
        "helix_gc_seconds": gc_seconds,
        "git_objects_bytes_after_gc": dir_bytes(gitdir / ".git" / "objects"),
    }


def bench_reset(repo: Repository, back: int) -> dict[str, float]:
    tip = repo.resolve("HEAD").hex()
    old = repo.resolve(f"HEAD~{back}").hex()
    samples = []
    for _ in range(200):
        samples.append(timed_us(lambda: repo.reset_hard(old)))
        repo.reset_hard(tip)
    return summary(samples)


# -- report ---------------------------------------------------------------------------------


def bench_blame(work: Path, quick: bool) -> dict[str, Any]:
    """Blame of a long-edited file beside git: the walk without the cache (the code
    before ADR 0066), a first-ever blame (it fills the cache), one 10 commits after a
    cached blame, a cached one on a store opened afresh and warm, and `helix blame` as
    a command, in interleaved rounds, with the load beside each round."""
    rng = random.Random(33)
    lines, commits = (500, 200) if quick else (2000, 1000)
    text = b"".join(code_line(rng, n).encode() for n in range(lines))
    history = [{"big.py": text}]
    for n in range(commits):
        text = edit_lines(rng, text, rng.randrange(1, 4))
        history.append({"big.py": text, f"other/f{n % 20}.py": b"v%d\n" % n})
    store = work / "blame-store"
    with Repository.init(store) as repo:
        for n, changes in enumerate(history):
            repo.commit(as_changes(changes), f"edit {n}")
    gitdir = work / "blame-git"
    fast_import(gitdir, history)
    times: dict[str, list[float]] = {name: [] for name in BLAME_SIDES}
    loads: list[float] = []
    argv = [sys.executable, "-m", "helixfs.cli.main", "--store", str(store), "blame", "big.py"]
    for _ in range(3 if quick else 10):  # interleaved: every side once a round
        loads.append(os.getloadavg()[0])
        with Repository.open(store) as repo:  # each side below on a store opened afresh
            head = repo.resolve("HEAD")
            walk = partial(blame_walk, repo, head, b"big.py", cached=False)
            times["uncached"].append(timed_us(walk))
        with Repository.open(store) as repo:
            _drop_blame_cache(repo)
            times["first"].append(timed_us(partial(repo.blame, "big.py")))
        with Repository.open(store) as repo:
            _drop_blame_cache(repo)
            repo.blame("big.py", "HEAD~10")
            times["since10"].append(timed_us(partial(repo.blame, "big.py")))
        with Repository.open(store) as repo:
            times["cold"].append(timed_us(partial(repo.blame, "big.py")))
            times["warm"].append(timed_us(partial(repo.blame, "big.py")))
            times["floor"].append(timed_us(partial(_split_every_version, repo, "big.py")))
        times["command"].append(
            timed_us(partial(subprocess.run, argv, check=True, capture_output=True))
        )
        times["process"].append(
            timed_us(
                partial(
                    subprocess.run,
                    [*argv[:-2], "rev-parse", "HEAD"],
                    check=True,
                    capture_output=True,
                )
            )
        )
        times["git"].append(shell_timed("git blame main -- big.py", gitdir))
    return {
        "lines": lines,
        "commits": commits,
        "load": loads,
        **{f"{name}_us": summary(samples) for name, samples in times.items()},
    }


BLAME_SIDES = {
    "uncached": "the walk without the cache (as before ADR 0066)",
    "first": "first-ever blame (walk + cache written)",
    "since10": "10 commits after a cached blame (warm)",
    "cold": "cached, store opened afresh (in process)",
    "warm": "cached, warm",
    "command": "`helix blame` (a process, cached)",
    "process": "`helix rev-parse HEAD` (a process: the command's floor)",
    "floor": "floor: read + split every version (warm)",
    "git": "`git blame`",
}


def _drop_blame_cache(repo: Repository) -> None:
    repo.store.write({}, [RefUpdate(name, None) for name, _ in repo.store.refs(BLAME)])


def _split_every_version(repo: Repository, path: str) -> int:
    """What any line-by-line blame of this history does at least: read each version of
    the file (warm) and cut it into lines. Its time bounds blame's from below."""
    lines = 0
    for commit in repo.log(path=path):
        lines += len(repo.read(commit.id.hex(), path).splitlines(keepends=True))
    return lines


def report(doc: dict[str, Any]) -> None:
    print_table(
        "this host's micro-costs, beside the brief's for the project machine (µs, p50)",
        ["", "here", "brief"],
        [[name, row["here"], row["brief"]] for name, row in doc["host"].items()],
    )
    for part, show in _REPORTS.items():
        if part in doc:
            show(doc)


def _report_commit(doc: dict[str, Any]) -> None:
    c = doc["commit"]
    print_table(
        f"commit of one changed 10 KB file, tree of {c['files']:,} files (µs)",
        ["", "p50", "p95", "n", "target"],
        [
            [
                "helix (in process)",
                c["helix_us"]["p50"],
                c["helix_us"]["p95"],
                c["helix_us"]["n"],
                f"p50 <= {COMMIT_TARGET_P50_US:.0f}",
            ],
            [
                "git add -A && git commit",
                c["git_us"]["p50"],
                c["git_us"]["p95"],
                c["git_us"]["n"],
                "",
            ],
        ],
    )


def _report_branch(doc: dict[str, Any]) -> None:
    print_table(
        "branch creation (µs)",
        ["files", "helix p50", "helix p95", "git branch p50", "target"],
        [
            [
                r["files"],
                r["helix_us"]["p50"],
                r["helix_us"]["p95"],
                r["git_us"]["p50"],
                f"flat, <= {BRANCH_TARGET_US:.0f}",
            ]
            for r in doc["branch"]
        ],
    )


def _report_storage(doc: dict[str, Any]) -> None:
    s = doc["storage"]
    print_table(
        f"storage of {s['variants']:,} variants of a 200-file project (bytes)",
        ["", "bytes", "vs LZ4 unique", "vs git"],
        [
            [
                f"helix store after gc ({s['helix_gc_seconds']:.1f} s)",
                s["helix_disk_bytes"],
                s["helix_vs_lz4_unique"],
                s["helix_vs_git"],
            ],
            [
                "helix store before gc (compacted)",
                s["helix_disk_bytes_before_gc"],
                s["helix_disk_bytes_before_gc"] / s["unique_lz4_bytes"],
                s["helix_disk_bytes_before_gc"] / s["git_objects_bytes_after_gc"],
            ],
            ["unique versions, LZ4 each", s["unique_lz4_bytes"], 1.0, None],
            ["unique versions, raw", s["unique_raw_bytes"], None, None],
            ["git .git/objects after gc", s["git_objects_bytes_after_gc"], None, 1.0],
        ],
    )
    print(f"  target: <= {STORAGE_TARGET_RATIO}x LZ4 unique, and smaller than git")


def _report_saves(doc: dict[str, Any]) -> None:
    v = doc["saves"]
    print_table(
        f"storage of {v['saves']:,} saves in a folder of {v['folder_files']} files (bytes)",
        ["", "bytes", "vs LZ4 unique", "vs git"],
        [
            [
                f"helix store after gc ({v['helix_gc_seconds']:.1f} s)",
                v["helix_disk_bytes"],
                v["helix_disk_bytes"] / v["unique_lz4_bytes"],
                v["helix_disk_bytes"] / v["git_objects_bytes_after_gc"],
            ],
            [
                "helix store before gc (compacted)",
                v["helix_disk_bytes_before_gc"],
                v["helix_disk_bytes_before_gc"] / v["unique_lz4_bytes"],
                v["helix_disk_bytes_before_gc"] / v["git_objects_bytes_after_gc"],
            ],
            ["unique versions, LZ4 each", v["unique_lz4_bytes"], 1.0, None],
            ["git .git/objects after gc", v["git_objects_bytes_after_gc"], None, 1.0],
        ],
    )


def _report_reset(doc: dict[str, Any]) -> None:
    r = doc["reset"]
    print_table(
        f"reset --hard to the commit {r['back']:,} back (ms)",
        ["", "p50", "p95", "target"],
        [
            [
                "helix (in process)",
                r["helix_us"]["p50"] / 1000,
                r["helix_us"]["p95"] / 1000,
                f"<= {RESET_TARGET_MS:.0f}",
            ],
            ["git reset --hard", r["git_us"]["p50"] / 1000, r["git_us"]["p95"] / 1000, ""],
        ],
    )


def _report_blame(doc: dict[str, Any]) -> None:
    b = doc["blame"]
    load = f"load {min(b['load']):.1f}-{max(b['load']):.1f}"
    print_table(
        f"blame of a {b['lines']:,}-line file with {b['commits']:,} commits (ms, {load})",
        ["", "p50", "p95", "target"],
        [
            [
                label,
                b[f"{name}_us"]["p50"] / 1000,
                b[f"{name}_us"]["p95"] / 1000,
                "200" if name == "command" else "",
            ]
            for name, label in BLAME_SIDES.items()
        ],
    )


_REPORTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "commit": _report_commit,
    "branch": _report_branch,
    "storage": _report_storage,
    "saves": _report_saves,
    "reset": _report_reset,
    "blame": _report_blame,
}
PARTS = ("commit", "branch", "storage", "saves", "blame")  # storage includes reset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--work-dir", help="where stores and git repos go (default: a tmp dir)")
    parser.add_argument("--only", nargs="+", choices=PARTS, help="these parts alone")
    args = parser.parse_args(argv)
    only = set(args.only or PARTS)
    if shutil.which("git") is None:
        parser.error("git is needed for the baselines")
    started = time.time()
    with scratch(args.work_dir) as work:
        doc: dict[str, Any] = {"host": bench_host(work)}
        if "commit" in only:
            doc["commit"] = bench_commit(work, args.quick)
        if "branch" in only:
            doc["branch"] = bench_branch(work, args.quick)
        if "storage" in only:
            doc.update(bench_storage_and_reset(work, args.quick))
        if "saves" in only:
            doc["saves"] = bench_saves(work, args.quick)
        if "blame" in only:
            doc["blame"] = bench_blame(work, args.quick)
    doc["seconds"] = round(time.time() - started, 1)
    report(doc)
    path = write_results("bench_vcs", doc, quick=args.quick)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
