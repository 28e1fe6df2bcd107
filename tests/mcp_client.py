"""Drive `helix mcp` with the mcp SDK's own client, as an agent's host would."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import Implementation

REPO = Path(__file__).resolve().parents[1]
HELIX = [sys.executable, "-m", "helixfs.cli.main"]


@asynccontextmanager
async def helix_mcp(
    *global_args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    client_name: str | None = None,
) -> AsyncIterator[Client]:
    """A `helix mcp` server in a child process, over stdio (its stderr: ours)."""
    params = StdioServerParameters(
        command=HELIX[0],
        args=[*HELIX[1:], *global_args, "mcp"],
        cwd=cwd,
        # the SDK passes on only a few variables (PATH, HOME...): the rest is explicit
        env={"PYTHONPATH": str(REPO), "HELIX_AUTHOR": "tester", **(env or {})},
    )
    info = Implementation(name=client_name, version="1") if client_name else None
    async with Client(params, read_timeout_seconds=60, client_info=info) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {error_text(result)}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> str:
    """A tool error's message; fails the test if the call succeeded."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded: {result.structured_content}"
    return error_text(result)


def error_text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def contents(hits: Sequence[dict[str, Any]]) -> list[str]:
    return [str(hit.get("content", "")) for hit in hits]


LEXICAL = {"HELIX_MEMORY_LEXICAL": "1"}  # no model load: the tests are about the surface
