"""Moving trees in and out of the store: import (a folder or a git repository), export."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import add_command
from helixfs.cli.output import Output, human_bytes
from helixfs.cli.repo import as_doc
from helixfs.errors import InvalidInput

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


def register(subparsers: Any) -> None:
    imp = add_command(
        subparsers,
        "import",
        handler=cmd_import,
        progress=True,
        help="commit a folder (DIR) or every commit of a git repository (--from-git REPO)",
    )
    imp.add_argument("dir", metavar="DIR", nargs="?", help="folder to commit as a whole tree")
    imp.add_argument("--from-git", metavar="REPO", help="git repository to import")
    imp.add_argument("--branch", metavar="NAME", help="branch to commit to (default: HEAD's)")
    imp.add_argument("-m", "--message", help="commit message (folder import)")
    imp.add_argument(
        "--prefix", default="", help="prefix for imported branch and snapshot names (git import)"
    )
    exp = add_command(
        subparsers,
        "export",
        handler=cmd_export,
        progress=True,
        help="write the tree of REV into DIR (which must be empty or absent)",
    )
    exp.add_argument("rev", metavar="REV")
    exp.add_argument("dir", metavar="DIR")


def cmd_import(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    if (args.dir is None) == (args.from_git is None):
        raise InvalidInput("give either DIR or --from-git REPO")
    if args.from_git:
        from helixfs.vcs.gitimport import import_git

        with out.progress("importing commits") as bar:
            result = import_git(repo, Path(args.from_git), prefix=args.prefix, progress=bar.update)
        doc = as_doc(result)
        out.emit(doc, lambda: _git_summary(doc))
        return 0
    from helixfs.vcs.transfer import import_dir

    with out.progress("importing files") as bar:
        summary = import_dir(
            repo, Path(args.dir), message=args.message, branch=args.branch, progress=bar.advance
        )
    doc = as_doc(summary)
    verb = "imported" if doc["changed"] else "unchanged:"
    out.emit(
        doc,
        lambda: (
            f"{verb} {doc['files']} files ({human_bytes(doc['bytes'])}) "
            f"on {doc['branch']} at {doc['commit'][:12]}"
        ),
    )
    return 0


def _git_summary(doc: dict[str, Any]) -> str:
    return f"imported {doc['commits']} commits on {len(doc['branches'])} branch(es)" + (
        f", {doc['skipped']} already present" if doc.get("skipped") else ""
    )


def cmd_export(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    from helixfs.vcs.transfer import export

    with out.progress("exporting files") as bar:
        summary = export(repo, args.rev, Path(args.dir), progress=bar.advance)
    doc = as_doc(summary)
    out.emit(
        doc, lambda: f"exported {doc['files']} files ({human_bytes(doc['bytes'])}) to {args.dir}"
    )
    return 0
