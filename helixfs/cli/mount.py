"""`helix mount` and `helix umount`: start a daemon for a store, and stop it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from helixfs.cli.command import add_command, path_argument
from helixfs.cli.output import Output


def register(subparsers: Any) -> None:
    mount = add_command(
        subparsers,
        "mount",
        help="mount STORE at MOUNTPOINT: every save becomes a commit",
        store_handler=cmd_mount,
        data=False,
        forward=False,
    )
    mount.add_argument(
        "store_path", metavar="STORE", type=path_argument, help="store folder (see helix init)"
    )
    mount.add_argument(
        "mountpoint",
        metavar="MOUNTPOINT",
        type=path_argument,
        help="an existing folder (its own files are hidden while mounted)",
    )
    mount.add_argument(
        "--foreground", "-f", action="store_true", help="serve in this process until unmounted"
    )
    mount.add_argument(
        "--quiet-window",
        type=float,
        metavar="MS",
        default=None,
        help="commit once a branch has been quiet this long (default: mount.quiet_window, 300;"
        " 0 = every save)",
    )
    mount.add_argument(
        "-o",
        dest="options",
        action="append",
        default=[],
        metavar="OPTS",
        help="comma-separated FUSE options (allow_other, ro, ...), quiet_window=MS, gc_growth=MIB",
    )
    mount.add_argument(
        "--debug", action="store_true", help="debug-level daemon log (with --foreground)"
    )
    mount.add_argument(
        "--remote",
        metavar="NAME",
        help="keep in step with this remote: push commits, fetch others' (helix remote add)",
    )
    umount = add_command(
        subparsers,
        "umount",
        help="unmount a HelixFS mount once its pending saves are committed",
        store_handler=cmd_umount,
        data=False,
        forward=False,
        aliases=["unmount"],
    )
    umount.add_argument("mountpoint", metavar="MOUNTPOINT", type=path_argument)
    umount.add_argument(
        "--lazy", "-z", action="store_true", help="detach now even if files are open in it"
    )


def cmd_mount(args: argparse.Namespace, store: Path, out: Output) -> int:
    import logging

    from helixfs.cli.main import run_in_process
    from helixfs.daemon.background import configure_logging, start_background
    from helixfs.daemon.lifecycle import MountConfig, run_foreground
    from helixfs.daemon.notify import notify_ready

    config = MountConfig.build(
        args.store_path, args.mountpoint, args.quiet_window, args.options, args.remote
    )
    if not args.foreground:
        pid = start_background(config, run_in_process)
        out.line(f"mounted {config.store} at {config.mountpoint} (daemon pid {pid})")
        return 0
    configure_logging(sys.stderr, logging.DEBUG if args.debug else logging.INFO)

    def ready() -> None:
        out.line(f"mounted {config.store} at {config.mountpoint} (pid {os.getpid()})")
        out.stdout.flush()
        notify_ready()  # systemd's Type=notify (mount/helixfs@.service)

    run_foreground(config, run_in_process, ready)
    return 0


def cmd_umount(args: argparse.Namespace, store: Path, out: Output) -> int:
    from helixfs.daemon.mounts import unmount

    mountpoint = Path(os.path.abspath(Path(args.mountpoint).expanduser()))
    served = unmount(mountpoint, lazy=args.lazy, progress=out.note)  # a push at its end
    detail = f" (store {served})" if served else ""
    out.line(f"unmounted {mountpoint}{detail}")
    return 0
