"""How a command group declares its commands (imported by every `cli/<group>.py`).

A group module exposes `register(subparsers)` and calls `add_command` once per command.
Two kinds of handler exist, both plain functions so that the daemon can run them in its
own process (ADR 0002):

- `handler(args, repo, out) -> int` for commands working on an open `Repository`;
- `store_handler(args, store_path, out) -> int` for commands that must not open the
  repository in this process (`init`, `mount`) or work on other files of the store
  (the memory database). Under the daemon, `store_path` is the daemon's store.

`data=True` adds `--json` (one JSON document on stdout). `forward=False` keeps the
command in this process even when a daemon owns the store (`mount`, `init`).
"""

from __future__ import annotations

import argparse
import base64
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.output import Output
from helixfs.errors import InvalidInput

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

# Who runs a forwarded command (`args.daemon_owner`), as its messages name it.
MOUNT_OWNER = "the running mount"

Handler = Callable[[argparse.Namespace, "Repository", Output], int]
StoreHandler = Callable[[argparse.Namespace, Path, Output], int]


class UsageError(InvalidInput):
    """A command line that makes no sense as given: exit 2, like argparse's own errors."""


def path_argument(text: str) -> str:
    """argparse `type` of a folder or file argument: "" is a mistake, not `.` (which is
    what Path("") means), so it is a usage error rather than the current directory."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path is not a path")
    return text


def add_path_b64(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--path-b64",
        action="store_true",
        help="repository PATHs are given as base64 of their bytes (--json's bytes_b64)",
    )


def repo_path(text: str, args: argparse.Namespace) -> bytes:
    """A repository path from the command line, as the bytes the tree stores.

    As with git, a path is relative to the folder of the tree the command runs in, in a
    mount (`args.tree_folder`, set by main), and `/` starts it at the root. Raw bytes in
    argv round-trip through os.fsencode; `--path-b64` takes the form --json prints, from
    the root, for a name that is not UTF-8, for callers that can only pass text
    (ADR 0020)."""
    if not getattr(args, "path_b64", False):
        return tree_path(os.fsencode(text), getattr(args, "tree_folder", b""))
    try:  # whitespace ignored: `base64` wraps its output at 76 characters
        return base64.b64decode("".join(text.split()), validate=True)
    except ValueError:  # binascii.Error is one
        raise UsageError(f"--path-b64: {text!r} is not base64") from None


def tree_path(path: bytes, folder: bytes) -> bytes:
    """`path` from the tree's root: relative to `folder` unless it starts with `/`,
    with `.` and `..` resolved as a shell would (`..` never above the root)."""
    parts: list[bytes] = []
    for part in (path if path.startswith(b"/") else folder + b"/" + path).split(b"/"):
        if part == b"..":
            if not parts:
                raise InvalidInput(f"{os.fsdecode(path)!r} leads above the root of the tree")
            parts.pop()
        elif part not in (b"", b"."):
            parts.append(part)
    return b"/".join(parts)


def add_command(
    subparsers: Any,
    name: str,
    *,
    help: str,
    handler: Handler | None = None,
    store_handler: StoreHandler | None = None,
    data: bool = True,
    forward: bool = True,
    progress: bool = False,
    aliases: Sequence[str] = (),
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Create the subparser for `name` and attach its handler and properties."""
    if (handler is None) == (store_handler is None):
        raise TypeError(f"command {name!r}: give exactly one of handler / store_handler")
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name, help=help, description=description or help, aliases=list(aliases)
    )
    # `helix log --store S` works like `helix --store S log` (agents write both)
    parser.add_argument(
        "--store", dest="store_after", metavar="PATH", type=path_argument, help=argparse.SUPPRESS
    )
    if data:
        parser.add_argument(
            "--json", action="store_true", dest="json", help="print one JSON document"
        )
    parser.set_defaults(
        command=name,
        handler=handler,
        store_handler=store_handler,
        forward=forward,
        progress=progress,
    )
    return parser
