"""`helix` memory commands, run through the real CLI entry point (lexical, for speed)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from helixfs.cli.main import run, run_in_process
from helixfs.cli.mcp import tool_runner
from helixfs.cli.memory import LEXICAL_NOTE, MEMORY_DB
from helixfs.memory import KeptOpen, Memory
from helixfs.vcs.repo import Repository


@pytest.fixture(autouse=True)
def lexical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELIX_MEMORY_LEXICAL", "1")
    import helixfs.cli.memory as cli_memory

    monkeypatch.setattr(cli_memory, "_embedder", [])


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


def helix(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run(["--store", str(store), *argv], out, err)
    return status, out.getvalue(), err.getvalue()


def helix_json(store: Path, *argv: str) -> object:
    status, out, err = helix(store, *argv, "--json")
    assert status == 0, err
    return json.loads(out)


def test_remember_recall_forget_history_rollback(store: Path) -> None:
    added = helix_json(store, "remember", "The API listens on port 8443", "--tags", "net,api")
    assert isinstance(added, dict) and added["action"] == "add"
    memory_id = added["id"]
    newer = helix_json(store, "remember", "The API listens on port 9000", "--type", "fact")
    assert isinstance(newer, dict) and newer["superseded"] == [memory_id]
    hits = helix_json(store, "recall", "api", "port", "--k", "5")
    assert isinstance(hits, list) and [h["content"] for h in hits] == [
        "The API listens on port 9000"
    ]
    status, out, _ = helix(store, "recall", "api port", "--all")
    assert status == 0 and "(superseded)" in out
    forgotten = helix_json(store, "forget", newer["id"])
    assert forgotten == {"forgotten": [newer["id"]]}
    history = helix_json(store, "history", newer["id"])
    assert isinstance(history, list) and [e["op"] for e in history] == ["add", "forget"]
    restored = helix_json(store, "rollback", newer["id"])
    assert isinstance(restored, dict) and restored["status"] == "active"


def test_memories_relate_context_brief(store: Path) -> None:
    a = helix_json(store, "remember", "We decided to use trio for the daemon")
    b = helix_json(store, "remember", "Beware: pyfuse3 needs trio, not asyncio")
    assert isinstance(a, dict) and isinstance(b, dict)
    edge = helix_json(store, "relate", a["id"], b["id"], "because_of")
    assert isinstance(edge, dict) and edge["rel"] == "because_of"
    listed = helix_json(store, "memories", "--type", "decision")
    assert isinstance(listed, list) and [m["id"] for m in listed] == [a["id"]]
    status, out, _ = helix(store, "memories")
    assert status == 0 and out.startswith("ID")
    block = helix_json(store, "context", "--budget", "100")
    assert isinstance(block, dict) and block["tokens"] <= 100 and block["hits"]
    status, out, _ = helix(store, "brief", "trio")
    assert status == 0 and out.startswith("# Brief: trio")


def test_checkpoint_and_resume(store: Path) -> None:
    status, out, err = helix(
        store,
        "checkpoint",
        "Fix the flaky test",
        "--done",
        "repro",
        "--next",
        "bisect",
        "--file",
        "tests/test_x.py",
    )
    assert status == 0, err
    status, out, _ = helix(store, "resume")
    assert status == 0
    assert out.startswith("# Resume: Fix the flaky test")
    assert "- bisect" in out and "`tests/test_x.py`" in out
    doc = helix_json(store, "resume")
    assert isinstance(doc, dict) and doc["next"] == ["bisect"]


@pytest.mark.parametrize(
    "argv",
    [
        ("remember", " "),
        ("recall", "x", "--k", "0"),
        ("history", "NOPE"),
        ("forget", "nothing matches this at all"),
        ("relate", "A", "B", "x"),
        ("context", "--budget", "0"),
        ("purge", "01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ("resume",),
        ("remember", "x", "--scope", "bad scope"),
    ],
)
def test_bad_input_exits_1_with_one_line(store: Path, argv: tuple[str, ...]) -> None:
    status, out, err = helix(store, *argv)
    assert status == 1
    assert out == ""
    error_lines = [line for line in err.splitlines() if line.startswith("helix: error:")]
    assert len(error_lines) == 1


def test_usage_errors_exit_2(store: Path) -> None:
    status, _, _ = helix(store, "remember", "x", "--type", "nonsense")
    assert status == 2


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    status, _, err = helix(tmp_path / "nope", "recall", "x")
    assert status == 1 and "no HelixFS store" in err


NOT_UTF8 = b"caf\xe9".decode("utf-8", "surrogateescape")  # Latin-1 bytes in argv


@pytest.mark.parametrize(
    "argv",
    [
        ("remember", NOT_UTF8),
        ("remember", "x", "--source", NOT_UTF8),
        ("recall", NOT_UTF8),
        ("memories", "--tag", NOT_UTF8),
        ("history", NOT_UTF8),
        ("checkpoint", NOT_UTF8),
        ("checkpoint", "task", "--done", NOT_UTF8),
    ],
)
def test_argument_that_is_not_utf8_is_refused_and_stores_nothing(
    store: Path, argv: tuple[str, ...]
) -> None:
    """QA: bytes that are not UTF-8 in argv reached SQLite (UnicodeEncodeError) or the
    tokenizer (TypeError) as a traceback; a checkpoint kept them as lone surrogates."""
    status, out, err = helix(store, *argv)
    assert (status, out) == (1, "")
    assert err.startswith("helix: error: ") and err.count("\n") == 1
    assert "not valid UTF-8" in err and "caf\\xe9" in err
    assert helix_json(store, "memories", "--status", "any") == []
    assert helix(store, "resume")[0] == 1  # no checkpoint was saved


def test_a_lexical_search_run_by_a_daemon_warns_its_client(tmp_path: Path) -> None:
    """Issue 4: without a model, search is lexical "with a clear warning". Run by a
    mount's daemon, the engine's warning went to the daemon's log: the client heard
    nothing. A command the daemon runs now says it on the client's stderr."""
    with Repository.init(tmp_path / "store") as repo:
        for argv in (["recall", "deploy"], ["context", "deploy"], ["brief", "deploy"]):
            out, err = io.StringIO(), io.StringIO()
            assert run_in_process([*argv, "--json"], repo, out, err) == 0, err.getvalue()
            assert LEXICAL_NOTE in err.getvalue()
            json.loads(out.getvalue())  # the document on stdout stays clean
        out, err = io.StringIO(), io.StringIO()
        assert run_in_process(["memories"], repo, out, err) == 0
        assert err.getvalue() == ""  # no search, nothing to warn about


