"""PostToolUse (and PostToolUseFailure) for Bash: builds and tests that fail and pass.

A failed build or test command brings the memories and gotchas that match its error
lines. When the same command later passes in the session, the agent is offered the
error -> fix pair as a memory to write: HelixFS never stores it unasked (the agent knows
what fixed it; the hook only sees that something did).
"""

from __future__ import annotations

import re
from typing import Any

from helixfs.agents.context import Packer, World, cut, fresh_hits, pack_hits
from helixfs.agents.session import Session

BUDGET = 300  # tokens
BUILD_OR_TEST = re.compile(
    r"(?:^|[\s;&|/(])(?:pytest|py\.test|tox|nox|make|ninja|cmake|ctest|cargo\s+(?:build|test|check)|"
    r"go\s+(?:build|test|vet)|npm\s+(?:test|run\s+\S*(?:build|test)\S*)|yarn\s+(?:test|build)|"
    r"pnpm\s+(?:test|build)|jest|vitest|mvn|gradle|gradlew|tsc|mypy|ruff|unittest|"
    r"dotnet\s+(?:build|test)|bazel\s+(?:build|test)|gcc|g\+\+|clang|javac|rspec|phpunit)\b"
)
ERROR_LINE = re.compile(
    r"error|Error|ERROR|FAILED|FAIL\b|failed|Traceback|Exception|AssertionError|assert |"
    r"panic|undefined reference|cannot find|not found|No such file"
)
FAILED_SUMMARY = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b|^FAILED |^FAIL\b|Traceback", re.M)
EXIT_CODE = re.compile(r"[Ee]xit code:? (\d+)")
MAX_ERROR_LINES = 6


def command_key(command: str) -> str:
    return " ".join(command.split())[:300]


def output_of(payload: dict[str, Any]) -> str:
    response = payload.get("tool_response")
    parts: list[str] = []
    if isinstance(response, dict):
        parts += [str(response.get(k) or "") for k in ("stdout", "stderr", "output", "error")]
    elif response is not None:
        parts.append(str(response))
    parts.append(str(payload.get("error") or ""))
    return "\n".join(p for p in parts if p)


def failed(payload: dict[str, Any], output: str) -> bool:
    """Claude Code reports a failed Bash call as PostToolUseFailure (newer versions) or
    as a PostToolUse whose response carries an exit code or the runner's own verdict."""
    if payload.get("hook_event_name") == "PostToolUseFailure":
        return True
    response = payload.get("tool_response")
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode", "returncode", "return_code"):
            if isinstance(response.get(key), int):
                return bool(response[key])
        if response.get("is_error") or response.get("interrupted"):
            return True
    code = EXIT_CODE.search(output[:200])
    if code:
        return code.group(1) != "0"
    return bool(FAILED_SUMMARY.search(output))


def error_lines(output: str) -> list[str]:
    found = [line.strip() for line in output.splitlines() if ERROR_LINE.search(line)]
    unique = list(dict.fromkeys(cut(line, 200) for line in found if line))
    return unique[-MAX_ERROR_LINES:]


def post_bash(payload: dict[str, Any], world: World, state: Session) -> str:
    if payload.get("tool_name") != "Bash":
        return ""
    tool_input = payload.get("tool_input")
    command = str(tool_input.get("command", "")) if isinstance(tool_input, dict) else ""
    if not BUILD_OR_TEST.search(command):
        return ""
    key = command_key(command)
    failures: dict[str, Any] = state.data.setdefault("failures", {})
    output = output_of(payload)
    if failed(payload, output):
        errors = error_lines(output)
        if not errors and output.strip():
            errors = [cut(output.strip().splitlines()[-1], 200)]
        failures[key] = {"errors": errors[:3]}
        return _matching_memories(world, state, errors)
    earlier = failures.pop(key, None)
    if earlier is None:
        return ""
    return _offer_fix(command, earlier.get("errors", []))


def _matching_memories(world: World, state: Session, errors: list[str]) -> str:
    if not errors:
        return ""
    query = cut(" ".join(errors), 1500)
    found = world.memory.recall(query, k=8, reinforce=False, view=world.view())
    hits = fresh_hits(found, state, set())
    packer = Packer(BUDGET)
    pack_hits(packer, "HelixFS memory about this failure:", hits, state)
    return packer.text()


def _offer_fix(command: str, errors: list[str]) -> str:
    error = errors[0] if errors else "an error"
    packer = Packer(BUDGET)
    packer.add(
        f"HelixFS: `{cut(command, 120)}` failed earlier in this session ({error}) and passes "
        "now. If you know what fixed it, it is worth keeping: call memory_remember with type "
        f'gotcha and a text like "{cut(error, 100)} -> FIX" (or run `helix remember --type '
        "gotcha -- ...`). Nothing is stored unless you do."
    )
    return packer.text()
