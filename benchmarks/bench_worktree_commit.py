"""The work tree's save() then commit() of one changed file in a 5,000-file tree, in
process (ADR 0095's addendum): the bytes of the RocksDB batches a save+commit writes
(counted at RocksStore._apply) and its p50. One JSON line; run it with PYTHONPATH set to
the code measured, alternating two checkouts for an A/B.

    python benchmarks/bench_worktree_commit.py project 400   # a root of 100 folders
    python benchmarks/bench_worktree_commit.py wide 400      # 20 folders of 250 files
    python benchmarks/bench_worktree_commit.py ignored 400   # project + an ignored file in the root
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from helixfs.store.rocks import RocksStore
from helixfs.vcs import Node, Repository

FILES = 5000
WARM = 20


def main(shape: str, rounds: int) -> dict[str, float]:
    rng = random.Random(7)
    written = [0]
    apply = RocksStore._apply

    def counting(self: RocksStore, batch: Any, **kw: Any) -> None:
        written[0] += batch.size_in_bytes()
        apply(self, batch, **kw)

    RocksStore._apply = counting  # type: ignore[method-assign]
    times, sizes = [], []
    with tempfile.TemporaryDirectory() as scratch, Repository.init(Path(scratch) / "s") as repo:
        tree = repo.worktree("main")
        folders: dict[str, Node] = {}
        nodes = []
        for i in range(FILES):
            if shape == "wide":
                parts = [f"dir{i % 20:02d}"]
            else:
                parts = [f"pkg{i % 100:02d}", f"sub{(i // 100) % 10}"]
            parent = tree.root
            for depth in range(len(parts)):
                key = "/".join(parts[: depth + 1])
                if key not in folders:
                    folders[key] = tree.mkdir(parent, parts[depth].encode())
                parent = folders[key]
            node = tree.create(parent, f"mod_{i}.py".encode())
            tree.set_content(node, rng.randbytes(1024))
            nodes.append(node)
        if shape == "ignored":  # the root holds an ignored file: commits path-copy the head's
            tree.set_content(tree.create(tree.root, b".gitignore"), b"*.log\n")
            tree.set_content(tree.create(tree.root, b"build.log"), b"ignored")
        tree.commit("all")
        hot = rng.sample(nodes, 100)
        for n in range(rounds + WARM):
            node = rng.choice(hot)
            data = bytearray(tree.read(node, 0, node.size))
            at = rng.randrange(len(data) - 8)
            data[at : at + 8] = rng.randbytes(8)
            tree.set_content(node, bytes(data))  # the close: its blob is queued
            written[0] = 0
            started = time.perf_counter_ns()
            tree.save()
            tree.commit(f"edit {n}")
            took = (time.perf_counter_ns() - started) / 1000
            if n >= WARM:
                times.append(took)
                sizes.append(written[0])
    return {
        "p50_us": statistics.median(times),
        "p25_us": statistics.quantiles(times, n=4)[0],
        "bytes_p50": statistics.median(sizes),
        "bytes_mean": statistics.fmean(sizes),
        "load": os.getloadavg()[0],
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
