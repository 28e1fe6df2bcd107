"""Which names are editor temp files (left out of commits), and which are the user's."""

from __future__ import annotations

import pytest

from helixfs.vcs.ephemeral import is_ephemeral


@pytest.mark.parametrize(
    "name",
    [
        b".app.py.swp",  # vim's first swap name
        b".app.py.swo",  # the next ones while older swaps exist, counting down
        b".app.py.swa",
        b".app.py.swx",  # vim's probe while it picks a swap name
        b"4913",
        b"5036",
        b"app.py~",
        b".#app.py",
        b"#app.py#",
        b".app.py.kate-swp",
        b"app.py.tmp.123.4",
        b".goutputstream-ABC123",
        b".nfs0000000000ab",
    ],
)
def test_editor_temp_names(name: bytes) -> None:
    assert is_ephemeral(name)


@pytest.mark.parametrize(
    "name",
    [
        b".logo.svg",  # a hidden SVG is the user's file (vim would reach .svg only after 35 swaps)
        b".icon.svg",
        b".types.svh",
        b".page.svx",
        b".swp",  # no base name: not a name vim makes
        b".app.py.swpx",
        b"app.swp",  # vim's swap names start with a dot
        b"4914",
        b"notes",
    ],
)
def test_user_names(name: bytes) -> None:
    assert not is_ephemeral(name)
