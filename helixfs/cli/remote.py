"""Many machines, one repository: remote, clone, push, fetch, pull (vcs/sync.py).

Credentials are never arguments: boto3 finds them (environment, ~/.aws/credentials,
instance roles), and no output here prints anything but locations and commit ids.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import UsageError, add_command, path_argument
from helixfs.cli.output import Output, table
from helixfs.errors import HelixError, InvalidInput

if TYPE_CHECKING:
    from helixfs.memory.remote_sync import MemorySync
    from helixfs.vcs.remotes import Remote
    from helixfs.vcs.repo import Repository
    from helixfs.vcs.sync import BranchSync, Sync
    from helixfs.vcs.verify import Verified


def register(subparsers: Any) -> None:
    remote = add_command(
        subparsers, "remote", handler=cmd_remote, help="add, list or remove S3 remotes"
    )
    actions = remote.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="name an s3://BUCKET/PREFIX")
    add.add_argument("name", metavar="NAME")
    add.add_argument("url", metavar="s3://BUCKET/PREFIX")
    _location_arguments(add)
    add.add_argument("--encrypt", action="store_true", help="keep only ciphertext remotely")
    actions.add_parser("list", help="the remotes of this store")
    rm = actions.add_parser("remove", aliases=["rm"], help="forget a remote (nothing remote)")
    rm.add_argument("name", metavar="NAME")
    key = actions.add_parser("key", help="an encrypted remote's key: export or import")
    key.add_argument("key_action", choices=["export", "import"])
    key.add_argument("name", metavar="NAME")
    key.add_argument("file", metavar="FILE", nargs="?", help="import: the key file (- stdin)")
    trust = actions.add_parser("trust", help="apply the memory batches signed by KEY")
    trust.add_argument("key", metavar="KEY", help="a public key (helix remote keys on its store)")
    trust.add_argument("--label", default="", help="whose key it is, for the listing")
    untrust = actions.add_parser("untrust", help="apply no more memory batches of KEY")
    untrust.add_argument("key", metavar="KEY")
    keys = actions.add_parser("keys", help="this store's public key and the keys it trusts")
    for action in (add, rm, key, trust, untrust, keys, actions.choices["list"]):
        # after the action too (`helix remote list --json`); SUPPRESS keeps one given before
        action.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="one JSON document"
        )

    clone = add_command(
        subparsers,
        "clone",
        store_handler=cmd_clone,
        forward=False,
        help="a new store holding every branch of s3://BUCKET/PREFIX",
    )
    clone.add_argument("url", metavar="s3://BUCKET/PREFIX")
    clone.add_argument("path", metavar="STORE", type=path_argument)
    _location_arguments(clone)
    clone.add_argument("--name", default="origin", help="the remote's name here (origin)")
    clone.add_argument("--key", metavar="FILE", help="an encrypted remote's key file")
    clone.add_argument(
        "--lazy", action="store_true", help="commits and folders now, file contents when read"
    )
    clone.add_argument(
        "--trust",
        metavar="KEY",
        action="append",
        default=[],
        help="apply the shared-memory batches KEY signed (as `helix remote trust`; repeatable)",
    )

    for name, handler, text in (
        ("push", cmd_push, "send BRANCHes (default: the current one) to the remote"),
        ("fetch", cmd_fetch, "bring the remote's branches here (new ones, fast-forwards)"),
        ("pull", cmd_pull, "fetch, then merge the remote's commits into diverged branches"),
    ):
        parser = add_command(subparsers, name, handler=handler, help=text)
        parser.add_argument("words", metavar="[NAME] [BRANCH]", nargs="*")
        if name == "fetch":
            parser.add_argument(
                "--contents",
                action="store_true",
                help="every file content a lazy clone lacks (it is a whole clone after)",
            )
        if name == "push":
            parser.add_argument(
                "--merge", action="store_true", help="merge the remote's new commits first"
            )
            parser.add_argument(
                "--keep", action="store_true", help="if they conflict, push ours as BRANCH@HOST"
            )
            parser.add_argument(
                "--verify",
                action="store_true",
                help="then read back every object of the pushed branches on the remote, "
                "checked against its id; write again any damaged or missing one",
            )


def _location_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--endpoint", metavar="URL", help="a non-AWS S3 endpoint")
    parser.add_argument("--region", metavar="R", help="the bucket's region")


def _store_folder(repo: Repository) -> Path:
    if repo.path is None:
        raise InvalidInput("remotes need a store folder (this repository has none)")
    return repo.path


# ---------------------------------------------------------------- remote


def cmd_remote(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    from helixfs.vcs import remotes

    folder = _store_folder(repo)
    if args.action == "add":
        return _remote_add(args, folder, out)
    if args.action == "list":
        found = [r.as_json() for r in remotes.load(folder).values()]
        rows = [(r["name"], r["url"], r["endpoint"] or "", _traits(r)) for r in found]
        out.emit({"remotes": found}, table(rows) if rows else "no remotes")
        return 0
    if args.action in ("remove", "rm"):
        gone = remotes.remove(folder, args.name)
        from helixfs.vcs.sync import forget_tracking

        forget_tracking(repo, gone.name)
        out.emit({"removed": gone.as_json()}, f"removed remote {gone.name} ({gone.location})")
        return 0
    if args.action in ("trust", "untrust", "keys"):
        from helixfs.cli.remote_memory import cmd_keys

        return cmd_keys(args, folder, out)
    return _remote_key(args, folder, out)


def _traits(remote: dict[str, Any]) -> str:
    """What `remote list` says beside a location."""
    words = ["encrypted"] if remote["encrypt"] else []
    if remote["lazy"]:
        words.append("lazy (file contents read from it)")
    return ", ".join(words)


def _remote_add(args: argparse.Namespace, folder: Path, out: Output) -> int:
    from helixfs.store.s3client import S3Location
    from helixfs.vcs import remotes

    name = remotes.check_remote_name(args.name)
    location = S3Location.parse(args.url, args.endpoint, args.region)
    remote = remotes.Remote(name, location, args.encrypt)
    remotes.add(folder, remote)
    if args.encrypt and remotes.read_key(folder, name) is None:
        from helixfs.store.seal import new_key

        remotes.write_key(folder, name, new_key())
    out.emit({"added": remote.as_json()}, f"added remote {name}: {location}")
    return 0


def _remote_key(args: argparse.Namespace, folder: Path, out: Output) -> int:
    from helixfs.vcs import remotes

    remote = remotes.get(folder, args.name)
    if args.key_action == "export":
        key = remotes.read_key(folder, remote.name)
        if key is None:
            raise InvalidInput(f"the remote {remote.name!r} has no key (not encrypted?)")
        out.emit({"remote": remote.name, "key": key.hex()}, key.hex())
        return 0
    text = sys.stdin.read() if args.file in (None, "-") else Path(args.file).read_text()
    from helixfs.store.seal import parse_key

    remotes.write_key(folder, remote.name, parse_key(text))
    out.emit({"remote": remote.name, "imported": True}, f"key of {remote.name} imported")
    return 0


# ---------------------------------------------------------------- push, fetch, pull


def _split_words(words: list[str], folder: Path) -> tuple[Remote, list[str]]:
    """`[NAME] [BRANCH...]`: the first word is a remote if this store has one so named."""
    from helixfs.vcs import remotes

    known = remotes.load(folder)
    if words and words[0] in known:
        return known[words[0]], words[1:]
    return remotes.get(folder, None), words


def _sync(repo: Repository, remote: Remote) -> Sync:
    from helixfs.vcs import remotes
    from helixfs.vcs.sync import Sync, host_name

    store = remotes.open_store(_store_folder(repo), remote)
    return Sync(repo, store, remote.name, host_name(repo.settings), lazy=remote.lazy)


def _report(
    out: Output,
    remote: Remote,
    results: list[BranchSync],
    memory: MemorySync | None = None,
    verified: Verified | None = None,
) -> int:
    docs = [dataclasses.asdict(r) for r in results]
    rows = []
    for r in results:
        where = f" as {r.kept_as}" if r.kept_as else ""
        what = f"{r.status}{where}"
        if r.conflicts:
            what += ": conflicts in " + ", ".join(r.conflicts[:5])
        rows.append((r.branch, what, (r.commit or "")[:12], f"{r.objects} objects"))
    doc: dict[str, Any] = {"remote": remote.name, "url": str(remote.location), "branches": docs}
    text = table(rows) if rows else "nothing to do"
    if verified is not None:
        doc["verified"] = verified.as_json()
        text += "\n" + verified.summary()
    if memory is not None:
        doc["memory"] = memory.as_json()
        text += "\n" + memory.summary()
        for refused in memory.refused:
            out.note(refused)
    out.emit(doc, text)
    failed = verified is not None and bool(verified.unmendable)
    return 1 if failed or any(r.status == "conflict" for r in results) else 0


def cmd_push(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    return _run(args, repo, out, "push")


def cmd_fetch(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    return _run(args, repo, out, "fetch")


def cmd_pull(args: argparse.Namespace, repo: Repository, out: Output) -> int:
    return _run(args, repo, out, "pull")


def _fetch_contents(repo: Repository, remote: Remote, sync: Sync, out: Output) -> int:
    from helixfs.vcs import ondemand, remotes

    fetched = ondemand.fill(repo, sync.remote.get_run)
    if remote.lazy:
        remotes.set_lazy(_store_folder(repo), remote.name, False)
    out.emit(
        {"remote": remote.name, "contents": fetched, "lazy": False},
        f"fetched {fetched} file content(s) from {remote.name}: this store is whole",
    )
    return 0


def _verify(repo: Repository, sync: Sync, results: list[BranchSync]) -> Verified:
    """Read back the remote's branches the push left (a kept one's BRANCH@HOST)."""
    from helixfs.vcs.verify import verify

    branches = [r.kept_as or r.branch for r in results]
    tips = sync.remote_branches(branches).values()
    return verify(repo, sync.remote, tips)  # type: ignore[arg-type]


def _run(args: argparse.Namespace, repo: Repository, out: Output, what: str) -> int:
    """`[NAME] [BRANCH...]`, then one of push, fetch, pull over the remote's store."""
    remote, branches = _split_words(args.words, _store_folder(repo))
    if what == "push":
        branches = branches or [repo.current_branch()]
        for branch in branches:
            repo.settle(branch)  # the saves still in the quiet window go too
    sync = _sync(repo, remote)
    try:
        verified = None
        if what == "push":
            results = sync.push(branches, merge=args.merge, keep=args.keep)
            if args.verify:
                verified = _verify(repo, sync, results)
        elif what == "fetch" and args.contents:
            return _fetch_contents(repo, remote, sync, out)
        elif what == "fetch":
            results = sync.fetch(branches or None)
        else:
            results = sync.pull(branches or None)
        from helixfs.cli.remote_memory import share_memory

        try:
            memory = share_memory(_store_folder(repo), remote)
        except HelixError as err:  # the branches went through: say so, then why not memory
            _report(out, remote, results, verified=verified)
            out.note(f"helix: error: memory was not exchanged: {err}")
            return 1
        return _report(out, remote, results, memory, verified)
    finally:
        sync.remote.close()  # type: ignore[attr-defined]


