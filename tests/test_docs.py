"""Claims of the docs that drift silently: README's command (b) is what .ci/run runs,
and every ADR the docs or the code cite exists."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "docs" / "architecture.md", ROOT / "mount" / "README.md"]


SUDO_IF_ANY = ["$(command", "-v", "sudo)"]  # README's prefix of the apt steps


def _readme_command_b() -> list[list[str]]:
    """Its steps, each without the sudo prefix."""
    text = (ROOT / "README.md").read_text()
    block = text.split("**(b)", 1)[1].split("```", 2)[1]
    steps = [shlex.split(step) for step in block.strip().split(" && ")]
    return [step[3:] if step[:3] == SUDO_IF_ANY else step for step in steps]


def _ci_script() -> str:
    return (ROOT / ".ci" / "run").read_text().replace("\\\n", " ")


def test_readme_command_b_installs_what_ci_installs() -> None:
    readme = next(step for step in _readme_command_b() if step[:2] == ["apt-get", "install"])
    ci = next(line for line in _ci_script().splitlines() if "apt-get install" in line)
    ci_words = shlex.split(ci.split(">", 1)[0])
    assert [w for w in readme if not w.startswith("-")][2:] == [
        w for w in ci_words if not w.startswith(("-", "$"))
    ][2:]


def _ci_step(line: str) -> str:
    """A command line of .ci/run as README would write it: pip without -q, no `|| ...`."""
    words = shlex.split(line.split("||", 1)[0], comments=True)
    if words[:1] == ["pip"]:
        words = [w for w in words if w != "-q"]
    return " ".join(words)


def test_ci_runs_readme_command_b_after_its_system_packages() -> None:
    ci_steps = {_ci_step(line) for line in _ci_script().splitlines()}
    for step in _readme_command_b():
        if step[0] in ("apt-get", ".", "{") or step[:3] == ["python3", "-m", "venv"]:
            continue  # apt (checked above and below), and the venv .ci/run builds the same way
        assert " ".join(step) in ci_steps, step


def test_ci_installs_npm_when_it_is_missing_as_readme_does() -> None:
    step = next(step for step in _readme_command_b() if step[0] == "{")
    assert step[1:4] == ["command", "-v", "npm"] and step[-3:] == ["nodejs", "npm;", "}"]
    assert any(
        line.startswith("command -v npm >/dev/null || $SUDO apt-get install -y -qq nodejs npm")
        for line in _ci_script().splitlines()
    )


def _citing_files() -> list[Path]:
    """Everything that may cite an ADR: the docs, the code, the benchmarks, the tests."""
    trees = [ROOT / "helixfs", ROOT / "benchmarks", ROOT / "tests"]
    code = [path for tree in trees for path in sorted(tree.rglob("*.py"))]
    return DOCS + sorted((ROOT / "docs").rglob("*.md")) + code


def test_every_cited_adr_exists() -> None:
    numbers = {p.name[:4] for p in (ROOT / "docs" / "decisions").glob("[0-9][0-9][0-9][0-9]-*.md")}
    for path in _citing_files():
        text = path.read_text().replace("\n", " ")
        # ADR numbers start with 0: "ADR 0014, 2026" cites one ADR, not a year.
        for match in re.finditer(r"ADRs? ((?:0\d{3}(?:, | and |, and )?)+)", text):
            cited = set(re.findall(r"0\d{3}", match.group(1)))
            assert cited <= numbers, (str(path.relative_to(ROOT)), match.group(0))
