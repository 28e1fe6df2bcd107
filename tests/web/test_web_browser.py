"""The web view in a real browser: headless Chromium, driven by selenium, against
`helix web` on a real store. Each test opens pages, clicks as a person would, and checks
what the page shows against what the CLI says of the same store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait
from web_harness import WebServer, get, helix_json, post, supersede_database

pytestmark = pytest.mark.timeout(300)


def wait(driver: Any, seconds: float = 30) -> WebDriverWait[Any]:
    return WebDriverWait(driver, seconds)


def texts(driver: Any, css: str) -> list[str]:
    return [el.text for el in driver.find_elements(By.CSS_SELECTOR, css)]


# -- the token ----------------------------------------------------------------------------


def test_without_the_token_every_request_is_refused(server: WebServer, store: Any) -> None:
    for path in ("/", "/memory", "/stats", "/static/helix.css", "/api/version", "/nosuch"):
        status, body, _ = get(server.base + path)
        assert status == 401, path
        assert "add the logo" not in body and "PostgreSQL" not in body
    status, _, _ = get(server.base + "/?token=" + "x" * len(server.token))
    assert status == 401
    status, body, headers = get(server.url)
    assert status == 200 and "add the logo" in body
    assert "HttpOnly" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    cookie = headers["set-cookie"].split(";")[0]
    assert get(server.base + "/memory", cookie=cookie)[0] == 200
    assert get(server.base + "/memory", cookie="helix_web_token=wrong")[0] == 401


def test_the_browser_without_the_token_sees_nothing(driver: Any, server: WebServer) -> None:
    driver.delete_all_cookies()
    driver.get(server.base + "/")
    assert "401" in driver.page_source
    assert "add the logo" not in driver.page_source


# -- history, commits, diffs ------------------------------------------------------------


def test_history_draws_every_branch_and_snapshot(page: Any, store: Any) -> None:
    rows = page.find_elements(By.CSS_SELECTOR, "ol.commits li")
    dots = page.find_elements(By.CSS_SELECTOR, "svg.graph circle")
    assert len(rows) == len(dots) > 0
    legend = texts(page, ".legend .ref")
    for branch in helix_json("--store", store, "branch")["branches"]:
        assert branch["name"] in legend
    assert "snapshot before-web" in legend
    log = helix_json("--store", store, "log", "try-refresh", "-n", "1")
    assert any(log[0]["id"][:12] in row.text for row in rows)  # the other branch's tip too
    assert "notes: a third line" in rows[0].text  # newest first


def test_clicking_a_commit_shows_its_diff_and_the_file_history(page: Any) -> None:
    page.find_element(By.CSS_SELECTOR, "ol.commits li a.id").click()
    wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "pre.diff")))
    assert page.title.startswith("Commit ")
    assert "notes.txt" in texts(page, "table.changes td")
    added = texts(page, "pre.diff .add")
    removed = texts(page, "pre.diff .del")
    assert "+third line" in added and "-second line" in removed
    page.find_element(By.CSS_SELECTOR, "table.changes a[href^='/log']").click()
    wait(page).until(ec.title_contains("History of notes.txt"))
    messages = texts(page, "table.log td")
    assert "notes: a third line" in messages and "notes: two lines" in messages


def test_compare_two_branches(page: Any, server: WebServer) -> None:
    page.get(server.base + "/compare")
    page.find_element(By.ID, "f-a").send_keys("try-refresh")
    page.find_element(By.ID, "f-b").send_keys("main")
    page.find_element(By.CSS_SELECTOR, "form.compare button").click()
    wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.changes")))
    assert "logo.png" in texts(page, "table.changes td")
    assert any("Binary files" in line for line in texts(page, "pre.diff span"))


def test_browse_a_file_of_an_old_revision_and_a_binary(page: Any, server: WebServer) -> None:
    page.get(server.base + "/tree?rev=main~1")
    page.find_element(By.LINK_TEXT, "notes.txt").click()
    wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "pre.file")))
    assert texts(page, "pre.file span") == ["first line", "second line"]
    page.get(server.base + "/tree")
    page.find_element(By.LINK_TEXT, "logo.png").click()
    description = wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.desc")))
    assert "binary file of 1,032 bytes (PNG image)" in description.text


# -- memory ---------------------------------------------------------------------------------


def test_search_shows_what_helix_recall_finds(page: Any, server: WebServer, store: Any) -> None:
    page.get(server.base + "/memory")
    box = page.find_element(By.ID, "f-q")
    box.send_keys("how are auth tokens signed")
    page.find_element(By.ID, "f-go").click()
    wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.hits")))
    shown = texts(page, "table.hits td:last-child")
    recalled = helix_json("--store", store, "recall", "how are auth tokens signed")
    assert set(shown) == {hit["content"] for hit in recalled}
    assert shown[0] == "tokens are signed with Ed25519 keys"


def test_filter_by_type_and_tag(page: Any, server: WebServer) -> None:
    page.get(server.base + "/memory?type=howto")
    assert sorted(texts(page, "table.memories td:last-child")) == [
        "migrations live in db/migrations and run with alembic",
        "run the tests with pytest -x -q",
    ]
    page.get(server.base + "/memory?tag=security")
    assert len(texts(page, "table.memories td:last-child")) == 2


def test_forget_then_restore_from_the_page(page: Any, server: WebServer, store: Any) -> None:
    page.get(server.base + "/memory?tag=cache")
    page.find_element(By.CSS_SELECTOR, "table.memories a.id").click()
    wait(page).until(ec.presence_of_element_located((By.ID, "content")))
    memory_id = page.title.split()[1]
    page.find_element(By.ID, "f-reason").send_keys("we moved to memcached")
    page.find_element(By.CSS_SELECTOR, "form.forget button").click()
    wait(page).until(ec.text_to_be_present_in_element((By.ID, "status"), "forgotten"))
    ops = [e["op"] for e in helix_json("--store", store, "history", memory_id)]
    assert ops[-1] == "forget"
    assert "the cache is Redis" not in str(helix_json("--store", store, "memories"))
    page.find_element(By.CSS_SELECTOR, "form.restore button").click()
    wait(page).until(ec.text_to_be_present_in_element((By.ID, "status"), "active"))
    assert [e["op"] for e in helix_json("--store", store, "history", memory_id)][-1] == "rollback"


def test_edit_and_confirm_are_in_history(page: Any, server: WebServer, store: Any) -> None:
    page.get(server.base + "/memory?tag=ci")
    page.find_element(By.CSS_SELECTOR, "table.memories a.id").click()
    memory_id = (
        wait(page).until(ec.presence_of_element_located((By.ID, "content")))
        and page.title.split()[1]
    )
    box = page.find_element(By.ID, "f-content")
    box.clear()
    box.send_keys("the CI runs on every push and every pull request")
    page.find_element(By.CSS_SELECTOR, "form.edit button").click()
    wait(page).until(ec.text_to_be_present_in_element((By.ID, "content"), "every pull request"))
    page.find_element(By.CSS_SELECTOR, "form.confirm button").click()
    wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.done")))
    entries = helix_json("--store", store, "history", memory_id)
    assert [e["op"] for e in entries][-2:] == ["edit", "confirm"]
    assert entries[-1]["after"]["content"] == "the CI runs on every push and every pull request"
    assert "edit" in texts(page, "table.ops .op")


def test_filter_by_branch_and_search_as_from_it(page: Any, server: WebServer, store: Any) -> None:
    helix_json("--store", store, "branch", "webfeat")
    text = "the webfeat banner hides behind a flag"
    made = helix_json("--store", store, "remember", "--branch", "webfeat", "--type", "fact", text)
    page.get(server.base + "/memory")
    Select(page.find_element(By.ID, "f-branch")).select_by_value("webfeat")
    page.find_element(By.ID, "f-go").click()
    wait(page).until(ec.url_contains("branch=webfeat"))
    assert texts(page, "table.memories td:last-child") == [text]
    assert made["id"] in texts(page, "table.memories a.id")
    page.get(server.base + "/memory?q=webfeat+banner&branch=webfeat")
    assert texts(page, "table.hits td:last-child")[0] == text
    page.get(server.base + "/memory?q=webfeat+banner")  # the trunk does not see it
    assert text not in texts(page, "table.hits td:last-child")


def test_the_stale_filter_lists_memories_whose_file_moved_on(
    page: Any, server: WebServer, store: Any, tmp_path: Path
) -> None:
    """`stale` is `helix memories --stale`: the file a memory is about changed since."""
    source = tmp_path / "retry.py"
    source.write_text("RETRIES = 3\n")
    helix_json("--store", store, "commit", "-m", "retry policy", f"web/retry.py={source}")
    text = "the web client retries three times"
    made = helix_json("--store", store, "remember", "--source", "web/retry.py", text)
    source.write_text("RETRIES = 5\n")
    helix_json("--store", store, "commit", "-m", "more retries", f"web/retry.py={source}")
    page.get(server.base + "/memory")
    Select(page.find_element(By.ID, "f-status")).select_by_value("stale")
    page.find_element(By.ID, "f-go").click()
    wait(page).until(ec.url_contains("status=stale"))
    assert made["id"] in texts(page, "table.memories a.id")
    assert helix_json("--store", store, "memories", "--stale")[0]["id"] == made["id"]


def test_supersession_chain_is_shown(page: Any, server: WebServer, store: Any) -> None:
    supersede_database(store)
    page.get(server.base + "/memory?q=main+database")
    page.find_element(By.CSS_SELECTOR, "table.hits a.id").click()
    chain = wait(page).until(ec.presence_of_element_located((By.CSS_SELECTOR, "ol.chain")))
    assert "PostgreSQL 16" in chain.text and "superseded" in chain.text


def test_a_post_without_the_csrf_token_changes_nothing(server: WebServer, store: Any) -> None:
    _, _, headers = get(server.url)
    cookie = headers["set-cookie"].split(";")[0]
    target = helix_json("--store", store, "memories", "--tag", "frontend")[0]["id"]
    status, body = post(f"{server.base}/memory/{target}/forget", {"reason": "x"}, cookie)
    assert status == 403 and "CSRF" in body
    status, _ = post(f"{server.base}/memory/{target}/forget", {"csrf": "0" * 32}, cookie)
    assert status == 403
    assert helix_json("--store", store, "history", target)[-1]["op"] == "add"


# -- stats, bad input -------------------------------------------------------------------------


def test_stats_draws_four_charts(page: Any, server: WebServer) -> None:
    page.get(server.base + "/stats")
    titles = texts(page, "section.stat h2")
    assert titles[0].startswith("Commits per hour") and titles[3] == "Memories by type"
    assert len(page.find_elements(By.CSS_SELECTOR, "section.stat svg.chart")) == 4
    assert "decision" in page.find_element(By.CSS_SELECTOR, "section.stat:last-child svg").text


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/commit/0123456789abcdef", 404, "no commit"),
        ("/memory/NOSUCHMEMORY", 404, "no memory"),
        ("/tree?path=no/such/file", 404, "no/such"),
        ("/tree?rev=nosuchbranch", 404, "nosuchbranch"),
        ("/nosuch/page", 404, "no page at /nosuch/page"),
        ("/?after=damaged", 400, "the page link is damaged"),
        ("/memory?status=sleepy", 400, "unknown status 'sleepy'"),
        ("/memory?type=poem", 400, "unknown memory type 'poem'"),
        ("/memory?branch=nosuch", 400, "no branch named 'nosuch'"),
        ("/compare?a=main", 400, "give both sides"),
    ],
)
def test_bad_input_gets_a_clear_page(
    page: Any, server: WebServer, path: str, status: int, says: str
) -> None:
    code, body, _ = get(server.base + path, cookie=f"helix_web_token={server.token}")
    assert code == status
    page.get(server.base + path)
    assert says.lower() in page.find_element(By.CSS_SELECTOR, "p.error").text.lower()
