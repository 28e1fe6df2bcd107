"""The experiment tools: each one `helix experiment ACTION` command line (ADR 0037).

An agent starts an experiment, works on its branch (every commit there is tagged with
its name, the mount's saves too), scores it with its tests, compares it with the others
and picks the winner; a person can do the same from the CLI, and sees the same state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from helixfs.mcp import schemas
from helixfs.mcp.server import MOVES_STATE, READ_ONLY, WRITES, Helix, _options


def register(server: MCPServer, helix: Helix) -> None:
    @server.tool(annotations=WRITES)
    async def experiment_start(
        name: str, branch: str | None = None, from_rev: str | None = None, checkout: bool = False
    ) -> Annotated[CallToolResult, schemas.ExperimentOut]:
        """Start experiment `name` on `branch` (default: a branch named `name`, made from
        `from_rev`, default HEAD, if new): from now on every commit on it, the mount's
        saves included, carries meta experiment=NAME. `checkout` makes it the current
        branch; else work in the mount's .helix/branches/BRANCH/."""
        options = _options(branch=branch, checkout=checkout) + (
            ["--from", from_rev] if from_rev is not None else []
        )
        return await helix("experiment", "start", *options, "--", name)

    @server.tool(annotations=WRITES)
    async def experiment_stop(
        name: str | None = None,
    ) -> Annotated[CallToolResult, schemas.ExperimentOut]:
        """Stop tagging commits with an experiment (default: the current branch's, or
        the only one running). Its commits and scores stay."""
        return await helix("experiment", "stop", *(["--", name] if name is not None else []))

    @server.tool(annotations=READ_ONLY)
    async def experiment_list() -> Annotated[CallToolResult, schemas.ExperimentsOut]:
        """Every experiment: branch, running or not, commits, first and last commit
        time, latest score per metric, and where it was picked into."""
        return await helix("experiment", "list")

    @server.tool(annotations=WRITES)
    async def experiment_score(
        name: str, value: float, metric: str = "score"
    ) -> Annotated[CallToolResult, schemas.ScoreOut]:
        """Record a result (a test score, a benchmark figure) of `metric` on the
        experiment's current commit: the state that was tested."""
        return await helix("experiment", "score", "--metric", metric, "--", name, repr(value))

    @server.tool(annotations=READ_ONLY)
    async def experiment_compare(
        names: Annotated[Sequence[str], Field(min_length=1)],
    ) -> Annotated[CallToolResult, schemas.CompareOut]:
        """Each experiment's scores, changed paths and lines added and removed, against
        the base they share; `shared_paths` are changed by more than one."""
        return await helix("experiment", "compare", "--", *names)

    @server.tool(annotations=MOVES_STATE)
    async def experiment_pick(
        name: str, into: str | None = None
    ) -> Annotated[CallToolResult, schemas.PickOut]:
        """Merge the winning experiment into the current branch (or `into`) and mark it
        picked. A conflict is refused and reported, and changes nothing."""
        return await helix("experiment", "pick", *_options(into=into), "--", name)
