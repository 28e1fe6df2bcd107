"""`helix`: argparse front end, store resolution, daemon forwarding and error mapping.

Each command group lives in its own module listed in COMMAND_MODULES and exposes
`register(subparsers)` (see cli/command.py). Command handlers never print errors or call
`sys.exit`: they return an exit status or raise a HelixError, which is mapped here to one
line on stderr and exit 1. Usage errors exit 2. The same dispatch runs in the daemon
through `run_in_process`, so output and exit codes are identical with or without a mount.
"""

from __future__ import annotations

import argparse
import contextvars
import importlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from helixfs import __version__
from helixfs.cli.command import MOUNT_OWNER, UsageError, path_argument
from helixfs.cli.memory_held import MemorySource, holding
from helixfs.cli.output import Output, shown
from helixfs.cli.store_path import resolve_store, tree_place
from helixfs.errors import HelixError, NotFound

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

# One line per command group. Memory and daemon engineers: add yours here.
COMMAND_MODULES: tuple[str, ...] = (
    "helixfs.cli.repo",  # init, stats, gc, fsck
    "helixfs.cli.config",  # config
    "helixfs.cli.history",  # log, diff, ls, cat, rev-parse
    "helixfs.cli.refs",  # branch, snapshot, checkout, reset, merge
    "helixfs.cli.commits",  # show, revert, cherry-pick, blame, status
    "helixfs.cli.experiments",  # experiment
    "helixfs.cli.transfer",  # import, export, commit
    "helixfs.cli.demo",  # demo
    "helixfs.cli.memory",  # remember, recall, context, forget, memories, relate, ...
    "helixfs.cli.mount",  # mount, umount
    "helixfs.cli.strand",  # dna
    "helixfs.cli.remote",  # remote, clone, push, fetch, pull
    "helixfs.cli.mcp",  # mcp
    "helixfs.cli.web",  # web, web-serve
    "helixfs.cli.agents",  # connect, hooks, hook
)

# Which module registers each command, so that `helix log` imports only the module of
# `log` (the memory engine's imports alone cost ~0.3 s per call). Not a second registry:
# a command missing here still works (main then imports every module), and
# tests/cli/test_main.py checks that every entry names the module that registers it.
COMMAND_INDEX: dict[str, str] = {
    **dict.fromkeys(("init", "stats", "gc", "fsck"), "helixfs.cli.repo"),
    "config": "helixfs.cli.config",
    **dict.fromkeys(("log", "diff", "ls", "cat", "rev-parse"), "helixfs.cli.history"),
    **dict.fromkeys(("branch", "snapshot", "checkout", "reset", "merge"), "helixfs.cli.refs"),
    **dict.fromkeys(("show", "revert", "cherry-pick", "blame", "status"), "helixfs.cli.commits"),
    **dict.fromkeys(("import", "export", "commit"), "helixfs.cli.transfer"),
    "demo": "helixfs.cli.demo",
    "experiment": "helixfs.cli.experiments",
    **dict.fromkeys(
        ("remember", "relate", "recall", "context", "memories", "history", "forget", "edit")
        + ("confirm", "memory")
        + ("rollback", "purge", "archive", "checkpoint", "resume", "brief"),
        "helixfs.cli.memory",
    ),
    **dict.fromkeys(("mount", "umount", "unmount"), "helixfs.cli.mount"),
    "dna": "helixfs.cli.strand",
    **dict.fromkeys(("remote", "clone", "push", "fetch", "pull"), "helixfs.cli.remote"),
    "mcp": "helixfs.cli.mcp",
    **dict.fromkeys(("web", "web-serve"), "helixfs.cli.web"),
    **dict.fromkeys(("connect", "hooks", "hook"), "helixfs.cli.agents"),
}
_GLOBAL_WITH_VALUE = ("--store",)

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it

_streams: contextvars.ContextVar[tuple[TextIO, TextIO]] = contextvars.ContextVar("streams")


