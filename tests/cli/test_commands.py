"""Every repository command through the real `helix` process, human and --json forms."""

from __future__ import annotations

import os
from pathlib import Path

from .conftest import Helix, fails, make_tree, ok

PROJECT = {
    "README.md": "hello\n",
    "src/app.py": "def main():\n    return 1\n",
    "src/util.py": "X = 1\n",
}


def _imported(helix: Helix, tmp_path: Path) -> str:
    make_tree(tmp_path / "proj", PROJECT)
    doc = ok(helix("import", "--json", "proj")).json()
    assert doc["files"] == 3 and doc["changed"] is True
    return str(doc["commit"])


def test_import_ls_cat_log(helix: Helix, tmp_path: Path) -> None:
    cid = _imported(helix, tmp_path)
    assert ok(helix("rev-parse", "HEAD")).out.strip() == cid
    listing = ok(helix("ls", "HEAD")).out.splitlines()
    assert [line.split()[-1] for line in listing] == ["README.md", "src/"]
    entries = ok(helix("ls", "--json", "HEAD", "src")).json()
    assert [e["name"] for e in entries] == ["app.py", "util.py"]
    assert entries[0]["type"] == "file" and entries[0]["size"] == len(PROJECT["src/app.py"])
    (one,) = ok(helix("ls", "--json", "HEAD", "src/app.py")).json()  # a file: its own entry
    assert one == entries[0]
    assert ok(helix("cat", "HEAD", "src/app.py")).out == PROJECT["src/app.py"]
    assert ok(helix("cat", "--json", "HEAD", "README.md")).json()["content"] == "hello\n"
    log = ok(helix("log", "--json")).json()
    assert [c["message"] for c in log] == ["import proj", "init"]
    assert log[0]["id"] == cid and log[0]["author"] == "tester"
    assert len(ok(helix("log", "-n", "1")).out.splitlines()) == 1
    assert len(ok(helix("log", "-n", "9" * 30)).out.splitlines()) == 2  # was a traceback


