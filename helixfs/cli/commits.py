"""The commands git users reach for: show, revert, cherry-pick, blame, status.

Thin: each is one Repository call (`changes_of`/`patch_of`, `revert`, `cherry_pick`,
`blame`, `pending_saves`) and its two renderings, sharing `log`'s and `diff`'s documents.
`status` runs in the mount's daemon when one owns the store (ADR 0002): only there are
saves pending (without a mount every write is a commit already).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import add_command, add_path_b64, repo_path
from helixfs.cli.history import change_doc, commit_doc, name_text, settled
from helixfs.cli.output import Output, printable
from helixfs.cli.refs import refused_with_conflicts
from helixfs.errors import MergeConflict
from helixfs.ids import hex_id

if TYPE_CHECKING:
    from helixfs.vcs.objects import Commit
    from helixfs.vcs.pick import PickResult
    from helixfs.vcs.repo import Repository

HIDDEN_META = ("changed",)  # shown by the diff already


def register(subparsers: Any) -> None:
    show = add_command(
        subparsers, "show", help="a commit: message, meta, processes and diff", handler=cmd_show
    )
    show.add_argument("rev", metavar="REV", nargs="?", default="HEAD")
    show.add_argument("--name-status", action="store_true", help="changed paths, not the diff")
    revert = add_command(
        subparsers, "revert", help="a new commit undoing commit REV", handler=cmd_revert
    )
    revert.add_argument("rev", metavar="REV")
    revert.add_argument("-m", "--message", help="the new commit's message")
    pick = add_command(
        subparsers,
        "cherry-pick",
        help="a new commit making the change commit REV made (from any branch)",
        handler=cmd_cherry_pick,
    )
    pick.add_argument("rev", metavar="REV")
    pick.add_argument("-m", "--message", help="the new commit's message (default: REV's)")
    blame = add_command(
        subparsers,
        "blame",
        help="for each line of PATH, the commit and process that last changed it",
        handler=cmd_blame,
    )
    blame.add_argument("path", metavar="PATH")
    blame.add_argument("--rev", default="HEAD", help="blame the file as of REV (default HEAD)")
    add_path_b64(blame)
    add_command(
        subparsers,
        "status",
        help="the branch, its commit and a mount's saves not committed yet",
        handler=cmd_status,
    )


# -- show ------------------------------------------------------------------------------


def processes(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The processes whose saves a commit holds (a mount records them), as documents."""
    from helixfs.vcs.node import savers_of  # here: a forwarded command never loads vcs

    return [{"process": name, "pid": int(pid) if pid else None} for name, pid in savers_of(meta)]


def cmd_show(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    commit = repo.commit_info(settled(repo, args.rev, out))
    cid = hex_id(commit.id)
    changes = [change_doc(c) for c in repo.changes_of(cid)]
    doc = commit_doc(commit) | {"processes": processes(commit.meta), "changes": changes}
    if args.name_status:
        body = "\n".join(f"{c['status']}\t{printable(c['path'])}" for c in changes)
    else:
        body = doc["text"] = repo.patch_of(cid)
    out.emit(doc, lambda: _show_text(commit, body))
    return 0


def _show_text(commit: Commit, body: str) -> str:
    from helixfs.vcs.dates import shown_time
    from helixfs.vcs.node import saved_by

    lines = [f"commit {hex_id(commit.id)}"]
    if len(commit.parents) > 1:
        lines.append("Merge:  " + " ".join(hex_id(p)[:12] for p in commit.parents))
    lines.append(f"Author: {commit.author}{saved_by(commit.meta)}")
    lines.append(f"Date:   {shown_time(commit, '%Y-%m-%d %H:%M:%S')}")
    meta = {k: v for k, v in commit.meta.items() if k not in HIDDEN_META}
    lines += [f"Meta:   {k}={printable(str(v))}" for k, v in sorted(meta.items())]
    lines += [""] + [f"    {line}" for line in commit.message.splitlines()] + [""]
    return "\n".join(lines) + "\n" + body


# -- revert, cherry-pick ---------------------------------------------------------------


def cmd_revert(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    return _apply(args, repo, out, repo.revert, "reverted")


def cmd_cherry_pick(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    return _apply(args, repo, out, repo.cherry_pick, "picked")


def _apply(
    args: argparse.Namespace,
    repo: Repository,
    out: Output,
    apply: Callable[..., PickResult],
    done: str,
) -> int:
    try:
        result = apply(args.rev, message=args.message)
    except MergeConflict as err:
        return refused_with_conflicts(err, out)
    branch = repo.current_branch()
    source, commit = hex_id(result.source), hex_id(result.commit)
    doc = {"status": result.status, "commit": commit, "source": source, "branch": branch}
    if result.status == "empty":
        human = f"nothing to commit: {branch} already has what {done} {source[:12]} gives"
    else:
        human = f"{done} {source[:12]} on {branch} at {commit[:12]}"
    out.emit(doc, human)
    return 0


# -- blame -----------------------------------------------------------------------------


def cmd_blame(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    path = repo_path(args.path, args)
    lines = repo.blame(path, settled(repo, args.rev, out))
    texts = [b.text.rstrip(b"\r\n").decode("utf-8", "surrogateescape") for b in lines]
    if not out.as_json:  # each line's label came with it: no commit record is read
        out.emit(None, _blame_text(lines, texts))
        return 0
    commits = {cid: repo.commit_info(cid) for cid in dict.fromkeys(b.commit for b in lines)}
    doc = {
        "path": name_text(path),
        "rev": hex_id(repo.resolve(args.rev)),
        "lines": [
            {"line": b.number, "commit": hex_id(b.commit), "text": text}
            for b, text in zip(lines, texts, strict=True)
        ],
        "commits": {hex_id(c.id): _blamed_doc(c) for c in commits.values()},
    }
    out.emit(doc)
    return 0


def _blamed_doc(commit: Commit) -> dict[str, Any]:
    full = commit_doc(commit)
    subject = commit.message.splitlines()[0] if commit.message else ""
    return {
        "author": full["author"],
        "time": full["time"],
        "subject": subject,
        "processes": processes(commit.meta),
        "meta": {k: v for k, v in commit.meta.items() if k not in HIDDEN_META},
    }


def _blame_text(lines: list[Any], texts: list[str]) -> str:
    owners = {b.commit: b.label for b in lines}
    labels = {cid: f"{hex_id(cid)[:12]} {label}" for cid, label in owners.items()}
    width = max((len(v) for v in labels.values()), default=0)
    digits = len(str(len(lines)))
    return "\n".join(
        f"{labels[b.commit]:<{width}} {b.number:>{digits}}) {text}"
        for b, text in zip(lines, texts, strict=True)
    )


# -- status ----------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    from helixfs.vcs.status import status, status_lines

    state = status(repo, mounted=bool(getattr(args, "in_daemon", False)))
    doc = {
        "branch": state.branch,
        "commit": hex_id(state.commit),
        "subject": state.subject,
        "mounted": state.mounted,
        "pending": state.has_pending,
        "pending_paths": None if state.pending is None else [name_text(p) for p in state.pending],
        "ignored": [name_text(p) for p in state.ignored],
        "experiment": state.experiment,
        "remotes": [t.as_json() for t in state.remotes],
    }
    out.emit(doc, lambda: "\n".join(status_lines(state, lambda p: printable(name_text(p)))))
    return 0
