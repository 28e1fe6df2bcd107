"""Read-only history commands: log, diff, ls, cat, rev-parse."""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import os
import stat
import sys
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import UsageError, add_command, add_path_b64, repo_path
from helixfs.cli.graph import graph_lines
from helixfs.cli.output import Output, printable, table
from helixfs.errors import HelixError, NotFound, StoreFull
from helixfs.ids import hex_id

if TYPE_CHECKING:
    from helixfs.vcs.objects import Commit
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.treeops import Change


def register(subparsers: Any) -> None:
    log = add_command(subparsers, "log", help="commits reachable from REV", handler=cmd_log)
    log.add_argument("rev", nargs="?")  # None, not "HEAD": --lost must see one given
    log.add_argument("path", nargs="?", metavar="PATH", help="only the commits that changed PATH")
    log.add_argument("-n", "--max-count", type=_positive, dest="limit", metavar="N")
    log.add_argument("--graph", action="store_true", help="draw the commit graph")
    log.add_argument(
        "--lost",
        action="store_true",
        help="the tips of history no ref reaches any more (after a reset --hard or a"
        " branch delete), newest first; `helix branch NAME ID` brings one back",
    )
    log.add_argument(
        "--meta",
        metavar="KEY=VALUE",
        nargs="?",
        action="append",
        const="",
        help="show each commit's meta; with KEY=VALUE, only the commits whose meta holds"
        " it (of every ancestor, not first parents only), e.g. --meta experiment=A",
    )
    log.add_argument("-v", "--verbose", action="store_true", help="show each commit's meta")
    add_path_b64(log)
    diff = add_command(subparsers, "diff", help="changes from A to B", handler=cmd_diff)
    diff.add_argument("a", metavar="A")
    diff.add_argument("b", metavar="B", nargs="?", default="HEAD")
    diff.add_argument("--name-status", action="store_true", help="one line per changed path")
    ls = add_command(subparsers, "ls", help="list a directory of a revision", handler=cmd_ls)
    ls.add_argument("rev", metavar="REV")
    ls.add_argument("path", metavar="PATH", nargs="?", default="")
    add_path_b64(ls)
    cat = add_command(subparsers, "cat", help="print a file of a revision", handler=cmd_cat)
    cat.add_argument("rev", metavar="REV")
    cat.add_argument("path", metavar="PATH")
    add_path_b64(cat)
    rev_parse = add_command(
        subparsers, "rev-parse", help="the full id of a revision", handler=cmd_rev_parse
    )
    rev_parse.add_argument("rev", metavar="REV")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # argparse would name this function: "invalid _positive value"
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return min(value, sys.maxsize)  # more than any history; islice refuses larger


def name_text(name: bytes) -> str:
    return os.fsdecode(name)


def commit_doc(commit: Commit) -> dict[str, Any]:
    return {
        "id": hex_id(commit.id),
        "tree": hex_id(commit.tree),
        "parents": [hex_id(p) for p in commit.parents],
        "time_ns": commit.time_ns,
        "time": iso_time(commit.time_ns),
        "author": commit.author,
        "message": commit.message,
        "meta": dict(commit.meta),
    }


def iso_time(time_ns: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time_ns / 1e9))


def children_first(commits: list[Commit]) -> list[Commit]:
    """Newest first, but never a parent before one of its children (clock skew happens)."""
    listed = {c.id for c in commits}
    waiting = {c.id: 0 for c in commits}
    for commit in commits:
        for parent in commit.parents:
            if parent in listed:
                waiting[parent] += 1
    by_id = {c.id: c for c in commits}
    ready = [c for c in commits if waiting[c.id] == 0]
    ordered: list[Commit] = []
    while ready:
        ready.sort(key=lambda c: c.time_ns)
        commit = ready.pop()
        ordered.append(commit)
        for parent in commit.parents:
            if parent in listed:
                waiting[parent] -= 1
                if waiting[parent] == 0:
                    ready.append(by_id[parent])
    return ordered


LOG_PATHS = 5
"""Changed paths shown under a commit in `helix log`; --json carries the whole list."""


def _log_line(commit: Commit) -> str:
    subject = commit.message.splitlines()[0] if commit.message else ""
    author = _author_name(commit.author)  # --json carries the full string
    from helixfs.vcs.dates import shown_time  # here: a forwarded command never loads vcs
    from helixfs.vcs.node import saved_by

    when = shown_time(commit)
    return f"{hex_id(commit.id)[:12]}  {when}  {author}{saved_by(commit.meta)}  {subject}"


