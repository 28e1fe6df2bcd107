"""Memory that follows the tree through the CLI (ADR 0063): `--source` records the
file's blob, `recall` and `memories --stale` mark what changed, `memory confirm`,
`--branch`, and `merge` / `branch -d` carrying a branch's memories."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from helixfs.cli.main import run


@pytest.fixture(autouse=True)
def lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    import helixfs.cli.memory as cli_memory

    monkeypatch.setattr(cli_memory, "_embedder", [])


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    assert helix(path, "init", str(path))[0] == 0
    return path


def helix(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run(["--store", str(store), *argv], out, err)
    return status, out.getvalue(), err.getvalue()


def helix_json(store: Path, *argv: str) -> Any:
    status, out, err = helix(store, "--json", *argv)
    assert status == 0, err
    return json.loads(out)


def commit(store: Path, tmp: Path, path: str, text: str, branch: str | None = None) -> str:
    source = tmp / "content"
    source.write_text(text)
    where = ["--branch", branch] if branch else []
    doc = helix_json(store, "commit", "-m", f"write {path}", *where, f"{path}={source}")
    return str(doc["commit"])


def test_a_file_memory_turns_stale_and_is_confirmed(store: Path, tmp_path: Path) -> None:
    commit(store, tmp_path, "src/auth.py", "def login(): pass\n")
    added = helix_json(store, "remember", "--source", "src/auth.py:1", "--", "login is a stub")
    assert added["memory"]["source"]["blob"]
    changed = commit(store, tmp_path, "src/auth.py", "def login(): return 1\n")

    (hit,) = helix_json(store, "recall", "login", "stub")
    assert hit["stale"] == {"how": "changed", "commit": changed, "path": "src/auth.py"}
    status, human, _ = helix(store, "recall", "login stub")
    assert status == 0 and f"(stale: src/auth.py changed in {changed[:12]})" in human
    assert [m["id"] for m in helix_json(store, "memories", "--stale")] == [added["id"]]

    confirmed = helix_json(store, "memory", "confirm", added["id"])
    assert confirmed["stale"] is None
    assert helix_json(store, "memories", "--stale") == []


def test_branch_memories_merge_and_archive(store: Path, tmp_path: Path) -> None:
    commit(store, tmp_path, "README", "hi\n")
    helix_json(store, "remember", "--", "the api listens on port 8080")
    helix_json(store, "branch", "feat")
    commit(store, tmp_path, "feat.txt", "1\n", branch="feat")
    moved = helix_json(store, "remember", "--branch", "feat", "--", "the api listens on port 9090")
    assert moved["memory"]["branch"] == "feat" and moved["superseded"] == []
    assert [h["content"] for h in helix_json(store, "recall", "api port")] == [
        "the api listens on port 8080"
    ]
    from_feat = helix_json(store, "recall", "--branch", "feat", "api", "port")
    assert from_feat[0]["content"] == "the api listens on port 9090"

    merged = helix_json(store, "merge", "feat")
    assert merged["memories"]["moved"] == [moved["id"]]
    assert len(merged["memories"]["superseded"]) == 1
    assert [h["content"] for h in helix_json(store, "recall", "api port")] == [
        "the api listens on port 9090"
    ]

    helix_json(store, "branch", "spike0")
    spike = helix_json(
        store, "remember", "--branch", "spike0", "--", "the spike uses bloom filters"
    )
    helix_json(store, "branch", "-m", "spike0", "spike")
    assert helix_json(store, "memories", "--branch", "spike")[0]["id"] == spike["id"]

    deleted = helix_json(store, "branch", "-d", "spike")
    assert deleted["archived_memories"] == [spike["id"]]
    assert helix_json(store, "recall", "spike bloom") == []
    archived = helix_json(store, "memories", "--archived", "--branch", "spike")
    assert [m["id"] for m in archived] == [spike["id"]]


def test_bad_branch_input_is_refused_and_writes_nothing(store: Path) -> None:
    status, _, err = helix(store, "remember", "--branch", "nosuch", "--", "a fact")
    assert status == 1 and "no branch named 'nosuch'" in err
    assert helix_json(store, "memories") == []
    status, _, err = helix(store, "memories", "--stale", "--archived")
    assert status == 1 and "--stale" in err


def test_picking_an_experiment_brings_its_memories_over(store: Path, tmp_path: Path) -> None:
    commit(store, tmp_path, "README", "hi\n")
    helix_json(store, "experiment", "start", "try-lru")
    commit(store, tmp_path, "cache.py", "lru\n", branch="try-lru")
    made = helix_json(store, "remember", "--branch", "try-lru", "--", "an lru cache halves p95")
    picked = helix_json(store, "experiment", "pick", "try-lru")
    assert picked["memories"]["moved"] == [made["id"]]
    assert [h["id"] for h in helix_json(store, "recall", "lru cache p95")] == [made["id"]]


def test_a_repository_held_elsewhere_leaves_the_answer_unmarked(
    store: Path, tmp_path: Path
) -> None:
    import subprocess
    import sys

    commit(store, tmp_path, "src/auth.py", "def login(): pass\n")
    added = helix_json(store, "remember", "--source", "src/auth.py", "--", "login is a stub")
    commit(store, tmp_path, "src/auth.py", "def login(): return 1\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        (hit,) = helix_json(store, "recall", "login", "stub")
        assert hit["id"] == added["id"] and "stale" not in hit
    finally:
        holder.kill()
        holder.wait()
    assert helix_json(store, "recall", "login", "stub")[0]["stale"]["how"] == "changed"


HOLD = """
import sys, time
from helixfs.vcs.repo import Repository
repo = Repository.open(sys.argv[1])
print("held", flush=True)
time.sleep(120)
"""
