"""Remote benchmarks of issue 31, on a SeaweedFS S3 server on 127.0.0.1 (tests/seaweed.py).

    python benchmarks/bench_remote.py            # 10,000 files, 1,000 commits; N = 1, 2, 4, 8
    python benchmarks/bench_remote.py --quick    # 1,000 files, 100 commits; N = 1, 2

Prints tables and writes JSON to benchmarks/results/bench_remote[-quick]-TIMESTAMP.json.

- push / clone: a history of FILES files and COMMITS commits (each changing one to three
  small files) pushed to an empty remote by `helix push` (vcs/sync.py, in process) and
  cloned back (vcs/clone.py); objects/s and MB/s of records sent. Baseline: `git push` of
  the same history (built by git fast-import) to a bare repository on the same disk,
  and `git clone --no-local` of it. Rounds interleaved, machine load beside each. Then
  `clone --lazy` of it (commits and folders, no file contents): seconds, objects.
- lazy mount: the same history pushed once; each round `helix clone --lazy` and a full
  `helix clone` of it (the order turning), each mounted (`helix mount`) and used at once:
  `find` of the tree, a read of one file never read (then of a second: the first opens the
  S3 client), an lstat of every path (what `git status` does). Seconds of each, "usable"
  (clone + mount + first read), and what the store holds after (objects, and how many of
  main's file contents), counted once it is unmounted.
- machines: N simulated machines, each a clone of one remote with its own daemon
  (`helix mount --remote origin --quiet-window 0`, HELIX_HOST m0, m1, ...), each on its
  own branch (`helix checkout agentI` before mounting), saving a small new file into its
  mount every --save-every seconds for SECONDS seconds. Each machine's branch is watched
  by the next machine (N = 1: an idle second machine on main): a thread lists the save
  folder in the watcher's `.helix/branches/agentI/` every 50 ms. Figures: saves/s in
  all, p50/p95 time from a save's close to the watcher listing it (the daemon's push
  round, deferred while saves keep coming, then the watcher's fetch round), and commits
  and saves lost (each machine's commits and files against a fresh clone of the remote
  after the daemons are unmounted: must be 0). Load before and at the end of each N.
- save path: save+fsync of a small file in a mount with `--remote` and without
  (separate stores of 10,000 files (--save-files), same disk, both mounted throughout),
  ROUNDS rounds (--rounds, 8) of a block of saves on each side, the first side turning.
  `--base DIR` mounts a third side with --remote running the code of DIR (a worktree of
  the commit before a change), in the same rounds. The --remote mount pushes
  every commit in the background while the saves run. Per round the p50 ratio
  remote / local; the verdict is the median ratio with its min and max, load beside.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import print_table, summary, write_results  # noqa: E402
from seaweed import SeaweedServer  # noqa: E402

from helixfs.daemon.mounts import wait_released  # noqa: E402
from helixfs.store.s3 import S3Store  # noqa: E402
from helixfs.store.s3client import S3Location  # noqa: E402
from helixfs.vcs.clone import clone  # noqa: E402
from helixfs.vcs.remotes import Remote  # noqa: E402
from helixfs.vcs.repo import Repository  # noqa: E402
from helixfs.vcs.sync import Sync  # noqa: E402

HELIX = [sys.executable, "-m", "helixfs.cli.main"]


def load() -> float:
    return os.getloadavg()[0]


def content(i: int, version: int) -> bytes:
    return (f"file {i} version {version}\n" + "x" * (150 + i % 100) + "\n").encode()


def edits(commits: int, files: int) -> list[list[int]]:
    return [[(k * 7 + j * 131) % files for j in range(1 + k % 3)] for k in range(1, commits)]


def build_helix(folder: Path, files: int, commits: int) -> Repository:
    repo = Repository.init(folder)
    repo.commit({f"d{i % 100}/f{i}.txt": content(i, 0) for i in range(files)}, "initial")
    for k, changed in enumerate(edits(commits, files), start=1):
        repo.commit({f"d{i % 100}/f{i}.txt": content(i, k) for i in changed}, f"edit {k}")
    return repo


def build_git(folder: Path, files: int, commits: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)
    lines: list[bytes] = []
    stamp = "1700000000 +0000"

    def commit(k: int, changed: list[int]) -> None:
        message = b"initial" if k == 0 else b"edit %d" % k
        lines.append(b"commit refs/heads/main\n")
        lines.append(f"committer bench <b@x> {stamp}\n".encode())
        lines.append(b"data %d\n%s\n" % (len(message), message))
        for i in changed:
            data = content(i, k)
            lines.append(f"M 100644 inline d{i % 100}/f{i}.txt\n".encode())
            lines.append(b"data %d\n%s\n" % (len(data), data))

    commit(0, list(range(files)))
    for k, changed in enumerate(edits(commits, files), start=1):
        commit(k, changed)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=folder, input=b"".join(lines), check=True)


def location(server: SeaweedServer) -> S3Location:
    return S3Location(server.bucket, f"bench/{uuid.uuid4().hex[:10]}", server.endpoint)


def helix_push(source: Path, where: S3Location) -> dict[str, Any]:
    with Repository.open(source) as repo, S3Store(where) as remote:
        start = time.perf_counter()
        result = Sync(repo, remote, "origin", "bench").push(["main"])[0]
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "objects": result.objects, "bytes": result.bytes}


def helix_clone(where: S3Location, target: Path, *, lazy: bool = False) -> dict[str, Any]:
    start = time.perf_counter()
    results = clone(target, Remote("origin", where, lazy=lazy))
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "objects": sum(r.objects for r in results)}


def git_push(source: Path, bare: Path) -> dict[str, Any]:
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    start = time.perf_counter()
    subprocess.run(
        ["git", "push", "-q", str(bare), "main"], cwd=source, check=True, capture_output=True
    )
    seconds = time.perf_counter() - start
    count = subprocess.run(
        ["git", "count-objects", "-v"], cwd=bare, capture_output=True, text=True, check=True
    ).stdout
    packed = int(next(ln.split()[1] for ln in count.splitlines() if ln.startswith("in-pack")))
    return {"seconds": seconds, "objects": packed}


def git_clone(bare: Path, target: Path) -> dict[str, Any]:
    start = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--no-local", str(bare), str(target)], check=True)
    return {"seconds": time.perf_counter() - start}


def transfer(server: SeaweedServer, work: Path, files: int, commits: int, rounds: int) -> Any:
    source, gitsrc = work / "history", work / "git-history"
    started = time.perf_counter()
    build_helix(source, files, commits).close()
    build_git(gitsrc, files, commits)
    print(f"built {files:,} files x {commits:,} commits in {time.perf_counter() - started:.0f}s")
    rows, raw = [], []
    for n in range(rounds):
        where = location(server)
        figures = {
            "load_push": load(),
            "helix_push": helix_push(source, where),
            "git_push": git_push(gitsrc, work / f"bare{n}.git"),
            "load_clone": load(),
            "helix_clone": helix_clone(where, work / f"clone{n}"),
            "git_clone": git_clone(work / f"bare{n}.git", work / f"gitclone{n}"),
            "helix_lazy_clone": helix_clone(where, work / f"lazy{n}", lazy=True),
        }
        raw.append(figures)
        hp, gp = figures["helix_push"], figures["git_push"]
        hc, gc, lazy = figures["helix_clone"], figures["git_clone"], figures["helix_lazy_clone"]
        rows.append(
            [
                f"round {n + 1}",
                hp["seconds"],
                hp["objects"] / hp["seconds"],
                hp["bytes"] / hp["seconds"] / 1e6,
                gp["seconds"],
                hc["seconds"],
                hc["objects"] / hc["seconds"],
                gc["seconds"],
                lazy["seconds"],
                lazy["objects"],
                figures["load_push"],
            ]
        )
        shutil.rmtree(work / f"clone{n}")
        shutil.rmtree(work / f"lazy{n}")
    print_table(
        f"push / clone of {files:,} files, {commits:,} commits (SeaweedFS on 127.0.0.1)",
        [
            "round",
            "helix push s",
            "objects/s",
            "MB/s",
            "git push s",
            "helix clone s",
            "objects/s",
            "git clone s",
            "lazy clone s",
            "objects",
            "load",
        ],
        rows,
    )
    return raw


# ---------------------------------------------------------------- a lazy clone, mounted


def timed(step: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = step()
    return time.perf_counter() - start, result


def listed(mountpoint: Path) -> list[str]:
    """`find` of the tree (not `.helix`): every path, as a listing walks it."""
    out = subprocess.run(
        ["find", str(mountpoint), "-path", str(mountpoint / ".helix"), "-prune", "-o", "-print"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return out.splitlines()[1:]  # the mountpoint itself first


def stat_all(paths: list[str]) -> int:
    """An lstat of every path, as `git status` does of a worktree: how many are files."""
    return sum(1 for p in paths if stat.S_ISREG(os.lstat(p).st_mode))


def held(store: Path) -> dict[str, int]:
    """What the store holds once unmounted: objects, and file contents of main's tree."""
    with Repository.open(store) as repo:
        objects = sum(1 for _ in repo.store.ids())
        root = repo.commit_info("main").tree
        files = [e for _, e in repo.trees.walk(root) if e.is_file()]
        contents = sum(1 for e in files if repo.store.contains(e.oid))
    return {"objects": objects, "contents": contents, "files": len(files)}


