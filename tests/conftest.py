"""Settings shared by every test folder (each folder has its own conftest for fixtures)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from seaweed import SeaweedServer


def in_ci() -> bool:
    """`CI` set (.ci/run exports CI=true, as CI services do), and not to a false value."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# A property test in CI passes or fails the same way on every run of the same code:
# its examples come from a hash of the test (derandomize), with no example database
# carried from an earlier run, and no deadline nor too_slow health check (a slow CI
# host is not a failure: tests never assert on timing). This is what recent Hypothesis
# does on its own when CI is set; pyproject allows any 6.x, so it is stated here. Locally
# tests stay random, as before, so runs keep finding new cases. Either way a failure
# prints the @reproduce_failure blob that replays it.
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if in_ci() else "dev")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedServer]:
    """One SeaweedFS for the session (tests/seaweed.py); each test takes its own prefix
    of its bucket. Started on first use, killed at the end of the session."""
    from seaweed import serving

    with serving(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


def _children_start_with_ctrl_c() -> None:
    """A test run started as a background job of a script (`.ci/run &`, `nohup`-like
    runners) inherits SIGINT ignored, and so does every process it starts: Python then
    installs no KeyboardInterrupt handler, and a test that sends a `helix` child SIGINT
    waited 30 s for a child that never saw it (TimeoutExpired, in two of three loaded
    runs of the suite). A handler here is reset to the default by exec, so the children
    start as from a terminal; it does nothing, so this process still ignores Ctrl-C as
    its launcher asked."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: None)


_children_start_with_ctrl_c()
