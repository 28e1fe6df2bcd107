"""The MCP server: each tool is one `helix` command line, run with `--json`.

A tool builds the command line the CLI would take and hands it to the command runner it
was given (the CLI's own `run`, ADR 0037). So a tool behaves exactly as the command
does: it goes to the mount's daemon when one owns the store (its warm embedding model,
its invalidation of the kernel's caches after a reset), and opens the store for the
call otherwise, holding no lock between calls. A command's error document becomes a
tool error with its message, and a failed command has changed nothing.

Text from the agent always follows `--`, so a query such as "--all" is a query, never
an option.

As hosts expect (ADR 0051): every tool declares an output schema and returns its
document as `structuredContent` (and as JSON text); a failure is a result with
`isError` and `structuredContent` `{"error": {"kind", "message"}}`; annotations say
which tools only read and which destroy. Memories, commits, files of any revision and
the checkpoint are resources; `resume` and `brief` are prompts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from helixfs import __version__
from helixfs.mcp import schemas
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
Try variants as experiments (experiment_start, experiment_score, experiment_compare,
experiment_pick): each one's commits carry its name.
"""
READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)
MOVES_STATE = ToolAnnotations(read_only_hint=False, destructive_hint=True)
DESTROYS = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
READ_CHARS = 100_000  # workspace_read's default cut: ~25k tokens


class Helix:
    """Runs command lines one at a time: an in-process command opens the store, and
    RocksDB lets one opener in at a time."""

    def __init__(self, run: CommandRunner) -> None:
        self._run = run
        self._lock = threading.Lock()

    async def __call__(self, *argv: str, key: str = "result") -> CallToolResult:
        """The command's JSON document as a tool result, an object: a list goes under
        `key`, and what the command said on stderr under "notes" (a search that is
        lexical only, a workspace index still being built). A failure: an error result
        whose structured content is `{"error": {"kind", "message"}}`."""
        return await anyio.to_thread.run_sync(self._call, argv, key)

    async def document(self, *argv: str, key: str = "result") -> Result:
        """The command's document alone (a resource, a prompt); a failure raises."""
        result = await self(*argv, key=key)
        doc = result.structured_content or {}
        if result.is_error:
            raise CommandFailed(str(doc.get("error", {}).get("message", "the command failed")))
        return doc

    def _call(self, argv: Sequence[str], key: str) -> CallToolResult:
        with self._lock:
            status, stdout, stderr = self._run(["--json", *argv])
        try:
            doc = json.loads(stdout)
        except ValueError:
            doc = None
        if status != 0:
            return failure(*_failure(doc, stderr))
        result = doc if isinstance(doc, dict) else {key: doc}
        notes = [line.removeprefix("helix: ") for line in stderr.splitlines() if line.strip()]
        return success({**result, "notes": notes} if notes else result)


class CommandFailed(Exception):
    """A command a resource or prompt ran failed: the client gets its message."""


def success(doc: Result) -> CallToolResult:
    text = json.dumps(doc, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=doc)


def failure(kind: str, message: str) -> CallToolResult:
    return CallToolResult(
        is_error=True,
        content=[TextContent(type="text", text=f"{kind}: {message}")],
        structured_content={"error": {"kind": kind, "message": message}},
    )


def _failure(doc: Any, stderr: str) -> tuple[str, str]:
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        return str(doc["error"].get("kind", "Error")), str(doc["error"].get("message", ""))
    message = stderr.strip().removeprefix("helix: error: ") or "the command failed"
    return "Error", message


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


def _cut(result: CallToolResult, max_chars: int) -> CallToolResult:
    """A file's text (or base64) cut to `max_chars`: a model's context is no place for
    a whole log or dataset."""
    doc = result.structured_content
    if result.is_error or doc is None:
        return result
    for key in ("content", "content_base64"):
        text = doc.get(key)
        if isinstance(text, str):
            return success({**doc, key: text[:max_chars], "truncated": len(text) > max_chars})
    return result


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
    from helixfs.mcp import experiments  # its own module: it imports this one's helpers

    experiments.register(server, helix)
    _resources(server, helix)
    _prompts(server, helix)
    return server


