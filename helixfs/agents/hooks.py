"""`helix hook EVENT`: Claude Code's hook JSON in, the JSON it expects out (ADR 0052).

Input (stdin): `session_id`, `cwd`, `hook_event_name` and the event's own fields.
Output: `{"hookSpecificOutput": {"hookEventName", "additionalContext"}}` for the events
that add context, `{"decision": "block", "reason"}` once from Stop; nothing when there
is nothing worth saying. Token budgets per event:

| event | budget (tokens) | what |
|---|---|---|
| SessionStart | 600; 900 after a compaction | branch, commit, last checkpoint, |
| | | other branches' new commits, top memories |
| UserPromptSubmit | 500 | memories and workspace passages matching the prompt |
| PreToolUse | 300 | ambient context of the file (ambient.py) |
| PostToolUse(Failure) | 300 | a failed build/test's memories; the fix offer |
| PreCompact | 0 | keeps the checkpoint and the memories shown most, for after it |
| Stop | 80 | an automatic checkpoint; once, a reminder to store what was learned |
| SubagentStart | 200 | the topics the memory holds |
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from helixfs.agents import ambient, commands
from helixfs.agents.context import (
    Packer,
    World,
    additional_context,
    cut,
    fresh_hits,
    pack_hits,
    record_line,
)
from helixfs.agents.session import Session, project, session, sweep
from helixfs.errors import HelixError, InvalidInput, NotFound
from helixfs.ids import hex_id

START_BUDGET, AFTER_COMPACT_BUDGET, PROMPT_BUDGET, SUBAGENT_BUDGET = 600, 900, 500, 200
AUTOMATIC = "(automatic) "
FIRST_LOOK_BACK_NS = 24 * 3600 * 10**9  # a project's first session: the last day
REMIND = (
    "HelixFS saved an automatic checkpoint of this session (files touched, commits). "
    "Before you stop: if you learned something the next session should know (a decision, "
    "a convention, a gotcha and its fix), store it with memory_remember; if not, just stop."
)
Handler = Callable[[dict[str, Any], World, Session], "str | dict[str, Any]"]


def answer(event: str, payload: dict[str, Any], world: World) -> dict[str, Any] | None:
    """The hook's JSON answer, or None (print nothing)."""
    handler = HANDLERS.get(event)
    if handler is None:
        raise InvalidInput(f"no hook for event {event!r}; use one of {', '.join(HANDLERS)}")
    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInput("the hook's input has no session_id")
    with session(world.store, session_id) as state:
        result = handler(payload, world, state)
    return additional_context(event, result) if isinstance(result, str) else result


def session_start(payload: dict[str, Any], world: World, state: Session) -> str:
    source = str(payload.get("source", "startup"))
    if source == "startup":
        sweep(world.store)
    packer = Packer(AFTER_COMPACT_BUDGET if source == "compact" else START_BUDGET)
    packer.add("HelixFS: this workspace is versioned (every save is a commit) and has a memory.")
    repo = world.repository()
    branch = _where(packer, repo)
    _checkpoint(packer, world)
    if source == "compact":
        packer.section("Kept from before the compaction:", state.data.get("compact", []))
    if repo is not None and branch is not None:
        with project(world.store, str(payload.get("cwd", ""))) as seen:
            since = int(seen.get("last_start_ns") or time.time_ns() - FIRST_LOOK_BACK_NS)
            seen["last_start_ns"] = time.time_ns()
        packer.section(
            "Other branches since your last session:", _other_commits(repo, branch, since)
        )
    top = fresh_hits(_top_memories(world), state, set())
    pack_hits(packer, "Top memories for this project:", top, state)
    return packer.text()


_KEPT: dict[tuple[str, str, str | None], tuple[float, Any]] = {}  # (store, what, branch)
KEPT_SECONDS = 30.0


def _kept(world: World, what: str, compute: Callable[[], Any]) -> Any:
    """`compute()`, kept KEPT_SECONDS by a long-lived process (the daemon): the topics
    read every active memory, too much for each subagent's start (a memory written
    meanwhile shows up within KEPT_SECONDS)."""
    key, now = (str(world.store), what, world.branch), time.monotonic()
    found = _KEPT.get(key)
    if found is None or now - found[0] > KEPT_SECONDS:
        found = (now, compute())
        _KEPT[key] = found
    return found[1]


def _top_memories(world: World) -> list[Any]:
    """The engine keeps the ranking of every active memory until the memory changes
    (ranking.KeptTop): what is left per call is the stale marks of the branch's tree."""
    return list(world.memory.context(400, view=world.view()).hits)


def _where(packer: Packer, repo: Any) -> str | None:
    if repo is None:
        return None
    try:
        branch = str(repo.current_branch())
    except HelixError:
        branch = str(repo.head_branch())
    commit = repo.commit_info(repo.resolve(branch))
    subject = cut(commit.message.splitlines()[0] if commit.message else "", 80)
    packer.add(f"Branch {branch} at {hex_id(commit.id)[:12]} ({subject}).")
    return branch


