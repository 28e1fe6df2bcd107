"""`helix mcp` on a store no daemon owns: each tool call opens the store for itself.

Driven by the mcp SDK's client over stdio, against a real RocksDB store and SQLite
memory database, as an agent's host would."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_client import HELIX, LEXICAL, REPO, call, call_error, contents, helix_mcp

pytestmark = pytest.mark.timeout(180)


def helix_cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HELIX, "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "HELIX_AUTHOR": "tester", "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store holding two commits: app.py, then app.py and notes.md."""
    path, work = tmp_path / "store", tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("def refresh_token():\n    return 'new'\n")
    assert helix_cli(path, "init").returncode == 0
    assert helix_cli(path, "import", str(work)).returncode == 0
    (work / "notes.md").write_text("Deploys run on Fridays.\n")
    assert helix_cli(path, "import", str(work)).returncode == 0
    return path


def run(test: Any, store: Path) -> None:
    """Run an async test body against a `helix mcp` of `store`."""

    async def main() -> None:
        async with helix_mcp("--store", str(store), cwd=store.parent, env=LEXICAL) as client:
            await test(client)

    anyio.run(main)


def test_every_tool_has_a_name_common_clients_accept(store: Path) -> None:
    async def body(client: Any) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"memory_search", "memory_remember", "workspace_log", "workspace_merge"} <= names
        assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name) for name in names), names

    run(body, store)


def test_a_remembered_fact_is_found_packed_listed_and_forgotten(store: Path) -> None:
    fact = "Access tokens are refreshed by the auth worker every hour"

    async def body(client: Any) -> None:
        added = await call(client, "memory_remember", text=fact, type="fact", tags=["auth"])
        assert added["action"] == "add"
        memory_id = added["id"]
        hits = (await call(client, "memory_search", query="who refreshes tokens"))["hits"]
        assert contents(hits)[0] == fact
        notes = (await call(client, "memory_search", query="tokens"))["notes"]
        assert any("lexical" in note for note in notes)
        assert fact in (await call(client, "memory_context", query="tokens", budget=200))["text"]
        listed = await call(client, "memory_list", tag="auth")
        assert [m["id"] for m in listed["memories"]] == [memory_id]
        await call(client, "memory_forget", target=memory_id, reason="moved to the gateway")
        assert fact not in contents((await call(client, "memory_search", query="tokens"))["hits"])
        changes = (await call(client, "memory_history", id=memory_id))["changes"]
        assert len(changes) >= 2  # the add and the forget: nothing is lost

    run(body, store)


def test_a_checkpoint_reads_back_in_the_next_session(store: Path) -> None:
    async def save(client: Any) -> None:
        done, todo = ["listed keys"], ["revoke old"]
        await call(client, "memory_checkpoint", task="rotate keys", done=done, next=todo)

    async def resume(client: Any) -> None:
        checkpoint = await call(client, "memory_resume")
        assert "rotate keys" in str(checkpoint) and "revoke old" in str(checkpoint)

    run(save, store)
    run(resume, store)  # another server process: the checkpoint is in the store


def test_history_reads_and_moves(store: Path) -> None:
    async def body(client: Any) -> None:
        commits = (await call(client, "workspace_log"))["commits"]
        assert len(commits) == 3  # init, and two imports
        first = await call(client, "workspace_read", rev="HEAD~1", path="app.py")
        assert "refresh_token" in first["content"] and not first["truncated"]
        cut = await call(client, "workspace_read", rev="HEAD", path="app.py", max_chars=3)
        assert cut["content"] == "def" and cut["truncated"] and cut["size"] > 3
        names = [e["name"] for e in (await call(client, "workspace_ls"))["entries"]]
        assert names == ["app.py", "notes.md"]
        diff = await call(client, "workspace_diff", a="HEAD~1", b="HEAD")
        assert [c["path"] for c in diff["changes"]] == ["notes.md"]
        await call(client, "workspace_branch_create", name="try-oauth", rev="HEAD~1")
        await call(client, "workspace_snapshot_create", name="first-import", rev="HEAD~1")
        refs = await call(client, "workspace_refs")
        assert {b["name"] for b in refs["branches"]} == {"main", "try-oauth"}
        assert [s["name"] for s in refs["snapshots"]] == ["first-import"]
        await call(client, "workspace_reset_hard", rev="HEAD~1")
        gone = await call_error(client, "workspace_read", rev="HEAD", path="notes.md")
        assert "notes.md" in gone
        lost = (await call(client, "workspace_log", lost=True))["commits"]
        assert lost[0]["id"] == commits[0]["id"]  # no ref reaches it: still there to bring back
        kept = await call(client, "workspace_read", rev=lost[0]["id"], path="notes.md")
        assert "Deploys" in kept["content"]

    run(body, store)


