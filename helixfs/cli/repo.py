"""Store-level commands: init, stats, gc, fsck."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import add_command, path_argument
from helixfs.cli.output import Output, human_bytes, table

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


def register(subparsers: Any) -> None:
    init = add_command(
        subparsers, "init", help="create an empty store", store_handler=cmd_init, forward=False
    )
    init.add_argument(
        "path", nargs="?", type=path_argument, help="store folder (default: the resolved store)"
    )
    add_command(
        subparsers,
        "stats",
        help="objects, sizes, dedup, cache and latency figures",
        handler=cmd_stats,
    )
    gc = add_command(
        subparsers, "gc", help="drop objects no ref reaches", handler=cmd_gc, progress=True
    )
    gc.add_argument("--dry-run", "-n", action="store_true", help="only count what would go")
    gc.add_argument(
        "--before",
        metavar="AGE",
        type=_duration,
        help="remove snapshots made longer ago than AGE (48h, 7d; unless pinned) and keep"
        " unreachable commits younger than AGE (default: gc.snapshot_ttl; all go)",
    )
    gc.add_argument(
        "--keep-last",
        metavar="N",
        type=_count,
        help="keep the N newest snapshots that are not pinned, whatever their age",
    )
    fsck = add_command(
        subparsers,
        "fsck",
        help="verify every object and every ref",
        handler=cmd_fsck,
        progress=True,
    )
    fsck.add_argument(
        "--salvage",
        metavar="DEST",
        help="then build a new store at DEST from every branch and snapshot head, the"
        " entries that cannot be read left out (and listed)",
    )


def as_doc(value: Any) -> Any:
    """A JSON-able view of what the core API returns (dataclasses, bytes ids, paths)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        doc = {f.name: as_doc(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in ("cache_hit_ratio", "dedup_ratio"):
            extra = getattr(value, name, None)
            if isinstance(extra, float) and name not in doc:
                doc[name] = extra
        return doc
    if isinstance(value, dict):
        return {str(k): as_doc(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [as_doc(v) for v in value]
    if isinstance(value, bytes):
        return value.hex() if len(value) == 32 else value.decode("utf-8", "surrogateescape")
    if isinstance(value, Path):
        return str(value)
    return value


def cmd_init(args: argparse.Namespace, store: Path, out: Output) -> int:
    from helixfs.vcs.repo import Repository

    path = Path(args.path).expanduser() if args.path is not None else store
    repo = Repository.init(path)
    repo.close()
    out.emit({"store": str(path.resolve())}, f"initialised empty HelixFS store in {path}")
    return 0


def _key_values(doc: dict[str, Any]) -> str:
    return table(list(_rows(doc, "")))


def _rows(doc: dict[str, Any], prefix: str) -> Iterator[tuple[str, str]]:
    for key, value in doc.items():
        if isinstance(value, dict):
            yield from _rows(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", _fmt(key, value)


def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int) and key.endswith("bytes"):
        return f"{human_bytes(value)} ({value})"
    return str(value)


def cmd_stats(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    from helixfs.memory import workspace  # not at startup: apsw, blake3
    from helixfs.vcs import activity

    doc = as_doc(repo.stats())
    doc["activity"] = activity.summary(repo)
    doc["caches"] = activity.caches(repo)
    engine = getattr(repo.store, "engine_figures", None)  # RocksDB's own: RocksStore only
    if engine is not None:
        doc["rocksdb"] = engine()
    if getattr(args, "in_daemon", False):  # run by the mount's daemon: its own memory
        doc["daemon"] = _process_memory()
    indexed = workspace.progress_in(Path(repo.path) / "memory.db") if repo.path else None
    if indexed is not None:  # "workspace index: 1,200 of 3,480 passages"
        doc["workspace_index"] = f"{indexed[0]:,} of {indexed[1]:,} passages"
    problems = doc.get("problems") or []
    numbers = {key: value for key, value in doc.items() if key != "problems"}
    out.emit(doc, lambda: _key_values(numbers) + "".join(f"\nproblem: {p}" for p in problems))
    return 0


def _process_memory() -> dict[str, int]:
    """This process's resident memory now and at its peak (/proc/self/status)."""
    figures = {"pid": os.getpid()}
    names = {"VmRSS:": "rss_bytes", "VmHWM:": "peak_rss_bytes"}
    with contextlib.suppress(OSError), open("/proc/self/status") as status:
        for line in status:
            field, *rest = line.split()
            if field in names and rest:
                figures[names[field]] = int(rest[0]) * 1024  # kB
    return figures


def _duration(text: str) -> float:
    from helixfs.config import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number, 0 or more")
    return int(text)


def cmd_gc(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    from helixfs.vcs import retention
    from helixfs.vcs.refs import snapshot_ref

    ttl = args.before if args.before is not None else repo.settings["gc.snapshot_ttl"]
    gone = retention.expire_snapshots(repo, ttl, args.keep_last, dry_run=args.dry_run)
    with out.progress("gc") as bar:
        result = repo.gc(
            dry_run=args.dry_run,
            progress=bar.update,
            grace_seconds=args.before or 0,
            without=[snapshot_ref(age.name) for age in gone],  # a dry run: as if gone
        )
    doc = as_doc(result)
    if isinstance(doc, dict):
        doc.setdefault("dry_run", bool(args.dry_run))
        doc["snapshots_removed"] = [age.name for age in gone]
    out.emit(
        doc,
        lambda: (
            _key_values({k: v for k, v in doc.items() if k != "snapshots_removed"})
            + _space_kept(doc)
            + _not_repacked(doc)
            + _removed(doc)
            if isinstance(doc, dict)
            else str(doc)
        ),
    )
    return 0


def _removed(doc: dict[str, Any]) -> str:
    names = doc.get("snapshots_removed") or []
    if not names:
        return ""
    verb = "would remove" if doc.get("dry_run") else "removed"
    return f"\n{verb} {len(names)} snapshot(s): {', '.join(names)}"


def _space_kept(doc: dict[str, Any]) -> str:
    """The user who ran gc to free a full disk must learn from gc itself that deleted
    chunks stay on disk, and what would let them go."""
    needed = doc.get("free_needed_bytes") or 0
    if not needed:
        return ""
    kept = human_bytes(doc.get("kept_on_disk_bytes") or 0)
    return (
        f"\nwarning: {kept} of deleted data stay on disk: "
        f"they share files with live data, and moving that out needs {human_bytes(needed)} more "
        "free space on the store's disk; free it (outside the store), then run `helix gc` "
        "again"
    )


def _not_repacked(doc: dict[str, Any]) -> str:
    why = doc.get("not_repacked")
    return f"\nwarning: trees were not repacked: {why}" if why else ""


def cmd_fsck(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    with out.progress("fsck") as bar:
        report = repo.fsck(progress=bar.update)
    doc = as_doc(report)
    problems = list(doc.get("problems") or [])
    verified = f"{doc.get('objects', 0)} objects and {doc.get('refs', 0)} refs"
    lines = [f"problem: {p}" for p in problems] or [f"ok: {verified} verified"]
    if args.salvage:
        lines += _salvaged(repo, Path(args.salvage), out, doc)
    out.emit(doc, "\n".join(lines))
    if problems:
        out.note(f"helix: error: fsck found {len(problems)} problem(s) in {verified}")
        return 1
    return 0


def _salvaged(repo: Repository, dest: Path, out: Output, doc: dict[str, Any]) -> list[str]:
    """`--salvage DEST`: a clean store from what reads (ADR 0046); its lines."""
    from helixfs.vcs.damage import salvage

    with out.progress("salvaging"):
        report = salvage(repo, dest)
    doc["salvage"] = as_doc(report)
    lines = [f"left out: {line}" for line in report.left_out + report.lost_refs]
    return [*lines, f"salvaged {report.refs} refs ({report.objects} objects) into {dest}"]
