"""Moving content in and out of the store: import (a folder or a git repository),
export, and `commit` (explicit path changes, through the core API)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import UsageError, add_command, add_path_b64, path_argument, repo_path
from helixfs.cli.history import settled
from helixfs.cli.output import Output, human_bytes, shown
from helixfs.cli.repo import as_doc
from helixfs.errors import InvalidInput, NotFound
from helixfs.ids import hex_id

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
    imp.add_argument(
        "dir", metavar="DIR", nargs="?", type=path_argument, help="folder to commit as a whole tree"
    )
    imp.add_argument(
        "--from-git", metavar="REPO", type=path_argument, help="git repository to import"
    )
    imp.add_argument("--branch", metavar="NAME", help="branch to commit to (default: HEAD's)")
    imp.add_argument("-m", "--message", help="commit message (folder import)")
    imp.add_argument(
        "--prefix", default="", help="prefix for imported branch and snapshot names (git import)"
    )
    commit = add_command(
        subparsers,
        "commit",
        handler=cmd_commit,
        help="commit path changes: PATH=FILE writes FILE's bytes (PATH=- reads stdin);"
        " in a mount, without them: its pending saves, now",
    )
    commit.add_argument(
        "changes", metavar="PATH=FILE", nargs="*", help="write FILE at PATH (split at the first =)"
    )
    commit.set_defaults(intermixed="changes")
    commit.add_argument("-m", "--message", required=True, help="commit message")
    commit.add_argument(
        "--write",
        nargs=2,
        metavar=("PATH", "FILE"),
        action="append",
        default=[],
        help="as PATH=FILE, for a PATH that holds '=' (or a --path-b64 PATH)",
    )
    commit.add_argument(
        "--delete", metavar="PATH", action="append", default=[], help="a path to delete"
    )
    commit.add_argument(
        "--meta", metavar="KEY=VALUE", action="append", default=[], help="free-form metadata"
    )
    commit.add_argument("--branch", metavar="NAME", help="branch to commit to (default: HEAD's)")
    commit.add_argument("--author", help="author (default: $HELIX_AUTHOR or $USER)")
    add_path_b64(commit)
    exp = add_command(
        subparsers,
        "export",
        handler=cmd_export,
        progress=True,
        help="write the tree of REV into DIR (which must be empty or absent)",
    )
    exp.add_argument("rev", metavar="REV")
    exp.add_argument("dir", metavar="DIR", type=path_argument)


def cmd_import(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    if (args.dir is None) == (args.from_git is None):
        raise UsageError("give either DIR or --from-git REPO")
    _refuse_options_of_the_other_import(args)
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
    skipped = _left_out(doc)
    out.emit(
        doc,
        lambda: (
            f"{verb} {doc['files']} files ({human_bytes(doc['bytes'])}) "
            f"on {doc['branch']} at {doc['commit'][:12]}{skipped}"
        ),
    )
    return 0


def _refuse_options_of_the_other_import(args: argparse.Namespace) -> None:
    """`--from-git R --branch B` used to ignore --branch silently (and DIR --prefix P)."""
    if args.from_git and (args.branch is not None or args.message is not None):
        raise UsageError("--branch and -m apply to a folder import, not --from-git")
    if args.dir is not None and args.prefix:
        raise UsageError("--prefix applies to --from-git, not to a folder import")


def _git_summary(doc: dict[str, Any]) -> str:
    text = f"imported {doc['commits']} commits on {len(doc['branches'])} branch(es)" + (
        f", {doc['skipped']} already present" if doc.get("skipped") else ""
    )
    refs = doc.get("refs_skipped") or []
    if refs:
        shown = ", ".join(refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5 else "")
        text += f"\nskipped {len(refs)} ref(s) (not at a commit, or no valid name): {shown}"
    if doc.get("submodules_skipped"):
        text += (
            f"\n{doc['submodules_skipped']} submodule entries became empty folders, as in a"
            " checkout without --recurse-submodules (their repositories are not imported)"
        )
    if doc.get("helix_folders_skipped"):
        text += (
            f"\nleft out a top-level .helix folder from {doc['helix_folders_skipped']} tree(s):"
            " the name of a mount's control folder, never part of a tree"
        )
    if doc.get("git_entries_skipped"):
        text += (
            f"\nleft out {doc['git_entries_skipped']} entries named .git: git refuses to check"
            " them out (git run there would take them for its repository)"
        )
    if doc.get("detached_head"):
        text += (
            f"\nnot imported: git's HEAD is detached at {doc['detached_head'][:12]}, with "
            f"{doc['detached_commits_skipped']} commit(s) no branch or tag reaches "
            "(git branch NAME there, then import again)"
        )
    return text


def _pair(text: str, form: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"expected {form}, got {text!r}")
    return key, value


def _meta(texts: list[str]) -> dict[str, str]:
    """--meta KEY=VALUE pairs; a key given twice is refused, as a path given twice is
    (the last one won, silently)."""
    meta: dict[str, str] = {}
    for key, value in (_pair(text, "--meta KEY=VALUE") for text in texts):
        if key in meta:
            raise InvalidInput(f"--meta {key}=... is given twice: give each key once")
        meta[key] = value
    return meta


def _writes(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(PATH, FILE) of each write. PATH=FILE splits at the first `=`, since a FILE is a
    local path the user can always write without one; a PATH holding `=` (and base64,
    which ends in `=` padding) goes through `--write PATH FILE`, which needs no split."""
    if args.changes and getattr(args, "path_b64", False):
        raise UsageError("with --path-b64, give writes as --write PATH FILE (base64 holds '=')")
    pairs = [_pair(text, "PATH=FILE") for text in args.changes]
    return pairs + [(path, source) for path, source in args.write]


