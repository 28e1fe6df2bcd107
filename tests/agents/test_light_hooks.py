"""The light no-daemon path (agents/light.py, memory/reader.py) answers as the engine
does: same inputs, same output lines, on a real memory.db; and it loads no engine."""

from __future__ import annotations

import array
import json
import math
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import apsw
import pytest
from hookrun import REPO, helix, launcher, payload

from helixfs.agents import hooks, light
from helixfs.agents.context import World
from helixfs.agents.session import session
from helixfs.memory import Memory, Source, retrieval
from helixfs.memory.reader import Checkpointing
from helixfs.memory.retrieval import Candidate
from helixfs.memory.tokens import word_set
from helixfs.store.memory import MemoryStore
from helixfs.vcs.repo import Repository
from helixfs.vcs.sourceview import BranchView

pytestmark = pytest.mark.timeout(120)

AUTH = "def refresh_token(user):\n    return user.token\n\n\nclass TokenCache:\n    pass\n"
MEMORIES = [
    ("refresh_token must never be called while holding the session lock", "src/auth.py"),
    ("auth.py keeps tokens in TokenCache for at most ten minutes", "auth.py"),
    ("the TokenCache eviction runs on a timer thread, not on reads", None),
    ("login retries twice before it reports the auth server as down", "src/login.py"),
    ("auth failures are logged without the user's token", None),
    ("every parser in pkg keeps its schema version beside the data", None),
    ("the session lock test fails when refresh_token retries under the lock", None),
    ("the session lock test fails when refresh_token retries under the lock.", None),
]
FAILED = {"stdout": "E  AssertionError: refresh_token held the session lock\n1 failed"}


@pytest.fixture(scope="module")
def world_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("light")
    store, proj = base / "store", base / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "auth.py").write_text(AUTH)
    with Memory.open(store / "memory.db", None, warn_lexical=False) as memory:
        for n, (text, file) in enumerate(MEMORIES):
            kind = "gotcha" if n % 2 else "fact"
            memory.remember(text, type=kind, tags=("auth",), source=Source("test", file))
        memory.index_workspace({"src/auth.py": AUTH.encode(), "README": b"session lock docs"}, "c1")
    return store, proj


def events(proj: Path) -> list[tuple[str, dict[str, Any]]]:
    path = str(proj / "src" / "auth.py")
    edit = {"file_path": path, "old_string": "def refresh_token(user):", "new_string": "x"}
    bash = {"tool_name": "Bash", "tool_input": {"command": "pytest -q tests/test_auth.py"}}
    return [
        ("UserPromptSubmit", {"prompt": "why does refresh_token break the session lock?"}),
        ("UserPromptSubmit", {"prompt": "TokenCache eviction and auth logging"}),
        ("PostToolUse", {**bash, "tool_response": {**FAILED, "stderr": "", "interrupted": False}}),
        ("PostToolUseFailure", {**bash, "error": "Command failed with exit code 1"}),
        ("PostToolUse", {**bash, "tool_response": {"stdout": "3 passed", "stderr": ""}}),
        ("PreToolUse", {"tool_name": "Read", "tool_input": {"file_path": path}}),
        ("PreToolUse", {"tool_name": "Edit", "tool_input": edit}),
        ("PreToolUse", {"tool_name": "Grep", "tool_input": {"pattern": "TokenCache|login"}}),
        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        ("PreCompact", {"trigger": "auto", "custom_instructions": ""}),
        ("SubagentStart", {"agent_id": "a1", "agent_type": "Explore"}),
        ("Stop", {"stop_hook_active": False}),  # after the Edit: a checkpoint, a reminder
        ("SessionStart", {"source": "compact"}),  # the checkpoint, what PreCompact kept
        ("SessionStart", {"source": "startup"}),
    ]


def answers(
    store: Path, proj: Path, memory: Any, session_id: str, world: World | None = None
) -> list[Any]:
    """Each event in a session of its own (nothing deduplicated away), then all of them
    in one session (dedup, the failed-then-passed offer, PreCompact's keep)."""
    world = world or World(store, cast(Memory, memory), lambda: None)

    def said(event: str, fields: dict[str, Any], session_id: str) -> Any:
        return hooks.answer(event, payload(event, session_id, proj / "src", **fields), world)

    alone = [said(e, f, f"{session_id}-{n}") for n, (e, f) in enumerate(events(proj))]
    together = [said(e, f, session_id) for e, f in events(proj)]
    with session(store, session_id) as state:
        return [*alone, *together, state.data.get("compact"), sorted(state.injected)]


