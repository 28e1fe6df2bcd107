"""Consolidation on the pair corpus of benchmarks/eval/consolidation.py (issue 30).

A changed number, name, version, date or negation always supersedes (never a NOOP that
drops the new value); a paraphrase keeps the old memory; related-looking turns of a
conversation never retire each other. Both with the real model and lexical only.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from conftest import Clock

from helixfs.memory import Embedder, Memory

EVAL_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "eval"


def _corpus() -> ModuleType:
    spec = importlib.util.spec_from_file_location("consolidation", EVAL_DIR / "consolidation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["consolidation"] = module
    spec.loader.exec_module(module)
    return module


corpus = _corpus()


@pytest.fixture(params=["hybrid", "lexical"])
def fresh(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> Iterator[tuple[Path, Embedder | None]]:
    embedder: Embedder | None = None
    if request.param == "hybrid":
        embedder = request.getfixturevalue("real_embedder")
    yield tmp_path, embedder


def test_the_corpus_has_every_kind_of_pair() -> None:
    kinds = [expected for _, _, expected in corpus.PAIRS]
    assert len(kinds) >= 50
    assert {kinds.count(k) >= 10 for k in (corpus.SUPERSEDE, corpus.KEEP, corpus.ADD)} == {True}


@pytest.mark.timeout(600)
def test_every_pair_gets_its_expected_action(
    fresh: tuple[Path, Embedder | None], clock: Clock
) -> None:
    folder, embedder = fresh
    outcomes = corpus.run(
        lambda i: Memory.open(folder / f"pair-{i}.db", embedder, clock=clock, warn_lexical=False)
    )
    wrong = [
        f"{o.expected}: got {o.action} ({o.reason}), old {o.old_status}: {o.old!r} -> {o.new!r}"
        for o in outcomes
        if not o.correct
    ]
    assert not [o for o in outcomes if o.dropped_new_value], wrong
    assert wrong == []


def test_a_longer_secret_is_a_new_value_not_a_confirmation(vmem: Memory) -> None:
    """The report of issue 30, word for word: 0.98 similar, yet a different fact."""
    old = vmem.remember("The token service stores tokens as user:hex, 16 random bytes")
    new = vmem.remember("The token service stores tokens as user:hex, 32 random bytes")
    assert (new.action, new.superseded) == ("supersede", (old.id,))
    assert "32 random bytes" in vmem.recall("how many random bytes in a token", k=1)[0].content


def test_a_chat_turn_never_retires_an_earlier_turn(vmem: Memory) -> None:
    turns = [
        "Last week I found these old notebooks from my grandfather in the attic.",
        "Appreciate you, Nate! That means a lot to me.",
        "Thanks, Nate! That sounds amazing.",
        "Wow, that is amazing! Where did you find them?",
        "It was a great day at the lake.",
        "It was a long day at the office.",
    ]
    results = [vmem.remember(turn, scope="chat") for turn in turns]
    assert all(r.superseded == () for r in results)
    assert len(vmem.memories(scope="chat")) == len(turns)
