"""`helix dna`: memories out to, and in from, signed and encrypted `.dna` strands.

Run in the CLI's own process even when a daemon owns the store (the memory database
takes writers from several processes): the passphrase comes from this process's
terminal or environment, and never travels over the control socket.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, get_args

from helixfs.cli.command import UsageError, add_command, path_argument
from helixfs.cli.memory import open_memory
from helixfs.cli.output import Output
from helixfs.errors import AlreadyExists, InvalidInput, NotFound
from helixfs.memory import MEMORY_TYPES, reported_errors
from helixfs.memory import strand as strands
from helixfs.memory.types import WriteAction

ENV_PASSPHRASE = "HELIX_DNA_PASSPHRASE"


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "dna",
        help="export memories to a signed, encrypted .dna strand; import one; show this "
        "store's signing key",
        store_handler=cmd_dna,
        forward=False,
    )
    p.add_argument("action", choices=("export", "import", "identity"))
    p.add_argument("file", nargs="?", type=path_argument, help="the .dna strand")
    p.add_argument("--scope", help="export: only this scope")
    p.add_argument("--type", choices=MEMORY_TYPES, help="export: only this type")
    p.add_argument("--tag", help="export: only memories with this tag")
    p.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="KEY",
        help="import: only a strand signed by this public key (repeatable)",
    )
    p.add_argument(
        "--passphrase-file",
        type=path_argument,
        metavar="FILE",
        help=f"its first line is the passphrase (else ${ENV_PASSPHRASE}, else a prompt)",
    )


def cmd_dna(args: argparse.Namespace, store: Path, out: Output) -> int:
    if not store.is_dir():
        raise NotFound(f"no HelixFS store at {store} (create one with: helix init {store})")
    if args.action == "identity":
        key = strands.public_key(strands.identity(store))
        out.emit({"public_key": key, "path": str(store / strands.IDENTITY_FILE)}, key)
        return 0
    if args.file is None:
        raise UsageError(f"helix dna {args.action} needs the strand's FILE")
    with reported_errors():
        return (_export if args.action == "export" else _import)(args, store, out)


def _export(args: argparse.Namespace, store: Path, out: Output) -> int:
    target = Path(args.file)
    if target.exists():
        raise AlreadyExists(f"{target} exists: a strand is never written over")
    with open_memory(store) as memory:
        memories, edges = strands.export_memories(
            memory, scope=args.scope, type=args.type, tag=args.tag
        )
    if not memories:
        raise NotFound("no active memory matches: nothing to export")
    key = strands.identity(store)
    data = strands.seal(memories, edges, _passphrase(args, confirm=True), key)
    _write_new(target, data)
    doc = {
        "path": str(target),
        "memories": len(memories),
        "relations": len(edges),
        "signer": strands.public_key(key),
        "bytes": len(data),
    }
    out.emit(doc, f"{len(memories)} memories -> {target} (signed by {doc['signer']})")
    return 0


def _import(args: argparse.Namespace, store: Path, out: Output) -> int:
    trusted = [_public_key(key) for key in args.trust]
    try:
        data = Path(args.file).read_bytes()
    except OSError as err:
        raise NotFound(f"cannot read {args.file}: {err.strerror}") from None
    strand = strands.unseal(data, _passphrase(args, confirm=False), trusted)
    with open_memory(store) as memory:
        report = strands.import_strand(memory, strand)
    actions = get_args(WriteAction)
    counts = ", ".join(f"{n} {action}" for action, n in report.items() if action in actions)
    out.emit(report, f"{report['memories']} memories from {strand.signer}: {counts}")
    return 0


def _public_key(text: str) -> str:
    key = text.strip().lower()
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise UsageError(f"--trust {text!r}: a public key is 64 hex digits (helix dna identity)")
    return key


def _passphrase(args: argparse.Namespace, *, confirm: bool) -> str:
    if args.passphrase_file:
        try:
            lines = Path(args.passphrase_file).read_text().splitlines()
        except OSError as err:
            raise NotFound(f"cannot read {args.passphrase_file}: {err.strerror}") from None
        return lines[0] if lines else ""
    if os.environ.get(ENV_PASSPHRASE):
        return os.environ[ENV_PASSPHRASE]
    if not sys.stdin.isatty() or getattr(args, "in_daemon", False):
        raise UsageError(
            f"a strand needs a passphrase: give --passphrase-file FILE or set ${ENV_PASSPHRASE}"
        )
    first = getpass.getpass("strand passphrase: ")
    if confirm and getpass.getpass("again: ") != first:
        raise InvalidInput("the two passphrases differ")
    return first


def _write_new(target: Path, data: bytes) -> None:
    """All of it or nothing: a strand cut short by a full disk is not left behind."""
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as err:
        raise InvalidInput(f"cannot write {target}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.link(partial, target)  # fails if the target appeared meanwhile
    except FileExistsError:
        raise AlreadyExists(f"{target} exists: a strand is never written over") from None
    except OSError as err:
        raise InvalidInput(f"cannot write {target}: {err.strerror}") from None
    finally:
        os.unlink(partial)
