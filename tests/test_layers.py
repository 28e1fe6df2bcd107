"""The import arrows of docs/architecture.md, checked on the source itself.

A layer may import only the layers below it; a violation here is a design change and
needs an ADR, not an exception in this table.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "helixfs"

# layer -> helixfs subpackages it may import (errors/ids/config/__init__ are open to all)
ALLOWED: dict[str, set[str]] = {
    "store": set(),
    "vcs": {"store"},
    "fs": {"vcs"},
    "memory": {"store"},
    "web": {"vcs", "memory"},
    "daemon": {"fs", "vcs", "store", "memory", "web"},
    "mcp": {"vcs", "memory", "store", "daemon"},
    "agents": {"vcs", "memory", "store", "daemon"},
    "cli": {"daemon", "fs", "vcs", "store", "memory", "mcp", "web", "agents"},
}
SHARED = {"errors", "ids", "config", "lazy", "__init__"}  # config: ADR 0062; lazy: any module


def _helix_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "helixfs" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_every_layer_imports_only_downwards() -> None:
    violations = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            bad = _helix_imports(path) - allowed - SHARED - {layer}
            if bad:
                violations.append(f"{path.relative_to(PACKAGE)} imports {sorted(bad)}")
    assert not violations, "\n".join(violations)


def test_every_subpackage_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(ALLOWED), f"unmapped layers: {packages - set(ALLOWED)}"


def test_no_module_calls_a_private_of_the_repository() -> None:
    """The helpers of vcs/ (merge, pick, revisions, worktree...) take a Repository and
    use its public methods only: a private reached from outside is an API the class
    does not admit to (DESIGN.md, house change 1)."""
    reached = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "repo.py" and path.parent.name == "vcs":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and _names_a_repository(node.value)
            ):
                reached.append(f"{path.relative_to(PACKAGE)}:{node.lineno} .{node.attr}")
    assert reached == []


def _names_a_repository(node: ast.expr) -> bool:
    """`repo` or `self.repo`: how every helper names the Repository it was given."""
    if isinstance(node, ast.Name):
        return node.id == "repo"
    return isinstance(node, ast.Attribute) and node.attr == "repo"
