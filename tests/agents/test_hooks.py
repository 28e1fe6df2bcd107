"""`helix hook EVENT` with no daemon: each event with an input of Claude Code's shape,
through the launcher `helix hooks install` writes, on a real store."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hookrun import context_of, helix, payload, run_hook

from helixfs.agents import hook_binary

pytestmark = pytest.mark.timeout(240)

AUTH = "def refresh_token(user):\n    return user.token\n\n\nclass TokenCache:\n    pass\n"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    assert helix(store, "init").returncode == 0
    return store


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "auth.py").write_text(AUTH)
    return proj


def remember(store: Path, text: str, *options: str) -> str:
    done = helix(store, "--json", "remember", *options, "--", text)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["id"])


def read(proj: Path, session: str = "s1", name: str = "auth.py") -> dict[str, object]:
    return payload(
        "PreToolUse",
        session,
        proj,
        tool_name="Read",
        tool_input={"file_path": str(proj / name)},
        tool_use_id="toolu_01",
    )


def test_pre_tool_use_brings_the_files_memories_in_layers_once_per_session(
    store: Path, proj: Path
) -> None:
    by_source = remember(
        store, "Tokens are refreshed under the session lock", "--source", "auth.py:1"
    )
    by_symbol = remember(store, "TokenCache is not thread safe", "--type", "gotcha")
    by_stem = remember(store, "The auth module talks to the identity provider")
    unrelated = remember(store, "Deploys run on Fridays")
    text = context_of(run_hook(store, "PreToolUse", read(proj), proj), "PreToolUse")
    assert text.index(by_source) < text.index(by_symbol) < text.index(by_stem)
    assert unrelated not in text
    again = run_hook(store, "PreToolUse", read(proj), proj)
    assert context_of(again, "PreToolUse") == ""  # nothing injected twice in a session
    other = context_of(run_hook(store, "PreToolUse", read(proj, "s2"), proj), "PreToolUse")
    assert by_source in other  # another session is shown it again


def test_an_edit_that_removes_a_symbol_brings_the_memories_naming_it(
    store: Path, proj: Path
) -> None:
    invariant = remember(store, "Callers rely on refresh_token never raising")
    edit = payload(
        "PreToolUse",
        "s1",
        proj,
        tool_name="Edit",
        tool_input={
            "file_path": str(proj / "auth.py"),
            "old_string": "def refresh_token(user):",
            "new_string": "def renew(user):",
            "replace_all": False,
        },
        tool_use_id="toolu_02",
    )
    text = context_of(run_hook(store, "PreToolUse", edit, proj), "PreToolUse")
    assert invariant in text
    assert "the edit removes `refresh_token`" in text


def test_session_start_briefs_branch_checkpoint_and_top_memories(store: Path, proj: Path) -> None:
    remember(store, "Always run the linter before committing", "--type", "convention")
    done = helix(store, "checkpoint", "--next", "write the tests", "--", "hooks for claude")
    assert done.returncode == 0
    start = payload("SessionStart", "s1", proj, source="startup")
    text = context_of(run_hook(store, "SessionStart", start, proj), "SessionStart")
    assert "Branch main at " in text
    assert "Last checkpoint: hooks for claude" in text and "next: write the tests" in text
    assert "Always run the linter" in text


def test_session_start_names_what_other_branches_committed_since_the_last_start(
    store: Path, proj: Path, tmp_path: Path
) -> None:
    start = payload("SessionStart", "s1", proj, source="startup")
    context_of(run_hook(store, "SessionStart", start, proj), "SessionStart")
    assert helix(store, "branch", "try").returncode == 0
    work = tmp_path / "work"
    work.mkdir()
    (work / "x.txt").write_text("x\n")
    assert helix(store, "import", "--branch", "try", "-m", "try an idea", str(work)).returncode == 0
    later = payload("SessionStart", "s2", proj, source="startup")
    text = context_of(run_hook(store, "SessionStart", later, proj), "SessionStart")
    assert "- try: " in text and "try an idea" in text


def test_user_prompt_submit_brings_matching_memories_under_its_budget(
    store: Path, proj: Path
) -> None:
    wanted = remember(store, "The zanzibar service needs a warm cache before tests")
    for n in range(40):
        remember(store, f"zanzibar note number {n}: " + "detail " * 60)
    prompt = payload("UserPromptSubmit", "s1", proj, prompt="why is zanzibar slow in tests?")
    text = context_of(run_hook(store, "UserPromptSubmit", prompt, proj), "UserPromptSubmit")
    assert wanted in text
    assert len(text) / 4 <= 500 * 1.2  # its budget (the engine's estimate: ~4 chars a token)


def test_a_failed_test_run_brings_gotchas_and_a_later_pass_offers_the_fix(
    store: Path, proj: Path
) -> None:
    gotcha = remember(
        store, "ModuleNotFoundError for helixfs: export PYTHONPATH", "--type", "gotcha"
    )
    command = {"command": "pytest -q tests/test_auth.py", "description": "Run the tests"}
    failure = payload(
        "PostToolUseFailure",
        "s1",
        proj,
        tool_name="Bash",
        tool_input=command,
        tool_use_id="toolu_03",
        error="Exit code 1\nE   ModuleNotFoundError: No module named 'helixfs'\n1 failed",
    )
    text = context_of(run_hook(store, "PostToolUseFailure", failure, proj), "PostToolUseFailure")
    assert gotcha in text
    passed = payload(
        "PostToolUse",
        "s1",
        proj,
        tool_name="Bash",
        tool_input=command,
        tool_use_id="toolu_04",
        tool_response={"stdout": "3 passed in 0.1s", "stderr": "", "interrupted": False},
    )
    offer = context_of(run_hook(store, "PostToolUse", passed, proj), "PostToolUse")
    assert "failed earlier in this session" in offer and "ModuleNotFoundError" in offer
    listed = json.loads(helix(store, "--json", "memories").stdout)
    assert len(listed) == 1  # offered, never stored unasked


def test_a_bash_command_that_is_no_build_says_nothing(store: Path, proj: Path) -> None:
    ls = payload(
        "PostToolUse",
        "s1",
        proj,
        tool_name="Bash",
        tool_input={"command": "ls -la"},
        tool_use_id="toolu_05",
        tool_response={"stdout": "error.log\n", "stderr": "", "interrupted": False},
    )
    assert run_hook(store, "PostToolUse", ls, proj).stdout == ""


def test_stop_saves_an_automatic_checkpoint_and_reminds_once(store: Path, proj: Path) -> None:
    helix(store, "checkpoint", "--next", "ship it", "--", "my own plan")
    prompt = payload("UserPromptSubmit", "s1", proj, prompt="rename the token cache")
    run_hook(store, "UserPromptSubmit", prompt, proj)
    write = payload(
        "PreToolUse",
        "s1",
        proj,
        tool_name="Write",
        tool_input={"file_path": str(proj / "cache.py"), "content": "X = 1\n"},
        tool_use_id="toolu_06",
    )
    run_hook(store, "PreToolUse", write, proj)
    stop = payload("Stop", "s1", proj, stop_hook_active=False)
    done = run_hook(store, "Stop", stop, proj)
    assert done.returncode == 0 and json.loads(done.stdout)["decision"] == "block"
    checkpoint = json.loads(helix(store, "--json", "resume").stdout)
    assert checkpoint["task"] == "(automatic) rename the token cache"
    assert checkpoint["files"] == ["cache.py"] and checkpoint["next"] == ["ship it"]
    assert run_hook(store, "Stop", {**stop, "stop_hook_active": True}, proj).stdout == ""
    assert run_hook(store, "Stop", stop, proj).stdout == ""  # reminded once


def test_pre_compact_keeps_what_the_session_after_compaction_gets_back(
    store: Path, proj: Path
) -> None:
    shown = remember(store, "TokenCache is not thread safe", "--type", "gotcha")
    run_hook(store, "PreToolUse", read(proj), proj)
    compact = payload("PreCompact", "s1", proj, trigger="auto", custom_instructions="")
    assert run_hook(store, "PreCompact", compact, proj).stdout == ""
    after = payload("SessionStart", "s1", proj, source="compact")
    text = context_of(run_hook(store, "SessionStart", after, proj), "SessionStart")
    assert "Kept from before the compaction:" in text and shown in text


def test_subagent_start_names_the_topics(store: Path, proj: Path) -> None:
    remember(store, "Retries back off exponentially", "--tags", "network,retry")
    remember(store, "Timeouts are 30 s", "--tags", "network")
    start = payload("SubagentStart", "s1", proj, agent_id="agent-1", agent_type="Explore")
    text = context_of(run_hook(store, "SubagentStart", start, proj), "SubagentStart")
    assert "2 memories" in text and "network (2)" in text


def test_no_secret_leaves_a_hook(store: Path, proj: Path) -> None:
    secret = "AKIAIOSFODNN7EXAMPLE"
    helix(store, "checkpoint", "--", f"rotate the key {secret} today")
    start = payload("SessionStart", "s1", proj, source="startup")
    text = context_of(run_hook(store, "SessionStart", start, proj), "SessionStart")
    assert "rotate the key" in text and secret not in text


@pytest.mark.parametrize(
    "data", ["not json", "[1, 2]", json.dumps({"hook_event_name": "SessionStart"})]
)
def test_bad_input_exits_0_prints_nothing_and_logs_why(store: Path, proj: Path, data: str) -> None:
    done = run_hook(store, "SessionStart", data, proj)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "SessionStart" in (store / "hooks.log").read_text()


def test_a_missing_store_exits_0_and_prints_nothing(tmp_path: Path, proj: Path) -> None:
    done = run_hook(tmp_path / "nowhere", "SessionStart", payload("SessionStart", "s", proj), proj)
    assert (done.returncode, done.stdout) == (0, "")


def test_a_session_idle_past_its_expiry_starts_afresh(store: Path, proj: Path) -> None:
    memory = remember(store, "Tokens live for an hour", "--source", "auth.py")
    assert memory in context_of(run_hook(store, "PreToolUse", read(proj), proj), "PreToolUse")
    states = list((store / "hooks" / "sessions").glob("*.json"))
    assert len(states) == 1
    old = time.time() - 7 * 3600
    os.utime(states[0], (old, old))
    assert memory in context_of(run_hook(store, "PreToolUse", read(proj), proj), "PreToolUse")


def test_install_status_uninstall_merge_with_the_users_settings(
    store: Path, proj: Path, tmp_path: Path
) -> None:
    settings = proj / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]
        },
    }
    settings.write_text(json.dumps(mine, indent=2))
    home = {"HOME": str(tmp_path)}
    assert helix(store, "hooks", "install", cwd=proj, env=home).returncode == 0
    doc = json.loads(settings.read_text())
    assert doc["permissions"] == mine["permissions"]
    assert doc["hooks"]["PreToolUse"][0] == mine["hooks"]["PreToolUse"][0]
    ours = doc["hooks"]["PreToolUse"][1]
    assert ours["matcher"] == "Read|Edit|MultiEdit|Write|Glob|Grep"
    assert set(doc["hooks"]) >= {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}
    before = settings.read_text()
    assert helix(store, "hooks", "install", cwd=proj, env=home).returncode == 0
    assert settings.read_text() == before  # idempotent
    status = json.loads(helix(store, "--json", "hooks", "status", cwd=proj, env=home).stdout)
    assert status["installed"] is True
    # the compiled launcher when `cc` could build it (ADR 0080), else the Python one
    assert status["launcher"] == ("compiled" if hook_binary.compiler() else "python")
    remember(store, "Tokens are refreshed under the lock", "--source", "auth.py")
    command = ours["hooks"][0]["command"]  # as Claude Code runs it: a shell command line
    text = context_of(run_hook(store, "PreToolUse", read(proj), proj, command), "PreToolUse")
    assert "refreshed under the lock" in text
    assert helix(store, "hooks", "uninstall", cwd=proj, env=home).returncode == 0
    assert json.loads(settings.read_text()) == mine


def test_warm_imports_and_answers_nothing(store: Path, proj: Path) -> None:
    """`hook EVENT --warm`, run by a mount's daemon as it starts (ADR 0083): no output,
    no session, no log line."""
    done = helix(store, "hook", "SessionStart", "--warm", cwd=proj)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (store / "hooks.log").exists() and not (store / "hooks").exists()