# ---------------------------------------------------------------- clone


def cmd_clone(args: argparse.Namespace, store: Path, out: Output) -> int:
    """The branches, then the remote's shared memory: the batches of the keys given
    with --trust are applied, as a pull would (the others are counted, left)."""
    from helixfs.memory import remote_sync
    from helixfs.store.s3client import S3Location
    from helixfs.vcs import remotes
    from helixfs.vcs.clone import clone

    folder = Path(args.path).expanduser()
    location = S3Location.parse(args.url, args.endpoint, args.region)
    name = remotes.check_remote_name(args.name)
    trusted = [remote_sync.check_key(k) for k in args.trust]  # bad input: before anything
    key = None
    if args.key:
        from helixfs.store.seal import parse_key

        key = parse_key(Path(args.key).read_text())
    if folder.exists() and any(folder.iterdir()):
        raise UsageError(f"{folder} exists and is not empty: clone into a new folder")
    remote = remotes.Remote(name, location, key is not None, lazy=args.lazy)
    results = clone(folder, remote, key)
    doc: dict[str, Any] = {
        "store": str(folder.resolve()),
        "remote": name,
        "branches": [dataclasses.asdict(r) for r in results],
    }
    text = f"cloned {location} into {folder}: {len(results)} branch(es)" + (
        " (lazy: file contents come when read)" if args.lazy else ""
    )
    return _clone_memory(folder, remote, trusted, doc, text, out)


def _clone_memory(
    folder: Path,
    remote: Remote,
    trusted: list[str],
    doc: dict[str, Any],
    text: str,
    out: Output,
) -> int:
    """The shared memory of a clone just made: a failure here leaves the clone (its
    branches are whole) and says why memory is missing (`helix pull` brings it)."""
    from helixfs.cli.remote_memory import share_memory
    from helixfs.memory import remote_sync

    try:
        for key in trusted:
            remote_sync.trust(folder, key)
        memory = share_memory(folder, remote)
    except HelixError as err:
        out.emit(doc, text)
        out.note(f"helix: error: the clone is made, but memory was not brought: {err}")
        return 1
    doc["memory"] = memory.as_json()
    for refused in memory.refused:
        out.note(refused)
    out.emit(doc, text + "\n" + memory.summary())
    return 0