def test_the_light_path_answers_every_event_as_the_engine(
    world_dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    store, proj = world_dirs
    assert {event for event, _ in events(proj)} == set(light.LIGHT_EVENTS)
    engine_store, reader_store = tmp_path / "engine", tmp_path / "reader"
    shutil.copytree(store, engine_store)  # Stop writes a checkpoint: one copy per side
    shutil.copytree(store, reader_store)
    with Memory.open(engine_store / "memory.db", None, warn_lexical=False) as memory:
        by_engine = answers(engine_store, proj, memory, "engine")
    with Checkpointing(reader_store / "memory.db") as reader:
        by_reader = answers(reader_store, proj, reader, "reader")
    assert by_reader == by_engine
    said = json.dumps(by_engine)
    assert "TokenCache" in said and "src/auth.py:" in said and "fixed" in said  # not vacuous
    alone = len(events(proj))
    assert all(by_engine[n] for n in (0, 1, 2, 5, 6, 7, 10, 12, 13))  # alone, each says something
    assert by_engine[alone + 11]["decision"] == "block"  # Stop after the Edit
    assert "Last checkpoint: (automatic) TokenCache eviction" in said
    assert by_engine[-2]  # PreCompact kept the memories shown
    saved = []
    for side in (engine_store, reader_store):
        with Memory.open(side / "memory.db", None, warn_lexical=False) as memory:
            cp = memory.last_checkpoint()
            saved.append((cp.task, cp.done, cp.next, cp.files))
    assert saved[0] == saved[1] and saved[1][3] == ("auth.py",)


def test_the_reader_answers_in_a_branch_view_as_the_engine(tmp_path: Path) -> None:
    """A mount's daemon answers its first hooks from a reader (MemoryFiles.for_a_hook),
    with the view of the agent's branch: the same stale marks, rename followed, branch
    memories and briefing as the engine gives through that view."""
    repo = Repository.create(MemoryStore())
    login = b"def login(user):\n    return refresh_token(user)\n"
    repo.commit({"src/auth.py": AUTH.encode(), "src/login.py": login, "README": b"x"}, "start")
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "auth.py").write_text(AUTH)
    store = tmp_path / "store"
    with Memory.open(store / "memory.db", None, warn_lexical=False) as memory:
        trunk = BranchView(repo, None)
        for n, (text, file) in enumerate(MEMORIES):
            kind = "gotcha" if n % 2 else "fact"
            memory.remember(text, type=kind, tags=("auth",), source=Source("t", file), view=trunk)
        repo.create_branch("fix")
        memory.remember(
            "on fix, refresh_token retries once under the session lock",
            type="gotcha",
            view=BranchView(repo, "fix"),
        )
    changed = AUTH.encode() + b"# cached\n"
    repo.commit({"src/auth.py": changed, "src/login.py": None, "src/signin.py": login}, "move")
    for branch in (None, "fix"):
        said = []
        for side in ("engine", "reader"):
            copy = tmp_path / f"{side}-{branch}"
            shutil.copytree(store, copy)
            opened = (
                Memory.open(copy / "memory.db", None, warn_lexical=False)
                if side == "engine"
                else Checkpointing(copy / "memory.db")
            )
            with opened as memory:
                view = BranchView(repo, branch)
                world = World(copy, cast(Memory, memory), lambda: repo, view=lambda: view)  # noqa: B023
                said.append(answers(copy, proj, memory, side, world))
            with Memory.open(copy / "memory.db", None, warn_lexical=False) as memory:
                said.append(sorted(r.source.file or "" for r in memory.memories(limit=50)))
        assert said[2:] == said[:2]
        text = json.dumps(said[0])
        moved = "stale: src/auth.py changed" in text and "src/login.py -> src/signin.py" in text
        assert moved == (branch is None)  # the branch forked before the files moved
        assert ("on fix, refresh_token" in text) == (branch == "fix")
        assert ("src/signin.py" in said[1]) == (branch is None)  # the rename followed


def test_the_launcher_with_no_daemon_answers_without_numpy_the_engine_or_the_vcs(
    world_dirs: tuple[Path, Path],
) -> None:
    store, proj = world_dirs
    event, fields = events(proj)[0]  # UserPromptSubmit: the whole ranking
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *launcher(store, event)[1:]],
        input=json.dumps(payload(event, "launched", proj / "src", **fields)),
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "refresh_token" in context
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "helixfs.memory.reader" in imported
    for heavy in ("numpy", "sqlite_vec", "helixfs.memory.engine", "helixfs.vcs", "helixfs.store"):
        assert heavy not in imported
    assert "logging" not in imported and "secrets" not in imported  # ~3, ~5 ms of a start
    assert "helixfs.memory.outcomes" not in imported  # the engine's write values: ~5 ms
    assert not any(name.startswith("__editable__") for name in imported)  # no .pth run
    assert not (store / "hooks.log").exists()