def _content(source: str, stdin_used: list[bool], in_daemon: bool) -> bytes:
    if source == "-":
        if in_daemon:
            raise InvalidInput(
                "PATH=- cannot read stdin while the store is mounted: write it to a file first"
            )
        if stdin_used:
            raise InvalidInput("only one change can read stdin (PATH=-)")
        stdin_used.append(True)
        return sys.stdin.buffer.read()
    try:
        return Path(source).read_bytes()
    except OSError as err:
        raise NotFound(f"cannot read {source}: {err.strerror}") from None


OWN_META = frozenset({"changed", "generation", "latency_us"})
"""Metadata keys every commit gets from vcs: a user's value would be replaced silently."""


def _add_change(
    changes: dict[bytes | str, bytes | None], path: bytes, content: bytes | None
) -> None:
    # `a=f --delete a` is contradictory: refuse it rather than let the last one win
    if path in changes:
        raise InvalidInput(
            f"{shown(os.fsdecode(path))} is given twice: write it or delete it, once"
        )
    changes[path] = content


def _left_out(doc: dict[str, Any]) -> str:
    """The lines of a human import summary naming what it did not keep."""
    from helixfs.vcs.objects import XATTR_LIST_MAX, XATTR_TOTAL_MAX

    lines = []
    if doc["skipped"]:
        lines.append(f"skipped {doc['skipped']} entries (.git, .helix, the store)")
    if doc.get("ignored"):
        lines.append(f"left out {doc['ignored']} ignored path(s) (.gitignore, .helixignore)")
    if doc["xattrs_skipped"]:
        lines.append(
            f"left out {doc['xattrs_skipped']} xattr(s) past a file's bound of "
            f"{XATTR_TOTAL_MAX >> 10} KiB in all"
        )
    if doc["xattrs_unlisted"]:
        lines.append(
            f"left out all xattrs of {doc['xattrs_unlisted']} file(s) whose names are past "
            f"the {XATTR_LIST_MAX >> 10} KiB that Linux can list (E2BIG)"
        )
    return "".join("\n" + line for line in lines)


def cmd_commit(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    """A commit through the core API: what an agent or a script does without a mount."""
    if not args.changes and not args.write and not args.delete:
        return _commit_pending(args, repo, out)
    stdin_used: list[bool] = []
    changes: dict[bytes | str, bytes | None] = {}
    in_daemon = getattr(args, "in_daemon", False)
    for path, source in _writes(args):
        _add_change(changes, repo_path(path, args), _content(source, stdin_used, in_daemon))
    for path in args.delete:
        _add_change(changes, repo_path(path, args), None)
    meta = _own_meta(args.meta)
    with repo.lock:  # a mount's pending saves are committed first, under their own name:
        # the head to compare with is the one after them, or a commit that changed
        # nothing reported theirs as "committed" (and the -m message was nowhere)
        branch = args.branch or repo.current_branch()
        repo.settle(branch)
        head = repo.branch_head(branch)
        cid = repo.commit(changes, args.message, meta=meta, branch=branch, author=args.author)
    made = cid != head
    doc = {"commit": hex_id(cid), "changed": made, "paths": len(changes)}
    out.emit(doc, f"{'committed' if made else 'nothing changed:'} {hex_id(cid)[:12]}")
    return 0


def _own_meta(texts: list[str]) -> dict[str, str]:
    meta = _meta(texts)
    reserved = sorted(OWN_META.intersection(meta))
    if reserved:
        raise InvalidInput(f"--meta {reserved[0]}=...: helix records {reserved[0]!r} itself")
    return meta


def _commit_pending(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    """No path changes: in a mount, the saves its quiet window has not committed yet
    become one commit now, with this message and meta (run in its daemon: only there
    are saves pending)."""
    if not getattr(args, "in_daemon", False):
        raise UsageError(
            "give at least one PATH=FILE, --write PATH FILE or --delete PATH (without"
            " them, commit takes a mount's pending saves, and no mount of this store runs)"
        )
    if args.author is not None:
        raise UsageError("--author applies to PATH changes: a mount's saves are the saver's")
    meta = _own_meta(args.meta)
    branch = args.branch or repo.current_branch()
    repo.branch_head(branch)  # an unknown branch is named as such
    cid = repo.commit_pending(args.message, meta, branch)
    if cid is None:
        raise InvalidInput(
            f"nothing to commit: no saves are pending on {branch} (its quiet window has"
            " committed them: helix log -n 1)"
        )
    paths = len(repo.commit_info(cid).meta.get("changed", []))
    doc = {"commit": hex_id(cid), "changed": True, "paths": paths}
    out.emit(doc, f"committed {hex_id(cid)[:12]} ({doc['paths']} saved path(s))")
    return 0


def cmd_export(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    from helixfs.vcs.transfer import export

    with out.progress("exporting files") as bar:
        rev = settled(repo, args.rev, out)
        summary = export(repo, rev, Path(args.dir), progress=bar.advance)
    doc = as_doc(summary)
    out.emit(
        doc,
        lambda: (
            f"exported {doc['files']} files ({human_bytes(doc['bytes'])}) to {args.dir}"
            + _not_exported(doc)
        ),
    )
    return 0


def _not_exported(doc: dict[str, Any]) -> str:
    """What an export by a user other than root could not write as stored."""
    lines = []
    if doc["owners_unset"]:
        lines.append(
            f"could not set the stored owner of {doc['owners_unset']} file(s) "
            "(only root may give files away): they belong to you"
        )
    if doc["devices_skipped"]:
        lines.append(f"left out {doc['devices_skipped']} device file(s) (only root may make them)")
    return "".join("\n" + line for line in lines)
