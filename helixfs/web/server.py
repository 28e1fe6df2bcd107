"""Running the web view: uvicorn on a socket bound here, in a thread of its own.

The same server serves in a mount's daemon (started by a forwarded `helix web`, stopped
on unmount through running.py) and in `helix web`'s own process when no mount runs
(the foreground: until Ctrl-C or SIGTERM). Binding the socket here, before uvicorn
starts, makes a port in use one clear error and port 0 a known free port at once.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn

from helixfs.errors import HelixError
from helixfs.web import running
from helixfs.web.app import build_app, url_for
from helixfs.web.site import Site
from helixfs.web.sizes import FILE_NAME, SizeSamples

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
START_SECONDS = 20.0
STOP_SECONDS = 10.0


class WebServer:
    def __init__(self, site: Site, host: str, port: int) -> None:
        self.site = site
        self.host = host
        self.sock = _bind(host, port)
        self.port = int(self.sock.getsockname()[1])
        if site.sizes is None:
            site.sizes = SizeSamples(site.repo, site.store / FILE_NAME if site.store else None)
        config = uvicorn.Config(
            build_app(site), log_level="warning", access_log=False, lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name="helix-web", daemon=True)
        self.failure: BaseException | None = None

    @property
    def url(self) -> str:
        return url_for(self.site, self.host, self.port)

    def start(self) -> WebServer:
        self.thread.start()
        waited = 0.0
        while not self.server.started and self.thread.is_alive() and waited < START_SECONDS:
            self.thread.join(0.02)
            waited += 0.02
        if not self.server.started:
            self.stop()
            raise HelixError(f"the web server did not start: {self.failure or 'timed out'}")
        assert self.site.sizes is not None
        self.site.sizes.start()
        running.register(self)
        return self

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self.sock])
        except BaseException as exc:  # reported by start(); the thread just ends
            self.failure = exc

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread.ident is not None:  # started
            self.thread.join(STOP_SECONDS)
        if self.site.sizes is not None:
            self.site.sizes.stop()
        self.sock.close()
        running.unregister(self)

    def serving(self) -> bool:
        return self.thread.is_alive()


def _bind(host: str, port: int) -> socket.socket:
    if not 0 <= port <= 65535:
        raise HelixError(f"--port {port} is not a port (0..65535; 0 = any free one)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as err:
        raise HelixError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock


def serve_foreground(site: Site, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Serve until Ctrl-C or SIGTERM; the caller closes the store after."""
    server = WebServer(site, host, port)
    with _signals_interrupt():
        server.start()
        try:
            ready(server.url)
            while server.serving():
                server.thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM as Ctrl-C: the store is then closed cleanly, not cut off."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_in_thread(site: Site, host: str, port: int) -> tuple[WebServer, bool]:
    """The server of this process for `site`'s store, started if none runs yet;
    (server, True) when it was already serving."""
    for server in running.running():
        if isinstance(server, WebServer) and server.site.repo is site.repo and server.serving():
            return server, True
    return WebServer(site, host, port).start(), False
