"""Hard links (ADR 0043): what a link costs, beside what the same work costs without one.

    python benchmarks/bench_links.py            # 3 rounds, 20,000 files, a 2,000-file copy
    python benchmarks/bench_links.py --quick

Two parts, rounds interleaved, the load average printed beside each round:

- the store (a Worktree over RocksDB): the first change through a linked name after a
  reload, which loads every name of every group once (`_load_links`), beside the same
  change to a file with one name, in a tree of `--files` files in 100 folders;
- the mount: `cp -al` of a `--copy`-file tree inside the mount, beside `cp -a` of it in
  the mount and `cp -al` on the local disk.

Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench_fs import make_tree, mounted, timed
from common import print_table, write_results

from helixfs.vcs import Repository


def build_store(path: Path, files: int) -> None:
    """A tree of `files` files in 100 folders, one of them linked into a second folder."""
    repo = Repository.init(path)
    tree = repo.worktree("main")
    folders = [tree.mkdir(tree.root, b"d%03d" % i) for i in range(100)]
    for i in range(files):
        tree.set_content(tree.create(folders[i % 100], b"f%06d" % i), b"%d" % i)
    linked = tree.lookup(folders[0], b"f000000")
    tree.link(linked, folders[99], b"alias")
    tree.commit("tree")
    repo.close()


def first_change_ms(path: Path, linked: bool) -> float:
    """A reopened store, then one write: through the linked name, or to a plain file."""
    repo = Repository.open(path)
    try:
        tree = repo.worktree("main")
        folder = tree.lookup(tree.root, b"d000")
        node = tree.lookup(folder, b"f000000" if linked else b"f000100")
        start = time.perf_counter()
        tree.set_content(node, b"changed")
        tree.save()
        return (time.perf_counter() - start) * 1000
    finally:
        repo.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--copy", type=int, default=2_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.files, args.copy = 2, 2_000, 300
    base = Path(tempfile.mkdtemp(prefix="bench-links-"))
    try:
        store_rows, loads = bench_store(base, args), []
        mount_rows = bench_mount(base, args, loads)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print_table(f"first change after a reload, {args.files:,} files (ms)", *store_rows)
    print_table(f"a {args.copy:,}-file tree copied (ms)", *mount_rows)
    print(
        f"load average per mount round: {', '.join(loads)} on {os.cpu_count()} CPUs"
        " (a busy machine: both sides slower alike)"
    )
    doc = {
        "files": args.files,
        "copy": args.copy,
        "rounds": args.rounds,
        "store": store_rows[1],
        "mount": mount_rows[1],
        "loads": loads,
    }
    print(write_results("bench_links", doc, quick=args.quick))


def bench_store(base: Path, args: argparse.Namespace) -> tuple[list[str], list[list[object]]]:
    path = base / "store"
    build_store(path, args.files)
    linked, plain = [], []
    for n in range(args.rounds):
        for is_linked in (True, False) if n % 2 == 0 else (False, True):
            (linked if is_linked else plain).append(first_change_ms(path, is_linked))
        print(f"store round {n + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
    rows: list[list[object]] = [
        ["a file with one name", statistics.median(plain), min(plain)],
        ["a linked file (loads every name)", statistics.median(linked), min(linked)],
    ]
    return ["change", "p50", "min"], rows


def bench_mount(
    base: Path, args: argparse.Namespace, loads: list[str]
) -> tuple[list[str], list[list[object]]]:
    source = base / "src"
    make_tree(source, args.copy)
    local = base / "local"
    local.mkdir()
    shutil.copytree(source, local / "src", symlinks=True)
    times: dict[str, list[float]] = {"mount cp -al": [], "mount cp -a": [], "disk cp -al": []}
    with mounted(base, "helix") as mount:
        shutil.copytree(source, mount.path / "src", symlinks=True)
        for n in range(args.rounds):
            order = list(times) if n % 2 == 0 else list(reversed(times))
            for what in order:
                where = local if what.startswith("disk") else mount.path
                flags = "-al" if what.endswith("-al") else "-a"
                times[what].append(timed(f"cp {flags} src copy && rm -rf copy", where) * 1000)
            loads.append(f"{os.getloadavg()[0]:.1f}")
    rows: list[list[object]] = [
        [what, statistics.median(samples), min(samples)] for what, samples in times.items()
    ]
    return ["copy (then rm -rf)", "p50", "min"], rows


if __name__ == "__main__":
    main()
