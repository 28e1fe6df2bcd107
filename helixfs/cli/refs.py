"""Commands that move refs: branch, snapshot, checkout, reset, merge."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import UsageError, add_command
from helixfs.cli.memory_view import archive_memories, merge_memories, rename_memories
from helixfs.cli.output import Output, printable, table
from helixfs.daemon.branchmemory import handled_here
from helixfs.errors import MergeConflict
from helixfs.ids import hex_id

if TYPE_CHECKING:
    from helixfs.vcs.repo import MergeResult, Repository


def register(subparsers: Any) -> None:
    branch = add_command(
        subparsers,
        "branch",
        handler=cmd_branch,
        help="list branches; NAME [REV] creates one; -d deletes; -m renames",
    )
    _ref_arguments(branch, rename=True)
    snapshot = add_command(
        subparsers,
        "snapshot",
        handler=cmd_snapshot,
        help="list snapshots; NAME [REV] creates an immutable one; -d deletes; -m renames",
    )
    _ref_arguments(snapshot, rename=True)
    pins = snapshot.add_mutually_exclusive_group()
    pins.add_argument("--pin", action="store_true", help="keep NAME whatever gc's age limits")
    pins.add_argument("--unpin", action="store_true", help="let gc's age limits take NAME")
    checkout = add_command(
        subparsers,
        "checkout",
        handler=cmd_checkout,
        help="make BRANCH the one the store's root shows",
    )
    checkout.add_argument("branch", metavar="BRANCH")
    reset = add_command(
        subparsers, "reset", handler=cmd_reset, help="move the current branch (or --branch) to REV"
    )
    reset.add_argument(
        "--hard",
        action="store_true",
        required=True,
        help="also replace the working state (the only mode)",
    )
    reset.add_argument("rev", metavar="REV")
    reset.add_argument("--branch", metavar="NAME", help="branch to move (default: HEAD's)")
    merge = add_command(
        subparsers,
        "merge",
        handler=cmd_merge,
        help="three-way merge BRANCH into the current branch",
    )
    merge.add_argument("branch", metavar="BRANCH")
    merge.add_argument(
        "--allow-conflicts",
        action="store_true",
        help="commit conflicting files with markers instead of refusing (exit status 1)",
    )


def _ref_arguments(parser: argparse.ArgumentParser, *, rename: bool) -> None:
    parser.add_argument("name", metavar="NAME", nargs="?")
    parser.add_argument("rev", metavar="REV", nargs="?", help="start point (default HEAD)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-d", "--delete", action="store_true", help="delete NAME")
    if rename:
        group.add_argument(
            "-m", "--rename", action="store_true", help="rename NAME to the second argument"
        )


def _named_ids(refs: Mapping[str, bytes] | Iterable[Any]) -> list[tuple[str, str]]:
    """(name, hex id) pairs from what branches()/snapshots() return (a mapping or items)."""
    if isinstance(refs, Mapping):
        items: Iterable[Any] = refs.items()
    else:
        items = refs
    pairs = []
    for item in items:
        if isinstance(item, tuple):
            name, cid = item[0], item[1]
        else:
            name, cid = getattr(item, "name", item), getattr(item, "commit", b"")
        pairs.append((str(name), hex_id(cid) if isinstance(cid, bytes) else str(cid)))
    return sorted(pairs)


def _list_refs(kind: str, pairs: list[tuple[str, str]], current: str | None, out: Output) -> None:
    doc = [{"name": n, "id": i, "current": n == current} for n, i in pairs]
    rows = [("*" if n == current else " ", n, i[:12]) for n, i in pairs]
    out.emit({kind: doc}, lambda: table(rows))


def cmd_branch(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    if args.name is None:
        if args.delete or args.rename:
            raise UsageError("give the branch NAME to delete or rename")
        _list_refs("branches", _named_ids(repo.branches()), repo.head_branch(), out)
        return 0
    if args.delete:
        _one_name(args, "branch")
        with handled_here(args.name):
            repo.delete_branch(args.name)
        archived = archive_memories(repo, args.name)
        human = f"deleted branch {args.name}"
        if archived:
            human += f" ({len(archived)} of its memories archived: helix memories --archived"
            human += f" --branch {args.name})"
        out.emit({"deleted": args.name, "archived_memories": archived}, human)
    elif args.rename:
        with handled_here(args.name):
            _rename(args, "branch", repo.rename_branch, out)
        rename_memories(repo, args.name, args.rev)
    else:
        cid = repo.create_branch(args.name, args.rev or "HEAD")
        _created(out, "branch", args.name, cid if isinstance(cid, bytes) else None, repo)
    return 0


def _one_name(args: argparse.Namespace, kind: str) -> None:
    """`-d A B` used to delete A and drop B silently: one name per delete."""
    if args.rev is not None:
        raise UsageError(f"-d deletes one {kind} at a time: helix {kind} -d NAME")


def _rename(
    args: argparse.Namespace, kind: str, rename: Callable[[str, str], object], out: Output
) -> None:
    if not args.rev:
        raise UsageError(f"usage: helix {kind} -m OLD NEW")
    rename(args.name, args.rev)
    out.emit({"renamed": args.name, "to": args.rev}, f"renamed {kind} {args.name} to {args.rev}")


def _created(out: Output, kind: str, name: str, cid: bytes | None, repo: Repository) -> None:
    target = hex_id(cid) if cid is not None else hex_id(repo.resolve(name))
    out.emit({kind: name, "id": target}, f"created {kind} {name} at {target[:12]}")


def cmd_snapshot(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    if args.name is None:
        if args.delete or args.rename:
            raise UsageError("give the snapshot NAME to delete or rename")
        _list_refs("snapshots", _named_ids(repo.snapshots()), None, out)
        return 0
    if args.delete:
        _one_name(args, "snapshot")
        repo.delete_snapshot(args.name)
        out.emit({"deleted": args.name}, f"deleted snapshot {args.name}")
        return 0
    if args.rename:
        _rename(args, "snapshot", repo.rename_snapshot, out)
        return 0
    if args.pin or args.unpin:
        return _pin(args, repo, out)
    cid = repo.create_snapshot(args.name, args.rev or "HEAD")
    if not isinstance(cid, bytes):
        cid = dict(_named_ids(repo.snapshots())).get(args.name)
        cid = bytes.fromhex(cid) if cid else None
    _created(out, "snapshot", args.name, cid, repo)
    return 0


def _pin(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    """`--pin` / `--unpin` NAME: an existing snapshot's mark (vcs/retention.py)."""
    from helixfs.vcs import retention

    if args.delete or args.rev is not None:
        raise UsageError("--pin and --unpin take only the NAME of an existing snapshot")
    age = retention.pin(repo, args.name, pinned=args.pin)
    verb = "pinned" if age.pinned else "unpinned"
    out.emit({"snapshot": age.name, "pinned": age.pinned}, f"{verb} snapshot {age.name}")
    return 0


