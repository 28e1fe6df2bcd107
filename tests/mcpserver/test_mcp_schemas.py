"""Every MCP tool's structured content satisfies the output schema it declares: each
tool called through the mcp SDK's client, its result checked with jsonschema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp_client import LEXICAL, call, helix_mcp
from test_mcp_server import helix_cli

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path, work = tmp_path / "store", tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "app.py").write_text("def refresh_token():\n    return 'new'\n")
    assert helix_cli(path, "init").returncode == 0
    assert helix_cli(path, "import", str(work)).returncode == 0
    (work / "src" / "app.py").write_text("def refresh_token():\n    return 'newer'\n")
    assert helix_cli(path, "import", str(work)).returncode == 0
    return path


def calls(memory_id: str, other_id: str) -> list[tuple[str, dict[str, Any]]]:
    """A call of every tool, in an order where each one finds what it needs."""
    return [
        ("memory_search", {"query": "refresh token"}),
        ("memory_search", {"query": "refresh token", "workspace": False}),
        ("memory_context", {"query": "refresh token", "budget": 200}),
        ("memory_context", {}),
        ("memory_list", {}),
        ("memory_list", {"stale": True}),
        ("memory_history", {"id": memory_id}),
        ("memory_brief", {"topic": "token"}),
        ("memory_checkpoint", {"task": "schemas", "next": ["merge"]}),
        ("memory_resume", {}),
        ("memory_relate", {"a": memory_id, "b": other_id, "relation": "explains"}),
        ("memory_confirm", {"id": memory_id}),
        ("workspace_log", {"limit": 3}),
        ("workspace_log", {"lost": True}),
        ("workspace_diff", {"a": "HEAD~1", "b": "HEAD"}),
        ("workspace_diff", {"a": "HEAD~1", "name_status": True}),
        ("workspace_ls", {"path": "src"}),
        ("workspace_read", {"path": "src/app.py", "max_chars": 5}),
        ("workspace_refs", {}),
        ("workspace_branch_create", {"name": "side"}),
        ("memory_remember", {"text": "the side banner is hidden", "branch": "side"}),
        ("memory_search", {"query": "side banner", "branch": "side", "workspace": False}),
        ("workspace_snapshot_create", {"name": "before"}),
        ("workspace_merge", {"branch": "side"}),
        ("workspace_checkout", {"branch": "side"}),
        ("workspace_checkout", {"branch": "main"}),
        ("workspace_reset_hard", {"rev": "HEAD"}),
        ("experiment_start", {"name": "try"}),
        ("experiment_score", {"name": "try", "value": 0.5}),
        ("experiment_list", {}),
        ("experiment_compare", {"names": ["try"]}),
        ("experiment_stop", {"name": "try"}),
        ("experiment_pick", {"name": "try"}),
        ("memory_forget", {"target": other_id}),
        ("memory_purge", {"id": other_id}),
    ]


def test_every_tools_structured_content_validates_against_its_output_schema(
    store: Path,
) -> None:
    async def main() -> None:
        async with helix_mcp("--store", str(store), cwd=store.parent, env=LEXICAL) as client:
            schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            first = await call(
                client,
                "memory_remember",
                text="refresh_token returns the new token",
                source="src/app.py:1",
            )
            second = await call(client, "memory_remember", text="tokens are signed by hmac")
            checked = {"memory_remember": [first, second]}
            for tool, arguments in calls(first["id"], second["id"]):
                checked.setdefault(tool, []).append(await call(client, tool, **arguments))
            for tool, docs in checked.items():
                for doc in docs:
                    jsonschema.validate(doc, schemas[tool])
            assert set(checked) == set(schemas), set(schemas) - set(checked)
            on_side = checked["memory_remember"][-1]["memory"]
            assert on_side["branch"] == "side"
            assert checked["memory_search"][-1]["hits"][0]["id"] == on_side["id"]
            assert all(schemas[name]["properties"] for name in schemas)

    anyio.run(main)


def test_a_stale_memory_says_so_in_its_schema(store: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"

    async def main() -> None:
        async with helix_mcp("--store", str(store), cwd=store.parent, env=LEXICAL) as client:
            schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            made = await call(
                client, "memory_remember", text="refresh_token returns newer", source="src/app.py"
            )
            (work / "src" / "app.py").write_text("def refresh_token():\n    return 'newest'\n")
            assert helix_cli(store, "import", str(work)).returncode == 0
            found = await call(client, "memory_search", query="refresh_token newer")
            jsonschema.validate(found, schemas["memory_search"])
            (hit,) = [h for h in found["hits"] if h["id"] == made["id"]]
            assert hit["stale"]["how"] == "changed"
            listed = await call(client, "memory_list", stale=True)
            jsonschema.validate(listed, schemas["memory_list"])
            assert [m["id"] for m in listed["memories"]] == [made["id"]]

    anyio.run(main)