def imports_of(store: Path, event: str, data: dict[str, Any]) -> tuple[str, set[str]]:
    """The launcher's stdout with no daemon, and the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *launcher(store, event)[1:]],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HELIX_MEMORY_LEXICAL": "1"},
    )
    assert done.returncode == 0
    assert not (store / "hooks.log").exists(), (store / "hooks.log").read_text()
    return done.stdout, {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}


def test_session_start_and_stop_with_no_daemon_open_no_engine(tmp_path: Path) -> None:
    """On a real store (the repository too): the branch is read, the checkpoint saved,
    without numpy, sqlite-vec, the engine or the CLI."""
    store, proj = tmp_path / "store", tmp_path / "proj"
    proj.mkdir()
    assert helix(store, "init").returncode == 0
    assert helix(store, "remember", "--", "the parser keeps its schema version").returncode == 0
    start = payload("SessionStart", "s1", proj, source="startup")
    said, imported = imports_of(store, "SessionStart", start)
    context = json.loads(said)["hookSpecificOutput"]["additionalContext"]
    assert "Branch main at " in context and "schema version" in context
    edit = {"file_path": str(proj / "x.py"), "old_string": "a", "new_string": "b"}
    edited = payload("PreToolUse", "s1", proj, tool_name="Edit", tool_input=edit)
    imports_of(store, "PreToolUse", edited)
    said, stopped = imports_of(store, "Stop", payload("Stop", "s1", proj, stop_hook_active=False))
    assert json.loads(said)["decision"] == "block"
    resumed = helix(store, "--json", "resume")
    assert json.loads(resumed.stdout)["files"] == ["x.py"]
    for heavy in ("numpy", "sqlite_vec", "helixfs.memory.engine", "helixfs.cli.main"):
        assert heavy not in imported and heavy not in stopped
    for unneeded in ("helixfs.vcs.repo", "zstandard", "secrets"):  # (an LZ4 store; no id made)
        assert unneeded not in imported
    assert "logging" not in imported | stopped  # the store logs at its first line: ~3 ms
    # the engine's write and upkeep values (MemoryImport, WriteResult...): ~5 ms to build
    assert "helixfs.memory.outcomes" not in imported | stopped
    assert "helixfs.vcs.repo" not in stopped
    assert "helixfs.memory.reader" in imported and "helixfs.vcs.heads" in stopped


def test_session_start_names_the_branch_while_another_process_holds_the_store(
    tmp_path: Path,
) -> None:
    """The version store is read read-only: a writer's lock (a CLI command, a daemon
    going down) no longer hides the branch from the briefing."""
    store, proj = tmp_path / "store", tmp_path / "proj"
    proj.mkdir()
    assert helix(store, "init").returncode == 0
    assert helix(store, "remember", "--", "the parser keeps its schema version").returncode == 0
    with Repository.open(store) as repo:
        repo.commit({"a.txt": b"1"}, "held while the hook ran")
        start = payload("SessionStart", "s1", proj, source="startup")
        said, _ = imports_of(store, "SessionStart", start)
    context = json.loads(said)["hookSpecificOutput"]["additionalContext"]
    assert "Branch main at " in context and "(held while the hook ran)" in context


def test_a_store_with_embeddings_is_read_without_numpy_by_the_events_that_rank_nothing(
    tmp_path: Path,
) -> None:
    """sqlite-vec's package imports numpy: the reader loads its library by path
    (db.vectors_extension_path), so a vector store costs a hook nothing more."""
    import sqlite_vec

    from helixfs.memory.db import vectors_extension_path
    from helixfs.memory.embed import load_embedder

    assert vectors_extension_path() == sqlite_vec.loadable_path()
    store, proj = tmp_path / "store", tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "auth.py").write_text(AUTH)
    assert helix(store, "init").returncode == 0
    with Memory.open(store / "memory.db", load_embedder()) as memory:
        for text, file in MEMORIES[:4]:
            memory.remember(text, type="fact", tags=("auth",), source=Source("test", file))
    with apsw.Connection(str(store / "memory.db")) as conn:
        assert conn.execute("SELECT name FROM sqlite_master WHERE name='memory_vec'").fetchone()
    read = {"tool_name": "Read", "tool_input": {"file_path": str(proj / "src" / "auth.py")}}
    for event, fields in [
        ("SessionStart", {"source": "startup"}),
        ("PreToolUse", read),
        ("Stop", {"stop_hook_active": False}),
    ]:
        said, imported = imports_of(store, event, payload(event, event, proj / "src", **fields))
        assert "numpy" not in imported and "sqlite_vec" not in imported, event
        if event != "Stop":
            assert "refresh_token" in said or "TokenCache" in said, event
    # the events that rank: MMR over the stored vectors, in Python (no numpy), choosing
    # as the engine's numpy matrix does
    copy = tmp_path / "engine"
    shutil.copytree(store, copy)
    bash = {"tool_name": "Bash", "tool_input": {"command": "pytest -q tests/test_auth.py"}}
    ranking = [
        ("UserPromptSubmit", {"prompt": "why does refresh_token break the session lock?"}),
        ("PostToolUse", {**bash, "tool_response": {**FAILED, "stderr": ""}}),
    ]
    with Memory.open(copy / "memory.db", None, warn_lexical=False) as memory:
        world = World(copy, memory, lambda: None)
        for event, fields in ranking:
            data = payload(event, f"ranked-{event}", proj / "src", **fields)
            said, imported = imports_of(store, event, data)
            assert "numpy" not in imported and "sqlite_vec" not in imported, event
            by_engine = hooks.answer(event, data, world)
            assert by_engine is not None and "refresh_token" in json.dumps(by_engine)
            assert said == json.dumps(by_engine, ensure_ascii=False) + "\n", event


def test_a_memory_db_the_engine_never_opened_or_upgraded_is_left_to_the_engine(
    tmp_path: Path,
) -> None:
    (tmp_path / "memory.db").write_bytes(b"")
    data = json.dumps(payload("PreCompact", "s", tmp_path, trigger="auto"))
    assert light.answer(str(tmp_path), "PreCompact", data) is None
    assert light.answer(str(tmp_path), "Stop", data) is None
    assert (tmp_path / "memory.db").read_bytes() == b""
    old = tmp_path / "old"
    Memory.open(old / "memory.db", None, warn_lexical=False).close()
    with apsw.Connection(str(old / "memory.db")) as conn:  # as before ADR 0063's column
        conn.execute("ALTER TABLE memories DROP COLUMN moved_from")
    assert light.answer(str(old), "PreCompact", data) is None


def test_mmr_without_vectors_chooses_as_the_matrix_does() -> None:
    texts = ["a b c d", "a b c d", "a b c e", "x y z", "a b c d.", "q r s t u", "x y z w"]
    for shift in range(4):
        pool = [
            Candidate(f"m:{n}", 1.0 / (n + 1 + shift * (n % 3)), {"content": t})
            for n, t in enumerate(texts)
        ]
        pool.sort(key=lambda c: c.score, reverse=True)
        for k in (1, 3, 10):
            by_matrix = retrieval._mmr_by_matrix(pool, k)
            assert retrieval._mmr_by_rows(pool, k) == by_matrix
            assert retrieval.mmr(pool, k) == by_matrix


def _unit(rng: random.Random, centre: list[float] | None, spread: float) -> list[float]:
    """A unit vector near `centre`, its components float32 (as vec0 stores them)."""
    raw = [rng.gauss(0.0, 1.0) * spread + (centre[i] if centre else 0.0) for i in range(DIM)]
    norm = math.sqrt(sum(x * x for x in raw))
    return array.array("f", [x / norm for x in raw]).tolist()


DIM = 384
WORDS = ["lock", "token", "cache", "retry", "parser", "schema", "index"]


def test_mmr_with_vectors_chooses_as_the_matrix_does() -> None:
    """A hook's reader has no numpy: its MMR computes the chosen rows of the similarity
    matrix in Python (exact sums rounded to float32), the engine the whole matrix with
    numpy. Pools as recall makes them: clusters of near-duplicates, exact duplicates,
    memories and passages of two files, some without a vector or of another model."""
    rng = random.Random(29)
    differing = 0
    for trial in range(40):
        centres = [_unit(rng, None, 1.0) for _ in range(4)]
        pool = []
        for n in range(rng.choice([6, 20, 40, 80])):
            if pool and rng.random() < 0.1:
                vector = pool[-1].vector  # the same text twice
            elif rng.random() < 0.1:
                vector = None  # written before the model was installed
            else:
                vector = _unit(rng, rng.choice(centres), rng.choice([0.02, 0.05, 0.3, 3.0]))
            if trial % 10 == 0 and n == 3:
                vector = _unit(rng, None, 1.0)[:32]  # another model's dimension
            words = " ".join(rng.sample(WORDS, 3))
            row = {"content": words, "path": rng.choice(["a.py", "b.py"])}
            cand = Candidate(f"{'mc'[n % 2]}:{n}", rng.random(), row, vector)
            pool.append(cand)
        pool.sort(key=lambda c: c.score, reverse=True)
        matrix = retrieval.similarity_matrix(pool).tolist()
        vectors = retrieval._pool_vectors(pool)
        words = [word_set(c.row["content"]) for c in pool]
        for best in range(len(pool)):
            row_ = retrieval.similarity_row(best, range(len(pool)), vectors, words)
            differing += sum(a != b for a, b in zip(row_, matrix[best], strict=True))
        for k in (1, 5, 10, 40):
            assert retrieval._mmr_by_rows(pool, k) == retrieval._mmr_by_matrix(pool, k)
    assert differing == 0
