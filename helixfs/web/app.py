"""The ASGI application: routes, the token gate, CSRF, and errors as pages.

Every request needs the server's token: in the URL `helix web` prints (`?token=`), after
which a cookie carries it (HttpOnly, SameSite=Strict). Without it: 401 and a page that
says only that. A form's POST also needs the CSRF token the page embedded. Handlers are
plain functions: starlette runs them on its thread pool, off the event loop, and they
take the repository lock themselves for their reads.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from helixfs.errors import HelixError, InvalidInput, NotADirectory, NotFound
from helixfs.web import pages_memory, pages_stats, pages_vcs
from helixfs.web.html import message_box, page
from helixfs.web.site import Site

log = logging.getLogger(__name__)

COOKIE = "helix_web_token"
STATIC = Path(__file__).parent / "static"
Handler = Callable[[Request], Response]


def query_of(request: Request) -> dict[str, bytes]:
    """The query string as bytes values: a repository path need not be UTF-8."""
    raw = request.scope.get("query_string", b"").decode("latin-1")
    pairs = parse_qsl(raw, keep_blank_values=True, encoding="latin-1")
    return {key: value.encode("latin-1") for key, value in pairs}


def error_page(status: int, title: str, text: str) -> HTMLResponse:
    return HTMLResponse(page(title, message_box(text)), status_code=status)


def _as_page(render: Callable[[Request], str | Response]) -> Handler:
    """A handler's HelixErrors as pages: unknown id or path 404, bad input 400."""

    def handler(request: Request) -> Response:
        try:
            result = render(request)
        except (NotFound, NotADirectory) as err:
            return error_page(404, "Not found", str(err))
        except InvalidInput as err:
            return error_page(400, "Bad request", str(err))
        except HelixError as err:
            return error_page(500, "Error", str(err))
        return result if isinstance(result, Response) else HTMLResponse(result)

    return handler


def build_app(site: Site) -> Starlette:
    routes = [
        Route("/", _as_page(lambda r: pages_vcs.history_page(site, query_of(r)))),
        Route("/commit/{id}", _as_page(lambda r: pages_vcs.commit_page(site, r.path_params["id"]))),
        Route("/compare", _as_page(lambda r: pages_vcs.compare_page(site, query_of(r)))),
        Route("/tree", _as_page(lambda r: pages_vcs.tree_page(site, query_of(r)))),
        Route("/log", _as_page(lambda r: pages_vcs.file_log_page(site, query_of(r)))),
        Route("/memory", _as_page(lambda r: pages_memory.memory_list_page(site, query_of(r)))),
        Route(
            "/memory/{id}",
            _as_page(lambda r: pages_memory.memory_page(site, r.path_params["id"], query_of(r))),
        ),
        Route("/memory/{id}/{action}", _memory_action(site), methods=["POST"]),
        Route("/stats", _as_page(lambda r: pages_stats.stats_page(site))),
        Route("/api/version", lambda r: JSONResponse(pages_vcs.version_json(site))),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={404: _not_found, 405: _not_allowed})
    app.add_middleware(TokenGate, token=site.token)
    return app


def _memory_action(site: Site) -> Callable[[Request], Awaitable[Response]]:
    async def handler(request: Request) -> Response:
        fields = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        if not hmac.compare_digest(fields.get("csrf", ""), site.csrf):
            return error_page(403, "Forbidden", "the form is stale or from another site (CSRF)")
        memory_id, action = request.path_params["id"], request.path_params["action"]

        def run() -> Response:
            target = pages_memory.correct(site, memory_id, action, fields)
            return RedirectResponse(target, status_code=303)

        return await run_in_threadpool(_as_page(lambda _: run()), request)

    return handler


async def _not_found(request: Request, exc: Exception) -> Response:
    return error_page(404, "Not found", f"no page at {request.url.path}")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return error_page(405, "Not allowed", f"{request.method} is not how {request.url.path} works")


def _timing(send: Send) -> Send:
    """`Server-Timing: app;dur=MS`: the server's own time for the page (its start is
    sent once the handler returned), which the browser's devtools and the benchmark
    read."""
    start = time.perf_counter()

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            ms = (time.perf_counter() - start) * 1000.0
            header = (b"server-timing", f"app;dur={ms:.2f}".encode())
            message = {**message, "headers": [*message.get("headers", []), header]}
        await send(message)

    return sending


class TokenGate:
    """401 for any request without the token (in the query, or the cookie it sets)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given, self.token):
            await self.app(scope, receive, _timing(self._setting_cookie(send)))
        elif hmac.compare_digest(request.cookies.get(COOKIE, ""), self.token):
            await self.app(scope, receive, _timing(send))
        else:
            denied = Response(
                "401: this page needs the token of the URL that `helix web` printed\n",
                status_code=401,
                media_type="text/plain",
            )
            await denied(scope, receive, send)

    def _setting_cookie(self, send: Send) -> Send:
        cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (b"set-cookie", cookie)],
                }
            await send(message)

        return sending


def url_for(site: Site, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={site.token}"
