"""A TCP relay on 127.0.0.1 that counts the bytes it carries: put in front of the test's
S3 server (tests/seaweed.py), it says what a client (a CLI in a subprocess, a mount's
daemon) really took off the wire, headers and all, with nothing of ours replaced.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

CHUNK = 64 << 10


class CountingRelay:
    """`endpoint` relays to `upstream` (http://HOST:PORT); `down` counts the bytes the
    server sent, `up` those the clients sent."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._lock = threading.Lock()
        self.down = 0
        self.up = 0
        self._open: list[socket.socket] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def reset(self) -> None:
        with self._lock:
            self.down = self.up = 0

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, server]
            for source, sink, downward in ((server, client, True), (client, server, False)):
                threading.Thread(
                    target=self._pump, args=(source, sink, downward), daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, downward: bool) -> None:
        try:
            while data := source.recv(CHUNK):
                sink.sendall(data)
                with self._lock:
                    if downward:
                        self.down += len(data)
                    else:
                        self.up += len(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            opened, self._open = self._open, []
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.close()


@contextlib.contextmanager
def counting(upstream: str) -> Iterator[CountingRelay]:
    relay = CountingRelay(upstream)
    try:
        yield relay
    finally:
        relay.close()
