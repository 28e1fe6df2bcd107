"""The MCP server: each tool is one `helix` command line, run with `--json`.

A tool builds the command line the CLI would take and hands it to the command runner it
was given (the CLI's own `run`, ADR 0037). So a tool behaves exactly as the command
does: it goes to the mount's daemon when one owns the store (its warm embedding model,
its invalidation of the kernel's caches after a reset), and opens the store for the
call otherwise, holding no lock between calls. A command's error document becomes a
tool error with its message, and a failed command has changed nothing.

Text from the agent always follows `--`, so a query such as "--all" is a query, never
an option.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from helixfs import __version__
from helixfs.memory.types import MemoryType, Status

# argv -> (exit status, stdout, stderr), as `helix` itself would end
CommandRunner = Callable[[Sequence[str]], tuple[int, str, str]]
Result = dict[str, Any]

INSTRUCTIONS = """\
HelixFS keeps every save of this workspace as a commit, and a long-term memory of facts,
decisions, conventions and gotchas. Search the memory before you guess (memory_search,
memory_context); remember what the next session should know (memory_remember); save a
checkpoint before you stop (memory_checkpoint) and read it back when you start
(memory_resume). Branch before a risky change (workspace_branch_create) and restore any
state with workspace_reset_hard: nothing saved is ever lost (workspace_log with lost).
"""
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)
MOVES_STATE = ToolAnnotations(read_only_hint=False, destructive_hint=True)
READ_CHARS = 100_000  # workspace_read's default cut: ~25k tokens


class Helix:
    """Runs command lines one at a time: an in-process command opens the store, and
    RocksDB lets one opener in at a time."""

    def __init__(self, run: CommandRunner) -> None:
        self._run = run
        self._lock = threading.Lock()

    async def __call__(self, *argv: str, key: str = "result") -> Result:
        """The command's JSON document as a tool result, an object: a list goes under
        `key`, and what the command said on stderr under "notes" (a search that is
        lexical only, a workspace index still being built)."""
        return await anyio.to_thread.run_sync(self._call, argv, key)

    def _call(self, argv: Sequence[str], key: str) -> Result:
        with self._lock:
            status, stdout, stderr = self._run(["--json", *argv])
        try:
            doc = json.loads(stdout)
        except ValueError:
            doc = None
        if status != 0:
            raise ToolError(_failure(doc, stderr))
        result = doc if isinstance(doc, dict) else {key: doc}
        notes = [line.removeprefix("helix: ") for line in stderr.splitlines() if line.strip()]
        return {**result, "notes": notes} if notes else result


def _failure(doc: Any, stderr: str) -> str:
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        return f"{doc['error'].get('kind', 'Error')}: {doc['error'].get('message', '')}"
    return stderr.strip().removeprefix("helix: error: ") or "the command failed"


def _options(**values: str | int | bool | None) -> list[str]:
    """`--name value` for each value given, `--name` for each True flag."""
    argv: list[str] = []
    for name, value in values.items():
        option = "--" + name.replace("_", "-")
        if value is True:
            argv.append(option)
        elif value is not None and value is not False:
            argv += [option, str(value)]
    return argv


def _cut(doc: Result, max_chars: int) -> Result:
    """A file's text (or base64) cut to `max_chars`: a model's context is no place for
    a whole log or dataset."""
    for key in ("content", "content_base64"):
        text = doc.get(key)
        if isinstance(text, str):
            return {**doc, key: text[:max_chars], "truncated": len(text) > max_chars}
    return doc


def _repeated(option: str, values: Sequence[str]) -> list[str]:
    return [arg for value in values for arg in (option, value)]


def build_server(run: CommandRunner) -> MCPServer:
    server = MCPServer(
        name="helixfs", title="HelixFS", version=__version__, instructions=INSTRUCTIONS
    )
    helix = Helix(run)
    _memory_reads(server, helix)
    _memory_writes(server, helix)
    _workspace_reads(server, helix)
    _workspace_moves(server, helix)
    return server


def _memory_reads(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=READ_ONLY)
    async def memory_search(
        query: str,
        k: Annotated[int, Field(ge=1, le=1000)] = 10,
        type: MemoryType | None = None,
        scope: str | None = None,
        workspace: bool = True,
        include_superseded: bool = False,
    ) -> Result:
        """Find memories (and, with workspace, passages of the workspace's files) by
        meaning and keyword, best first."""
        return await helix(
            "recall",
            *_options(k=k, type=type, scope=scope, workspace=workspace, all=include_superseded),
            "--",
            query,
            key="hits",
        )

    @server.tool(annotations=READ_ONLY)
    async def memory_context(
        query: str = "",
        budget: Annotated[int, Field(ge=1)] = 2000,
        scope: str | None = None,
    ) -> Result:
        """The best memories for `query` (or the most salient ones), packed into a text
        block of at most `budget` tokens."""
        topic = ["--", query] if query else []
        return await helix("context", *_options(budget=budget, scope=scope), *topic)

    @server.tool(annotations=READ_ONLY)
    async def memory_list(
        type: MemoryType | None = None,
        scope: str | None = None,
        tag: str | None = None,
        status: Status | Literal["any"] = "active",
        limit: Annotated[int, Field(ge=1)] | None = None,
    ) -> Result:
        """Memories, newest first, filtered by type, scope, tag and status."""
        options = _options(type=type, scope=scope, tag=tag, status=status, limit=limit)
        return await helix("memories", *options, key="memories")

    @server.tool(annotations=READ_ONLY)
    async def memory_history(id: str) -> Result:
        """Every change made to one memory, oldest first."""
        return await helix("history", "--", id, key="changes")

    @server.tool(annotations=READ_ONLY)
    async def memory_resume(scope: str | None = None) -> Result:
        """The last checkpoint (task, done, next, hypotheses, blocked, files)."""
        return await helix("resume", *_options(scope=scope), key="checkpoint")

    @server.tool(annotations=READ_ONLY)
    async def memory_brief(
        topic: str = "", budget: Annotated[int, Field(ge=1)] = 800, scope: str | None = None
    ) -> Result:
        """A compressed summary of a topic, or of the whole memory."""
        subject = ["--", topic] if topic else []
        return await helix("brief", *_options(budget=budget, scope=scope), *subject)


def _memory_writes(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=WRITES)
    async def memory_remember(
        text: str,
        type: MemoryType | None = None,
        tags: Sequence[str] = (),
        scope: str | None = None,
        source: str | None = None,
    ) -> Result:
        """Remember a durable fact, decision, convention or gotcha. An equivalent fact is
        not stored twice; a contradicting one supersedes the old, which keeps its history.
        `source` is where it comes from: an agent name, or FILE[:LINE]."""
        options = _options(type=type, tags=",".join(tags) or None, scope=scope, source=source)
        return await helix("remember", *options, "--", text)

    @server.tool(annotations=WRITES)
    async def memory_forget(target: str, reason: str | None = None) -> Result:
        """Soft-delete a memory (by id, or a query matching exactly one): it leaves
        search results, and its history keeps it."""
        return await helix("forget", *_options(reason=reason), "--", target)

    @server.tool(annotations=WRITES)
    async def memory_relate(a: str, b: str, relation: str) -> Result:
        """Link memory `a` to memory `b` (e.g. depends_on, explains): search then finds
        one through the other."""
        return await helix("relate", "--", a, b, relation)

    @server.tool(annotations=WRITES)
    async def memory_checkpoint(
        task: str,
        done: Sequence[str] = (),
        next: Sequence[str] = (),
        hypotheses: Sequence[str] = (),
        blocked: Sequence[str] = (),
        files: Sequence[str] = (),
        scope: str | None = None,
    ) -> Result:
        """Save where the work stands, for memory_resume in the next session."""
        argv = [
            *_repeated("--done", done),
            *_repeated("--next", next),
            *_repeated("--hypothesis", hypotheses),
            *_repeated("--blocked", blocked),
            *_repeated("--file", files),
            *_options(scope=scope),
        ]
        return await helix("checkpoint", *argv, "--", task)


def _workspace_reads(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=READ_ONLY)
    async def workspace_log(
        rev: str = "HEAD",
        limit: Annotated[int, Field(ge=1)] = 20,
        path: str | None = None,
        lost: bool = False,
    ) -> Result:
        """Commits from `rev` back, newest first (only those that changed `path`, from
        the workspace root, if given). With `lost`: the tips no ref reaches any more,
        to bring one back."""
        if lost:
            return await helix("log", "--lost", "-n", str(limit), key="commits")
        tail = ["--", rev] + ([_from_root(path)] if path is not None else [])
        return await helix("log", "-n", str(limit), *tail, key="commits")

    @server.tool(annotations=READ_ONLY)
    async def workspace_diff(a: str, b: str | None = None, name_status: bool = False) -> Result:
        """Changes from revision `a` to `b` (default: the current state)."""
        revs = [a] if b is None else [a, b]
        return await helix("diff", *_options(name_status=name_status), "--", *revs)

    @server.tool(annotations=READ_ONLY)
    async def workspace_ls(rev: str = "HEAD", path: str = "") -> Result:
        """A folder's entries at a revision (a file's own entry for a file); `path`
        from the workspace root, "" for the root itself."""
        return await helix("ls", "--", rev, _from_root(path), key="entries")

    @server.tool(annotations=READ_ONLY)
    async def workspace_read(
        rev: str, path: str, max_chars: Annotated[int, Field(ge=1)] = READ_CHARS
    ) -> Result:
        """A file as it was at any revision (commit id or prefix, branch, snapshot,
        HEAD~N), `path` from the workspace root: its first `max_chars` characters
        (`truncated` says if there is more)."""
        return _cut(await helix("cat", "--", rev, _from_root(path)), max_chars)

    @server.tool(annotations=READ_ONLY)
    async def workspace_refs() -> Result:
        """Branches and snapshots, with the commit each points at."""
        return {**await helix("branch"), **await helix("snapshot")}


def _from_root(path: str) -> str:
    """A tool's path goes from the workspace's root, wherever the server was started
    (the CLI takes a path from its cwd's folder, and `/` from the root)."""
    return "/" + path


def _workspace_moves(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=WRITES)
    async def workspace_branch_create(name: str, rev: str = "HEAD") -> Result:
        """A copy-on-write branch of `rev`, made in O(1). It does not switch to it."""
        return await helix("branch", "--", name, rev)

    @server.tool(annotations=WRITES)
    async def workspace_snapshot_create(name: str, rev: str = "HEAD") -> Result:
        """A named, read-only snapshot of `rev`."""
        return await helix("snapshot", "--", name, rev)

    @server.tool(annotations=MOVES_STATE)
    async def workspace_checkout(branch: str) -> Result:
        """Make `branch` the one the workspace shows (saves pending on the current one
        are committed first)."""
        return await helix("checkout", "--", branch)

    @server.tool(annotations=MOVES_STATE)
    async def workspace_reset_hard(rev: str, branch: str | None = None) -> Result:
        """Move the current branch (or `branch`) to `rev` and show that state. The
        state left behind stays restorable (workspace_log with lost)."""
        return await helix("reset", "--hard", *_options(branch=branch), "--", rev)

    @server.tool(annotations=MOVES_STATE)
    async def workspace_merge(branch: str, allow_conflicts: bool = False) -> Result:
        """Three-way merge of `branch` into the current branch. A conflict is refused
        and reported, unless `allow_conflicts` commits the files with markers."""
        options = _options(allow_conflicts=allow_conflicts)
        return await helix("merge", *options, "--", branch)


def serve(run: CommandRunner) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    build_server(run).run()
