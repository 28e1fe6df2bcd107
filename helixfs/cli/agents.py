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
    register_hooks(subparsers)


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


def register_hooks(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "hooks",
        help="install, show or remove HelixFS's Claude Code hooks",
        store_handler=cmd_hooks,
        forward=False,
    )
    p.add_argument("action", choices=("install", "status", "uninstall"))
    p.add_argument("--scope", choices=hosts.SCOPES, default="project")
    p.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
    p.add_argument("--project", metavar="DIR", help="the project's root (default: the cwd)")
    p = add_command(
        subparsers,
        "hook",
        help="answer one Claude Code hook event (JSON on stdin, JSON out; always exit 0)",
        store_handler=cmd_hook,
        data=False,
    )
    p.add_argument("event", help="SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, ...")
    p.add_argument("--input", help="the event's JSON (default: read from stdin)")
    # a mount's daemon, as it starts: import what a hook runs, answer nothing
    p.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)


def cmd_hooks(args: argparse.Namespace, store: Path, out: Output) -> int:
    from helixfs.agents import claude_hooks, hook_binary

    path = claude_hooks.settings_path(args.scope, _project(args), Path.home())
    if args.action == "status":
        doc = claude_hooks.status(path)
        out.emit(doc, lambda: _hooks_table(doc))
        return 0
    target = store.absolute() if args.action == "install" else None
    binary = None
    if target is not None:  # a dry run builds nothing: it shows a launcher already built
        binary = hook_binary.existing() if args.dry_run else hook_binary.build()
    change = claude_hooks.plan(path, target, binary)
    if not args.dry_run:
        change.write()
    doc = {
        "path": str(path),
        "action": args.action,
        "changed": change.changes_anything,
        "written": change.changes_anything and not args.dry_run,
        "diff": change.diff(),
    }
    out.emit(doc, lambda: _hooks_human(doc, args.dry_run))
    return 0


def _hooks_human(doc: dict[str, Any], dry_run: bool) -> str:
    if dry_run and doc["changed"]:
        return str(doc["diff"]).rstrip("\n")
    if not doc["changed"]:
        return f"nothing to change in {doc['path']}"
    verb = "installed in" if doc["action"] == "install" else "removed from"
    return f"HelixFS hooks {verb} {doc['path']}"


def _hooks_table(doc: dict[str, Any]) -> str:
    rows = [(event, "installed" if cmd else "-") for event, cmd in doc["events"].items()]
    launcher = f"\nlauncher: {doc['launcher']}" if doc["launcher"] else ""
    return f"{doc['path']}\n" + table(rows, ("EVENT", "HELIXFS")) + launcher


def cmd_hook(args: argparse.Namespace, store: Path, out: Output) -> int:
    """Never fails the agent's step: any error is logged (STORE/hooks.log), exit 0."""
    import json
    import sys

    from helixfs.cli.hook_forward import log

    if args.warm:
        _warm()
        return 0
    try:
        payload = json.loads(args.input if args.input is not None else sys.stdin.read())
        if not isinstance(payload, dict):
            raise ValueError("the hook's input is not a JSON object")
        result = _hook_answer(args, store, payload)
    except Exception as err:  # noqa: BLE001 - logged, never raised at the agent
        log(str(store), args.event, f"{type(err).__name__}: {err}")
        return 0
    if result is not None:
        out.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    return 0


def _warm() -> None:
    """What a forwarded hook imports on its first call (~15 ms at a mount's first
    SessionStart): the handlers, the reader that answers until the daemon's memory is
    open, the ranking, the branch view. The daemon runs this as it mounts (ADR 0083)."""
    import helixfs.agents.hooks
    import helixfs.cli.memory_view
    import helixfs.memory.reader
    import helixfs.memory.tree
    import helixfs.memory.when
    import helixfs.vcs.sourceview  # noqa: F401


def _hook_answer(args: argparse.Namespace, store: Path, payload: dict[str, Any]) -> Any:
    from contextlib import ExitStack

    from helixfs.agents import hooks
    from helixfs.agents.context import World
    from helixfs.cli.memory_held import held_memory

    if not store.is_dir():
        raise FileNotFoundError(f"no HelixFS store at {store}")
    with ExitStack() as stack:
        memory = held_memory(store)
        if memory is None:  # no daemon: lexical, no model load for a hook
            from helixfs.memory import Memory

            memory = stack.enter_context(Memory.open(store / "memory.db", None, warn_lexical=False))
        in_daemon = getattr(args, "in_daemon", False)
        world = World(
            store, memory, _repository_opener(args, store, stack), not in_daemon, _view_of(args)
        )
        if in_daemon:
            _add_file_head(payload, store, args.daemon_repo)
        return hooks.answer(args.event, payload, world)


def _add_file_head(payload: dict[str, Any], store: Path, repo: Any) -> None:
    """The head of the file a Read/Edit/Write names, from the branch's tree: a daemon
    must not read its own mount through the kernel (its FUSE loop would wait on itself)."""
    from helixfs.agents.ambient import FILE_HEAD_KEY, HEAD_BYTES, WRITING_TOOLS
    from helixfs.cli.store_path import tree_place
    from helixfs.errors import HelixError

    tool_input = payload.get("tool_input")
    if payload.get("tool_name") not in ("Read", *WRITING_TOOLS) or not isinstance(tool_input, dict):
        return
    path = tool_input.get("file_path")
    place = tree_place(store, Path(path)) if isinstance(path, str) else None
    if place is None or not place.folder:
        return
    try:
        with repo.heading(place.head):
            data: bytes = repo.read("HEAD", place.folder)
    except HelixError:
        return  # a new file, a folder: no head
    payload[FILE_HEAD_KEY] = data[:HEAD_BYTES].decode("utf-8", "replace")


def _view_of(args: argparse.Namespace) -> Any:
    """The branch the hook runs in (its cwd's, set by the daemon), made on first use. In
    the daemon only: with no mount there is no branch folder, and opening the store for
    each hook would cost more than its budget (memory is then read as the trunk's)."""
    made: list[Any] = []

    def view() -> Any:
        repo = getattr(args, "daemon_repo", None)
        if repo is None:
            return None
        if not made:
            from helixfs.cli.memory_view import view_of
            from helixfs.errors import HelixError

            try:
                made.append(view_of(repo, None, settle=False))
            except HelixError:
                made.append(None)
        return made[0]

    return view


def _repository_opener(args: argparse.Namespace, store: Path, stack: Any) -> Any:
    """The daemon's repository, else one opened on first use (None if it cannot be:
    another process holds the store; the hook answers from memory alone)."""
    opened: list[Any] = []

    def repository() -> Any:
        if getattr(args, "daemon_repo", None) is not None:
            return args.daemon_repo
        if not opened:
            from helixfs.cli.main import open_repository
            from helixfs.errors import HelixError

            try:
                opened.append(stack.enter_context(open_repository(store)))
            except HelixError:
                opened.append(None)
        return opened[0]

    return repository