def mounted_clone(
    url: str, endpoint: str, work: Path, name: str, lazy: bool, reads: tuple[str, str]
) -> dict[str, Any]:
    """`helix clone [--lazy]`, `helix mount`, then what an agent does first: list the
    tree, read one file, stat every file; seconds of each, and what came down by then."""
    store, mountpoint = work / f"{name}-store", work / f"{name}-mnt"
    mountpoint.mkdir()
    one, other = reads
    flag = ["--lazy"] if lazy else []
    figures: dict[str, Any] = {"load": load()}
    figures["clone_s"], _ = timed(
        lambda: helix(dict(os.environ), "clone", *flag, url, str(store), "--endpoint", endpoint)
    )
    figures["mount_s"], _ = timed(
        lambda: helix(dict(os.environ), "mount", str(store), str(mountpoint))
    )
    try:
        figures["find_s"], paths = timed(lambda: listed(mountpoint))
        figures["read_s"], data = timed(lambda: (mountpoint / one).read_bytes())
        # a second file: the first read also opened the S3 client (ondemand.py)
        figures["read2_s"], _ = timed(lambda: (mountpoint / other).read_bytes())
        figures["stat_s"], files = timed(lambda: stat_all(paths))
        figures.update(entries=len(paths), files_stat=files, read_bytes=len(data))
    finally:
        subprocess.run([*HELIX, "umount", str(mountpoint)], capture_output=True, check=False)
    figures["usable_s"] = figures["clone_s"] + figures["mount_s"] + figures["read_s"]
    figures.update(held(store))
    shutil.rmtree(store, ignore_errors=True)
    mountpoint.rmdir()
    return figures


