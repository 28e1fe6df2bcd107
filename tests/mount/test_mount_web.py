"""The web view of a mounted store: the daemon serves it (one process), and the history
page follows saves made in the mount, live, without a reload. The browser harness is
tests/web/web_harness.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mount_harness import HELIX, Mount

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "web"))
from web_harness import chromium, get  # noqa: E402

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]


@pytest.fixture
def driver() -> Iterator[Any]:
    with chromium() as chrome:
        yield chrome


def helix_web(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HELIX, "--store", str(store), "web"], capture_output=True, text=True, timeout=120
    )


def test_the_daemon_serves_the_view_and_it_follows_saves(mnt: Mount, driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    done = helix_web(mnt.store)
    assert done.returncode == 0, done.stderr
    url = done.stdout.strip()
    assert url.startswith("http://127.0.0.1:") and "token=" in url
    assert f"pid {mnt.pid}" in done.stderr  # served by the mount's daemon, no new process
    again = helix_web(mnt.store)
    assert again.stdout.strip() == url and "already" in again.stderr
    assert get(url.split("/?token=")[0] + "/")[0] == 401

    driver.get(url)
    before = len(driver.find_elements(By.CSS_SELECTOR, "ol.commits li"))
    mnt.sh("echo saved while the page was open > live.txt")
    WebDriverWait(driver, 60).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "ol.commits li")) > before
    )
    assert "bash" in driver.find_elements(By.CSS_SELECTOR, "ol.commits li")[0].text  # who saved
    driver.find_element(By.CSS_SELECTOR, "ol.commits li a.id").click()
    WebDriverWait(driver, 30).until(lambda d: "live.txt" in d.page_source)
    assert "+saved while the page was open" in [
        el.text for el in driver.find_elements(By.CSS_SELECTOR, "pre.diff .add")
    ]
    assert mnt.stop() == 0  # it stopped its web view, then closed the store
    assert "Traceback" not in "".join(mnt.output)
