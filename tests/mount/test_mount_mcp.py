"""`helix mcp` started in a mounted workspace: it finds the mount's store from its
working directory, and every tool call goes to the mount's daemon."""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest
from mcp_client import LEXICAL, call, contents, helix_mcp
from mount_harness import Mount, MountFactory, wait_until

pytestmark = pytest.mark.timeout(240)


def serve_in(mnt: Mount, test: Any) -> None:
    async def main() -> None:
        async with helix_mcp(cwd=mnt.path, env=LEXICAL) as client:  # no --store
            await test(client)

    anyio.run(main)


async def poll(check: Any, what: str, seconds: float = 60) -> None:
    with anyio.fail_after(seconds):
        while not await check():
            await anyio.sleep(0.2)


def committed(mnt: Mount, name: str) -> bool:
    return mnt.helix("cat", "HEAD", name, check=False).returncode == 0


@pytest.fixture
def lexical_mount(make_mount: MountFactory) -> Mount:
    return make_mount(0, env={**os.environ, **LEXICAL})


def test_a_workspace_search_starts_the_daemons_index_and_finds_files(lexical_mount: Mount) -> None:
    """Only a read of `.helix/search/...` started the workspace index: `helix recall
    --workspace` (and so memory_search) found no passage of any file, ever."""
    mnt = lexical_mount
    (mnt.path / "docs").mkdir()
    (mnt.path / "docs" / "rotation.md").write_text("The zanzibar rotation runs nightly.\n")

    async def body(client: Any) -> None:
        await call(client, "memory_remember", text="The zanzibar key is kept in the vault")
        first = await call(client, "memory_search", query="zanzibar rotation")
        assert any("index is being built" in note for note in first.get("notes", [])), first

        async def file_found() -> bool:
            hits = (await call(client, "memory_search", query="zanzibar rotation"))["hits"]
            return any(hit.get("path") == "docs/rotation.md" for hit in hits)

        await poll(file_found, "the workspace passage")
        hits = (await call(client, "memory_search", query="zanzibar vault"))["hits"]
        assert "The zanzibar key is kept in the vault" in contents(hits)

    serve_in(mnt, body)


def test_moves_made_through_mcp_show_in_the_mount_at_once(lexical_mount: Mount) -> None:
    mnt = lexical_mount
    (mnt.path / "a.txt").write_text("one\n")
    wait_until(lambda: committed(mnt, "a.txt"), what="a.txt's commit")
    before_b = mnt.head()
    (mnt.path / "b.txt").write_text("two\n")
    wait_until(lambda: committed(mnt, "b.txt"), what="b.txt's commit")
    assert (mnt.path / "b.txt").read_text() == "two\n"  # in the kernel's caches now

    async def body(client: Any) -> None:
        await call(client, "workspace_branch_create", name="before-b", rev=before_b)
        await call(client, "workspace_reset_hard", rev=before_b)

    serve_in(mnt, body)
    assert not (mnt.path / "b.txt").exists()  # the daemon invalidated what the kernel held
    assert (mnt.path / "a.txt").read_text() == "one\n"
    assert "before-b" in os.listdir(mnt.path / ".helix" / "branches")


def test_a_server_started_in_a_branch_folder_works_on_that_branch(mnt: Mount) -> None:
    """Started in `.helix/branches/try/sub/`, the server's HEAD is `try` (ADR 0039), and
    its tools' paths still go from the workspace's root."""
    mnt.sh("mkdir sub && echo base > sub/f && mkdir .helix/branches/try")
    folder = mnt.path / ".helix" / "branches" / "try" / "sub"
    (folder / "f").write_text("on try\n")
    main_head = mnt.helix("rev-parse", "main").stdout.strip()

    async def body(client: Any) -> None:
        read = await call(client, "workspace_read", rev="HEAD", path="sub/f")
        assert read["content"] == "on try\n", read
        entries = await call(client, "workspace_ls", path="sub")
        assert [e["name"] for e in entries["entries"]] == ["f"]
        await call(client, "workspace_reset_hard", rev="HEAD~1")

    async def main() -> None:
        async with helix_mcp(cwd=folder, env=LEXICAL) as client:
            await body(client)

    anyio.run(main)
    assert (folder / "f").read_text() == "base\n"
    assert mnt.helix("rev-parse", "main").stdout.strip() == main_head