def test_log_of_a_path_lists_the_commits_that_changed_it(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """`helix log REV PATH`: a file's or a folder's own history (git log REV -- PATH),
    deletions and merges included; a path no commit ever held is one clear error."""
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        repo.commit({"a.py": b"1\n", "src/b.py": b"b\n"}, "add both")
        repo.commit({"src/b.py": b"b2\n"}, "edit b")
        repo.commit({"a.py": b"1\n"}, "same bytes again")  # no change: not listed
        repo.create_branch("feat")
        repo.commit({"a.py": b"2\n"}, "edit a on feat", branch="feat")
        repo.commit({"src/c.py": b"c\n"}, "add c")
        repo.merge("feat")
        repo.commit({"a.py": None}, "delete a")

    def messages(*args: str) -> list[str]:
        return [c["message"] for c in ok(helix("log", "--json", *args)).json()]

    assert messages("HEAD", "a.py") == ["delete a", "merge feat into main", "add both"]
    assert messages("HEAD", "src") == ["add c", "edit b", "add both"]
    assert messages("HEAD", "src/b.py") == ["edit b", "add both"]
    assert messages("-n", "1", "HEAD~1", "a.py") == ["merge feat into main"]
    assert messages("feat", "a.py") == ["edit a on feat", "add both"]
    fails(helix("log", "HEAD", "nope.py"), says="nope.py is in no commit of the history")
    assert messages("src/b.py") == ["edit b", "add both"]  # no such rev: a path, as in git
    hint = fails(helix("log", "--graph", "src/b.py"), says="unknown revision 'src/b.py'")
    assert "helix log HEAD src/b.py" in hint.err
    fails(helix("log", "--graph", "HEAD", "a.py"), says="takes no --graph", code=2)


def test_log_of_the_root_given_as_a_slash_is_the_whole_log(helix: Helix, store: Path) -> None:
    """`log HEAD /` said "/ is in no commit" (exit 1) while `log HEAD /src` worked."""
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        repo.commit({"src/a.py": b"1\n"}, "add a")
        repo.commit({"b.py": b"b\n"}, "add b")

    def messages(*args: str) -> list[str]:
        return [c["message"] for c in ok(helix("log", "--json", *args)).json()]

    whole = messages("HEAD")
    assert messages("HEAD", "/") == messages("HEAD", "//") == messages("HEAD", "") == whole
    assert messages("HEAD", "/src/") == ["add a"]


def test_log_shows_the_saving_process_and_changed_paths(
    helix: Helix, store: Path, tmp_path: Path
) -> None:
    """fs QA #5: a save records the process (name, pid) and its paths; log shows them."""
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        files = {f"dir/f{i}.txt": b"x" for i in range(7)}
        repo.commit(files, "vim: save 7 paths", {"process": "vim", "pid": 4242}, author="tester")
        repo.commit({"new\nline": b"y"}, "by pid only", {"pid": 17}, author="tester")
    lines = ok(helix("log")).out.splitlines()
    assert lines[0].endswith("tester [pid 17]  by pid only")
    assert lines[1] == "    new\\nline"  # a newline in a name stays on one line
    assert lines[2].endswith("tester [vim 4242]  vim: save 7 paths")
    assert lines[3:9] == [f"    dir/f{i}.txt" for i in range(5)] + ["    ... and 2 more"]
    assert lines[9].endswith("tester  init") and len(lines) == 10
    graph = ok(helix("log", "--graph")).out.splitlines()
    assert len(graph) == 3 and "[vim 4242]" in graph[1]
    assert ok(helix("log", "--json")).json()[1]["meta"]["pid"] == 4242


def test_import_says_what_it_skipped(helix: Helix, tmp_path: Path) -> None:
    make_tree(tmp_path / "proj", PROJECT)
    (tmp_path / "proj" / ".git").mkdir()
    (tmp_path / "proj" / ".helix").mkdir()
    out = ok(helix("import", "proj")).out
    assert "skipped 2 entries" in out


def test_diff_shows_mode_changes_and_ls_escapes_names(helix: Helix, tmp_path: Path) -> None:
    """QA #16: a chmod +x showed only the header; a newline in a name broke ls's lines."""
    _imported(helix, tmp_path)
    os.chmod(tmp_path / "proj" / "src" / "util.py", 0o755)
    ok(helix("import", "proj"))
    text = ok(helix("diff", "HEAD~1", "HEAD")).out
    assert text == "diff --helix a/src/util.py b/src/util.py\nold mode 100644\nnew mode 100755\n"
    ok(helix("commit", "-m", "odd name", "two\nlines=proj/README.md"))
    assert "new file mode 100644\n--- /dev/null" in ok(helix("diff", "HEAD~1", "HEAD")).out
    names = [line.split()[-1] for line in ok(helix("ls", "HEAD")).out.splitlines()]
    assert names == ["README.md", "src/", "two\\nlines"]


def test_export_into_an_empty_folder_keeps_it_and_follows_a_link(
    helix: Helix, tmp_path: Path
) -> None:
    """QA #16: an empty target's mode became 755; a link to one failed with ENOTDIR."""
    _imported(helix, tmp_path)
    (tmp_path / "private").mkdir(mode=0o700)
    ok(helix("export", "HEAD", "private"))
    assert (tmp_path / "private").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "private" / "README.md").read_text() == "hello\n"
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    ok(helix("export", "HEAD", "link"))
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real" / "src" / "app.py").exists()


def test_reimport_of_the_same_folder_makes_no_commit(helix: Helix, tmp_path: Path) -> None:
    cid = _imported(helix, tmp_path)
    doc = ok(helix("import", "--json", "proj")).json()
    assert doc["changed"] is False and doc["commit"] == cid
    assert "unchanged" in ok(helix("import", "proj")).out