@pytest.mark.parametrize("command", [["recall", "deploy"], ["remember", "The deploy is on Monday"]])
def test_a_damaged_memory_database_is_one_line_of_error(store: Path, command: list[str]) -> None:
    """A memory.db that is not SQLite (or a disk too full for its WAL) was a Python
    traceback, and no JSON document under --json. It is now one line, exit 1."""
    damaged = b"this is not a database " * 400
    (store / "memory.db").write_bytes(damaged)
    status, out, err = helix(store, *command)
    assert (status, out) == (1, "")
    assert err == "helix: error: memory.db is damaged (file is not a database)\n"
    status, out, _ = helix(store, *command, "--json")
    assert status == 1 and json.loads(out)["error"]["kind"] == "CorruptObject"
    assert (store / "memory.db").read_bytes() == damaged


def test_commands_given_a_memory_use_it_and_leave_it_open(tmp_path: Path) -> None:
    """The daemon lends its memory to the commands it runs, and `helix mcp` its own:
    each opened memory.db for its call, and threw the warm vector indexes away."""
    store = tmp_path / "repo"
    Repository.init(store).close()
    kept = KeptOpen(store / MEMORY_DB, lambda: None)
    lent: list[Memory] = []

    def lend() -> Memory:
        lent.append(kept())
        return lent[-1]

    try:
        with Repository.open(store) as repo:
            for argv in (["remember", "--", "The deploy runs on Mondays"], ["recall", "deploy"]):
                out, err = io.StringIO(), io.StringIO()
                status = run_in_process(["--json", *argv], repo, out, err, lend)
                assert status == 0, err.getvalue()
            assert "Mondays" in out.getvalue()
        memory = kept()
        assert lent == [memory, memory]
        assert [r.content for r in memory.memories()] == ["The deploy runs on Mondays"]
        kept_by_server = KeptOpen(store / MEMORY_DB, lambda: None)
        runner = tool_runner(store, kept_by_server)
        status, out_text, _ = runner(["--json", "recall", "deploy"])
        assert status == 0 and "Mondays" in out_text
        served = kept_by_server._memory  # opened by the call, and left open
        assert served is not None and kept_by_server() is served
        assert [r.content for r in served.memories()] == ["The deploy runs on Mondays"]
        kept_by_server.close()
        memory.memories()  # the daemon's stays open
    finally:
        kept.close()
    assert helix_json(store, "memories")  # a one-shot command opens its own, as before