def lazy_mount(server: SeaweedServer, work: Path, files: int, commits: int, rounds: int) -> Any:
    """A FILES-file history pushed once; each round a lazy and a full clone of it (the
    order turning), each mounted and used at once."""
    source, where = work / "lazy-history", location(server)
    build_helix(source, files, commits).close()
    helix_push(source, where)
    url = f"s3://{where.bucket}/{where.prefix}"
    middle = files // 2
    # files never read before on either side
    reads = (f"d{middle % 100}/f{middle}.txt", f"d{(middle + 1) % 100}/f{middle + 1}.txt")
    rows, raw = [], []
    for n in range(rounds):
        sides = ["lazy", "full"] if n % 2 == 0 else ["full", "lazy"]
        for side in sides:
            f = mounted_clone(url, server.endpoint, work, f"{side}{n}", side == "lazy", reads)
            raw.append({"round": n + 1, "side": side, **f})
            rows.append(
                [f"round {n + 1} {side}", f["clone_s"], f["mount_s"], f["find_s"],
                 f["read_s"] * 1000, f["read2_s"] * 1000, f["stat_s"], f["usable_s"], f["entries"],
                 f"{f['contents']:,} / {f['files']:,}", f["objects"], f["load"]]
            )  # fmt: skip
    print_table(
        f"a clone of {files:,} files x {commits:,} commits, mounted and used at once:"
        " lazy (contents when read) vs full",
        ["round", "clone s", "mount s", "find s", "read ms", "2nd read ms", "stat all s",
         "usable s", "entries", "contents here", "objects here", "load"],
        rows,
    )  # fmt: skip
    return {"files": files, "commits": commits, "rounds": raw}


