"""`helix demo [DIR]`: the main job end to end on a small project, for a first look."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from helixfs.cli.command import UsageError, add_command
from helixfs.cli.output import Output


def register(subparsers: Any) -> None:
    demo = add_command(
        subparsers,
        "demo",
        store_handler=cmd_demo,
        forward=False,
        help="import a folder (default: a generated sample), commit, branch, merge, log",
    )
    demo.add_argument("dir", metavar="DIR", nargs="?", help="folder to import")
    demo.add_argument(
        "--clean",
        action="store_true",
        help="remove the demo stores made in the temp folder (when a store existed already)",
    )


def cmd_demo(args: argparse.Namespace, store: Path, out: Output) -> int:
    from helixfs.cli.demo_run import clean_demos, run_demo

    if args.clean:
        if args.dir:
            raise UsageError("--clean removes the demo stores: it takes no DIR")
        return clean_demos(out)
    return run_demo(store, Path(args.dir) if args.dir else None, out)
