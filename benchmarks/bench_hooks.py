"""Claude Code hook latency, end to end (process start included), with and without a
mount, beside a bare `helix recall` process.

    python benchmarks/bench_hooks.py            # 10,000 memories, a 5,000-file workspace
    python benchmarks/bench_hooks.py --quick    # 1,000 memories, 500 files
    python benchmarks/bench_hooks.py --quick --against /tmp/old   # beside another tree

Prints a table and writes JSON to benchmarks/results/bench_hooks[-quick]-TIMESTAMP.json.

What is measured: each hook event run as Claude Code runs it (the command `helix hooks
install` writes, started by /bin/sh, the event's JSON on stdin), its wall time from
spawn to exit; a fresh session id per call, so no answer is cut short by the session's
dedup. Sides, interleaved round by round (the machine's load printed with each round):
- mounted: the store is mounted, the launcher hands the event to the daemon: the
  compiled launcher (cli/hook_launch.c, ADR 0080) when a C compiler built it, and the
  Python launcher beside it ("mounted python"), call by call, turns alternating;
- no daemon: the same store unmounted, the launcher runs the command itself;
- baseline: `helix recall QUERY` as a process (the console script), in both states;
  and the floor: the interpreter alone, started the way a hook is (`sh -c 'python -P
  -S -c pass'`).
- against (`--against TREE`, a checkout of another commit, e.g. `git worktree add
  --detach /tmp/old main`): the no-daemon side again with that tree's launcher and
  package, on the same store and inputs, in the same rounds, the two trees' turns
  alternating round by round (this tree first, then that one first...); and the
  mounted side again, the store mounted by that tree's daemon ("mounted against",
  through the same compiled launcher: its source is the same when the binary's name
  is), each round's two mounts in turns too.
Memory is lexical on every side (HELIX_MEMORY_LEXICAL=1): no query is embedded. With
`--embedded` the memories are stored with the model's vectors (as a store with the
model installed has them: ~1 min to embed 10,000 here), which the ranking's MMR reads.
Bytecode is written (PYTHONDONTWRITEBYTECODE unset for the children), as in an
installed package.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_fs import HELIX, _wait_ready, helix, unmount  # noqa: E402
from common import print_table, summary, write_results  # noqa: E402

from helixfs.agents import hook_binary  # noqa: E402
from helixfs.agents.claude_hooks import hook_command, package_root  # noqa: E402
from helixfs.memory import Memory, MemoryImport, Source  # noqa: E402

WORDS = ["token", "cache", "retry", "session", "lock", "parser", "schema", "index", "branch"]


def workspace(root: Path, files: int, seed: int = 7) -> list[str]:
    """`files` Python files in 50 folders, each defining a few functions and a class."""
    rng = random.Random(seed)
    names = []
    for n in range(files):
        rel = f"pkg{n % 50}/mod_{n}.py"
        words = rng.sample(WORDS, 3)
        body = [f"class {words[0].title()}{n}:\n    pass\n"]
        body += [f"def {w}_{n}(x):\n    return x  # {w}\n" for w in words]
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(body) * 3)
        names.append(rel)
    return names


def memories(
    store: Path, count: int, files: list[str], seed: int = 7, embedded: bool = False
) -> None:
    rng = random.Random(seed)
    items = []
    for n in range(count):
        rel = rng.choice(files)
        number = rel.rsplit("_", 1)[1].removesuffix(".py")
        word = rng.choice(WORDS)
        source = Source(agent="bench", file=rel if n % 10 == 0 else None)
        text = f"{word}_{number} must hold the {rng.choice(WORDS)} invariant (note {n})"
        items.append(MemoryImport(text, "gotcha" if n % 3 else "fact", (word,), "global", source))
    embedder = None
    if embedded:
        from helixfs.memory.embed import load_embedder

        embedder = load_embedder()
    with Memory.open(store / "memory.db", embedder, warn_lexical=False) as memory:
        memory.import_memories(items)


def events(root: Path, rel: str) -> dict[str, dict[str, Any]]:
    path = str(root / rel)
    number = rel.rsplit("_", 1)[1].removesuffix(".py")
    bash = {"command": "pytest -q tests/", "description": "tests"}
    return {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": f"why does token_{number} break the session lock?"},
        "PreToolUse Read": {
            "tool_name": "Read",
            "tool_input": {"file_path": path},
            "tool_use_id": "t",
        },
        "PreToolUse Edit": {
            "tool_name": "Edit",
            "tool_input": {
                "file_path": path,
                "old_string": f"def token_{number}(x):",
                "new_string": "def renamed(x):",
            },
            "tool_use_id": "t",
        },
        "PostToolUse Bash": {
            "tool_name": "Bash",
            "tool_input": bash,
            "tool_use_id": "t",
            "tool_response": {
                "stdout": f"E  AssertionError in cache_{number}\n1 failed",
                "stderr": "",
                "interrupted": False,
            },
        },
        "PreCompact": {"trigger": "auto", "custom_instructions": ""},
        "Stop": {"stop_hook_active": False},
        "SubagentStart": {"agent_id": "a1", "agent_type": "Explore"},
    }


def child_env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "HELIX_STORE")
    }
    env["HELIX_MEMORY_LEXICAL"] = "1"
    return env


def timed(run: Callable[[], subprocess.CompletedProcess[str]]) -> tuple[float, float]:
    """Wall and CPU time (user + system of the children: less bent by load), ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = run()
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return elapsed, cpu