def client_name(ctx: Context) -> str | None:
    """The MCP client's name from its initialize request (e.g. claude-code)."""
    params = ctx.session.client_params
    name = params.client_info.name if params is not None else None
    return (name.strip() or None) if isinstance(name, str) else None


def _resources(server: MCPServer, helix: Helix) -> None:
    @server.resource("helix://memory/{id}", mime_type="application/json")
    async def memory(id: str) -> str:
        """A memory as it is now, and every change made to it."""
        changes = (await helix.document("history", "--", id, key="changes"))["changes"]
        now = changes[-1].get("after") if changes else None
        return json.dumps({"memory": now, "history": changes}, ensure_ascii=False)

    @server.resource("helix://commit/{id}", mime_type="application/json")
    async def commit(id: str) -> str:
        """One commit: its tree, parents, time, author, message and changed paths."""
        commits = (await helix.document("log", "-n", "1", "--", id, key="commits"))["commits"]
        return json.dumps(commits[0] if commits else None, ensure_ascii=False)

    @server.resource("helix://file/{rev}/{+path}")
    async def file(rev: str, path: str) -> str:
        """A file as it was at any revision (a branch, a snapshot, a commit, HEAD~N)."""
        doc = await helix.document("cat", "--", rev, _from_root(path))
        return str(doc.get("content") or doc.get("content_base64") or "")

    @server.resource("helix://checkpoint", mime_type="text/markdown")
    async def checkpoint() -> str:
        """The last checkpoint, as the next session should read it."""
        return await _markdown(helix, "resume")


async def _markdown(helix: Helix, *argv: str) -> str:
    doc = await helix.document(*argv, key="text")
    for key in ("markdown", "text"):
        if isinstance(doc.get(key), str):
            return str(doc[key])
    return json.dumps(doc, ensure_ascii=False)


def _prompts(server: MCPServer, helix: Helix) -> None:
    @server.prompt()
    async def resume() -> str:
        """Pick up where the last session stopped: its checkpoint and fresh decisions."""
        text = await _markdown(helix, "resume")
        return f"Resume this work. HelixFS's last checkpoint:\n\n{text}"

    @server.prompt()
    async def brief(topic: str = "") -> str:
        """What the memory knows about a topic (or about everything), compressed."""
        subject = ["--", topic] if topic else []
        text = await _markdown(helix, "brief", *subject)
        about = f" about {topic}" if topic else ""
        return f"What HelixFS's memory holds{about}:\n\n{text}"


def _memory_reads(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=READ_ONLY)
    async def memory_search(
        query: str,
        k: Annotated[int, Field(ge=1, le=1000)] = 10,
        type: MemoryType | None = None,
        scope: str | None = None,
        workspace: bool = True,
        include_superseded: bool = False,
        branch: str | None = None,
    ) -> Annotated[CallToolResult, schemas.SearchOut]:
        """Find memories (and, with workspace, passages of the workspace's files) by
        meaning and keyword, best first. As from `branch` if given (default: the branch
        folder the server runs in, else the trunk): its memories too. A memory about a
        file that changed since says so (`stale`)."""
        options = _options(
            k=k, type=type, scope=scope, workspace=workspace, all=include_superseded, branch=branch
        )
        return await helix(
            "recall",
            *options,
            "--",
            query,
            key="hits",
        )

    @server.tool(annotations=READ_ONLY)
    async def memory_context(
        query: str = "",
        budget: Annotated[int, Field(ge=1)] = 2000,
        scope: str | None = None,
    ) -> Annotated[CallToolResult, schemas.ContextOut]:
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
        stale: bool = False,
    ) -> Annotated[CallToolResult, schemas.MemoriesOut]:
        """Memories, newest first, filtered by type, scope, tag and status. With `stale`:
        the active ones whose file changed, went or was renamed since they were written
        (each says how, and in which commit); memory_confirm makes one fresh again."""
        if stale:
            return await helix("memories", "--stale", *_options(limit=limit), key="memories")
        options = _options(type=type, scope=scope, tag=tag, status=status, limit=limit)
        return await helix("memories", *options, key="memories")

    @server.tool(annotations=READ_ONLY)
    async def memory_history(id: str) -> Annotated[CallToolResult, schemas.HistoryOut]:
        """Every change made to one memory, oldest first."""
        return await helix("history", "--", id, key="changes")

    @server.tool(annotations=READ_ONLY)
    async def memory_resume(
        scope: str | None = None,
    ) -> Annotated[CallToolResult, schemas.ResumeOut]:
        """The last checkpoint (task, done, next, hypotheses, blocked, files)."""
        return await helix("resume", *_options(scope=scope), key="checkpoint")

    @server.tool(annotations=READ_ONLY)
    async def memory_brief(
        topic: str = "", budget: Annotated[int, Field(ge=1)] = 800, scope: str | None = None
    ) -> Annotated[CallToolResult, schemas.BriefOut]:
        """A compressed summary of a topic, or of the whole memory."""
        subject = ["--", topic] if topic else []
        return await helix("brief", *_options(budget=budget, scope=scope), *subject)