def cmd_checkout(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    repo.checkout(args.branch)
    cid = hex_id(repo.branch_head(args.branch))  # HEAD may be the cwd's branch folder's
    out.emit({"branch": args.branch, "id": cid}, f"on branch {args.branch} at {cid[:12]}")
    return 0


def cmd_reset(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    target = repo.resolve(args.rev)
    repo.reset_hard(args.rev, branch=args.branch)
    branch = args.branch or repo.current_branch()
    out.emit({"branch": branch, "id": hex_id(target)}, f"{branch} is now at {hex_id(target)[:12]}")
    return 0


def cmd_merge(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    try:
        result = repo.merge(args.branch, allow_conflicts=args.allow_conflicts)
    except MergeConflict as err:
        return refused_with_conflicts(err, out)
    paths = [os.fsdecode(p) for p in result.conflicts]
    commit = hex_id(result.commit) if result.commit else None
    committed = result.status in ("merged", "conflicts")  # not up-to-date, fast-forward
    doc: dict[str, Any] = {
        "status": result.status,
        "commit": commit,
        "conflicts": paths,
        "committed": committed,
    }
    memories = merge_memories(repo, args.branch, repo.current_branch())
    if memories is not None:
        doc["memories"] = memories
    if paths:
        out.emit(
            _with_reasons(doc, result.reasons),
            lambda: "\n".join(_conflict_line(p, result) for p in result.conflicts),
        )
        out.note(f"helix: error: merge of {args.branch}: {len(paths)} conflicting path(s)")
        return 1
    human = _merge_line(result.status, args.branch, repo.current_branch(), commit)
    out.emit(doc, human + _memories_line(memories))
    return 0


def _memories_line(report: dict[str, Any] | None) -> str:
    """What the merge did to the branch's memories, if it had any."""
    if not report:
        return ""
    if "error" in report:
        return f"\nits memories were not merged: {report['error']}"
    counts = {k: len(report[k]) for k in ("moved", "duplicates", "refined", "superseded")}
    if not any(counts.values()):
        return ""
    return "\nmemories: " + ", ".join(f"{n} {what}" for what, n in counts.items() if n)


def refused_with_conflicts(err: MergeConflict, out: Output) -> int:
    """A merge (revert, cherry-pick) refused for its conflicts, which changed nothing:
    the paths on stdout (or in the --json document), the message on stderr, exit 1."""
    conflicts: list[bytes] = getattr(err, "conflicts", [])
    reasons: dict[bytes, str] = getattr(err, "reasons", {})
    paths = [os.fsdecode(p) for p in conflicts]
    doc = {"status": "conflicts", "commit": None, "conflicts": paths, "committed": False}
    out.emit(
        _with_reasons(doc, reasons),
        lambda: "\n".join(
            f"conflict: {printable(os.fsdecode(p))}{_why(p, reasons)}" for p in conflicts
        ),
    )
    out.note(f"helix: error: {err}")
    return 1


def _conflict_line(path: bytes, result: MergeResult) -> str:
    shown = printable(os.fsdecode(path))
    if path in result.marked:
        return f"conflict (committed with markers): {shown}"
    # binary, modify/delete, file vs directory: one side's version was kept as it is
    return f"conflict (one side kept, no markers): {shown}{_why(path, result.reasons)}"


def _why(path: bytes, reasons: dict[bytes, str]) -> str:
    """The reason a conflict with no markers is one, where the merge gave one: without
    it a file merely added (in a folder the other side renamed) looks like no conflict."""
    reason = reasons.get(path)
    return f" ({reason})" if reason else ""


def _with_reasons(doc: dict[str, Any], reasons: dict[bytes, str]) -> dict[str, Any]:
    if reasons:
        doc["reasons"] = {os.fsdecode(p): why for p, why in reasons.items()}
    return doc


def _merge_line(status: str, branch: str, target: str, commit: str | None) -> str:
    short = commit[:12] if commit else ""
    if status == "up-to-date":
        return f"up-to-date: {branch} is already merged into {target}"
    if status == "fast-forward":
        return f"fast-forward: {target} moved to {branch} at {short}"
    return f"{status}: {branch} into {target} at {short}"
