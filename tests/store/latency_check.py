"""Quick latency check of RocksStore (not a test: `python tests/store/latency_check.py`).

Write: the store half of a one-file commit (an edited ~13 KB source file as a delta on
its previous version, its directory tree and the root tree as deltas, a commit record,
two ref updates). Read: plain and delta-chain gets, cold (fresh process state) and hot.
Prints percentiles in microseconds; p25 is the figure to trust on a shared machine.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from space_check import Simulation, ai_edit, load_project

from helixfs.ids import ObjectId, object_id
from helixfs.store import RefUpdate
from helixfs.store.rocks import RocksStore


def percentiles(samples: list[int]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return round(ordered[int(q * (len(ordered) - 1))] / 1000, 1)

    return {"p25": pick(0.25), "p50": pick(0.5), "p90": pick(0.9)}


def write_latency(where: Path, commits: int) -> dict[str, float]:
    rnd = random.Random(7)
    project = load_project(200, 7)
    store = RocksStore(where / "write", verify_writes=False)
    sim = Simulation(store, project)
    sim.commit(0, sorted(project))
    for number in range(1, commits + 1):
        path = rnd.choice(sorted(project))
        sim.files[path] = ai_edit(sim.files[path], rnd)
        sim.commit(number, [path])
    store.close()
    return percentiles([int(t * 1e9) for t in sim.write_times[commits // 4 :]])


def timed_gets(store: RocksStore, ids: list[ObjectId]) -> list[int]:
    samples = []
    for oid in ids:
        started = time.perf_counter_ns()
        store.get(oid)
        samples.append(time.perf_counter_ns() - started)
    return samples


def read_latency(where: Path) -> dict[str, dict[str, float]]:
    rnd = random.Random(3)
    files = list(load_project(60, 11).values())
    path = where / "read"
    chains: list[list[ObjectId]] = []
    with RocksStore(path) as store:
        for data in files:
            chain = [sim_blob(store, data, None)]
            for _ in range(16):
                data = ai_edit(data, rnd)
                chain.append(sim_blob(store, data, chain[-1]))
            chains.append(chain)
        store.compact()
    results: dict[str, dict[str, float]] = {}
    for label, pick in [("plain", 0), ("delta depth 1", 1), ("delta depth 16", 16)]:
        with RocksStore(path) as store:
            ids = [chain[pick] for chain in chains]
            results[f"get {label}, cold"] = percentiles(timed_gets(store, ids))
            results[f"get {label}, hot"] = percentiles(timed_gets(store, ids))
    return results


def sim_blob(store: RocksStore, data: bytes, base: ObjectId | None) -> ObjectId:
    oid = object_id(data)
    store.write({oid: data}, [RefUpdate("work/x", oid)], delta_bases={oid: base} if base else None)
    return oid


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        report = {"write one-file commit": write_latency(where, 400), **read_latency(where)}
    print(json.dumps(report, indent=2))
    print("median of medians", statistics.median(v["p50"] for v in report.values()))


if __name__ == "__main__":
    main()