def _memory_writes(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=WRITES)
    async def memory_remember(
        text: str,
        ctx: Context,
        type: MemoryType | None = None,
        tags: Sequence[str] = (),
        scope: str | None = None,
        source: str | None = None,
        branch: str | None = None,
    ) -> Annotated[CallToolResult, schemas.WriteOut]:
        """Remember a durable fact, decision, convention or gotcha. An equivalent fact is
        not stored twice; a contradicting one supersedes the old, which keeps its history.
        `source` is where it comes from: FILE[:LINE] (the memory is written as the MCP
        client's, by its name; a memory about a file turns stale when the file changes).
        `branch`: the branch whose memory it is (default: the branch folder the server
        runs in, else the trunk's, seen everywhere); merging the branch brings it over."""
        options = _options(
            type=type,
            tags=",".join(tags) or None,
            scope=scope,
            source=source,
            agent=client_name(ctx),
            branch=branch,
        )
        return await helix("remember", *options, "--", text)

    @server.tool(annotations=DESTROYS)
    async def memory_forget(
        target: str, reason: str | None = None
    ) -> Annotated[CallToolResult, schemas.ForgetOut]:
        """Soft-delete a memory (by id, or a query matching exactly one): it leaves
        search results, and its history keeps it."""
        return await helix("forget", *_options(reason=reason), "--", target)

    @server.tool(annotations=WRITES)
    async def memory_confirm(id: str) -> Annotated[CallToolResult, schemas.ConfirmOut]:
        """Say a memory is right: full confidence and, for a memory about a file, right
        for the file as it is now (no longer stale)."""
        return await helix("confirm", "--", id)

    @server.tool(annotations=DESTROYS)
    async def memory_purge(id: str) -> Annotated[CallToolResult, schemas.PurgeOut]:
        """Erase a memory for good: its content and its whole history. It cannot be
        undone; memory_forget is the soft delete."""
        return await helix("purge", "--yes", "--", id)

    @server.tool(annotations=WRITES)
    async def memory_relate(
        a: str, b: str, relation: str
    ) -> Annotated[CallToolResult, schemas.EdgeOut]:
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
    ) -> Annotated[CallToolResult, schemas.CheckpointOut]:
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
        meta: Sequence[str] = (),
    ) -> Annotated[CallToolResult, schemas.LogOut]:
        """Commits from `rev` back, newest first (only those that changed `path`, from
        the workspace root, if given; with `meta` KEY=VALUE pairs, only those whose
        meta holds them, e.g. experiment=NAME). With `lost`: the tips no ref reaches
        any more, to bring one back."""
        filters = [f"--meta={pair}" for pair in meta]
        if lost:
            return await helix("log", "--lost", "-n", str(limit), *filters, key="commits")
        tail = ["--", rev] + ([_from_root(path)] if path is not None else [])
        return await helix("log", "-n", str(limit), *filters, *tail, key="commits")

    @server.tool(annotations=READ_ONLY)
    async def workspace_diff(
        a: str, b: str | None = None, name_status: bool = False
    ) -> Annotated[CallToolResult, schemas.DiffOut]:
        """Changes from revision `a` to `b` (default: the current state)."""
        revs = [a] if b is None else [a, b]
        return await helix("diff", *_options(name_status=name_status), "--", *revs)

    @server.tool(annotations=READ_ONLY)
    async def workspace_ls(
        rev: str = "HEAD", path: str = ""
    ) -> Annotated[CallToolResult, schemas.LsOut]:
        """A folder's entries at a revision (a file's own entry for a file); `path`
        from the workspace root, "" for the root itself."""
        return await helix("ls", "--", rev, _from_root(path), key="entries")

    @server.tool(annotations=READ_ONLY)
    async def workspace_read(
        path: str, rev: str = "HEAD", max_chars: Annotated[int, Field(ge=1)] = READ_CHARS
    ) -> Annotated[CallToolResult, schemas.ReadOut]:
        """A file as it was at any revision (commit id or prefix, branch, snapshot,
        HEAD~N), `path` from the workspace root: its first `max_chars` characters
        (`truncated` says if there is more)."""
        return _cut(await helix("cat", "--", rev, _from_root(path)), max_chars)

    @server.tool(annotations=READ_ONLY)
    async def workspace_refs() -> Annotated[CallToolResult, schemas.RefsOut]:
        """Branches and snapshots, with the commit each points at."""
        branches, snapshots = await helix("branch"), await helix("snapshot")
        for result in (branches, snapshots):
            if result.is_error:
                return result
        return success(
            {**(branches.structured_content or {}), **(snapshots.structured_content or {})}
        )


