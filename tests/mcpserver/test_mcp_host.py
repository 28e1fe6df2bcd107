"""`helix mcp` as current hosts expect: output schemas and structured content, structured
errors, annotations, resources, prompts; through the SDK's client and the MCP
Inspector's CLI (from npm, started with npx: unreachable npm fails the test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_client import HELIX, LEXICAL, REPO, call, helix_mcp
from test_mcp_server import helix_cli

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path, work = tmp_path / "store", tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "app.py").write_text("def refresh_token():\n    return 'new'\n")
    assert helix_cli(path, "init").returncode == 0
    assert helix_cli(path, "import", str(work)).returncode == 0
    return path


def run(store: Path, test: Any, client_name: str | None = None) -> None:
    async def main() -> None:
        async with helix_mcp(
            "--store", str(store), cwd=store.parent, env=LEXICAL, client_name=client_name
        ) as client:
            await test(client)

    anyio.run(main)


def test_every_tool_declares_an_output_schema_and_returns_the_commands_document(
    store: Path,
) -> None:
    async def body(client: Any) -> None:
        tools = (await client.list_tools()).tools
        assert all(tool.output_schema and tool.output_schema["type"] == "object" for tool in tools)
        result = await client.call_tool("workspace_log", {"limit": 5})
        printed = json.loads(helix_cli(store, "--json", "log", "-n", "5").stdout)
        assert result.structured_content == {"commits": printed}
        assert json.loads(result.content[0].text) == result.structured_content

    run(store, body)


def test_errors_are_structured_with_kind_and_message(store: Path) -> None:
    async def body(client: Any) -> None:
        result = await client.call_tool("workspace_read", {"path": "missing.txt"})
        assert result.is_error
        error = result.structured_content["error"]
        assert error["kind"] == "NotFound" and "missing.txt" in error["message"]

    run(store, body)


def test_annotations_say_what_reads_and_what_destroys(store: Path) -> None:
    async def body(client: Any) -> None:
        tools = {tool.name: tool.annotations for tool in (await client.list_tools()).tools}
        for name in ("memory_search", "workspace_log", "workspace_read", "memory_resume"):
            assert tools[name].read_only_hint is True, name
        for name in ("memory_forget", "memory_purge", "workspace_reset_hard"):
            assert tools[name].destructive_hint is True, name
            assert tools[name].read_only_hint is False, name
        assert tools["memory_remember"].destructive_hint is False

    run(store, body)


def test_workspace_read_defaults_to_head(store: Path) -> None:
    async def body(client: Any) -> None:
        doc = await call(client, "workspace_read", path="src/app.py")
        assert doc["content"].startswith("def refresh_token")

    run(store, body)


def test_a_memory_written_through_mcp_is_the_clients(store: Path) -> None:
    async def body(client: Any) -> None:
        doc = await call(client, "memory_remember", text="Tokens refresh every hour")
        history = json.loads(helix_cli(store, "--json", "history", doc["id"]).stdout)
        assert history[0]["after"]["source_agent"] == "claude-code"

    run(store, body, client_name="claude-code")


def test_resources_memories_commits_files_and_the_checkpoint(store: Path) -> None:
    async def body(client: Any) -> None:
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        assert {
            "helix://memory/{id}",
            "helix://commit/{id}",
            "helix://file/{rev}/{+path}",
        } <= templates
        assert "helix://checkpoint" in {
            str(r.uri) for r in (await client.list_resources()).resources
        }
        file = await client.read_resource("helix://file/HEAD/src/app.py")
        assert file.contents[0].text.startswith("def refresh_token")
        head = json.loads(helix_cli(store, "--json", "log", "-n", "1").stdout)[0]
        commit = json.loads(
            (await client.read_resource(f"helix://commit/{head['id']}")).contents[0].text
        )
        assert commit["id"] == head["id"]
        memory = await call(client, "memory_remember", text="Deploys run on Fridays")
        read = await client.read_resource(f"helix://memory/{memory['id']}")
        assert json.loads(read.contents[0].text)["memory"]["content"] == "Deploys run on Fridays"
        await call(client, "memory_checkpoint", task="ship the hooks", next=["write the ADR"])
        checkpoint = (await client.read_resource("helix://checkpoint")).contents[0].text
        assert "ship the hooks" in checkpoint and "write the ADR" in checkpoint

    run(store, body)


def test_prompts_resume_and_brief(store: Path) -> None:
    async def body(client: Any) -> None:
        names = {p.name for p in (await client.list_prompts()).prompts}
        assert {"resume", "brief"} <= names
        await call(client, "memory_checkpoint", task="ship the hooks")
        await call(client, "memory_remember", text="The zanzibar cache is warm at nine")
        resume = await client.get_prompt("resume", {})
        assert "ship the hooks" in resume.messages[0].content.text
        brief = await client.get_prompt("brief", {"topic": "zanzibar"})
        assert "zanzibar" in brief.messages[0].content.text

    run(store, body)


def inspector(store: Path, *args: str) -> Any:
    """The MCP Inspector's CLI against `helix mcp`, as `npx` fetches it from npm."""
    npx = shutil.which("npx")
    assert npx is not None, "npx is not installed: the Inspector test cannot run"
    server = [*HELIX, "--store", str(store), "mcp"]
    env = {"PYTHONPATH": str(REPO), **LEXICAL}
    argv = [npx, "-y", "@modelcontextprotocol/inspector", "--cli"]
    argv += [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    done = subprocess.run(
        [*argv, *server, *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "npm_config_yes": "true"},
    )
    assert done.returncode == 0, f"the MCP Inspector failed (is npm reachable?): {done.stderr}"
    return json.loads(done.stdout)


def test_the_mcp_inspector_cli_lists_and_calls_tools(store: Path) -> None:
    listed = inspector(store, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"memory_search", "memory_remember", "workspace_read"} <= names
    assert all("outputSchema" in tool for tool in listed["tools"])
    called = inspector(
        store,
        "--method",
        "tools/call",
        "--tool-name",
        "workspace_read",
        "--tool-arg",
        "path=src/app.py",
    )
    assert called["structuredContent"]["content"].startswith("def refresh_token")
    read = inspector(store, "--method", "resources/read", "--uri", "helix://file/HEAD/src/app.py")
    assert read["contents"][0]["text"].startswith("def refresh_token")
    assert sys.executable  # the server ran under this interpreter (HELIX)
