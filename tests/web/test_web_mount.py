"""The web view of a mounted store: the daemon serves it (one process), and the history
page follows saves made in the mount, live, without a reload."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mount_harness import Mount, require_fuse
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
from web_harness import HELIX, get

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]


@pytest.fixture
def mounted(tmp_path: Path) -> Any:
    require_fuse()
    from mount_harness import helix

    mounts: list[Mount] = []

    def factory() -> Mount:
        store = tmp_path / "store"
        helix("init", store)
        target = tmp_path / "mnt"
        target.mkdir()
        mount = Mount(store, target)
        mounts.append(mount)
        mount.start("--quiet-window", "0")
        return mount

    try:
        yield factory
    finally:
        for mount in mounts:
            mount.stop()


def helix_web(store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HELIX, "--store", str(store), "web", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_daemon_serves_the_view_and_it_follows_saves(mounted: Any, driver: Any) -> None:
    mount = mounted()
    done = helix_web(mount.store)
    assert done.returncode == 0, done.stderr
    url = done.stdout.strip()
    assert url.startswith("http://127.0.0.1:") and "token=" in url
    assert f"pid {mount.pid}" in done.stderr  # served by the mount's daemon, no new process
    again = helix_web(mount.store)
    assert again.stdout.strip() == url and "already" in again.stderr
    base = url.split("/?token=")[0]
    assert get(base + "/")[0] == 401

    driver.get(url)
    before = len(driver.find_elements(By.CSS_SELECTOR, "ol.commits li"))
    mount.sh("echo saved while the page was open > live.txt")
    WebDriverWait(driver, 60).until(
        lambda d: len(d.find_elements(By.CSS_SELECTOR, "ol.commits li")) > before
    )
    rows = driver.find_elements(By.CSS_SELECTOR, "ol.commits li")
    assert "bash" in rows[0].text  # the process that saved it
    driver.find_element(By.CSS_SELECTOR, "ol.commits li a.id").click()
    WebDriverWait(driver, 30).until(lambda d: "live.txt" in d.page_source)
    assert "+saved while the page was open" in [
        el.text for el in driver.find_elements(By.CSS_SELECTOR, "pre.diff .add")
    ]
    assert mount.stop() == 0  # it stopped its web view, then closed the store
    assert "Traceback" not in "".join(mount.output)