def _from_root(path: str) -> str:
    """A tool's path goes from the workspace's root, wherever the server was started
    (the CLI takes a path from its cwd's folder, and `/` from the root)."""
    return "/" + path


def _workspace_moves(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=WRITES)
    async def workspace_branch_create(
        name: str, rev: str = "HEAD"
    ) -> Annotated[CallToolResult, schemas.BranchOut]:
        """A copy-on-write branch of `rev`, made in O(1). It does not switch to it."""
        return await helix("branch", "--", name, rev)

    @server.tool(annotations=WRITES)
    async def workspace_snapshot_create(
        name: str, rev: str = "HEAD"
    ) -> Annotated[CallToolResult, schemas.SnapshotOut]:
        """A named, read-only snapshot of `rev`."""
        return await helix("snapshot", "--", name, rev)

    @server.tool(annotations=MOVES_STATE)
    async def workspace_checkout(branch: str) -> Annotated[CallToolResult, schemas.BranchOut]:
        """Make `branch` the one the workspace shows (saves pending on the current one
        are committed first)."""
        return await helix("checkout", "--", branch)

    @server.tool(annotations=MOVES_STATE)
    async def workspace_reset_hard(
        rev: str, branch: str | None = None
    ) -> Annotated[CallToolResult, schemas.BranchOut]:
        """Move the current branch (or `branch`) to `rev` and show that state. The
        state left behind stays restorable (workspace_log with lost)."""
        return await helix("reset", "--hard", *_options(branch=branch), "--", rev)

    @server.tool(annotations=MOVES_STATE)
    async def workspace_merge(
        branch: str, allow_conflicts: bool = False
    ) -> Annotated[CallToolResult, schemas.MergeOut]:
        """Three-way merge of `branch` into the current branch. A conflict is refused
        and reported, unless `allow_conflicts` commits the files with markers."""
        options = _options(allow_conflicts=allow_conflicts)
        return await helix("merge", *options, "--", branch)


def serve(run: CommandRunner) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    build_server(run).run()