# ---------------------------------------------------------------- N machines


WATCH_EVERY = 0.05  # seconds between a watcher's listings of the branch it watches
CROSS_WAIT = 120.0  # seconds a new branch, or the last saves, may take to cross


@dataclass
class Machine:
    """A simulated machine: its own store (a clone), its own daemon (`helix mount
    --remote origin`), saving into its own branch (an idle watcher saves nothing)."""

    index: int
    store: Path
    mountpoint: Path
    branch: str
    saved: list[tuple[str, float]] = field(default_factory=list)  # (file, when closed)
    seen: dict[str, float] = field(default_factory=dict)  # watched saves: first listed


def start_machines(url: str, endpoint: str, work: Path, n: int, total: int) -> list[Machine]:
    """`total` machines (n saving, the rest idle watchers on main), each mounted."""
    env = dict(os.environ)
    made = []
    for i in range(total):
        store, mountpoint = work / f"m{n}-{i}", work / f"m{n}-{i}-mnt"
        branch = f"agent{i}" if i < n else "main"
        helix(env, "clone", url, str(store), "--endpoint", endpoint)
        if i < n:
            helix(env, "--store", str(store), "branch", branch)
            helix(env, "--store", str(store), "checkout", branch)
        mountpoint.mkdir()
        made.append(Machine(i, store, mountpoint, branch))
        helix({**env, "HELIX_HOST": f"m{i}"}, "mount", "--remote", "origin",
              "--quiet-window", "0", str(store), str(mountpoint))  # fmt: skip
    return made


def save_files(machine: Machine, until: float, every: float) -> None:
    """Save a small new file into the mount every `every` seconds until `until`."""
    folder = machine.mountpoint / machine.branch
    start, k = time.monotonic(), 0
    while time.monotonic() < until:
        k += 1
        name = f"n{k}.txt"
        (folder / name).write_bytes(b"machine %d save %d\n" % (machine.index, k))
        machine.saved.append((name, time.time()))  # the close is done
        time.sleep(max(0.0, start + k * every - time.monotonic()))


def watch(watcher: Machine, watched: Machine, stop: threading.Event) -> None:
    """List the watched machine's save folder in the watcher's `.helix/branches/`: when
    each file was first there (what an agent on the watcher sees)."""
    folder = watcher.mountpoint / ".helix" / "branches" / watched.branch / watched.branch
    while not stop.is_set():
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            names = []
        now = time.time()
        for name in names:
            watched.seen.setdefault(name, now)
        stop.wait(WATCH_EVERY)


def wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def run_machines(fleet: list[Machine], n: int, seconds: float, every: float) -> dict[str, Any]:
    """Each saving machine's branch is watched by the next machine (an idle one when
    n = 1); saves for `seconds`, then the last ones are given time to cross."""
    pairs = [(fleet[(i + 1) % len(fleet)], fleet[i]) for i in range(n)]
    for watcher, watched in pairs:  # the branches cross first (each was pushed new)
        (watched.mountpoint / watched.branch).mkdir()
        crossed = watcher.mountpoint / ".helix" / "branches" / watched.branch / watched.branch
        if not wait_for(crossed.exists, CROSS_WAIT):
            raise RuntimeError(f"{watched.branch} did not reach machine {watcher.index}")
    stop = threading.Event()
    watchers = [threading.Thread(target=watch, args=(*pair, stop)) for pair in pairs]
    before = load()
    for thread in watchers:
        thread.start()
    until = time.monotonic() + seconds
    savers = [threading.Thread(target=save_files, args=(m, until, every)) for m in fleet[:n]]
    for thread in savers:
        thread.start()
    for thread in savers:
        thread.join()
    during = load()

    def all_seen() -> bool:
        return all(len(m.seen) >= len(m.saved) for m in fleet[:n])

    drained = wait_for(all_seen, CROSS_WAIT)
    stop.set()
    for thread in watchers:
        thread.join()
    return {"load_before": before, "load_end": during, "drained": drained}


