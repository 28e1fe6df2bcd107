"""Shared memory on the remote commands (ADR 0065): `helix remote trust|untrust|keys`, and
the exchange of memory batches that push, fetch and pull (and the mount's syncer) make
after their branches (memory/remote_sync.py)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from helixfs.cli.output import Output, table

if TYPE_CHECKING:
    from helixfs.memory.remote_sync import MemorySync
    from helixfs.vcs.remotes import Remote


def cmd_keys(args: argparse.Namespace, folder: Path, out: Output) -> int:
    from helixfs.memory import remote_sync

    if args.action == "trust":
        key = remote_sync.check_key(args.key)
        added = remote_sync.trust(folder, key, args.label)
        text = f"trusting {key}" if added else f"{key} was trusted already"
        out.emit({"trusted": key, "added": added}, text)
        return 0
    if args.action == "untrust":
        key = remote_sync.check_key(args.key)
        remote_sync.untrust(folder, key)
        out.emit({"untrusted": key}, f"no longer trusting {key}")
        return 0
    own = remote_sync.own_key(folder)
    keys = [{"key": k, **v} for k, v in sorted(remote_sync.trusted(folder).items())]
    rows = [(k["key"], k.get("label") or "", _day(k.get("added"))) for k in keys]
    text = f"this store: {own}\n" + (
        "trusted:\n" + table(rows) if rows else "no trusted keys (helix remote trust KEY)"
    )
    out.emit({"own": own, "trusted": keys}, text)
    return 0


def _day(when: float | None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(when)) if when else ""


def share_memory(folder: Path, remote: Remote) -> MemorySync:
    """Send this store's new memory operations to `remote` and apply the trusted
    batches of the others (to the daemon's memory when the command runs in it).

    A command of its own opens the memory without its model first: sending needs none,
    and loading it (~1 s) for every push and pull with nothing to apply was most of
    their time. Only trusted batches waiting to be applied open it with the model, for
    consolidation to weigh them as the engine does."""
    from helixfs.cli.memory import MEMORY_DB, open_memory
    from helixfs.cli.memory_held import held_memory
    from helixfs.memory import Memory
    from helixfs.memory.remote_sync import MemorySync, SharedMemory
    from helixfs.vcs import remotes

    sealer = remotes.sealer(folder, remote)
    report = MemorySync()
    if held_memory(folder) is None:
        with (
            Memory.open(folder / MEMORY_DB, None, warn_lexical=False) as bare,
            SharedMemory(folder, remote.location, bare, sealer) as shared,
        ):
            report = shared.exchange(apply=False)
        if not report.waiting:
            return report
    with (
        open_memory(folder) as opened,
        SharedMemory(folder, remote.location, opened, sealer) as shared,
    ):
        return report.add(shared.exchange())
