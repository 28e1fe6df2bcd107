"""Agent host commands: connect (register `helix mcp` in a host), hooks (Claude Code's
hook entries), hook (answer one hook event).

connect and hooks edit the user's own config files, in the user's project and home, so
they always run in this process (never forwarded to a mount's daemon). `hook` is
forwarded: the daemon answers it with its warm memory (ADR 0052).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from helixfs.agents import hosts
from helixfs.cli.command import UsageError, add_command
from helixfs.cli.output import Output, table


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "connect",
        help="register HelixFS's MCP server in an agent host's config",
        store_handler=cmd_connect,
        forward=False,
    )
    p.add_argument("host", nargs="?", choices=tuple(hosts.HOSTS), help="the agent host")
    p.add_argument("--scope", choices=hosts.SCOPES, default="project")
    p.add_argument("--remove", action="store_true", help="take the entry out again")
    p.add_argument("--list", action="store_true", help="where HelixFS is registered")
    p.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
    p.add_argument("--project", metavar="DIR", help="the project's root (default: the cwd)")


def _project(args: argparse.Namespace) -> Path:
    return Path(args.project).expanduser().absolute() if args.project else Path.cwd()


def cmd_connect(args: argparse.Namespace, store: Path, out: Output) -> int:
    project, home = _project(args), Path.home()
    if args.list:
        rows = hosts.registrations(project, home)
        out.emit({"registrations": rows}, lambda: _registration_table(rows))
        return 0
    if args.host is None:
        raise UsageError("connect: name a host, or use --list")
    host = hosts.host_named(args.host)
    path = host.path(args.scope, project, home)
    entry = None if args.remove else hosts.server_entry(host, store.absolute())
    change = hosts.plan(host, path, entry)
    if not args.dry_run:
        change.write()
    doc = {
        "host": host.name,
        "scope": args.scope,
        "path": str(path),
        "action": "remove" if args.remove else "add",
        "changed": change.changes_anything,
        "written": change.changes_anything and not args.dry_run,
        "entry": entry,
        "diff": change.diff(),
    }
    out.emit(doc, lambda: _connect_human(doc, args.dry_run))
    return 0


def _connect_human(doc: dict[str, Any], dry_run: bool) -> str:
    if not doc["changed"]:
        state = "not registered" if doc["action"] == "remove" else "already registered"
        return f"{doc['host']}: {state} in {doc['path']} (nothing to change)"
    if dry_run:
        return str(doc["diff"]).rstrip("\n")
    verb = "removed from" if doc["action"] == "remove" else "registered in"
    return f"{doc['host']}: HelixFS {verb} {doc['path']}"


def _registration_table(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        if row.get("error"):
            state = "unreadable"
        elif row["registered"]:
            state = " ".join([row["entry"].get("command", "?"), *row["entry"].get("args", [])])
        else:
            state = "-"
        lines.append((row["host"], row["scope"], row["path"], state))
    return table(lines, ("HOST", "SCOPE", "FILE", "HELIXFS"))
