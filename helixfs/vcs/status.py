"""What `helix status` and the mount's `.helix/status` say: one document, one text.

The branch commands move, its commit, the experiment running on it, the saves a live
worktree holds that no commit has yet (the quiet window's), and the paths no commit
takes (ignored). Only a mount's
daemon has live worktrees (ADR 0002), so only there can anything be pending; reading
it commits nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from helixfs.ids import CommitId

if TYPE_CHECKING:
    from helixfs.vcs.repo import Repository

LISTED = 20
"""Pending paths the text lists; the document carries them all."""


@dataclass(frozen=True)
class Status:
    branch: str
    commit: CommitId
    subject: str
    mounted: bool  # read in the mount's daemon
    pending: list[bytes] | None  # None: some saves pending, no list says which
    # topmost paths in the work tree that no commit takes (ignore rules, editor temp
    # names; a folder as `name/`): Repository.ignored_paths, ADR 0061
    ignored: list[bytes] = field(default_factory=list)
    experiment: str | None = None  # running on the branch: its commits carry its name

    @property
    def has_pending(self) -> bool:
        return self.pending is None or bool(self.pending)


def status(repo: Repository, *, mounted: bool) -> Status:
    branch = repo.current_branch()
    head = repo.commit_info("HEAD")
    subject = head.message.splitlines()[0] if head.message else ""
    pending = repo.pending_saves(branch)
    ignored = repo.ignored_paths(branch)
    experiment = repo.experiments.running_on(branch)
    return Status(branch, head.id, subject, mounted, pending, ignored, experiment)


def status_lines(state: Status, shown: Callable[[bytes], str]) -> list[str]:
    """The human form; `shown` renders a path (escaped for a terminal, or as is)."""
    lines = [f"on branch {state.branch} at {state.commit.hex()[:12]}  {state.subject}"]
    if state.experiment is not None:
        lines.append(f"experiment {state.experiment} runs here: each commit is tagged with it")
    paths = state.pending
    if not state.mounted:
        lines.append("no mount of this store runs: every change is committed")
    elif not state.has_pending:
        lines.append("no saves pending: the mount's files are the commit's")
    elif paths is None:
        lines.append("saves pending, not committed yet (more than a list holds)")
    else:
        lines.append(f"saves pending, not committed yet ({len(paths)}):")
        lines += [f"    {shown(p)}" for p in paths[:LISTED]]
        if len(paths) > LISTED:
            lines.append(f"    ... and {len(paths) - LISTED} more")
    return lines + _ignored_lines(state.ignored, shown)


def _ignored_lines(ignored: list[bytes], shown: Callable[[bytes], str]) -> list[str]:
    if not ignored:
        return []
    lines = [f"ignored, in the work tree but never committed ({len(ignored)}):"]
    lines += [f"    {shown(p)}" for p in ignored[:LISTED]]
    if len(ignored) > LISTED:
        lines.append(f"    ... and {len(ignored) - LISTED} more")
    return lines
