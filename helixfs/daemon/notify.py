"""Telling systemd a `--foreground` mount is ready (the sd_notify protocol).

Under `Type=simple` systemd counts the service as started the moment the process exists:
`systemctl --user start helixfs@work && ls ~/work` then lists the empty folder under
the mount, and a unit ordered `After=` it starts before the mount answers. With
`Type=notify` systemd waits for a `READY=1` datagram on the socket named by
`$NOTIFY_SOCKET`, sent here once the mount answers (what `helix mount` waits for too).
"""

from __future__ import annotations

import contextlib
import os
import socket

NOTIFY_SOCKET = "NOTIFY_SOCKET"


def notify_ready() -> bool:
    """Send READY=1 if a service manager asked for it; True if sent. Never raises: a
    mount that serves must not fail for want of telling systemd."""
    address = os.environ.pop(NOTIFY_SOCKET, "")  # once, and not for our children
    if not address.startswith(("/", "@")):
        return False
    if address.startswith("@"):  # an abstract socket: its name starts with a NUL
        address = "\0" + address[1:]
    datagram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    with contextlib.suppress(OSError), datagram:
        datagram.connect(address)
        datagram.sendall(f"READY=1\nMAINPID={os.getpid()}\n".encode())
        return True
    return False
