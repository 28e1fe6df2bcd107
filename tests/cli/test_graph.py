"""`log --graph` drawing, on hand-made histories (no store needed)."""

from __future__ import annotations

from helixfs.cli.graph import graph_lines
from helixfs.cli.output import table


def _draw(nodes: list[tuple[str, list[str]]]) -> list[str]:
    encoded = [(c.encode(), [p.encode() for p in ps]) for c, ps in nodes]
    return graph_lines(encoded, [c for c, _ in nodes])


def test_linear_history_is_one_column() -> None:
    assert _draw([("c", ["b"]), ("b", ["a"]), ("a", [])]) == ["*  c", "*  b", "*  a"]


def test_merge_opens_a_lane_and_the_fork_closes_it() -> None:
    lines = _draw([("m", ["a", "b"]), ("b", ["base"]), ("a", ["base"]), ("base", [])])
    assert lines == ["*  m", "|\\", "| *  b", "* |  a", "|/", "*  base"]


def test_two_merges_and_a_root_per_branch() -> None:
    lines = _draw([("m2", ["m1", "c"]), ("c", []), ("m1", ["a", "b"]), ("b", []), ("a", [])])
    assert lines[0] == "*  m2" and lines[1] == "|\\"
    assert sum(line.endswith(("  a", "  b", "  c")) for line in lines) == 3
    assert all("*" in line for line in lines if line.endswith(("m1", "m2")))


def test_lanes_right_of_a_root_lean_into_its_place() -> None:
    """A merge of unrelated histories: the lane of b moved left under the root a without
    a `/`, so b was drawn right under a, as if it were a's parent."""
    lines = _draw([("m", ["a", "b"]), ("a", []), ("b", ["c"]), ("c", [])])
    assert lines == ["*  m", "|\\", "* |  a", " /", "*  b", "*  c"]
    lines = _draw([("m", ["a", "b", "d"]), ("a", []), ("b", ["c"]), ("d", []), ("c", [])])
    assert lines[2:5] == ["* | |  a", " / /", "* |  b"]


def test_a_criss_cross_draws_every_second_parent_edge() -> None:
    """M1 merges x1 while X2's lane already waits for x1: its edge used to be dropped,
    so M1 looked like an ordinary commit."""
    lines = _draw(
        [
            ("M2", ["m2", "x3"]),
            ("x3", ["X2"]),
            ("m2", ["M1"]),
            ("X2", ["x1", "m1"]),
            ("M1", ["m1", "x1"]),
            ("x1", ["c0"]),
            ("m1", ["c0"]),
            ("c0", []),
        ]
    )
    assert lines == [
        "*  M2",
        "|\\",
        "| *  x3",
        "* |  m2",
        "| *  X2",
        "| |\\",
        "* | |  M1",
        "|\\ \\ \\",
        "| |/ /",
        "| * |  x1",
        "| |/",
        "* |  m1",
        "|/",
        "*  c0",
    ]


def test_three_lanes_waiting_for_one_commit_fold_one_per_line() -> None:
    """Two branches off one base merged in turn: the three lanes folded in one `|/ /`
    line, which showed the third lane moving left and its edge ending nowhere."""
    lines = _draw(
        [
            ("M2", ["M1", "c"]),
            ("M1", ["a", "b"]),
            ("c", ["base"]),
            ("b", ["base"]),
            ("a", ["base"]),
            ("base", []),
        ]
    )
    assert lines[-3:] == ["|/ /", "|/", "*  base"]


def test_table_aligns_columns_and_leaves_the_last_unpadded() -> None:
    assert table([("a", "bb", "c"), ("aaa", "b", "cc")]) == "a    bb  c\naaa  b   cc"
    assert table([], headers=None) == ""


def test_table_aligns_wide_and_combining_characters_by_their_columns() -> None:
    """QA: `helix branch` padded 日本語 (six terminal columns) as three characters, and
    an accent written as a combining mark as one: the next column went out of line."""
    rows = [("日本語", "x"), ("e\u0301t\u0301e\u0301", "y"), ("abcdef", "z")]
    assert table(rows).splitlines() == ["日本語  x", "e\u0301t\u0301e\u0301     y", "abcdef  z"]
