"""`helix web`: the web view of a store (helixfs/web/, ADR 0058).

While the store is mounted, its daemon serves the view (it owns the store): `helix web`
asks it to through the control socket (the internal `web-serve` command, run by the
daemon on its own Repository and memory), prints the URL and returns. Otherwise this
process opens the store and serves in the foreground until Ctrl-C.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from helixfs.cli.command import add_command
from helixfs.cli.memory_held import lent_source
from helixfs.cli.output import Output
from helixfs.errors import HelixError, InvalidInput

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

DEFAULT_HOST = "127.0.0.1"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
EXPOSED = (
    "helix: warning: serving on {host}, not only this machine: whoever reaches it with the"
    " URL's token can read the store and change its memory (the traffic is not encrypted)"
)


def register(subparsers: Any) -> None:
    web = add_command(
        subparsers,
        "web",
        help="a local web view: branches, commits, diffs, files, memory, stats",
        store_handler=cmd_web,
        forward=False,
        data=False,
    )
    web.add_argument("--port", type=int, default=0, help="TCP port (default: any free one)")
    web.add_argument(
        "--host", default=DEFAULT_HOST, help="address to listen on (default 127.0.0.1 only)"
    )
    web.add_argument("--open", action="store_true", help="open the URL in a browser")
    serve = add_command(
        subparsers,
        "web-serve",
        help="(run by a mount's daemon for helix web)",
        handler=cmd_web_serve,
    )
    serve.add_argument("--port", type=int, default=0)
    serve.add_argument("--host", default=DEFAULT_HOST)


def cmd_web(args: argparse.Namespace, store: Path, out: Output) -> int:
    if args.host not in LOOPBACK:
        out.note(EXPOSED.format(host=args.host))
    asked = _ask_daemon(store, args)
    if asked is not None:
        url, note = asked
        out.line(url)
        if note:
            out.note(note)
        _open_browser(args, url, out)
        return 0
    return _serve_here(args, store, out)


def _ask_daemon(store: Path, args: argparse.Namespace) -> tuple[str, str] | None:
    """(url, note) from the mount's daemon serving the view; None when none runs."""
    from helixfs.daemon.control import forward

    argv = ["web-serve", "--json", "--host", args.host, "--port", str(args.port)]
    stdout, stderr = io.StringIO(), io.StringIO()
    code = forward(store, argv, stdout, stderr)
    if code is None:
        return None
    if code != 0:
        sys.stderr.write(stderr.getvalue())
        raise HelixError(f"the mount's daemon could not serve the web view (exit {code})")
    doc = json.loads(stdout.getvalue())
    note = f"served by the mount's daemon (pid {doc['pid']})"
    if doc.get("already"):
        note += ", which was serving it already at this URL"
    return str(doc["url"]), note


def _serve_here(args: argparse.Namespace, store: Path, out: Output) -> int:
    """Open the store and serve until Ctrl-C. Meanwhile this process owns the store, as
    a mount's daemon does: it answers the control socket, so the CLI works on."""
    from helixfs.cli.main import open_repository, run_in_process
    from helixfs.cli.memory import MEMORY_DB, process_embedder
    from helixfs.daemon.control_server import ControlServer
    from helixfs.daemon.control_thread import ControlThread
    from helixfs.memory import KeptOpen
    from helixfs.web.server import serve_foreground
    from helixfs.web.site import Site

    store = Path(os.path.realpath(store))  # the control socket's commands chdir
    repo = open_repository(store)
    memory = KeptOpen(store / MEMORY_DB, lambda: process_embedder(store))
    owner = f"helix web (pid {os.getpid()})"

    def run(argv: list[str], stdout: TextIO, stderr: TextIO) -> int:
        return run_in_process(argv, repo, stdout, stderr, memory, owner)

    control = ControlServer(store, run)
    try:
        commands = ControlThread(control).start()
        try:

            def ready(url: str) -> None:
                out.line(url)
                out.note(f"serving {store} until Ctrl-C (helix commands go through it)")
                out.stdout.flush()
                _open_browser(args, url, out)

            serve_foreground(Site(repo, memory, store), args.host, args.port, ready)
        finally:
            commands.stop()
    finally:
        memory.close()
        repo.close()
    return 0


def _open_browser(args: argparse.Namespace, url: str, out: Output) -> None:
    if not args.open:
        return
    import webbrowser

    if not webbrowser.open(url):
        out.note("helix: no browser found here: open the URL above yourself")


def cmd_web_serve(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    """In a mount's daemon: start (or find) its web server, print its URL."""
    from helixfs.web.server import serve_in_thread
    from helixfs.web.site import Site
    from helixfs.web.sizes import FILE_NAME as SIZES_FILE
    from helixfs.web.sizes import SizeSamples

    if not getattr(args, "in_daemon", False) or repo.path is None:
        raise InvalidInput("web-serve is run by a mount's daemon for `helix web`: use that")
    site = Site(repo, lent_source(repo.path), repo.path)
    site.sizes = SizeSamples(repo, repo.path / SIZES_FILE, holds_mount=True)
    server, already = serve_in_thread(site, args.host, args.port)
    out.emit({"url": server.url, "pid": os.getpid(), "already": already}, server.url)
    return 0