def test_bad_input_is_a_tool_error_with_the_reason_and_changes_nothing(store: Path) -> None:
    before = helix_cli(store, "log", "--json").stdout

    async def body(client: Any) -> None:
        assert "unknown revision" in await call_error(client, "workspace_read", rev="no", path="x")
        assert "unknown revision" in await call_error(client, "workspace_reset_hard", rev="nope")
        await call(client, "workspace_branch_create", name="b")
        assert "exists" in await call_error(client, "workspace_branch_create", name="b", rev="@~1")
        assert "k" in await call_error(client, "memory_search", query="x", k=0)  # the schema's
        assert "empty" in await call_error(client, "memory_remember", text="   ")
        assert "nope" in await call_error(client, "workspace_merge", branch="nope")

    run(body, store)
    assert helix_cli(store, "log", "--json").stdout == before
    branches = helix_cli(store, "branch", "--json").stdout
    assert '"b"' in branches and helix_cli(store, "rev-parse", "b").stdout.strip()
    assert helix_cli(store, "rev-parse", "b").stdout == helix_cli(store, "rev-parse", "main").stdout


def test_text_that_looks_like_an_option_is_text(store: Path) -> None:
    """An agent's text goes after `--`: "--type fact" is what to remember, not an option."""

    async def body(client: Any) -> None:
        added = await call(client, "memory_remember", text="--all --type fact")
        assert added["memory"]["content"] == "--all --type fact"
        await call(client, "memory_search", query="--k 0")  # a query, not a bad option

    run(body, store)


def test_calls_made_at_once_all_answer(store: Path) -> None:
    """A host may send calls without waiting: each opens the store in turn."""

    async def body(client: Any) -> None:
        results: list[dict[str, Any]] = []

        async def one(n: int) -> None:
            results.append(await call(client, "memory_remember", text=f"fact number {n} holds"))

        async with anyio.create_task_group() as group:
            for n in range(6):
                group.start_soon(one, n)
        assert len({r["id"] for r in results}) == 6

    run(body, store)


def test_a_missing_store_is_refused_before_serving(tmp_path: Path) -> None:
    done = helix_cli(tmp_path / "nowhere", "mcp")
    assert done.returncode == 1
    assert "no HelixFS store" in done.stderr and "Traceback" not in done.stderr


def test_the_experiment_tools_run_the_loop(store: Path) -> None:
    async def start(client: Any) -> None:
        started = await call(client, "experiment_start", name="try", from_rev="HEAD~1")
        assert started["branch"] == "try" and started["running"]
        assert "exists" in await call_error(client, "experiment_start", name="try")

    run(start, store)
    (store.parent / "fix.py").write_text("fixed = True\n")
    done = helix_cli(
        store, "commit", "-m", "fix", "--branch", "try", f"fix.py={store.parent}/fix.py"
    )
    assert done.returncode == 0, done.stderr

    async def finish(client: Any) -> None:
        scored = await call(client, "experiment_score", name="try", value=0.75, metric="pass")
        assert scored["value"] == 0.75 and scored["metric"] == "pass"
        assert "finite" in await call_error(client, "experiment_score", name="try", value="inf")
        assert "no experiment" in await call_error(client, "experiment_score", name="no", value=1)
        (listed,) = (await call(client, "experiment_list"))["experiments"]
        assert listed["commits"] == 1 and listed["scores"]["pass"]["value"] == 0.75
        (entry,) = (await call(client, "experiment_compare", names=["try"]))["experiments"]
        assert [c["path"] for c in entry["changes"]] == ["fix.py"] and entry["added"] == 1
        tagged = await call(client, "workspace_log", rev="try", meta=["experiment=try"])
        assert [c["message"] for c in tagged["commits"]] == ["fix"]
        picked = await call(client, "experiment_pick", name="try")
        assert picked["status"] == "merged" and picked["into"] == "main"
        assert "stopped already" in await call_error(client, "experiment_stop", name="try")
        main = await call(client, "workspace_read", path="fix.py")
        assert "fixed" in main["content"]

    run(finish, store)
