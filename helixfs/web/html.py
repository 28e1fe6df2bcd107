"""HTML by hand: every dynamic string goes through `e()`, pages share one layout.

No template engine is installed with mcp, and the pages are small: functions that
return strings keep the escaping in one place (`e`) and readable at the call site.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlencode

NAV = (("/", "history"), ("/tree", "browse"), ("/compare", "compare"), ("/memory", "memory"))
NAV_STATS = ("/stats", "stats")


def e(value: object) -> str:
    """Escaped text; bytes (a repository path) are shown as the file system names them."""
    text = os.fsdecode(value) if isinstance(value, bytes) else str(value)
    return html.escape(text.encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


def url(where: str, /, **params: str | bytes | int | None) -> str:
    """`path?k=v` with raw bytes percent-encoded as bytes (names need not be UTF-8)."""
    pairs = [
        (key, value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape"))
        for key, value in params.items()
        if value is not None
    ]
    return where + ("?" + urlencode(pairs, quote_via=quote) if pairs else "")


def link(href: str, text: object, cls: str = "") -> str:
    attr = f' class="{e(cls)}"' if cls else ""
    return f'<a href="{e(href)}"{attr}>{e(text)}</a>'


def when(seconds: float | None) -> str:
    if not seconds:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def table(head: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """`rows` cells are HTML already (escaped by the caller)."""
    head_html = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<table class="{e(cls)}"><thead><tr>{head_html}</tr></thead><tbody>{body}</tbody></table>'
    )


def form(action: str, csrf: str, fields: str, button: str, cls: str = "") -> str:
    """A POST form carrying the CSRF token (app.py checks it before anything changes)."""
    return (
        f'<form method="post" action="{e(action)}" class="{e(cls)}">'
        f'<input type="hidden" name="csrf" value="{e(csrf)}">{fields}'
        f'<button type="submit">{e(button)}</button></form>'
    )


def select(name: str, options: Iterable[str], chosen: str | None, blank: str = "") -> str:
    opts = [f'<option value="">{e(blank)}</option>'] if blank else []
    for option in options:
        mark = " selected" if option == chosen else ""
        opts.append(f'<option value="{e(option)}"{mark}>{e(option)}</option>')
    return f'<select name="{e(name)}" id="f-{e(name)}">{"".join(opts)}</select>'


def page(
    title: str, body: str, *, active: str = "", scripts: Mapping[str, str] | None = None
) -> str:
    nav = "".join(
        f'<a href="{href}" class="{"on" if label == active else ""}">{label}</a>'
        for href, label in (*NAV, NAV_STATS)
    )
    data = "".join(f' data-{e(k)}="{e(v)}"' for k, v in (scripts or {}).items())
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{e(title)} · HelixFS</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/helix.css">'
        '<script src="/static/helix.js" defer></script></head>'
        f'<body{data}><header><span class="brand">HelixFS</span><nav>{nav}</nav></header>'
        f"<main><h1>{e(title)}</h1>{body}</main></body></html>"
    )


def message_box(text: str, cls: str = "error") -> str:
    return f'<p class="{e(cls)}" role="alert">{e(text)}</p>'