def _checkpoint(packer: Packer, world: World) -> None:
    try:
        cp = world.memory.last_checkpoint()
    except NotFound:
        return
    lines = [f"Last checkpoint: {cut(cp.task, 200)}"]
    lines += [f"- next: {cut(step, 160)}" for step in cp.next[:5]]
    lines += [f"- blocked: {cut(item, 160)}" for item in cp.blocked[:3]]
    for line in lines:
        packer.add(line)


def _other_commits(repo: Any, branch: str, since_ns: int) -> list[str]:
    found = []
    for ref in repo.branches():
        if ref.name == branch:
            continue
        for commit in repo.log(f"branches/{ref.name}", limit=5):
            if commit.time_ns <= since_ns:
                break
            subject = cut(commit.message.splitlines()[0] if commit.message else "", 80)
            found.append(
                (
                    commit.time_ns,
                    f"- {ref.name}: {hex_id(commit.id)[:12]} {subject} ({commit.author})",
                )
            )
    return [line for _, line in sorted(found, reverse=True)[:8]]


def user_prompt(payload: dict[str, Any], world: World, state: Session) -> str:
    prompt = str(payload.get("prompt", "")).strip()
    state.data["last_prompt"] = cut(prompt, 300)
    if len(prompt) < 8:
        return ""
    hits = world.memory.search(cut(prompt, 2000), k=8, reinforce=False, view=world.view())
    packer = Packer(PROMPT_BUDGET)
    pack_hits(packer, "HelixFS memory for this request:", fresh_hits(hits, state, set()), state)
    return packer.text()


def pre_compact(payload: dict[str, Any], world: World, state: Session) -> str:
    """Claude Code adds no hook text to the context at PreCompact: what must survive is
    kept here and given back by the SessionStart (source "compact") that follows."""
    shown = Counter(state.injected).most_common(12)
    kept = []
    for memory_id, _ in shown:
        try:
            record = world.memory.get(memory_id)
        except (NotFound, InvalidInput):
            continue  # a workspace passage, or a memory forgotten since
        if record.status == "active":
            kept.append(record_line(record))
    state.data["compact"] = kept[:8]
    return ""


def stop(payload: dict[str, Any], world: World, state: Session) -> dict[str, Any] | str:
    if payload.get("stop_hook_active"):
        return ""  # the agent goes on because of our reminder: say nothing twice
    files: list[str] = state.data.get("files", [])
    repo = world.repository()
    made = _session_commits(repo, int(state.data["started_ns"])) if repo is not None else []
    signature = hashlib.blake2b(json.dumps([files, made]).encode(), digest_size=8).hexdigest()
    if (files or made) and signature != state.data.get("checkpoint"):
        _save_checkpoint(world, state, files, made)
        state.data["checkpoint"] = signature
    if files and not state.data.get("reminded"):
        state.data["reminded"] = True
        return {"decision": "block", "reason": REMIND}
    return ""


def _session_commits(repo: Any, since_ns: int) -> list[str]:
    try:
        branch = str(repo.current_branch())
    except HelixError:
        return []
    made = []
    for commit in repo.log(f"branches/{branch}", limit=50):
        if commit.time_ns < since_ns:
            break
        subject = cut(commit.message.splitlines()[0] if commit.message else "", 80)
        made.append(f"commit {hex_id(commit.id)[:12]} on {branch}: {subject}")
    return made[:20]


def _save_checkpoint(world: World, state: Session, files: list[str], made: list[str]) -> None:
    """The agent's own last checkpoint keeps its next steps: they are carried over."""
    try:
        last = world.memory.last_checkpoint()
    except NotFound:
        last = None
    mine = last is not None and not last.task.startswith(AUTOMATIC)
    task = state.data.get("last_prompt") or "agent session"
    world.memory.checkpoint(
        AUTOMATIC + cut(str(task), 300),
        done=made,
        next=list(last.next) if mine and last else [],
        hypotheses=list(last.hypotheses) if mine and last else [],
        blocked=list(last.blocked) if mine and last else [],
        files=files[:50],
    )


def subagent_start(payload: dict[str, Any], world: World, state: Session) -> str:
    records = _kept(world, "records", lambda: world.memory.memories(limit=500))
    if not records:
        return ""
    tags = Counter(tag for r in records for tag in r.tags).most_common(12)
    kinds = Counter(r.type for r in records).most_common()
    packer = Packer(SUBAGENT_BUDGET)
    packer.add(
        f"HelixFS memory holds {len(records)}{'+' if len(records) == 500 else ''} memories "
        f"({', '.join(f'{n} {k}' for k, n in kinds)}): search it (memory_search) before you guess."
    )
    if tags:
        packer.add("Topics: " + ", ".join(f"{tag} ({n})" for tag, n in tags) + ".")
    return packer.text()


HANDLERS: dict[str, Handler] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt,
    "PreToolUse": ambient.pre_tool_use,
    "PostToolUse": commands.post_bash,
    "PostToolUseFailure": commands.post_bash,
    "PreCompact": pre_compact,
    "Stop": stop,
    "SubagentStart": subagent_start,
}