class _ParserExit(Exception):
    def __init__(self, status: int, error: str | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.error = error  # a usage error's message


class HelixArgumentParser(argparse.ArgumentParser):
    """Writes to the streams of the current call and raises instead of exiting, so that
    a daemon can parse a forwarded command line without dying on `--help` or a typo."""

    def _print_message(self, message: str, file: Any = None) -> None:
        if not message:
            return
        stdout, stderr = _streams.get((sys.stdout, sys.stderr))
        (stderr if file is sys.stderr else stdout).write(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._print_message(message, sys.stderr)
        raise _ParserExit(status)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self._print_message(f"{self.prog}: error: {message}\n", sys.stderr)
        raise _ParserExit(EXIT_USAGE, message)


def build_parser(modules: Sequence[str] = COMMAND_MODULES) -> HelixArgumentParser:
    parser = HelixArgumentParser(
        prog="helix",
        description="HelixFS: a versioned filesystem with long-term memory for AI agents.",
    )
    parser.add_argument(
        "--store", metavar="PATH", type=path_argument, help="store folder (default: see README)"
    )
    parser.add_argument(
        "--json", action="store_true", dest="json_global", help="print one JSON document"
    )
    parser.add_argument("--version", action="version", version=f"helix {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in modules:
        importlib.import_module(name).register(subparsers)
    return parser


@contextmanager
def _using_streams(stdout: TextIO, stderr: TextIO) -> Iterator[None]:
    token = _streams.set((stdout, stderr))
    try:
        yield
    finally:
        _streams.reset(token)


def modules_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The one module needed for argv's command, or all of them (help, unknown, none)."""
    expect_value = False
    for arg in argv:
        if expect_value:
            expect_value = False
        elif arg in _GLOBAL_WITH_VALUE:
            expect_value = True
        elif arg.startswith("--store="):
            continue
        elif arg.startswith("-"):
            if arg in ("-h", "--help", "--version"):
                return COMMAND_MODULES
        else:
            module = COMMAND_INDEX.get(arg)
            return (module,) if module in COMMAND_MODULES else COMMAND_MODULES
    return COMMAND_MODULES


# The parser of `helix hook`, kept by a long-lived process (the daemon): building it
# costs ~2-4 ms (argparse's formatters, gettext), as much as a hook's whole answer
# there. Only for modules whose options have no mutable default: argparse hands the
# default list itself to every parse (a `nargs="*"` left empty), and `_intermix`
# extends it. The lock keeps worker threads from parsing with it at once.
_KEPT_MODULES = ("helixfs.cli.agents",)
_KEPT_PARSERS: dict[tuple[str, ...], HelixArgumentParser] = {}
_KEPT_LOCK = threading.Lock()


def _parse(argv: Sequence[str], *, keep: bool = False) -> argparse.Namespace:
    modules = modules_for(argv)
    if keep and modules == _KEPT_MODULES:
        with _KEPT_LOCK:
            parser = _KEPT_PARSERS.get(modules)
            if parser is None:
                parser = _KEPT_PARSERS[modules] = build_parser(modules)
            return _parsed(parser, argv)
    return _parsed(build_parser(modules), argv)


def _parsed(parser: HelixArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    args, extra = parser.parse_known_args(list(argv))
    _intermix(parser, args, extra)
    args.json = bool(getattr(args, "json", False) or args.json_global)
    args.store = getattr(args, "store_after", None) or args.store
    return args


def _intermix(parser: HelixArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Positionals after an option (`commit -m m a=x --delete b c=y`) join the command's
    list: argparse takes positionals in one run, and parse_intermixed_args cannot
    handle subcommands."""
    dest = getattr(args, "intermixed", None)
    if dest and extra and not any(arg.startswith("-") for arg in extra):
        getattr(args, dest).extend(extra)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")


def _report(err: BaseException, out: Output) -> int:
    if isinstance(err, BrokenPipeError):  # the reader went away: main() exits quietly
        raise err
    message = str(err) or type(err).__name__
    out.stderr.write(f"helix: error: {shown(message)}\n")  # raw bytes (a path) as \xNN: ADR 0020
    status = EXIT_USAGE if isinstance(err, UsageError) else EXIT_ERROR
    if not out.emitted:
        out.emit_error(type(err).__name__, message, status)
    return status


def _interrupted(out: Output, message: str) -> int:
    """Ctrl-C: one line on stderr and, under --json, an error document like any failure."""
    out.stderr.write(f"helix: {message}\n")
    if not out.emitted:
        out.emit_error("Interrupted", message, EXIT_INTERRUPTED)
    return EXIT_INTERRUPTED


def _usage_failure(stop: _ParserExit, argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """argparse has printed the usage error; a caller that asked for JSON gets it as one
    document too (argv is not parsed: `--json` anywhere counts)."""
    if stop.error is not None and "--json" in argv:
        Output(stdout, stderr, as_json=True).emit_error("UsageError", stop.error, stop.status)
    return stop.status


def _dispatch(args: argparse.Namespace, repo: Repository, store: Path, out: Output) -> int:
    if args.store_handler is not None:
        return int(args.store_handler(args, store, out))
    return int(args.handler(args, repo, out))


def run_in_process(
    argv: Sequence[str],
    repo: Repository,
    stdout: TextIO,
    stderr: TextIO,
    memory: MemorySource | None = None,
    owner: str = MOUNT_OWNER,
) -> int:
    """Run one command line against an already open repository (the daemon's), and its
    open memory if it has one. `owner` names the process that holds it, as a command
    tells the user what it changed there (`helix config set`).

    Never raises for user errors and never exits the process: returns the exit status.
    """
    with _using_streams(stdout, stderr):
        try:
            args = _parse(argv, keep=True)
        except _ParserExit as stop:
            return _usage_failure(stop, argv, stdout, stderr)
        args.in_daemon = True  # no terminal, no stdin: the client's stay with the client
        args.daemon_repo = repo  # for a store handler that reads it if it is open (hook)
        args.daemon_owner = owner
        out = Output(stdout, stderr, as_json=args.json)
        store = repo.path or Path()
        try:
            with _in_place(args, repo, repo.path), _lent(store, memory):  # in the client's cwd
                return _dispatch(args, repo, store, out)
        except (HelixError, OSError) as err:
            return _report(err, out)


def _lent(store: Path, memory: MemorySource | None) -> AbstractContextManager[None]:
    return holding(store, memory) if memory is not None else nullcontext()


def _forward(store: Path, argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int | None:
    """Hand the command line to the daemon owning `store`, if one runs (ADR 0002)."""
    from helixfs.daemon.control import forward  # here: trio is slow to import

    return forward(store, list(argv), stdout, stderr)


def open_repository(store: Path) -> Repository:
    from helixfs.vcs.repo import Repository

    if not store.is_dir():
        raise NotFound(f"no HelixFS store at {store} (create one with: helix init {store})")
    return Repository.open(store)


def _run_local(args: argparse.Namespace, argv: Sequence[str], out: Output) -> int:
    store = resolve_store(args.store)
    if args.forward:
        forwarded = _forward(store, _without_store_option(argv), out.stdout, out.stderr)
        if forwarded is not None:
            return forwarded
    if args.store_handler is not None:
        return int(args.store_handler(args, store, out))
    repo = open_repository(store)
    try:
        with _in_place(args, repo, store):
            return int(args.handler(args, repo, out))
    finally:
        repo.close()


@contextmanager
def _in_place(args: argparse.Namespace, repo: Repository, store: Path | None) -> Iterator[None]:
    """A command run in a mount of its store: PATH arguments start from the folder of
    the tree it runs in, and in a branch's (snapshot's, commit's) folder HEAD is that
    branch (ADR 0039)."""
    try:
        place = tree_place(store, Path.cwd()) if store is not None else None
    except OSError:  # a deleted cwd
        place = None
    args.tree_folder = place.folder if place is not None else b""
    with repo.heading(place.head if place is not None else None):
        yield


def _without_store_option(argv: Sequence[str]) -> list[str]:
    """The daemon already knows its store; a relative `--store` would mean nothing there."""
    result: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--store":
            skip = True
        elif not arg.startswith("--store="):
            result.append(arg)
    return result


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Parse, resolve the store, forward or open it, run the command, map errors."""
    with _using_streams(stdout, stderr):
        try:
            args = _parse(argv)
        except _ParserExit as stop:
            return _usage_failure(stop, argv, stdout, stderr)
        out = Output(stdout, stderr, as_json=args.json)
        try:
            return _run_local(args, argv, out)
        except (HelixError, OSError) as err:
            return _report(err, out)
        except KeyboardInterrupt as stop:  # a forwarded command's says what became of it
            return _interrupted(out, str(stop) or "interrupted")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        status = run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
        sys.stdout.flush()
    except KeyboardInterrupt:  # before `run` has its streams (parsing, imports)
        sys.stderr.write("helix: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `helix log | head`: the reader left, that is fine
        _silence_stdout()
        return EXIT_OK
    return status


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