def _author_name(author: str) -> str:
    """The name, as git reads `Name <mail>`: what comes before the first `<`, without
    the spaces before it (`Tight<t@x>`, `Spaced   <s@x>`); no name at all: the whole."""
    return author.partition("<")[0].rstrip() or author


def _changed_lines(meta: Mapping[str, Any]) -> list[str]:
    """The commit's changed paths, indented under it, at most LOG_PATHS of them."""
    listed = meta.get("changed")
    paths = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []
    lines = [f"    {printable(p)}" for p in paths[:LOG_PATHS]]
    if len(paths) > LOG_PATHS:
        lines.append(f"    ... and {len(paths) - LOG_PATHS} more")
    return lines


def settled(repo: Repository, rev: str, out: Output) -> str:
    """`rev`, once the pending saves of the live branch it names (a mount's quiet window)
    are committed: who just saved a file and asks for its history expects to find it.
    A disk too full for that commit still gets the read, of the last commit."""
    try:
        repo.settle_rev(rev)
    except StoreFull as err:
        out.note(f"warning: saves not committed yet are not shown ({err})")
    return rev


def cmd_log(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    if args.lost and (args.graph or args.rev is not None):
        raise UsageError("--lost lists commits no ref reaches: it takes no REV and no --graph")
    if args.path is not None and args.graph:
        raise UsageError("a log of one PATH follows first parents: it takes no --graph")
    wanted = _meta_filter(args.meta)
    if args.lost:
        commits = _kept(repo.lost(), wanted, args.limit)
    elif args.path is not None:
        rev = settled(repo, args.rev, out)
        commits = _path_log(repo, rev, repo_path(args.path, args), args.limit, wanted)
    else:
        rev = settled(repo, "HEAD" if args.rev is None else args.rev, out)
        commits = _log(repo, rev, args, wanted)
    if args.graph:
        commits = children_first(commits)
    if out.as_json:
        out.emit([commit_doc(c) for c in commits])
        return 0
    with_meta = args.verbose or args.meta is not None
    if args.graph:
        texts = [_log_line(c) + (f"  [{_meta_text(c.meta)}]" if with_meta else "") for c in commits]
        lines = graph_lines([(c.id, tuple(c.parents)) for c in commits], texts)
    else:
        lines = [
            line
            for c in commits
            for line in (_log_line(c), *_changed_lines(c.meta), *_meta_lines(c, with_meta))
        ]
    out.emit(None, "\n".join(lines))
    return 0


def _meta_filter(values: list[str] | None) -> dict[str, str]:
    """The KEY=VALUE pairs of `--meta` (a bare `--meta` only shows meta)."""
    wanted: dict[str, str] = {}
    for text in values or ():
        if not text:
            continue
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise UsageError(
                f"--meta {text!r}: give KEY=VALUE (a bare --meta, which shows meta, goes"
                " after REV and PATH)"
            )
        if wanted.get(key, value) != value:
            raise UsageError(f"--meta {key}=...: given twice with two values")
        wanted[key] = value
    return wanted


def _kept(commits: Iterable[Commit], wanted: Mapping[str, str], limit: int | None) -> list[Commit]:
    from helixfs.vcs.history import meta_matches  # here: a forwarded command never loads vcs

    if wanted:
        commits = (c for c in commits if meta_matches(c.meta, wanted))
    return list(itertools.islice(commits, limit))


HIDDEN_META = ("changed",)  # listed under the commit already


def _meta_text(meta: Mapping[str, Any]) -> str:
    shown = (
        f"{key}={value if isinstance(value, str) else json.dumps(value)}"
        for key, value in sorted(meta.items())
        if key not in HIDDEN_META
    )
    return printable(" ".join(shown))


def _meta_lines(commit: Commit, with_meta: bool) -> list[str]:
    text = _meta_text(commit.meta) if with_meta else ""
    return [f"    meta: {text}"] if text else []


def _log(
    repo: Repository, rev: str, args: argparse.Namespace, wanted: Mapping[str, str]
) -> list[Commit]:
    """The log of `rev`; as git does, of the path `rev` names if it names no commit.
    A filter by meta walks every ancestor: an experiment's commits merged into a branch
    are off its first parents."""
    every = args.graph or bool(wanted)
    try:
        return _kept(repo.log(rev, first_parent=not every), wanted, args.limit)
    except NotFound as err:
        path = _named_path(repo, rev, args)
        if path is None:
            raise
        if args.graph:
            raise NotFound(
                f"{err}; for the commits that changed a path: helix log HEAD {rev}"
            ) from None
        return _path_log(repo, "HEAD", path, args.limit, wanted)


def _named_path(repo: Repository, text: str, args: argparse.Namespace) -> bytes | None:
    """The path `text` names at HEAD, if it names one."""
    try:
        path = repo_path(text, args)
        repo.settle_rev("HEAD")  # a file saved a moment ago is a path too
        return path if repo.entry("HEAD", path) is not None else None
    except HelixError:
        return None


def _path_log(
    repo: Repository, rev: str, path: bytes, limit: int | None, wanted: Mapping[str, str]
) -> list[Commit]:
    """The commits that changed `path`; none at all is a typo more often than a fact."""
    commits = iter(repo.log(rev, path=path))
    first = next(commits, None)
    if first is None:
        shown = printable(path.decode("utf-8", "surrogateescape"))
        raise NotFound(f"{shown} is in no commit of the history of {rev!r}")
    return _kept(itertools.chain([first], commits), wanted, limit)


def change_doc(change: Change) -> dict[str, Any]:
    """One diff entry: status, path, and each side's id and mode (absent on the side
    where the path does not exist), so a mode-only change can be told from an edit."""
    from helixfs.vcs import attrs  # here: a forwarded command's parse imports no vcs

    doc: dict[str, Any] = {"status": change.status, "path": name_text(change.path)}
    for side, entry in (("old", change.old), ("new", change.new)):
        if entry is not None:
            doc[f"{side}_id"] = hex_id(entry.oid)
            doc[f"{side}_mode"] = f"{entry.mode:o}"
            doc[f"{side}_owner"] = attrs.owner_text(entry.xattrs)
    if change.old is not None and change.new is not None:
        doc["metadata"] = attrs.metadata_changes(change.old, change.new)
        doc["content"] = change.old.oid != change.new.oid
    return doc


def _status_text(doc: dict[str, Any]) -> str:
    """A change's status column: `M` for new content, `M (owner, mode)` for a change of
    only those (a chown or chmod is a change too: ADR 0042)."""
    status = str(doc.get("status", "?"))
    if doc.get("content", True) or not doc.get("metadata"):
        return status
    return f"{status} ({', '.join(doc['metadata'])})"


def cmd_diff(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    settled(repo, args.a, out)
    settled(repo, args.b, out)
    if args.name_status or out.as_json:
        changes = [change_doc(c) for c in repo.diff(args.a, args.b)]
        if out.as_json and not args.name_status:
            out.emit({"changes": changes, "text": repo.diff_text(args.a, args.b)})
        else:
            rows = [(_status_text(c), printable(c.get("path", ""))) for c in changes]
            out.emit({"changes": changes}, lambda: table(rows))
        return 0
    out.emit(None, repo.diff_text(args.a, args.b))
    return 0


def _mode_text(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "char device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "exec" if mode & 0o111 else "file"


def entry_doc(entry: Any) -> dict[str, Any]:
    return {
        "name": name_text(entry.name),
        "type": _mode_text(entry.mode),
        "mode": f"{entry.mode:o}",
        "size": entry.size,
        "id": hex_id(entry.oid),
        "mtime_ns": entry.mtime_ns,
    }


def cmd_ls(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    rev = settled(repo, args.rev, out)
    docs = [entry_doc(e) for e in repo.ls(rev, repo_path(args.path, args))]
    rows = [
        (d["type"], d["size"], printable(d["name"]) + ("/" if d["type"] == "dir" else ""))
        for d in docs
    ]
    out.emit(docs, lambda: table(rows))
    return 0


def cmd_cat(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    path = repo_path(args.path, args)
    data = repo.read(settled(repo, args.rev, out), path)
    if out.as_json:
        doc: dict[str, Any] = {"path": name_text(path), "size": len(data)}
        try:
            doc["content"] = data.decode("utf-8")
        except UnicodeDecodeError:
            doc["content_base64"] = base64.b64encode(data).decode("ascii")
        out.emit(doc)
        return 0
    write_bytes(out, data)
    return 0


def write_bytes(out: Output, data: bytes) -> None:
    """Raw bytes to stdout; a text-only stream (the daemon's) gets surrogate escapes."""
    buffer = getattr(out.stdout, "buffer", None)
    if buffer is not None:
        out.stdout.flush()
        buffer.write(data)
        buffer.flush()
    else:
        out.stdout.write(data.decode("utf-8", "surrogateescape"))


def cmd_rev_parse(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    cid = hex_id(repo.resolve(settled(repo, args.rev, out)))
    out.emit({"rev": args.rev, "id": cid}, cid)
    return 0