def unmount_fleet(fleet: list[Machine]) -> float:
    """Unmount every machine and wait for its daemon to let go of its store (a daemon
    that saved flat out can take longer than `helix umount` waits); seconds it took."""
    start = time.perf_counter()
    for m in fleet:
        subprocess.run([*HELIX, "umount", str(m.mountpoint)], capture_output=True)
    for m in fleet:
        wait_released(m.store, 900.0)
    return time.perf_counter() - start


def branch_commits(store: Path, branch: str) -> list[str]:
    """The commits a machine made on its branch (not the seed's, which main has)."""
    with Repository.open(store) as repo:
        seed = {c.id.hex() for c in repo.log("branches/main")}
        return [c.id.hex() for c in repo.log(f"branches/{branch}") if c.id.hex() not in seed]


def lost_on_remote(where: S3Location, folder: Path, fleet: list[Machine], n: int) -> dict[str, int]:
    """Every machine's commits of its branch, and every file it saved, on the remote
    (a fresh full clone of it, after the daemons are unmounted)."""
    made = {m.branch: branch_commits(m.store, m.branch) for m in fleet[:n]}
    clone(folder, Remote("origin", where))
    commits = saves = 0
    with Repository.open(folder) as repo:
        for m in fleet[:n]:
            have = {c.id.hex() for c in repo.log(f"branches/{m.branch}")}
            commits += sum(1 for c in made[m.branch] if c not in have)
            names = {e.name.decode() for e in repo.ls(m.branch, m.branch)}
            saves += sum(1 for name, _ in m.saved if name not in names)
    return {"commits": sum(len(c) for c in made.values()), "commits_lost": commits,
            "saves_lost": saves}  # fmt: skip


def machines(
    server: SeaweedServer, work: Path, counts: list[int], seconds: float, every: float
) -> Any:
    rows, raw = [], []
    for n in counts:
        where = location(server)
        build_helix(work / f"seed{n}", 200, 2).close()
        helix_push(work / f"seed{n}", where)
        url = f"s3://{where.bucket}/{where.prefix}"
        total = max(n, 2)  # n = 1: an idle second machine watches
        fleet: list[Machine] = []
        try:
            fleet = start_machines(url, server.endpoint, work, n, total)
            figures = run_machines(fleet, n, seconds, every)
        finally:
            unmounted = unmount_fleet(fleet)
        saves = sum(len(m.saved) for m in fleet[:n])
        delays = [m.seen[f] - t for m in fleet[:n] for f, t in m.saved if f in m.seen]
        figures.update(lost_on_remote(where, work / f"check{n}", fleet, n))
        figures["unmount_s"] = unmounted
        figures.update(n=n, saves=saves, seconds=seconds, every=every,
                       seen=len(delays), visible=summary(delays))  # fmt: skip
        raw.append(figures)
        rows.append(
            [f"N = {n}", saves, saves / seconds, figures["commits"],
             summary(delays)["p50"] * 1000, summary(delays)["p95"] * 1000,
             f"{len(delays)} / {saves}", figures["commits_lost"], figures["saves_lost"],
             figures["unmount_s"], f"{figures['load_before']:.1f} / {figures['load_end']:.1f}"]
        )  # fmt: skip
    print_table(
        f"N machines (a store and a daemon each, `mount --remote`), each saving a file into"
        f" its own branch every {every:g} s for {seconds:.0f} s; visible: from the save's"
        " close to the next machine's .helix/branches/ listing it",
        ["machines", "saves", "saves/s", "commits", "visible p50 ms", "p95 ms", "seen",
         "commits lost", "saves lost", "unmount s", "load before / end"],
        rows,
    )  # fmt: skip
    return raw


# ---------------------------------------------------------------- the save path


