"""`helix config get|set|unset|list`: the store's config.toml and the user's (helixfs/config.py).

Run by the process that holds the store when one does (a mount's daemon or a foreground
`helix web`, ADR 0002), so that a `set` there is applied to it (`Repository.reconfigure`)
where its key can change live; the others are said to wait for the store to be opened
again. With no such process the files alone change: the next command or mount reads them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs import config
from helixfs.cli.command import MOUNT_OWNER, add_command
from helixfs.cli.output import Output, table
from helixfs.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository


def register(subparsers: Any) -> None:
    parser = add_command(
        subparsers,
        "config",
        store_handler=cmd_config,
        help="get, set, unset or list the settings (store file, user file, environment)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    get = actions.add_parser("get", help="a key's value and where it comes from")
    get.add_argument("key", metavar="KEY")
    put = actions.add_parser("set", help="write KEY = VALUE (checked first)")
    put.add_argument("key", metavar="KEY")
    put.add_argument("value", metavar="VALUE")
    unset = actions.add_parser("unset", help="remove KEY from the file (its default returns)")
    unset.add_argument("key", metavar="KEY")
    listing = actions.add_parser("list", help="every key, its value and its source")
    for action in (put, unset):
        action.add_argument("--user", action="store_true", help="the user's file, not the store's")
    for action in (get, put, unset, listing):
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="one JSON document"
        )


def cmd_config(args: argparse.Namespace, store: Path, out: Output) -> int:
    if not getattr(args, "user", False) and not store.is_dir():
        raise NotFound(f"no HelixFS store at {store} (create one with: helix init {store})")
    if args.action == "list":
        return _list(config.load(store), out)
    if args.action == "get":
        entry = config.load(store).entries[config.key(args.key).name]
        out.emit(_doc(entry), _shown(entry.text))
        return 0
    return _change(args, store, out)


def _change(args: argparse.Namespace, store: Path, out: Output) -> int:
    """`set` or `unset`, then (in a mount's daemon) the running mount told."""
    path = config.user_file() if args.user else config.store_file(store)
    running: Repository | None = getattr(args, "daemon_repo", None)
    before = running.settings if running is not None else None
    if args.action == "set":
        stored = config.set_value(path, args.key, args.value)
        said = f"set {args.key} = {config.toml_value(stored)} in {path}"
    else:
        removed = config.unset_value(path, args.key)
        said = f"unset {args.key} in {path}" if removed else f"{args.key} was not set in {path}"
    try:
        after = config.load(store)
    except InvalidInput as exc:  # another key of a hand-written file is still wrong
        out.emit({"key": args.key, "file": str(path), "problem": str(exc)}, said)
        out.note(f"helix: warning: {exc}")
        return 0
    found = after.entries.get(args.key)  # None: a typo just removed from the file
    lines = [said, *(_overridden(after, args.key, path) if found is not None else [])]
    if running is not None and before is not None:
        lines += _applied(running, before, after, args.daemon_owner)
    doc = _doc(found) if found is not None else {}
    out.emit({"key": args.key, "file": str(path), **doc}, "\n".join(lines))
    return 0


def _list(settings: config.Settings, out: Output) -> int:
    entries = list(settings.entries.values())
    rows = [(e.key, _shown(e.text), e.source) for e in entries]
    out.emit({"settings": [_doc(e) for e in entries]}, lambda: table(rows))
    return 0


def _shown(value: config.Value) -> str:
    """As the file says it (true, not Python's True)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _doc(entry: config.Entry) -> dict[str, Any]:
    spec = config.KEYS[entry.key]
    return {
        "key": entry.key,
        "value": entry.text,
        "parsed": entry.value,
        "source": entry.source,
        "default": spec.default,
        "env": spec.env,
        "live": spec.live,
    }


def _overridden(settings: config.Settings, name: str, path: Path) -> list[str]:
    """A value written where a higher layer hides it does nothing: say so."""
    source = settings.entries[name].source
    if source.startswith("env"):
        return [f"note: ${config.KEYS[name].env} is set and wins over {path}"]
    if source.startswith("store") and path == config.user_file():
        return [f"note: the store's {config.STORE_FILE} sets {name} and wins over {path}"]
    return []


def _applied(
    repo: Repository, before: config.Settings, after: config.Settings, owner: str
) -> list[str]:
    """In the process holding the store (`owner`): take what changed live, name what
    waits for the store to be opened again. A mount's own flags (--quiet-window,
    -o gc_growth) still win over the files."""
    target = after.with_flags(before.flags())
    changed = before.changed(target)
    # the keys it cannot take live keep, in repo.settings, the values the mount uses
    kept = {
        n: target.entries[n] if config.KEYS[n].live else before.entries[n] for n in target.entries
    }
    repo.reconfigure(config.Settings(kept))
    lines = [
        f"note: the mount's flag keeps {name} at {value}" for name, value in before.flags().items()
    ]
    mount = owner == MOUNT_OWNER
    reopened = "mounted again (helix umount)" if mount else f"opened again (stop {owner})"
    for name in changed:
        if config.KEYS[name].live:
            lines.append(f"applied {name} to {owner}")
        else:
            lines.append(f"{name} takes effect when the store is {reopened}")
    return lines