def test_import_replaces_the_tree(helix: Helix, tmp_path: Path) -> None:
    _imported(helix, tmp_path)
    (tmp_path / "proj" / "src" / "util.py").unlink()
    (tmp_path / "proj" / "README.md").write_text("changed\n")
    ok(helix("import", "-m", "second", "proj"))
    status = ok(helix("diff", "--name-status", "HEAD~1", "HEAD")).out.splitlines()
    assert [s.split() for s in status] == [["M", "README.md"], ["D", "src/util.py"]]
    doc = ok(helix("diff", "--json", "HEAD~1", "HEAD")).json()
    assert {c["path"]: c["status"] for c in doc["changes"]} == {
        "README.md": "M",
        "src/util.py": "D",
    }
    assert "-hello" in doc["text"] and "+changed" in doc["text"]
    unified = ok(helix("diff", "HEAD~1", "HEAD")).out
    assert "--- a/README.md" in unified and "+changed" in unified
    assert ok(helix("log", "-n", "1")).out.split()[-1] == "second"


def test_branches(helix: Helix, tmp_path: Path) -> None:
    cid = _imported(helix, tmp_path)
    created = ok(helix("branch", "--json", "feature")).json()
    assert created == {"branch": "feature", "id": cid}
    ok(helix("branch", "old", "HEAD~1"))
    listed = ok(helix("branch", "--json")).json()["branches"]
    assert [(b["name"], b["current"]) for b in listed] == [
        ("feature", False),
        ("main", True),
        ("old", False),
    ]
    human = ok(helix("branch")).out.splitlines()
    assert human[1].startswith("*") and "main" in human[1]
    ok(helix("branch", "-m", "feature", "renamed"))
    ok(helix("branch", "-d", "old"))
    names = [b["name"] for b in ok(helix("branch", "--json")).json()["branches"]]
    assert names == ["main", "renamed"]
    fails(helix("branch", "-d", "main"), says="current branch")
    fails(helix("branch", "renamed"), says="already exists")
    fails(helix("branch", "bad name"), says="may not contain")


def test_snapshots_checkout_and_reset(helix: Helix, tmp_path: Path) -> None:
    first = _imported(helix, tmp_path)
    ok(helix("snapshot", "before"))
    (tmp_path / "proj" / "new.txt").write_text("new\n")
    second = ok(helix("import", "--json", "proj")).json()["commit"]
    snaps = ok(helix("snapshot", "--json")).json()["snapshots"]
    assert [(s["name"], s["id"]) for s in snaps] == [("before", first)]
    assert ok(helix("rev-parse", "before")).out.strip() == first
    assert ok(helix("rev-parse", "--json", second[:10])).json()["id"] == second
    ok(helix("branch", "side", "before"))
    doc = ok(helix("checkout", "--json", "side")).json()
    assert doc == {"branch": "side", "id": first}
    ok(helix("checkout", "main"))
    doc = ok(helix("reset", "--json", "--hard", "HEAD~1")).json()
    assert doc == {"branch": "main", "id": first}
    fails(helix("cat", "HEAD", "new.txt"), says="no such path")
    assert ok(helix("cat", second, "new.txt")).out == "new\n"
    ok(helix("snapshot", "other", first))
    fails(helix("snapshot", "-m", "before", "other"), says="already exists")
    doc = ok(helix("snapshot", "--json", "-m", "before", "kept")).json()
    assert doc == {"renamed": "before", "to": "kept"}
    assert ok(helix("rev-parse", "kept")).out.strip() == first
    fails(helix("snapshot", "-m", "kept"), 2)
    ok(helix("snapshot", "-d", "kept"))
    ok(helix("snapshot", "-d", "other"))
    assert ok(helix("snapshot", "--json")).json() == {"snapshots": []}
    fails(helix("reset", "HEAD"), 2)


