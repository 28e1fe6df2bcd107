"""Fixtures of the web view's tests; the harness itself is in web_harness.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_harness import WebServer, chromium, make_store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("web")
    make_store(base / "store", base / "work")
    return base / "store"


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[WebServer]:
    """`helix web` on the module's store (it holds the store while it runs)."""
    web = WebServer(store).start()
    try:
        yield web
    finally:
        web.stop()


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    with chromium() as chrome:
        yield chrome


@pytest.fixture
def page(driver: Any, server: WebServer) -> Any:
    """The browser, past the token: the first visit carries it and sets the cookie."""
    driver.get(server.url)
    return driver