def save_latencies(mountpoint: Path, count: int) -> list[float]:
    samples = []
    for k in range(count):
        start = time.perf_counter()
        fd = os.open(mountpoint / f"save{k % 20}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.write(fd, b"line %d\n" % k)
        os.fsync(fd)
        os.close(fd)
        samples.append(time.perf_counter() - start)
    return samples


def helix(env: dict[str, str], *args: str) -> None:
    subprocess.run([*HELIX, *args], check=True, capture_output=True, env=env)


def save_path_stores(
    server: SeaweedServer, work: Path, env: dict[str, str], sides: dict[str, dict[str, str]],
    files: int,
) -> dict[str, Path]:  # fmt: skip
    """One store per side, each holding the same FILES files; a --remote side's pushed
    before it is mounted (its first rounds then find nothing to send)."""
    stores = {}
    for side, code in sides.items():
        stores[side] = work / f"save-{side}"
        side_env = {**env, **code}
        helix(side_env, "init", str(stores[side]))
        if files:
            with Repository.open(stores[side]) as repo:
                repo.commit({f"d{i % 100}/f{i}.txt": content(i, 0) for i in range(files)}, "seed")
        if side != "local":
            where = location(server)
            url = f"s3://{where.bucket}/{where.prefix}"
            helix(side_env, "--store", str(stores[side]), "remote", "add", "origin", url,
                  "--endpoint", server.endpoint)  # fmt: skip
            helix(side_env, "--store", str(stores[side]), "push")
    return stores


def daemon_of(store: Path) -> int:
    """The pid of the daemon serving `store` (its command line names the store)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"mount" in words and str(store).encode() in words:
                return int(entry.name)
    raise RuntimeError(f"no daemon serves {store}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads (the syncer's included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


SETTLE = 3.0  # seconds after mounting before the first block: the syncer's first rounds
PUSHED = 4.0  # seconds after a block: the syncer pushes what it saved (MOST_DEFERRED 3 s)


def save_path(
    server: SeaweedServer, work: Path, count: int, rounds: int, files: int, base: str | None
) -> Any:
    """Every mount up for the whole section (the --remote ones pushing in the
    background), then `rounds` rounds of a block of `count` saves on each, the order
    turning each round. The figure is each round's p50 ratio (remote / local); the
    median of the ratios, with their min and max, is the answer to "within 10%".
    `base`: a checkout of other code (e.g. main before a change), mounted as a third
    side `remote@base` with --remote, so old and new are compared in the same rounds."""
    env = {**os.environ, **server.env()}
    sides: dict[str, dict[str, str]] = {"local": {}, "remote": {}}
    if base is not None:
        sides["remote@base"] = {"PYTHONPATH": base}
    stores = save_path_stores(server, work, env, sides, files)
    mounts = {side: work / f"mnt-{side}" for side in sides}
    mounted: list[Path] = []
    rows, raw = [], []
    ratios: dict[str, list[float]] = {side: [] for side in sides if side != "local"}
    try:
        for side, code in sides.items():
            mounts[side].mkdir(exist_ok=True)
            extra = [] if side == "local" else ["--remote", "origin"]
            helix({**env, **code}, "mount", *extra, str(stores[side]), str(mounts[side]))
            mounted.append(mounts[side])
        time.sleep(SETTLE)
        daemons = {side: daemon_of(stores[side]) for side in sides}
        cpu = {side: 0.0 for side in sides}
        names = list(sides)
        for n in range(rounds):
            order = names[n % len(names) :] + names[: n % len(names)]
            figures: dict[str, Any] = {}
            for side in order:
                before, spent = load(), cpu_seconds(daemons[side])
                samples = save_latencies(mounts[side], count)
                time.sleep(PUSHED)  # the pushes these saves cause, counted on this side
                spent = cpu_seconds(daemons[side]) - spent
                cpu[side] += spent
                figures[side] = {**summary([s * 1000 for s in samples]), "load": before,
                                 "daemon_cpu_ms_per_save": spent * 1000 / count}  # fmt: skip
            row: list[Any] = [f"round {n + 1} ({order[0]} first)", figures["local"]["p50"]]
            for side in ratios:
                ratio = figures[side]["p50"] / figures["local"]["p50"]
                ratios[side].append(ratio)
                figures[side]["ratio_p50"] = ratio
                row += [figures[side]["p50"], ratio]
            raw.append({"round": n + 1, "first": order[0], **figures})
            rows.append([*row, figures["local"]["load"]])
    finally:
        for target in mounted:
            subprocess.run([*HELIX, "umount", str(target)], capture_output=True, env=env)
    headers = ["round", "local p50"]
    for side in ratios:
        headers += [f"{side} p50", "ratio"]
    print_table(
        f"save+fsync of a small file, ms, in a store of {files:,} files: a mount with"
        f" --remote vs without ({count} saves per side per round, all mounted throughout)",
        [*headers, "load"],
        rows,
    )
    loads = [r["local"]["load"] for r in raw]
    verdict: dict[str, Any] = {"load_min": min(loads), "load_max": max(loads)}
    per_save = {side: cpu[side] * 1000 / (count * rounds) for side in sides}
    verdict["daemon_cpu_ms_per_save"] = per_save
    print(
        "daemon CPU per save (all threads, the pushes after each block included): "
        + ", ".join(f"{side} {ms:.2f} ms" for side, ms in per_save.items())
    )
    for side, values in ratios.items():
        verdict[side] = {"median": statistics.median(values), "min": min(values),
                         "max": max(values)}  # fmt: skip
        print(
            f"p50 ratio {side}/local over {rounds} rounds: median {verdict[side]['median']:.3f}"
            f" (min {verdict[side]['min']:.3f}, max {verdict[side]['max']:.3f}), load"
            f" {min(loads):.1f}-{max(loads):.1f}"
        )
    return {"files": files, "saves": count, "rounds": raw, **verdict}


def attempt(section: Any) -> Any:
    """A section's figures, or the error that stopped it (printed, and kept in the JSON)."""
    try:
        return section()
    except Exception as exc:  # a failed section must not hide the others' figures
        import traceback

        traceback.print_exc()
        return {"error": f"{type(exc).__name__}: {exc}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only",
        choices=["transfer", "lazy_mount", "machines", "save_path"],
        help="run one section",
    )
    parser.add_argument(
        "--machines", help="machines: the counts N, comma-separated (default 1,2,4,8)"
    )
    parser.add_argument(
        "--save-every", type=float, default=0.5, help="machines: seconds between saves (0.5)"
    )
    parser.add_argument("--rounds", type=int, default=8, help="save-path rounds (default 8)")
    parser.add_argument("--saves", type=int, default=300, help="saves per side per round")
    parser.add_argument(
        "--save-files", type=int, default=10_000, help="files in each save-path store"
    )
    parser.add_argument(
        "--base", help="save path: a checkout of other code, mounted as a third side"
    )
    args = parser.parse_args()
    files, commits = (1_000, 100) if args.quick else (10_000, 1_000)
    counts = [1, 2] if args.quick else [1, 2, 4, 8]
    if args.machines:
        counts = [int(n) for n in args.machines.split(",")]
    seconds = 10.0 if args.quick else 30.0
    print("The machine is shared with other work: the load average is printed beside each round.")
    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    server = SeaweedServer(work / "seaweed")
    os.environ.update(server.env())
    server.start()
    try:
        sections = {
            "transfer": lambda: transfer(server, work, files, commits, 1 if args.quick else 2),
            "lazy_mount": lambda: lazy_mount(server, work, files, commits, 1 if args.quick else 3),
            "machines": lambda: machines(server, work, counts, seconds, args.save_every),
            "save_path": lambda: save_path(
                server, work, args.saves, args.rounds, args.save_files, args.base
            ),
        }
        doc = {
            name: attempt(run)
            for name, run in sections.items()
            if args.only is None or args.only == name
        }
    finally:
        server.stop()
        if any(isinstance(v, dict) and "error" in v for v in locals().get("doc", {}).values()):
            print(f"kept {work} (the server's log is in seaweed/weed.log)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    path = write_results(
        "bench_remote", {"files": files, "commits": commits, **doc}, quick=args.quick
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