def test_merge_clean_and_conflicting(helix: Helix, tmp_path: Path) -> None:
    base = _imported(helix, tmp_path)
    ok(helix("branch", "feature"))
    ok(helix("checkout", "feature"))
    (tmp_path / "proj" / "src" / "app.py").write_text("def main():\n    return 2\n")
    ok(helix("import", "proj"))
    ok(helix("checkout", "main"))
    (tmp_path / "proj" / "src" / "app.py").write_text(PROJECT["src/app.py"])
    (tmp_path / "proj" / "README.md").write_text("hello there\n")
    ok(helix("import", "proj"))
    doc = ok(helix("merge", "--json", "feature")).json()
    assert doc["status"] == "merged" and doc["conflicts"] == []
    assert ok(helix("cat", "HEAD", "src/app.py")).out.endswith("return 2\n")
    assert ok(helix("cat", "HEAD", "README.md")).out == "hello there\n"
    graph = ok(helix("log", "--graph")).out.splitlines()
    assert graph[0].startswith("*") and graph[1] == "|\\"

    ok(helix("branch", "other", base))
    ok(helix("checkout", "other"))
    (tmp_path / "proj" / "README.md").write_text("other text\n")
    ok(helix("import", "proj"))
    ok(helix("checkout", "main"))
    head = ok(helix("rev-parse", "HEAD")).out
    result = helix("merge", "--json", "other")
    assert result.code == 1 and result.json()["conflicts"] == ["README.md"]
    assert "conflict" in result.err
    assert ok(helix("rev-parse", "HEAD")).out == head
    result = helix("merge", "--allow-conflicts", "other")
    assert result.code == 1 and "conflict (committed with markers): README.md" in result.out
    assert "<<<<<<<" in ok(helix("cat", "HEAD", "README.md")).out


def test_merge_json_says_committed_only_when_it_committed(helix: Helix, tmp_path: Path) -> None:
    """QA #14: up-to-date and fast-forward said "committed": true."""
    _imported(helix, tmp_path)
    ok(helix("branch", "ff"))
    ok(helix("commit", "--branch", "ff", "-m", "on ff", "new=proj/README.md"))
    doc = ok(helix("merge", "--json", "ff")).json()
    assert (doc["status"], doc["committed"]) == ("fast-forward", False)
    doc = ok(helix("merge", "--json", "ff")).json()
    assert (doc["status"], doc["committed"]) == ("up-to-date", False)
    assert ok(helix("merge", "ff")).out == "up-to-date: ff is already merged into main\n"


def test_merge_says_why_a_file_added_in_a_renamed_folder_conflicts(
    helix: Helix, store: Path
) -> None:
    """With --allow-conflicts (text and --json) and in the --json conflict document, a
    file-location conflict was listed bare: a file merely added, no markers, no reason."""
    from helixfs.vcs.repo import Repository

    with Repository.open(store) as repo:
        repo.commit({"old/x": b"1\n2\n3\n", "old/y": b"a\nb\nc\n"}, "base")
        repo.create_branch("feat")
        moved = {"new/x": b"1\n2\n3\n", "new/y": b"a\nb\nc\n"}
        repo.commit({"old": None, **moved}, "mv", branch="feat")
        repo.commit({"old/z": b"z\n"}, "add")
    why = "added in old/, which feat renamed to new/"
    refused = fails(helix("merge", "--json", "feat"))
    assert refused.json()["reasons"] == {"old/z": why}
    assert f"conflict: old/z ({why})" in fails(helix("merge", "feat")).out
    committed = fails(helix("merge", "--allow-conflicts", "feat"))
    assert f"conflict (one side kept, no markers): old/z ({why})" in committed.out
    ok(helix("reset", "--hard", "HEAD~1"))
    doc = fails(helix("merge", "--json", "--allow-conflicts", "feat")).json()
    assert doc["committed"] and doc["reasons"] == {"old/z": why}


def test_gc_fsck_stats(helix: Helix, tmp_path: Path) -> None:
    _imported(helix, tmp_path)
    ok(helix("branch", "tmp"))
    (tmp_path / "proj" / "big.bin").write_bytes(bytes(range(256)) * 400)
    ok(helix("checkout", "tmp"))
    ok(helix("import", "proj"))
    ok(helix("checkout", "main"))
    ok(helix("branch", "-d", "tmp"))
    dry = ok(helix("gc", "--json", "--dry-run")).json()
    assert dry["dry_run"] is True and dry["unreachable"] > 0
    done = ok(helix("gc", "--json")).json()
    assert done["unreachable"] == dry["unreachable"]
    assert ok(helix("gc", "--json")).json()["unreachable"] == 0
    fsck = ok(helix("fsck", "--json")).json()
    assert fsck["problems"] == [] and fsck["objects"] > 0
    stats = ok(helix("stats", "--json")).json()
    for key in ("objects", "logical_bytes", "stored_bytes", "dedup_ratio", "cache_hit_ratio"):
        assert key in stats
    assert "commit_p50_us" in stats


