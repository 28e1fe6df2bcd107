"""Load the retrieval evaluation set and score the memory engine on it.

Shared by benchmarks/bench_memory.py (numbers for humans) and tests/memory/test_eval.py
(invariants that must hold). The format of the files is described in README.md here.

Scoring is by what an agent would get back: a memory hit counts when its id is the id
the engine returned for the expected memory's write; a workspace hit counts when it is
the right file and its line range covers the expected anchor line.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helixfs.memory import Hit, Memory, Source

EVAL_DIR = Path(__file__).resolve().parent
MODES = ("hybrid", "lexical", "vector")
QUERY_KINDS = ("paraphrase", "identifier", "mixed")
K = 10
START_TIME = 1_700_000_000.0  # 2023-11-14: any fixed past date keeps runs repeatable
WRITE_SPACING = 12 * 3600.0  # one eval memory every half day: ~4 months of history
COMMIT_ID = "eval-workspace"


@dataclass(frozen=True)
class FileTarget:
    path: str
    anchor: str
    line: int  # 1-based line of the anchor in the file


@dataclass(frozen=True)
class Query:
    id: str
    kind: str
    text: str
    relevant: tuple[str, ...]  # memory keys
    files: tuple[FileTarget, ...] = ()

    @property
    def targets(self) -> int:
        return len(self.relevant) + len(self.files)


@dataclass(frozen=True)
class Timeline:
    id: str
    query: str
    versions: tuple[str, ...]  # memory keys, oldest first
    current: str
    values: tuple[str, ...]  # per version, the text that states its value


@dataclass(frozen=True)
class EvalSet:
    memories: tuple[dict[str, Any], ...]  # in write order
    queries: tuple[Query, ...]
    timelines: tuple[Timeline, ...]
    workspace: dict[str, bytes]


class FakeClock:
    """The engine's clock, moved by hand: writes get a realistic spread of ages so
    recency weighting acts as it would on a real, months-old memory."""

    def __init__(self, start: float = START_TIME) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path.name}:{number}: {exc}") from exc
    return rows


def _anchor_line(workspace: dict[str, bytes], path: str, anchor: str) -> int:
    if path not in workspace:
        raise ValueError(f"query targets {path}, which is not in workspace/")
    lines = workspace[path].decode("utf-8").splitlines()
    found = [number for number, text in enumerate(lines, 1) if anchor in text]
    if len(found) != 1:
        raise ValueError(f"anchor {anchor!r} occurs {len(found)} times in {path}, need 1")
    return found[0]


def load_workspace(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def load(eval_dir: Path = EVAL_DIR) -> EvalSet:
    """Read and cross-check the set: every key referenced exists, every anchor is unique."""
    memories = sorted(_read_jsonl(eval_dir / "memories.jsonl"), key=lambda m: m["seq"])
    keys = [m["key"] for m in memories]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate memory keys in memories.jsonl")
    known = set(keys)
    workspace = load_workspace(eval_dir / "workspace")
    queries = []
    for row in _read_jsonl(eval_dir / "queries.jsonl"):
        missing = set(row["relevant"]) - known
        if missing or row["kind"] not in QUERY_KINDS:
            raise ValueError(f"query {row['id']}: unknown keys {missing} or kind {row['kind']}")
        files = tuple(
            FileTarget(f["path"], f["anchor"], _anchor_line(workspace, f["path"], f["anchor"]))
            for f in row.get("files", [])
        )
        queries.append(Query(row["id"], row["kind"], row["query"], tuple(row["relevant"]), files))
    timelines = []
    for row in _read_jsonl(eval_dir / "updates.jsonl"):
        if (
            set(row["versions"]) - known
            or row["current"] != row["versions"][-1]
            or len(row["values"]) != len(row["versions"])
        ):
            raise ValueError(f"timeline {row['id']}: bad versions, current or values")
        timelines.append(
            Timeline(
                row["id"],
                row["query"],
                tuple(row["versions"]),
                row["current"],
                tuple(row["values"]),
            )
        )
    return EvalSet(tuple(memories), tuple(queries), tuple(timelines), workspace)


@dataclass
class Loaded:
    """What building the eval database produced: key -> id of the memory that holds it."""

    ids: dict[str, str]
    actions: Counter[str]
    chunks: int


def build(memory: Memory, evalset: EvalSet, clock: FakeClock) -> Loaded:
    """Write every eval memory in order (explicit remember), then index the workspace."""
    ids: dict[str, str] = {}
    actions: Counter[str] = Counter()
    for row in evalset.memories:
        clock.now = START_TIME + row["seq"] * WRITE_SPACING
        result = memory.remember(
            row["content"],
            type=row["type"],
            tags=row["tags"],
            scope=row["scope"],
            source=Source(agent="eval", when=clock.now),
        )
        actions[result.action] += 1
        if result.id is not None:
            ids[row["key"]] = result.id
    clock.now += WRITE_SPACING
    report = memory.index_workspace(evalset.workspace, COMMIT_ID)
    clock.now += 86400.0  # queries are asked a day after the last write
    return Loaded(ids, actions, report.chunks_added)


Retriever = Callable[[str, int], list[Hit]]


def retrievers(memory: Memory) -> dict[str, Retriever]:
    """One read-only search function (no reinforcement) per retrieval mode, all on the
    same database, through the engine's own `mode=` switch."""

    def with_mode(mode: str) -> Retriever:
        def run(query: str, k: int) -> list[Hit]:
            return memory.search(query, k=k, reinforce=False, mode=mode)  # type: ignore[arg-type]

        return run

    return {mode: with_mode(mode) for mode in MODES}


