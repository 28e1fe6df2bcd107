"""Memory commands: remember, recall, context, forget, edit, confirm, memories, relate,
history, rollback, purge, checkpoint, resume, brief.

They work on STORE/memory.db, never on the repository, so they are store handlers: the
CLI can use them next to a running daemon (SQLite WAL), and under the daemon they run in
its process. The embedder is loaded once per process (the daemon keeps it warm);
HELIX_MEMORY_LEXICAL=1 skips it (lexical search only, e.g. for quick scripts).
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixfs.cli.command import StoreHandler, add_command
from helixfs.cli.memory_held import held_memory
from helixfs.cli.memory_view import add_branch_option, in_tree, tree_view
from helixfs.cli.output import Output, is_utf8, printable, table
from helixfs.errors import InvalidInput, NotFound
from helixfs.memory import MEMORY_TYPES, STATUSES, Embedder, Hit, MemoryRecord, Source
from helixfs.memory.types import Staleness

if TYPE_CHECKING:  # the engine loads with the first command that runs here, not to
    from helixfs.memory import Memory  # parse one that a mount's daemon will run

MEMORY_DB = "memory.db"
_embedder_lock = threading.Lock()
_embedder: list[Embedder | None] = []  # loaded at most once per process
LEXICAL_NOTE = (
    "helix: warning: the mount's daemon has no embedding model; search is lexical (BM25) "
    "only (its log, STORE/daemon.log, says why)"
)
LEXICAL_HERE = (
    "helix: warning: search is lexical (BM25) only: no embedding model is loaded "
    "(memory.lexical / HELIX_MEMORY_LEXICAL is set, or the model is not installed: see README)"
)


def register(subparsers: Any) -> None:
    _register_writes(subparsers)
    _register_reads(subparsers)
    _register_lifecycle(subparsers)
    _register_notes(subparsers)


def _register_writes(subparsers: Any) -> None:
    p = add_command(
        subparsers, "remember", help="store a fact, decision, gotcha...", store_handler=cmd_remember
    )
    p.add_argument("text", nargs="+", help="what to remember")
    p.add_argument("--type", choices=MEMORY_TYPES, help="memory type (default: inferred)")
    p.add_argument("--tags", default="", help="comma-separated tags")
    p.add_argument("--scope", default="global", help="'global' or a project name")
    p.add_argument("--source", help="where it comes from: AGENT or FILE[:LINE]")
    p.add_argument("--agent", help="who writes it (default: cli; helix mcp: the client's name)")
    add_branch_option(p, "the branch whose memory it is")
    p = add_command(subparsers, "relate", help="link two memories", store_handler=cmd_relate)
    p.add_argument("a", help="memory id")
    p.add_argument("b", help="memory id")
    p.add_argument("rel", help="relation name, e.g. depends_on, explains")


def _register_reads(subparsers: Any) -> None:
    p = add_command(
        subparsers, "recall", help="find memories by meaning and keyword", store_handler=cmd_recall
    )
    p.add_argument("query", nargs="+")
    p.add_argument("--k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--type", action="append", choices=MEMORY_TYPES, help="only this type")
    p.add_argument("--scope", help="a project scope (global memories are included)")
    p.add_argument("--workspace", action="store_true", help="also search workspace files")
    p.add_argument("--all", action="store_true", help="include superseded and archived")
    add_branch_option(p, "search as from this branch")
    p = add_command(
        subparsers, "context", help="a token-budgeted block of memories", store_handler=cmd_context
    )
    p.add_argument("query", nargs="*", help="focus on this topic (default: most salient)")
    p.add_argument("--budget", type=int, default=2000, help="token budget (default 2000)")
    p.add_argument("--scope", help="a project scope")
    add_branch_option(p, "as from this branch")
    p = add_command(subparsers, "memories", help="list memories", store_handler=cmd_memories)
    p.add_argument("--type", choices=MEMORY_TYPES)
    p.add_argument("--scope")
    p.add_argument("--tag")
    p.add_argument("--status", choices=(*STATUSES, "any"), default="active")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument(
        "--archive-candidates",
        action="store_true",
        help="list idle memories proposed for archival (nothing is changed)",
    )
    p.add_argument(
        "--stale",
        action="store_true",
        help="memories whose file changed, went or was renamed since (in the branch)",
    )
    p.add_argument(
        "--archived", action="store_true", help="archived ones (a deleted branch's: --branch)"
    )
    p.add_argument(
        "--branch", metavar="NAME", help="that branch's own memories (--stale: as from it)"
    )
    p = add_command(
        subparsers, "history", help="every change to a memory", store_handler=cmd_history
    )
    p.add_argument("id")


def _register_lifecycle(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "forget",
        help="soft-delete a memory (kept in history)",
        store_handler=cmd_forget,
    )
    p.add_argument("target", nargs="+", help="memory id, or a query matching exactly one")
    p.add_argument("--reason", default="")
    p = add_command(
        subparsers, "edit", help="correct a memory's text, type or tags", store_handler=cmd_edit
    )
    p.add_argument("id")
    p.add_argument("text", nargs="*", help="the new text (default: unchanged)")
    p.add_argument("--type", choices=MEMORY_TYPES, help="the new type")
    p.add_argument("--tags", help="the new comma-separated tags (replacing the old)")
    add_branch_option(p, "new text is right for that branch's version of its file")
    p = add_command(subparsers, "confirm", help="say a memory is right", store_handler=cmd_confirm)
    p.add_argument("id")
    add_branch_option(p, "right for that branch's version of its file")
    group = add_command(
        subparsers, "memory", help="memory commands: memory confirm ID", store_handler=cmd_confirm
    )
    verbs = group.add_subparsers(dest="memory_verb", metavar="VERB", required=True)
    p = verbs.add_parser("confirm", help="say a memory is right for its file's content now")
    p.add_argument("id")
    p.add_argument("--json", action="store_true", dest="json_verb", help=argparse.SUPPRESS)
    add_branch_option(p, "right for that branch's version of its file")
    p = add_command(
        subparsers, "rollback", help="undo the last change to a memory", store_handler=cmd_rollback
    )
    p.add_argument("id")
    p.add_argument("--to", type=int, dest="to_seq", help="restore the state after op SEQ")
    p = add_command(
        subparsers,
        "purge",
        help="erase a memory for good (content and history)",
        store_handler=cmd_purge,
    )
    p.add_argument("id")
    p.add_argument("--yes", action="store_true", help="confirm: this cannot be undone")
    p = add_command(
        subparsers,
        "archive",
        help="archive memories (e.g. proposed ones)",
        store_handler=cmd_archive,
    )
    p.add_argument("ids", nargs="+")


def _register_notes(subparsers: Any) -> None:
    p = add_command(
        subparsers, "checkpoint", help="save where a task stands", store_handler=cmd_checkpoint
    )
    p.add_argument("task", nargs="+", help="the task")
    for name in ("done", "next", "hypothesis", "blocked", "file"):
        p.add_argument(f"--{name}", action="append", default=[], help="repeatable")
    p.add_argument("--scope", default="global")
    p = add_command(
        subparsers, "resume", help="the last checkpoint, as markdown", store_handler=cmd_resume
    )
    p.add_argument("--scope")
    p = add_command(
        subparsers,
        "brief",
        help="a compressed summary of a topic or of all",
        store_handler=cmd_brief,
    )
    p.add_argument("topic", nargs="*")
    p.add_argument("--budget", type=int, default=800, help="token budget (default 800)")
    p.add_argument("--scope")
    add_branch_option(p, "as from this branch")


# -- opening ------------------------------------------------------------------------------


def process_embedder(store: Path | None = None) -> Embedder | None:
    """The process-wide embedder (None when lexical); loaded on first use only, as the
    settings of the first store that asks say (`memory.lexical`, `memory.model_dir`...)."""
    with _embedder_lock:
        if not _embedder:
            from helixfs import config
            from helixfs.memory.embed import load_configured

            _embedder.append(load_configured(config.load(store)))
        return _embedder[0]


@contextmanager
def open_memory(store: Path) -> Iterator[Memory]:
    """The store's memory for one command: the one a long-lived process holds open for
    its commands (memory_held.py), else opened for this command and closed after it."""
    held = held_memory(store)
    if held is not None:
        yield held
        return
    if not store.is_dir():
        raise NotFound(f"no HelixFS store at {store} (create one with: helix init {store})")
    from helixfs.memory import Memory

    with Memory.open(store / MEMORY_DB, process_embedder(store)) as memory:
        yield memory


def _say_if_lexical(args: argparse.Namespace, mem: Memory, out: Output) -> None:
    """The engine warns once per process, in its log, on the process's stderr. A command
    whose stderr is another stream heard nothing: one run by a mount's daemon (the
    warning went to the daemon's log), or by the MCP server (to the host's log)."""
    if mem.lexical_only and out.stderr is not sys.stderr:
        out.note(LEXICAL_NOTE if getattr(args, "in_daemon", False) else LEXICAL_HERE)


def _text(words: Sequence[str], what: str) -> str:
    text = " ".join(words).strip()
    if not text:
        raise InvalidInput(f"{what} is empty")
    return text


def _source(spec: str | None, agent: str | None = None) -> Source:
    writer = agent or "cli"
    if not spec:
        return Source(agent=writer, when=time.time())
    path, sep, line = spec.rpartition(":")
    if sep and line.isdigit() and path:
        return Source(agent=writer, file=path, line=int(line), when=time.time())
    if "/" in spec or "." in spec:
        return Source(agent=writer, file=spec, when=time.time())
    return Source(agent=spec, when=time.time())


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts)) if ts else "-"


def _hit_lines(hits: Sequence[Hit]) -> str:
    if not hits:
        return "no matches"
    lines = []
    for hit in hits:
        if hit.kind == "chunk":
            lines.append(f"{hit.path}:{hit.start_line}-{hit.end_line}  {_first_line(hit.content)}")
        else:
            status = "" if hit.status == "active" else f" ({hit.status})"
            lines.append(f"{hit.id}  [{hit.type}]{status}{_stale(hit.stale)} {hit.content}")
    return "\n".join(lines)


def _stale(stale: Staleness | None) -> str:
    if stale is None:
        return ""
    where = f"{stale.moved_from} -> {stale.path}" if stale.how == "renamed" else stale.path
    commit = f" in {stale.commit[:12]}" if stale.commit else ""
    return f" (stale: {where} {stale.how}{commit})"


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 100 else line[:99] + "…"


def _record_table(recs: Sequence[MemoryRecord]) -> str:
    if not recs:
        return "no memories"
    rows = [
        (
            r.id,
            r.type,
            r.status + (f" ({r.stale.how})" if r.stale else ""),
            r.scope,
            r.branch or "-",
            _when(r.updated),
            _first_line(r.content),
        )
        for r in recs
    ]
    return table(rows, ("ID", "TYPE", "STATUS", "SCOPE", "BRANCH", "UPDATED", "CONTENT"))


# -- handlers -----------------------------------------------------------------------------

_PATH_ARGUMENTS = ("store", "store_after")


def _memory_command(handler: StoreHandler) -> StoreHandler:
    """Memories are Unicode text (SQLite, the tokenizer): an argument that is not UTF-8
    (argv bytes arrive surrogate-escaped) is refused before the engine fails on it with
    a traceback, after writing nothing. A damaged, full or locked memory.db is one line
    of error too."""

    @functools.wraps(handler)
    def checked(args: argparse.Namespace, store: Path, out: Output) -> int:
        for name, value in vars(args).items():
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and name not in _PATH_ARGUMENTS and not is_utf8(text):
                    raise InvalidInput(f"{name} '{printable(text)}' is not valid UTF-8 text")
        from helixfs.memory import reported_errors

        with reported_errors():
            return handler(args, store, out)

    return checked


@_memory_command
def cmd_remember(args: argparse.Namespace, store: Path, out: Output) -> int:
    text = _text(args.text, "memory text")
    tags = split_tags(args.tags)
    with open_memory(store) as mem, tree_view(args, store) as view:
        result = mem.remember(
            text,
            type=args.type,
            tags=tags,
            scope=args.scope,
            source=in_tree(_source(args.source, args.agent), args, view, store),
            view=view,
        )
    human = f"{result.action} {result.id}"
    if result.superseded:
        human += f" (supersedes {', '.join(result.superseded)})"
    if result.redactions:
        human += f" ({result.redactions} secret(s) redacted)"
    if result.flagged:
        human += " (flagged: looks like a prompt injection; stored with low confidence)"
    out.emit(result.to_json(), human)
    return 0


@_memory_command
def cmd_relate(args: argparse.Namespace, store: Path, out: Output) -> int:
    with open_memory(store) as mem:
        edge = mem.relate(args.a, args.b, args.rel)
    out.emit(edge.to_json(), f"{edge.src} -{edge.rel}-> {edge.dst}")
    return 0


@_memory_command
def cmd_recall(args: argparse.Namespace, store: Path, out: Output) -> int:
    query = _text(args.query, "query")
    with open_memory(store) as mem, tree_view(args, store) as view:
        if args.workspace:
            hits = mem.search(query, k=args.k, types=args.type, scope=args.scope, view=view)
        else:
            hits = mem.recall(
                query,
                k=args.k,
                types=args.type,
                scope=args.scope,
                include_superseded=args.all,
                view=view,
            )
        _say_if_lexical(args, mem, out)
    out.emit([h.to_json() for h in hits], lambda: _hit_lines(hits))
    return 0


@_memory_command
def cmd_context(args: argparse.Namespace, store: Path, out: Output) -> int:
    query = " ".join(args.query).strip() or None
    with open_memory(store) as mem, tree_view(args, store) as view:
        block = mem.context(args.budget, query=query, scope=args.scope, view=view)
        if query:
            _say_if_lexical(args, mem, out)
    out.emit(block.to_json(), block.text or "(nothing fits in the budget)")
    return 0


@_memory_command
def cmd_memories(args: argparse.Namespace, store: Path, out: Output) -> int:
    with open_memory(store) as mem:
        if args.archive_candidates:
            found = mem.archive_candidates(limit=args.limit)
            doc = [
                {
                    "memory": c.memory.to_json(),
                    "effective_salience": c.effective_salience,
                    "idle_days": c.idle_days,
                }
                for c in found
            ]
            out.emit(doc, lambda: _record_table([c.memory for c in found]))
            return 0
        recs = _listed(args, store, mem)
    out.emit([r.to_json() for r in recs], lambda: _record_table(recs))
    return 0


def _listed(args: argparse.Namespace, store: Path, mem: Memory) -> list[MemoryRecord]:
    """`memories`: the filtered list, or with --stale those whose file moved on. With
    --stale, --branch is the branch looked from; otherwise whose memories to list (a
    deleted branch's too)."""
    if args.stale and args.archived:
        raise InvalidInput("--stale lists active memories: it does not go with --archived")
    if args.stale:
        with tree_view(args, store) as view:
            if view is None:
                raise NotFound(f"--stale needs the store's repository: none at {store}")
            return mem.stale(view, limit=args.limit)
    status = "archived" if args.archived else None if args.status == "any" else args.status
    with tree_view(argparse.Namespace(**{**vars(args), "branch": None}), store) as view:
        return mem.memories(
            type=args.type,
            scope=args.scope,
            status=status,
            tag=args.tag,
            limit=args.limit,
            branch=args.branch,
            view=view,
        )


@_memory_command
def cmd_history(args: argparse.Namespace, store: Path, out: Output) -> int:
    with open_memory(store) as mem:
        entries = mem.history(args.id)
    rows = [
        (
            e.seq,
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.at)),
            e.op,
            _first_line(str((e.after or e.before or {}).get("content", ""))),
            e.note,
        )
        for e in entries
    ]
    out.emit(
        [e.to_json() for e in entries],
        lambda: table(rows, ("SEQ", "WHEN (UTC)", "OP", "CONTENT", "NOTE")),
    )
    return 0


