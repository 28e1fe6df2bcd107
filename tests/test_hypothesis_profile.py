"""The Hypothesis profile tests/conftest.py loads: derandomized in CI, random locally."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent


def test_the_loaded_profile_fits_where_the_tests_run() -> None:
    """Run in whatever environment the session has (and below, with and without CI)."""
    active = settings.default
    assert active.print_blob  # a failure anywhere says how to replay it
    if os.environ.get("CI", "").lower() == "true":
        assert active.derandomize and active.database is None and active.deadline is None
    else:
        assert not active.derandomize  # local runs keep exploring new examples


@pytest.mark.parametrize("ci", ["true", None])
def test_a_ci_run_is_derandomized_and_a_local_one_is_not(ci: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    probe = f"{Path(__file__).name}::test_the_loaded_profile_fits_where_the_tests_run"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/{probe}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