def _hit_matches(hit: Hit, ids: set[str], files: Sequence[FileTarget]) -> int | None:
    """Index of the target this hit satisfies: ids first (as one), then files."""
    if hit.kind == "memory" and hit.id in ids:
        return -1
    for index, target in enumerate(files):
        if (
            hit.kind == "chunk"
            and hit.path == target.path
            and hit.start_line is not None
            and hit.end_line is not None
            and hit.start_line <= target.line <= hit.end_line
        ):
            return index
    return None


@dataclass
class QueryScore:
    recall: float
    reciprocal_rank: float


def score_query(query: Query, loaded: Loaded, hits: Sequence[Hit], k: int = K) -> QueryScore:
    """recall@k over the query's targets; reciprocal rank of the first target found."""
    wanted_ids = {loaded.ids[key] for key in query.relevant if key in loaded.ids}
    found_ids: set[str] = set()
    found_files: set[int] = set()
    first_rank = 0
    for rank, hit in enumerate(hits[:k], 1):
        match = _hit_matches(hit, wanted_ids, query.files)
        if match is None:
            continue
        first_rank = first_rank or rank
        if match == -1:
            found_ids.add(hit.id)
        else:
            found_files.add(match)
    # Two keys folded into one memory count once each: credit every key whose id came back.
    found_keys = sum(1 for key in query.relevant if loaded.ids.get(key) in found_ids)
    recall = (found_keys + len(found_files)) / query.targets
    return QueryScore(recall, 1.0 / first_rank if first_rank else 0.0)


@dataclass
class ModeReport:
    recall_at_k: float
    mrr: float
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    per_query: dict[str, QueryScore] = field(default_factory=dict)


def evaluate(
    queries: Iterable[Query], loaded: Loaded, retrieve: Retriever, k: int = K
) -> ModeReport:
    per_query: dict[str, QueryScore] = {}
    kinds: dict[str, list[QueryScore]] = defaultdict(list)
    for query in queries:
        score = score_query(query, loaded, retrieve(query.text, k), k)
        per_query[query.id] = score
        kinds[query.kind].append(score)
    scores = list(per_query.values())
    return ModeReport(
        recall_at_k=statistics.fmean(s.recall for s in scores),
        mrr=statistics.fmean(s.reciprocal_rank for s in scores),
        by_kind={
            kind: {
                "recall_at_k": statistics.fmean(s.recall for s in group),
                "mrr": statistics.fmean(s.reciprocal_rank for s in group),
                "queries": len(group),
            }
            for kind, group in sorted(kinds.items())
        },
        per_query=per_query,
    )


@dataclass
class UpdateReport:
    rate: float
    failures: list[dict[str, Any]]


def current_ranks_first(timeline: Timeline, hits: Sequence[Hit]) -> bool:
    """True when the first memory hit that states any value of the fact states the
    current one. Judged by value, not by id: consolidation may fold versions into one
    memory or retire them in favour of another memory saying the same thing, and what
    matters to the agent is which value it reads first. A newer version often names the
    old value too ("moved from X to Y"), so the current value is checked first."""
    current = timeline.values[-1].lower()
    stale = [value.lower() for value in timeline.values[:-1]]
    for hit in hits:
        if hit.kind != "memory":
            continue
        text = hit.content.lower()
        if current in text:
            return True
        if any(value in text for value in stale):
            return False
    return False


def evaluate_updates(
    evalset: EvalSet, loaded: Loaded, recall: Callable[[str, int], list[Hit]], k: int = K
) -> UpdateReport:
    failures = []
    passed = 0
    for timeline in evalset.timelines:
        hits = recall(timeline.query, k)
        if current_ranks_first(timeline, hits):
            passed += 1
        else:
            failures.append(_failure(timeline, loaded, hits))
    return UpdateReport(passed / len(evalset.timelines), failures)


def _failure(timeline: Timeline, loaded: Loaded, hits: Sequence[Hit]) -> dict[str, Any]:
    """Enough to see why: where each version ranked (None: not in the top k)."""
    ranks = {hit.id: rank for rank, hit in enumerate(hits, 1) if hit.kind == "memory"}
    return {
        "timeline": timeline.id,
        "query": timeline.query,
        "version_ranks": {key: ranks.get(loaded.ids.get(key, "")) for key in timeline.versions},
        "top": [h.content for h in hits[:3]],
    }