def hook_call(
    store: Path,
    cwd: Path,
    name: str,
    fields: dict[str, Any],
    n: int,
    tree: Path | None = None,
    binary: Path | None = None,
) -> Callable[[], Any]:
    """The hook as installed (through the compiled launcher `binary` if given); with
    `tree`, as that source tree's `hooks install` writes it (its Python launcher, its
    package on PYTHONPATH)."""
    event = name.split()[0]
    command = hook_command(store, event, binary)
    if tree is not None:
        command = command.replace(str(package_root()), str(tree.resolve()))
    data = {
        "session_id": f"bench-{name}-{n}-{time.time_ns()}",
        "transcript_path": "/tmp/t",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    text = json.dumps(data)
    env = child_env()
    return lambda: subprocess.run(
        ["/bin/sh", "-c", command],
        input=text,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def recall_call(store: Path, cwd: Path) -> Callable[[], Any]:
    helix = shutil.which("helix") or HELIX[0]
    argv = [helix] if shutil.which("helix") else HELIX
    env = child_env()
    return lambda: subprocess.run(
        [*argv, "--store", str(store), "recall", "--", "token session lock"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def floor_call() -> Callable[[], Any]:
    """The interpreter alone, started as a hook is: what no hook can go below."""
    argv = ["/bin/sh", "-c", f"{sys.executable} -P -S -c pass"]
    return lambda: subprocess.run(argv, capture_output=True, text=True, check=False)


def round_of(
    side: str,
    store: Path,
    root: Path,
    files: list[str],
    per: int,
    samples: dict[str, dict[str, list[float]]],
    rng: random.Random,
    tree: Path | None = None,
    binary: Path | None = None,
    turn: int = 0,
) -> None:
    """One round of `side`; with `binary`, each event through it and through the Python
    launcher ("SIDE python"), call by call, which goes first alternating (from call to
    call, and from round `turn` to round: the first hook after a mount opens the
    daemon's memory, and must not fall to one side every round)."""

    def add(name: str, times: tuple[float, float], at: str = side) -> None:
        samples[at].setdefault(name, []).append(times[0])
        samples["cpu " + at].setdefault(name, []).append(times[1])

    for n in range(per):
        rel = rng.choice(files)
        for k, (name, fields) in enumerate(events(root, rel).items()):
            turns = [(side, binary)] + ([(side + " python", None)] if binary else [])
            for at, chosen in turns if (n + k + turn) % 2 == 0 else turns[::-1]:
                add(name, timed(hook_call(store, root, name, fields, n, tree, chosen)), at)
        if tree is None or side == "mounted against":  # a mounted side's daemon gets both
            add("helix recall (baseline)", timed(recall_call(store, root)))
        add("python -P -S -c pass (floor)", timed(floor_call()))


def no_daemon_rounds(
    r: int,
    store: Path,
    source: Path,
    files: list[str],
    per: int,
    samples: dict[str, dict[str, list[float]]],
    loads: list[dict[str, Any]],
    against: Path | None,
) -> None:
    """This tree's no-daemon round, and the other tree's beside it (turns alternate);
    each side draws the same files (its own generator, seeded by the round)."""
    sides: list[tuple[str, Path | None]] = [("no daemon", None)]
    if against is not None:
        sides.append(("against", against))
        if r % 2:
            sides.reverse()
    for side, tree in sides:
        loads.append({"round": r, "side": side, "load": os.getloadavg()[0]})
        round_of(side, store, source, files, per, samples, random.Random(r), tree)


def mounted_rounds(
    r: int,
    store: Path,
    target: Path,
    files: list[str],
    per: int,
    samples: dict[str, dict[str, list[float]]],
    loads: list[dict[str, Any]],
    binary: Path | None,
    against: Path | None,
) -> None:
    """This tree's daemon serving a round, and the other tree's beside it (turns
    alternate); each side draws the same files (its own generator, seeded by round)."""
    sides: list[tuple[str, Path | None]] = [("mounted", None)]
    if against is not None:
        sides.append(("mounted against", against))
        if r % 2:
            sides.reverse()
    for side, tree in sides:
        with mounted_at(store, target, tree):
            loads.append({"round": r, "side": side, "load": os.getloadavg()[0]})
            rng = random.Random(1000 + r)
            round_of(side, store, target, files, per, samples, rng, tree, binary, turn=r)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument(
        "--against", type=Path, help="another source tree: its no-daemon hooks beside these"
    )
    parser.add_argument(
        "--embedded", action="store_true", help="memories stored with the model's vectors"
    )
    args = parser.parse_args(argv)
    if args.against is not None and not (args.against / "helixfs" / "cli").is_dir():
        parser.error(f"--against {args.against}: not a HelixFS source tree")
    count, files_n, per = (1_000, 500, 3) if args.quick else (10_000, 5_000, 8)
    sides: tuple[str, ...] = ("mounted", "no daemon", "cpu mounted", "cpu no daemon")
    sides = (*sides, "against", "cpu against")
    sides = (*sides, "mounted python", "cpu mounted python")
    sides = (*sides, "mounted against", "cpu mounted against")
    sides = (*sides, "mounted against python", "cpu mounted against python")
    binary = hook_binary.build()  # what `helix hooks install` builds; None: no compiler
    print(f"mounted hooks run {binary or 'the Python launcher (no compiled launcher)'}")
    samples: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    loads: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR", "/var/tmp")) as tmp:
        base = Path(tmp)
        source, store, target = base / "src", base / "store", base / "mnt"
        files = workspace(source, files_n)
        helix("init", store)
        helix("--store", store, "import", source, "-m", "workspace")
        memories(store, count, files, embedded=args.embedded)
        target.mkdir()
        for r in range(args.rounds):  # the same store, mounted then not, round by round
            mounted_rounds(r, store, target, files, per, samples, loads, binary, args.against)
            no_daemon_rounds(r, store, source, files, per, samples, loads, args.against)
    table(samples, loads)
    if binary is not None:
        launchers_table(samples)
    if args.against is not None:
        against_table(samples, args.against)
        mounted_against_table(samples, args.against)
    doc = {
        "compiled_launcher": str(binary) if binary else None,
        "against": str(args.against) if args.against is not None else None,
        "memories": count,
        "embedded": args.embedded,
        "files": files_n,
        "rounds": args.rounds,
        "per_round": per,
        "loads": loads,
        "results": {side: {k: summary(v) for k, v in s.items()} for side, s in samples.items()},
    }
    print(f"\nwrote {write_results('bench_hooks', doc, quick=args.quick)}")
    return 0


@contextmanager
def mounted_at(store: Path, target: Path, tree: Path | None = None) -> Iterator[None]:
    """The store mounted by this tree's daemon, or by `tree`'s."""
    env = child_env()
    if tree is not None:
        env["PYTHONPATH"] = str(tree.resolve())
    proc = subprocess.Popen(
        [*HELIX, "mount", "--foreground", "--quiet-window", "0", str(store), str(target)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tree,
    )
    try:
        _wait_ready(proc)
        yield
    finally:
        unmount(proc, target)


def table(samples: dict[str, dict[str, list[float]]], loads: list[dict[str, Any]]) -> None:
    names = list(samples["mounted"])
    rows = []
    for name in names:
        m, d = summary(samples["mounted"][name]), summary(samples["no daemon"][name])
        cm, cd = summary(samples["cpu mounted"][name]), summary(samples["cpu no daemon"][name])
        rows.append((name, m["p50"], m["p95"], cm["p50"], d["p50"], d["p95"], cd["p50"]))
    print_table(
        "hook latency, ms (process start included); cpu: user+sys of the hook's processes",
        ("event", "mnt p50", "mnt p95", "mnt cpu p50", "none p50", "none p95", "none cpu p50"),
        rows,
    )
    print(
        "load average (1 min) at each round's start: "
        + ", ".join(f"{x['side']} {x['round']}: {x['load']:.2f}" for x in loads)
    )


def launchers_table(samples: dict[str, dict[str, list[float]]]) -> None:
    rows = []
    for name in samples["mounted python"]:
        c, p = summary(samples["mounted"][name]), summary(samples["mounted python"][name])
        cc, cp = summary(samples["cpu mounted"][name]), summary(samples["cpu mounted python"][name])
        rows.append((name, p["p50"], p["p95"], cp["p50"], c["p50"], c["p95"], cc["p50"]))
    print_table(
        "mounted, ms: the Python launcher beside the compiled one, call by call",
        ("event", "python p50", "p95", "cpu p50", "compiled p50", "p95", "cpu p50"),
        rows,
    )


def against_table(samples: dict[str, dict[str, list[float]]], against: Path) -> None:
    rows = []
    for name in samples["against"]:
        d, a = summary(samples["no daemon"][name]), summary(samples["against"][name])
        cd, ca = summary(samples["cpu no daemon"][name]), summary(samples["cpu against"][name])
        rows.append((name, a["p50"], a["p95"], ca["p50"], d["p50"], d["p95"], cd["p50"]))
    print_table(
        f"no daemon, ms: {against} (against) beside this tree, in the same rounds",
        ("event", "against p50", "p95", "cpu p50", "this p50", "p95", "cpu p50"),
        rows,
    )


def mounted_against_table(samples: dict[str, dict[str, list[float]]], against: Path) -> None:
    rows = []
    for name in samples["mounted against"]:
        m, a = summary(samples["mounted"][name]), summary(samples["mounted against"][name])
        cm = summary(samples["cpu mounted"][name])
        ca = summary(samples["cpu mounted against"][name])
        rows.append((name, a["p50"], a["p95"], ca["p50"], m["p50"], m["p95"], cm["p50"]))
    print_table(
        f"mounted, ms: {against}'s daemon (against) beside this tree's, in the same rounds",
        ("event", "against p50", "p95", "cpu p50", "this p50", "p95", "cpu p50"),
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
