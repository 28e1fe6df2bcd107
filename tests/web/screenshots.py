"""Take the screenshots of docs/web/ (not a test): `python tests/web/screenshots.py`.

A store like the tests' (two branches, a merge, a snapshot, memories, one superseded),
served by `helix web`, photographed page by page in headless Chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from selenium.webdriver.common.by import By
from web_harness import WebServer, browser, helix_json, make_store, supersede_database

DOCS = Path(__file__).resolve().parents[2] / "docs" / "web"


def main() -> None:
    DOCS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        make_store(store, Path(tmp) / "work")
        supersede_database(store)
        server = WebServer(store).start()
        driver = browser()
        try:
            shoot(driver, server, store)
        finally:
            driver.quit()
            server.stop()


def shoot(driver: object, server: WebServer, store: Path) -> None:
    from typing import Any

    d: Any = driver
    d.set_window_size(1280, 820)
    d.get(server.url)
    d.save_screenshot(str(DOCS / "history.png"))
    d.find_element(By.CSS_SELECTOR, "ol.commits li a.id").click()
    d.save_screenshot(str(DOCS / "commit.png"))
    d.get(server.base + "/compare?a=try-refresh&b=main")
    d.save_screenshot(str(DOCS / "compare.png"))
    d.get(server.base + "/tree?rev=main&path=notes.txt")
    d.save_screenshot(str(DOCS / "browse.png"))
    d.get(server.base + "/memory?q=main+database&status=any")
    d.save_screenshot(str(DOCS / "memory-search.png"))
    newest = helix_json("--store", store, "recall", "main database")[0]["id"]
    d.set_window_size(1280, 1300)
    d.get(f"{server.base}/memory/{newest}")
    d.save_screenshot(str(DOCS / "memory.png"))
    d.set_window_size(1280, 2000)
    d.get(server.base + "/stats")
    d.save_screenshot(str(DOCS / "stats.png"))
    print(f"screenshots in {DOCS}", file=sys.stderr)


if __name__ == "__main__":
    main()
