"""`helix mcp`: serve the store's memory and history as MCP tools over stdio."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from helixfs.cli.command import add_command
from helixfs.cli.output import Output
from helixfs.errors import NotFound


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "mcp",
        help="serve memory and history as MCP tools on stdin/stdout, for an agent",
        store_handler=cmd_mcp,
        data=False,
        forward=False,  # a long-lived server of its own: each tool call is forwarded
    )


def cmd_mcp(args: argparse.Namespace, store: Path, out: Output) -> int:
    from helixfs.cli.main import run
    from helixfs.mcp.server import serve

    if not store.is_dir():
        raise NotFound(f"no HelixFS store at {store} (create one with: helix init {store})")
    store = store.resolve()  # the tools' command lines hold on to it, whatever the cwd

    def run_command(argv: Sequence[str]) -> tuple[int, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        status = run(["--store", str(store), *argv], stdout, stderr)
        return status, stdout.getvalue(), stderr.getvalue()

    serve(run_command)
    return 0
