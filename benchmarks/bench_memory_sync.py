"""Shared memory through a remote (ADR 0065), on a SeaweedFS S3 server on 127.0.0.1.

    python benchmarks/bench_memory_sync.py            # 1,000 memories, 3 rounds
    python benchmarks/bench_memory_sync.py --quick    # 200 memories, 2 rounds

Each round: store A remembers N distinct facts (lexical memory, no model), then
`SharedMemory.exchange()` sends them as a batch (seconds), store B's exchange applies
it through consolidation (seconds), and an exchange with nothing new (the cost a
mount's syncer pays every second). Baseline, side by side in the same round: the same
N memories carried from A to a third store by a `.dna` strand (strand.export_memories,
seal, unseal, import_strand: in process, no network). Load printed beside each round.
Writes JSON to benchmarks/results/bench_memory_sync[-quick]-TIMESTAMP.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from common import print_table, write_results  # noqa: E402
from seaweed import SeaweedServer  # noqa: E402

from helixfs.memory import Memory, remote_sync, strand  # noqa: E402
from helixfs.store.s3client import S3Location  # noqa: E402

PASSPHRASE = "benchmark passphrase"
WORDS = ["billing", "search", "ingest", "auth", "cache", "queue", "mailer", "gateway"]


def timed(call: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def one_round(server: SeaweedServer, work: Path, n: int, count: int) -> dict[str, Any]:
    where = S3Location(server.bucket, f"bench/{uuid.uuid4().hex[:8]}", server.endpoint)
    folders = [work / f"r{n}-{name}" for name in ("a", "b", "c")]
    for folder in folders:
        folder.mkdir()
    a, b, c = (Memory.open(f / "memory.db", None, warn_lexical=False) for f in folders)
    try:
        for i in range(count):
            a.remember(f"Fact {i}: {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} uses {i}")
        remote_sync.trust(folders[1], remote_sync.own_key(folders[0]))
        load = os.getloadavg()[0]
        with (
            remote_sync.SharedMemory(folders[0], where, a) as side_a,
            remote_sync.SharedMemory(folders[1], where, b) as side_b,
        ):
            send, sent = timed(side_a.exchange)
            apply, applied = timed(side_b.exchange)
            idle, _ = timed(side_b.exchange)
        key = strand.identity(folders[0])

        def carry() -> dict[str, Any]:
            memories, edges = strand.export_memories(a)
            data = strand.seal(memories, edges, PASSPHRASE, key)
            return strand.import_strand(c, strand.unseal(data, PASSPHRASE))

        dna, carried = timed(carry)
        assert applied.applied >= 1 and not applied.refused, applied
        active = len(a.memories(limit=count + 10))
        assert len(b.memories(limit=count + 10)) == active, "B does not know what A knows"
        return {
            "round": n,
            "memories": count,
            "operations_sent": sent.sent,
            "active_on_a": active,
            "send_s": send,
            "apply_s": apply,
            "idle_round_s": idle,
            "strand_s": dna,
            "strand_imported": carried.get("add", 0),
            "load": load,
        }
    finally:
        for memory in (a, b, c):
            memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count, rounds = (200, 2) if args.quick else (1_000, 3)
    print("The machine is shared with other work: the load average is printed beside each round.")
    work = Path(tempfile.mkdtemp(prefix="bench-memsync-"))
    server = SeaweedServer(work / "seaweed")
    os.environ.update(server.env())
    server.start()
    try:
        raw = [one_round(server, work, n + 1, count) for n in range(rounds)]
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print_table(
        f"{count} memories from A to B (batch through S3) vs a .dna strand (in process)",
        ["round", "send s", "apply s", "idle round s", "strand s (baseline)", "load"],
        [
            [r["round"], r["send_s"], r["apply_s"], r["idle_round_s"], r["strand_s"], r["load"]]
            for r in raw
        ],
    )
    path = write_results("bench_memory_sync", {"rounds": raw}, quick=args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
