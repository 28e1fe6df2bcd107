"""`helix mcp`: serve the store's memory and history as MCP tools over stdio."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import add_command
from helixfs.cli.memory_held import holding
from helixfs.cli.output import Output
from helixfs.errors import NotFound

if TYPE_CHECKING:
    from helixfs.mcp.server import CommandRunner
    from helixfs.memory import KeptOpen


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
    from helixfs.cli.memory import MEMORY_DB, process_embedder
    from helixfs.daemon.wire import socket_path
    from helixfs.mcp.server import serve
    from helixfs.memory import KeptOpen

    if not store.is_dir():
        raise NotFound(f"no HelixFS store at {store} (create one with: helix init {store})")
    store = store.resolve()  # the tools' command lines hold on to it, whatever the cwd
    memory = KeptOpen(store / MEMORY_DB, lambda: process_embedder(store))
    if not socket_path(store).exists():  # no daemon to forward to: load while the
        memory.open_in_background()  # client initializes (answered at once meanwhile)
    try:
        serve(tool_runner(store, memory))
    finally:
        memory.close()
    return 0


def tool_runner(store: Path, memory: KeptOpen) -> CommandRunner:
    """How the server runs a tool's command line: as `helix --store STORE ...`, with
    `memory` kept open between calls for its warm vector indexes (while a mount's
    daemon owns the store, the commands run there, on the daemon's memory)."""
    from helixfs.cli.main import run

    def run_command(argv: Sequence[str]) -> tuple[int, str, str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        with holding(store, memory):
            status = run(["--store", str(store), *argv], stdout, stderr)
        return status, stdout.getvalue(), stderr.getvalue()

    return run_command
