"""Score the memory engine on the long conversations of conversations.py.

One store per conversation. Each turn is written as one memory, "Speaker: text", at its
session's time (the engine's clock and `Source.when`), through `remember` (every turn
kept) or `ingest` (the gated path: small talk may be dropped). Questions are asked a day
after the last session through `recall(k=10, reinforce=False)`, in each mode of the
engine on the same database: hybrid, lexical (BM25 alone), vector (the model alone).

Per question kind: R@5 and R@10 (share of the evidence turns in the top 5 / 10), any@10
(at least one evidence turn in the top 10) and MRR (1 / rank of the first evidence turn
in the top 10, 0 if none). The gated path also reports how many evidence turns it kept
and how much small talk it dropped.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conversations  # noqa: E402

from helixfs.memory import Embedder, Hit, Memory, Source  # noqa: E402

MODES = ("hybrid", "lexical", "vector")
K = 10
DAY = 86400.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def turn_text(turn: conversations.Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


@dataclass
class Stored:
    """A conversation in its store: which memory ids hold each turn."""

    conversation: conversations.Conversation
    memory: Memory
    clock: Clock
    ids: dict[str, set[str]] = field(default_factory=dict)
    written: dict[str, set[str]] = field(default_factory=dict)  # by this turn, not a NOOP


def store(memory: Memory, conv: conversations.Conversation, clock: Clock, gated: bool) -> Stored:
    stored = Stored(conv, memory, clock)
    for turn in conv.turns:
        clock.now = turn.when
        source = Source(agent=turn.speaker, when=turn.when)
        if gated:
            results = memory.ingest(turn_text(turn), source=source)
        else:
            results = [memory.remember(turn_text(turn), source=source)]
        stored.ids[turn.key] = {r.id for r in results if r.id is not None}
        stored.written[turn.key] = {r.id for r in results if r.id and r.action != "noop"}
    clock.now = conv.turns[-1].when + DAY
    return stored


@dataclass(frozen=True)
class Score:
    r5: float
    r10: float
    any10: float
    rr: float


def score(evidence: Sequence[str], stored: Stored, hits: Sequence[Hit]) -> Score:
    ranks: list[int] = []
    for key in evidence:
        ids = stored.ids.get(key, set())
        rank = next((n for n, h in enumerate(hits[:K], 1) if h.id in ids), 0)
        ranks.append(rank)
    found10 = [r for r in ranks if r]
    return Score(
        sum(1 for r in found10 if r <= 5) / len(ranks),
        len(found10) / len(ranks),
        1.0 if found10 else 0.0,
        1.0 / min(found10) if found10 else 0.0,
    )


Recall = Callable[[Memory, str], list[Hit]]


def recall_in(mode: str) -> Recall:
    def run(memory: Memory, text: str) -> list[Hit]:
        return memory.recall(text, k=K, reinforce=False, mode=mode)  # type: ignore[arg-type]

    return run


def summarise(scores: dict[str, list[Score]]) -> dict[str, dict[str, float]]:
    every = [s for group in scores.values() for s in group]
    out = {kind: _means(group) for kind, group in sorted(scores.items())}
    out["all"] = _means(every)
    return out


def _means(group: list[Score]) -> dict[str, float]:
    return {
        "questions": len(group),
        "r_at_5": round(statistics.fmean(s.r5 for s in group), 4),
        "r_at_10": round(statistics.fmean(s.r10 for s in group), 4),
        "any_at_10": round(statistics.fmean(s.any10 for s in group), 4),
        "mrr": round(statistics.fmean(s.rr for s in group), 4),
    }


@contextmanager
def opened(
    folder: Path, embedder: Embedder | None, gated: bool, seed: int = 30
) -> Iterator[list[Stored]]:
    """Every conversation written into a store of its own under `folder`."""
    memories: list[Memory] = []
    try:
        stores = []
        for conv in conversations.build(seed):
            clock = Clock()
            suffix = "ingest" if gated else "remember"
            memory = Memory.open(folder / f"{conv.id}-{suffix}.db", embedder, clock=clock)
            memories.append(memory)
            stores.append(store(memory, conv, clock, gated))
        yield stores
    finally:
        for memory in memories:
            memory.close()


def evaluate(stores: Sequence[Stored], recall: Recall) -> dict[str, dict[str, float]]:
    by_kind: dict[str, list[Score]] = defaultdict(list)
    for stored in stores:
        for question in stored.conversation.questions:
            hits = recall(stored.memory, question.text)
            by_kind[question.kind].append(score(question.evidence, stored, hits))
    return summarise(by_kind)


def gate_rates(stores: Sequence[Stored]) -> dict[str, Any]:
    """Of the gated path: evidence turns kept, small-talk turns dropped."""
    evidence = {k for s in stores for q in s.conversation.questions for k in q.evidence}
    kept = sum(1 for s in stores for k in evidence if s.ids.get(k))
    small = [(s, t) for s in stores for t in s.conversation.turns if t.small_talk]
    dropped = sum(1 for s, t in small if not s.ids.get(t.key))
    turns = sum(len(s.conversation.turns) for s in stores)
    stored_turns = sum(1 for s in stores for t in s.conversation.turns if s.ids.get(t.key))
    return {
        "evidence_turns": len(evidence),
        "evidence_kept": round(kept / len(evidence), 4),
        "small_talk_turns": len(small),
        "small_talk_dropped": round(dropped / len(small), 4) if small else 0.0,
        "turns": turns,
        "turns_stored": stored_turns,
    }


def speaker_and_time_kept(stores: Sequence[Stored]) -> float:
    """Share of the memories a turn wrote (a NOOP writes none) whose text names the
    turn's speaker and whose source time is the turn's."""
    good = total = 0
    for stored in stores:
        for turn in stored.conversation.turns:
            for memory_id in stored.written.get(turn.key, ()):
                record = stored.memory.get(memory_id)
                total += 1
                good += record.content.startswith(f"{turn.speaker}: ") and (
                    record.source.when == turn.when
                )
    return good / total if total else 1.0
