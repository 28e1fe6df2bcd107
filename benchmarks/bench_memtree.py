"""What memory that follows the tree costs a recall (ADR 0063).

    python benchmarks/bench_memtree.py            # 10,000 memories, 2,000 files
    python benchmarks/bench_memtree.py --quick    # 2,000 memories, 500 files

A real store (RocksDB) holds F files; N memories are imported, a fifth of them about a
file (with its blob id), and a tenth of the files are then changed in one commit. Each
query is asked, in turn, three ways on the same database: `recall` with no view (the
baseline: what every recall cost before, no staleness, no branch filter), with the
trunk's view (each memory returned about a file is checked against the tree, the
stale ones marked and weighed down), and with a branch's view (its 200 memories seen
too). `memories --stale` (every file memory checked) is timed as well. Lexical recall
(no model): the model's share is the same with or without a view. Prints a table and
writes JSON to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import print_table, summary, write_results  # noqa: E402

from helixfs.memory import Memory, MemoryImport, Source  # noqa: E402
from helixfs.vcs.repo import Repository  # noqa: E402
from helixfs.vcs.sourceview import BranchView  # noqa: E402

TOPICS = ("cache", "token", "retry", "queue", "schema")
TOPICS += ("login", "upload", "billing", "search", "export")
VERBS = ("handles", "keeps", "checks", "sends", "parses")
VERBS += ("stores", "signs", "retries", "limits", "renders")


def build(root: Path, files: int, memories: int) -> tuple[Repository, Memory, list[str]]:
    repo = Repository.init(root / "store")
    paths = [f"pkg{i % 40}/mod{i}.py" for i in range(files)]
    repo.commit({p: f"def f{i}():\n    return {i}\n".encode() for i, p in enumerate(paths)}, "all")
    mem = Memory.open(root / "store" / "memory.db", None, warn_lexical=False)
    rng = random.Random(7)
    items = []
    for n in range(memories):
        topic, verb = rng.choice(TOPICS), rng.choice(VERBS)
        text = f"the {topic} layer {verb} item {n} before the {rng.choice(TOPICS)} step"
        source = None
        if n % 5 == 0:
            path = rng.choice(paths)
            blob = repo.entry("HEAD", path).oid.hex()  # type: ignore[union-attr]
            source = Source(agent="bench", file=path, blob=blob)
        items.append(MemoryImport(text, type="fact", source=source))
    mem.import_memories(items)
    changed = rng.sample(paths, len(paths) // 10)
    repo.commit({p: b"# changed\n" for p in changed}, "change a tenth")
    repo.create_branch("feat")
    repo.commit({"feat.txt": b"1\n"}, "feat work", branch="feat")
    feat = BranchView(repo, "feat")
    for n in range(200):
        mem.remember(f"on feat the {TOPICS[n % 10]} flag {n} is off", view=feat)
    return repo, mem, [f"{t} {v}" for t in TOPICS for v in VERBS]


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    files, memories = (500, 2_000) if args.quick else (2_000, 10_000)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        repo, mem, queries = build(Path(tmp), files, memories)
        trunk, feat = BranchView(repo, None), BranchView(repo, "feat")
        ways: dict[str, Callable[[str], Any]] = {
            "recall, no view (baseline)": lambda q: mem.recall(q, reinforce=False),
            "recall, trunk view": lambda q: mem.recall(q, reinforce=False, view=trunk),
            "recall, branch view": lambda q: mem.recall(q, reinforce=False, view=feat),
        }
        for q in queries[:10]:  # warm: SQLite's pages, the trees' caches
            for way in ways.values():
                way(q)
        samples: dict[str, list[float]] = {name: [] for name in ways}
        stale_marked = 0
        for q in queries:
            for name, way in ways.items():  # in turns: the same load for each
                samples[name].append(timed(lambda w=way, q=q: w(q)))
            stale_marked += sum(h.stale is not None for h in mem.recall(q, view=trunk))
        stale_ms = [timed(lambda: mem.stale(trunk, limit=1000)) for _ in range(5)]
        found = len(mem.stale(trunk, limit=1000))
        mem.close()
        repo.close()
    load_after = os.getloadavg()
    rows = [[name, *(summary(s)[k] for k in ("n", "p50", "p95"))] for name, s in samples.items()]
    rows.append(
        [
            "memories --stale (all file memories)",
            *(summary(stale_ms)[k] for k in ("n", "p50", "p95")),
        ]
    )
    title = (
        f"recall with a tree view: {memories:,} memories ({memories // 5:,} about files), "
        f"{files:,} files, a tenth changed; load {load_before[0]:.1f} -> {load_after[0]:.1f}"
    )
    print_table(title, ["way", "n", "p50 ms", "p95 ms"], rows)
    print(
        f"  stale memories found: {found:,}; stale hits marked over all queries: {stale_marked:,}"
    )
    doc = {
        "memories": memories,
        "files": files,
        "stale_found": found,
        "results": {name: summary(s) for name, s in samples.items()},
        "stale_listing": summary(stale_ms),
        "load_before": load_before,
        "load_after": load_after,
    }
    print(f"  wrote {write_results('bench_memtree', doc, quick=args.quick)}")


if __name__ == "__main__":
    main()
