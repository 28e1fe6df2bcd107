"""Web view benchmark: each page's server-side time at 100,000 commits and 100,000
memories, beside the CLI command that shows the same data (the baseline).

    python benchmarks/bench_web.py            # 100,000 commits, 100,000 memories
    python benchmarks/bench_web.py --quick    # 5,000 commits, 5,000 memories

Prints a table and writes JSON to benchmarks/results/bench_web-*.json.

What is measured, and why this way:
- A page: one request through the whole ASGI application (routing, the token gate,
  the handler, HTML) with starlette's TestClient, in this process; the figure is the
  page's `Server-Timing` header (app.py): from the request entering the app to its
  response starting, the thread pool hand-over included, the test client's own
  transport not. Target: p95 <= 100 ms.
- The baseline: the `helix` command showing the same data, run in-process on the same
  open Repository and Memory (`run_in_process`, as a mount's daemon runs a forwarded
  command), output into a buffer. Rounds are interleaved (page, then its command, for
  every page, then the next round) and the machine's load average is printed per round:
  the machine is shared, and a busy neighbour shows in every column alike.
- The store: 4 branches committed round-robin (one file each, as agents' saves), a merge
  into main every 5,000 commits, a snapshot every 20,000; commits carry the process
  and latency metadata a mount writes. Memories: bench_memory's synthetic bulk, loaded
  with `import_memories` (real vectors for the first 2,000, recycled for the rest).
- Each page is asked once before the rounds (the first `/memory` search loads the model,
  the first history walk fills the commit cache); the rounds measure a warm server, as
  a person clicking around meets it. The first-visit figures are printed as well.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import print_table, summary, write_results  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from helixfs.cli.main import run_in_process  # noqa: E402
from helixfs.memory import Memory  # noqa: E402
from helixfs.memory.embed import load_embedder  # noqa: E402
from helixfs.vcs import Repository  # noqa: E402
from helixfs.web import history  # noqa: E402
from helixfs.web.app import COOKIE, build_app  # noqa: E402
from helixfs.web.site import Site  # noqa: E402
from helixfs.web.sizes import SizeSamples  # noqa: E402

TARGET_MS = 100.0
BRANCHES = ("main", "agent-a", "agent-b", "agent-c")
QUERIES = (
    "how do we refresh tokens", "database migrations", "which port does the api use",
    "test runner flags", "deploy steps for production", "cache expiry", "logging rules",
    "code review size", "user id format", "frontend build", "ci pipeline", "secrets",
)  # fmt: skip


def build_history(repo: Repository, commits: int) -> None:
    for name in BRANCHES[1:]:
        repo.create_branch(name, "main")
    started = time.perf_counter()
    for i in range(commits):
        branch = BRANCHES[i % len(BRANCHES)]
        content = f"# save {i} by {branch}\nvalue = {i}\n".encode()
        meta = {"process": f"agent-{branch}", "pid": 1000 + i % 4, "latency_us": 200 + i % 97}
        repo.commit({f"{branch}/file{i % 40}.py": content}, f"{branch}: save {i}", meta, branch)
        if i and i % 5000 == 0:
            repo.merge(BRANCHES[1 + (i // 5000) % 3], into="main", message=f"merge at {i}")
        if i and i % 20000 == 0:
            repo.create_snapshot(f"at-{i}", "main")
        if i and i % 10000 == 0:
            print(f"  {i:,} commits, {time.perf_counter() - started:.0f} s", file=sys.stderr)


def build_memories(memory: Memory, count: int) -> None:
    sys.path.insert(0, str(HERE / "eval"))
    from bench_memory import load_bulk

    embedder = load_embedder()
    assert embedder is not None, "the embedding model is not installed (see README)"
    load_bulk(memory, embedder, count, embed_limit=min(count, 2000))  # type: ignore[arg-type]


def deep_cursor(repo: Repository, pages: int) -> str | None:
    after = None
    for _ in range(pages):
        found = history.walk(repo, after, 100)
        if found.after is None:
            break
        after = found.after
    return after


def plan(repo: Repository, memory: Memory, deep: str | None) -> list[tuple[str, str, list[str]]]:
    """(page, URL, the CLI command showing the same data)."""
    head = repo.resolve("main").hex()
    file_path = "main/file0.py"
    back = sum(1 for _ in repo.log("main")) // 2  # a baseline as deep in main's own line
    some = memory.memories(limit=1)[0].id
    rows = [
        ("history, newest", "/", ["log", "-n", "100", "--graph"]),
        ("history, page 500", f"/?after={deep}", ["log", "-n", "100", f"main~{back}"]),
        ("commit + diff", f"/commit/{head}", ["diff", "main~1", "main"]),
        ("compare branches", "/compare?a=agent-a&b=main", ["diff", "agent-a", "main"]),
        ("browse tree", "/tree?rev=main&path=main", ["ls", "main", "main"]),
        ("browse file", f"/tree?rev=main&path={file_path}", ["cat", "main", file_path]),
        ("file history", f"/log?rev=main&path={file_path}", ["log", "-n", "50", "main", file_path]),
        ("memory list", "/memory", ["memories", "--limit", "100"]),
        ("memory filter", "/memory?type=decision&status=any", ["memories", "--type", "decision"]),
        ("memory search", "/memory?q={q}", ["recall", "{q}"]),
        ("memory page", f"/memory/{some}", ["history", some]),
        ("stats", "/stats", ["stats"]),
        ("live poll", "/api/version", ["branch"]),
    ]
    return rows


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


def run_cli(repo: Repository, memory: Memory, argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_in_process(argv, repo, out, err, lambda: memory)
    if code != 0:
        raise RuntimeError(f"helix {argv}: {err.getvalue()}")


def measure(
    client: TestClient, repo: Repository, memory: Memory, rows: list[Any], rounds: int
) -> dict[str, Any]:
    web: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    cli: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    first: dict[str, float] = {}
    loads = []
    for round_no in range(-1, rounds):
        query = QUERIES[round_no % len(QUERIES)] + f" {round_no}"
        for name, address, argv in rows:
            target = address.replace("{q}", query.replace(" ", "+"))
            ms = _ok(client.get(target), target)
            argv = [a.replace("{q}", query) for a in argv]
            base = timed(lambda a=argv: run_cli(repo, memory, a))
            if round_no < 0:
                first[name] = ms
            else:
                web[name].append(ms)
                cli[name].append(base)
        loads.append(os.getloadavg()[0])
        print(f"  round {round_no + 1}/{rounds}: load {loads[-1]:.2f}", file=sys.stderr)
    return {"web": web, "cli": cli, "first": first, "load": loads}


def _ok(response: Any, target: str) -> float:
    """The page's server-side time, from its Server-Timing header."""
    if response.status_code != 200:
        raise RuntimeError(f"{target}: {response.status_code} {response.text[:300]}")
    return float(response.headers["server-timing"].split("dur=")[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--commits", type=int)
    parser.add_argument("--memories", type=int)
    parser.add_argument("--rounds", type=int)
    args = parser.parse_args()
    commits = args.commits or (5000 if args.quick else 100_000)
    memories = args.memories or (5000 if args.quick else 100_000)
    rounds = args.rounds or (5 if args.quick else 20)
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        store = Path(tmp) / "store"
        repo = Repository.init(store)
        memory = Memory.open(store / "memory.db", load_embedder())
        try:
            t = time.perf_counter()
            build_history(repo, commits)
            build_memories(memory, memories)
            print(f"  built in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            memory.warm()
            site = Site(repo, lambda: memory, store)
            site.sizes = SizeSamples(repo, None)
            site.sizes.take()
            client = TestClient(build_app(site), cookies={COOKIE: site.token})
            rows = plan(repo, memory, deep_cursor(repo, 500))
            found = measure(client, repo, memory, rows, rounds)
        finally:
            memory.close()
            repo.close()
    report(found, rows, commits, memories, rounds)


def report(
    found: dict[str, Any], rows: list[Any], commits: int, memories: int, rounds: int
) -> None:
    table = []
    doc_rows = []
    for name, address, argv in rows:
        web, cli = summary(found["web"][name]), summary(found["cli"][name])
        ok = "yes" if web["p95"] <= TARGET_MS else "NO"
        table.append(
            [name, found["first"][name], web["p50"], web["p95"], cli["p50"], cli["p95"], ok]
        )
        doc_rows.append(
            {
                "page": name,
                "url": address,
                "cli": argv,
                "first_ms": found["first"][name],
                "web_ms": web,
                "cli_ms": cli,
            }
        )  # noqa: E501
    title = (
        f"web pages at {commits:,} commits and {memories:,} memories, ms, {rounds} rounds"
        f" (load {min(found['load']):.2f}..{max(found['load']):.2f})"
    )
    headers = ["page", "first", "web p50", "web p95", "CLI p50", "CLI p95", f"p95<={TARGET_MS:.0f}"]
    print_table(title, headers, table)
    doc = {
        "commits": commits,
        "memories": memories,
        "rounds": rounds,
        "load": found["load"],
        "pages": doc_rows,
    }
    path = write_results("bench_web", doc, quick=commits < 100_000)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