@_memory_command
def cmd_forget(args: argparse.Namespace, store: Path, out: Output) -> int:
    target = _text(args.target, "memory id or query")
    with open_memory(store) as mem:
        ids = mem.forget(target, reason=args.reason)
    out.emit({"forgotten": ids}, "forgot " + ", ".join(ids) + " (helix rollback ID restores)")
    return 0


def split_tags(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


@_memory_command
def cmd_edit(args: argparse.Namespace, store: Path, out: Output) -> int:
    text = " ".join(args.text).strip() or None
    tags = None if args.tags is None else split_tags(args.tags)
    with open_memory(store) as mem, tree_view(args, store) as view:
        rec = mem.edit(args.id, text, type=args.type, tags=tags, view=view)
    out.emit(rec.to_json(), f"edited {rec.id} [{rec.type}]: {rec.content}")
    return 0


@_memory_command
def cmd_confirm(args: argparse.Namespace, store: Path, out: Output) -> int:
    args.json = args.json or getattr(args, "json_verb", False)
    out.as_json = out.as_json or args.json
    with open_memory(store) as mem, tree_view(args, store) as view:
        rec = mem.confirm(args.id, view=view)
    out.emit(rec.to_json(), f"confirmed {rec.id}: {rec.content}")
    return 0


@_memory_command
def cmd_rollback(args: argparse.Namespace, store: Path, out: Output) -> int:
    with open_memory(store) as mem:
        rec = mem.rollback(args.id, args.to_seq)
    out.emit(rec.to_json(), f"restored {rec.id} ({rec.status}): {rec.content}")
    return 0


@_memory_command
def cmd_purge(args: argparse.Namespace, store: Path, out: Output) -> int:
    if not args.yes:
        raise InvalidInput("purge erases the memory and its history for good; add --yes")
    with open_memory(store) as mem:
        mem.purge(args.id)
    out.emit({"purged": args.id}, f"purged {args.id}")
    return 0


@_memory_command
def cmd_archive(args: argparse.Namespace, store: Path, out: Output) -> int:
    with open_memory(store) as mem:
        count = mem.archive(args.ids)
    out.emit({"archived": count}, f"archived {count} memor{'y' if count == 1 else 'ies'}")
    return 0


@_memory_command
def cmd_checkpoint(args: argparse.Namespace, store: Path, out: Output) -> int:
    task = _text(args.task, "task")
    with open_memory(store) as mem:
        cp = mem.checkpoint(
            task,
            done=args.done,
            next=args.next,
            hypotheses=args.hypothesis,
            blocked=args.blocked,
            files=args.file,
            scope=args.scope,
        )
    out.emit(cp.to_json(), f"checkpoint {cp.id} saved")
    return 0


@_memory_command
def cmd_resume(args: argparse.Namespace, store: Path, out: Output) -> int:
    with open_memory(store) as mem:
        cp = mem.last_checkpoint(args.scope)
        text = mem.resume(args.scope)
    out.emit({**cp.to_json(), "markdown": text}, text)
    return 0


@_memory_command
def cmd_brief(args: argparse.Namespace, store: Path, out: Output) -> int:
    topic = " ".join(args.topic).strip() or None
    with open_memory(store) as mem, tree_view(args, store) as view:
        text = mem.brief(topic, budget_tokens=args.budget, scope=args.scope, view=view)
        if topic:
            _say_if_lexical(args, mem, out)
    out.emit({"topic": topic, "markdown": text}, text)
    return 0