def _disk_usage(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def test_gc_reports_the_disk_space_it_gave_back(helix: Helix, store: Path, tmp_path: Path) -> None:
    """freed_bytes used to be the dropped records' uncompressed size: 2 MiB "freed" for
    text that took a few KiB on disk. It is now measured; logical_bytes keeps the other."""
    text = "".join(f"line {i} of a very repetitive log file\n" for i in range(60_000))
    make_tree(tmp_path / "p", {"a.log": text})
    ok(helix("import", "p"))
    ok(helix("reset", "--hard", "HEAD~1"))
    dry = ok(helix("gc", "--json", "--dry-run")).json()
    assert dry["freed_bytes"] is None and dry["logical_bytes"] >= len(text)
    before = _disk_usage(store / "objects")
    done = ok(helix("gc", "--json")).json()
    real = before - _disk_usage(store / "objects")
    assert done["logical_bytes"] == dry["logical_bytes"]
    assert real < len(text) // 4  # LZ4 took most of it: the logical figure was no "freed"
    assert abs(done["freed_bytes"] - real) < 1 << 16  # RocksDB's LOG and WAL move a little
    assert "objects" in ok(helix("stats")).out


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    from .conftest import run_helix

    store = tmp_path / "demo-store"
    out = ok(run_helix("demo", store=store)).out
    assert "merge" in out and "|\\" in out and "try-refresh" in out
    branches = ok(run_helix("branch", "--json", store=store)).json()["branches"]
    assert {b["name"] for b in branches} == {"main", "try-refresh"}
    # The store exists now: a second demo makes a fresh one in $TMPDIR (kept here).
    doc = ok(run_helix("demo", "--json", store=store, env={"TMPDIR": str(tmp_path)})).json()
    assert doc["store"] != str(store) and [s["step"] for s in doc["steps"]][-1] == "merge"
    assert Path(doc["store"]).is_relative_to(tmp_path)


def test_every_data_command_prints_one_json_document(helix: Helix, tmp_path: Path) -> None:
    _imported(helix, tmp_path)
    commands = [
        ["log"],
        ["log", "--graph"],
        ["ls", "HEAD"],
        ["cat", "HEAD", "README.md"],
        ["diff", "HEAD~1", "HEAD"],
        ["diff", "--name-status", "HEAD~1", "HEAD"],
        ["rev-parse", "HEAD"],
        ["branch"],
        ["snapshot"],
        ["stats"],
        ["fsck"],
        ["gc", "--dry-run"],
        ["branch", "b2"],
        ["snapshot", "s2"],
        ["checkout", "main"],
        ["reset", "--hard", "HEAD"],
        ["merge", "b2"],
        ["export", "HEAD", str(tmp_path / "exported")],
        ["import", "proj"],
    ]
    for i, argv in enumerate(commands):
        # both spellings: `helix CMD --json ...` and `helix --json CMD ...`
        form = [*argv[:1], "--json", *argv[1:]] if i % 2 else ["--json", *argv]
        ok(helix(*form)).json()  # one document, nothing else on stdout


def test_commit_through_the_api(helix: Helix, tmp_path: Path) -> None:
    _imported(helix, tmp_path)
    (tmp_path / "new.txt").write_text("new\n")
    doc = ok(
        helix(
            "commit",
            "--json",
            "-m",
            "agent edit",
            "--meta",
            "agent=claude",
            "--meta",
            "experiment=e1",
            "docs/new.txt=new.txt",
            "--delete",
            "src/util.py",
        )
    ).json()
    assert doc["changed"] is True
    head = ok(helix("log", "--json", "-n", "1")).json()[0]
    assert head["message"] == "agent edit" and head["id"] == doc["commit"]
    assert head["meta"]["agent"] == "claude" and head["meta"]["experiment"] == "e1"
    assert ok(helix("cat", "HEAD", "docs/new.txt")).out == "new\n"
    fails(helix("cat", "HEAD", "src/util.py"), says="no such path")
    fails(helix("commit", "-m", "x", "no-equals-sign"), 2, says="PATH=FILE")
    # PATH=FILE after an option is still a change (QA #15: "unrecognized arguments")
    ok(helix("commit", "-m", "m", "x=new.txt", "--delete", "docs/new.txt", "y/inner=new.txt"))
    assert ok(helix("cat", "HEAD", "y/inner")).out == "new\n"
    fails(helix("cat", "HEAD", "docs/new.txt"), says="no such path")
    assert ok(helix("cat", "HEAD", "x")).out == "new\n"
    ok(helix("reset", "--hard", doc["commit"]))
    fails(helix("commit", "-m", "x", "a=missing-file"), says="cannot read")
    fails(helix("commit", "-m", "x", "--delete", "nope"), says="nope")
    assert ok(helix("rev-parse", "HEAD")).out.strip() == doc["commit"]


def test_commit_a_path_that_holds_an_equals_sign(helix: Helix, tmp_path: Path) -> None:
    """`k=v.txt=f` splits at the first `=`: `--write PATH FILE` needs no split at all."""
    (tmp_path / "x=y.txt").write_text("data\n")
    ok(helix("commit", "-m", "eq", "--write", "conf/k=v.txt", "x=y.txt"))
    assert ok(helix("cat", "HEAD", "conf/k=v.txt")).out == "data\n"
    ok(helix("commit", "-m", "mixed", "plain=x=y.txt", "--write", "a=b", "x=y.txt"))
    assert ok(helix("cat", "HEAD", "plain")).out == ok(helix("cat", "HEAD", "a=b")).out
    fails(helix("commit", "-m", "x", "--write", "only-a-path"), 2, says="expected 2")
    fails(helix("commit", "-m", "x", "--path-b64", "YQ===x=y.txt"), 2, says="--write PATH FILE")


def test_a_newline_in_a_path_stays_on_its_line(helix: Helix, tmp_path: Path) -> None:
    """`diff --name-status`, the diff header and error messages printed the newline
    raw, so one path read as two entries (and an error took two lines)."""
    (tmp_path / "f").write_text("x\n")
    ok(helix("commit", "-m", "nl", "--write", "new\nline", "f"))
    assert ok(helix("diff", "--name-status", "HEAD~1")).out == "A  new\\nline\n"
    diff = ok(helix("diff", "HEAD~1")).out.splitlines()
    assert diff[0] == "diff --helix a/new\\nline b/new\\nline"
    fails(helix("cat", "HEAD", "no\nsuch"), says="no such path: no\\nsuch")


def test_diff_json_gives_each_side_id_and_mode(helix: Helix, tmp_path: Path) -> None:
    """change_doc looked for fields the core's Change does not have, so --json gave only
    status and path: a chmod could not be told from an edit."""
    make_tree(tmp_path / "p", {"run.sh": "echo hi\n", "gone.txt": "x\n"})
    ok(helix("import", "p"))
    os.chmod(tmp_path / "p" / "run.sh", 0o755)
    os.remove(tmp_path / "p" / "gone.txt")
    ok(helix("import", "p"))
    gone, run = ok(helix("diff", "--json", "--name-status", "HEAD~1")).json()["changes"]
    assert gone["status"] == "D" and gone["old_mode"] == "100644" and "new_id" not in gone
    assert (run["old_mode"], run["new_mode"]) == ("100644", "100755")
    assert run["old_id"] == run["new_id"]


def test_log_lost_shows_what_a_reset_left_behind(helix: Helix, tmp_path: Path) -> None:
    _imported(helix, tmp_path)
    left = ok(helix("rev-parse", "HEAD")).out.strip()
    ok(helix("reset", "--hard", "HEAD~1"))
    (lost,) = ok(helix("log", "--lost", "--json")).json()
    assert lost["id"] == left and lost["message"] == "import proj"
    assert ok(helix("log", "--lost")).out.split()[0] == left[:12]
    fails(helix("log", "--lost", "--graph"), 2, says="--lost")
    fails(helix("log", "--lost", "main"), 2, says="takes no REV")
    fails(helix("log", "--lost", "HEAD"), 2, says="takes no REV")  # was silently ignored
    ok(helix("branch", "again", left[:12]))
    assert ok(helix("log", "--lost", "--json")).json() == []
