"""Ignore rules in a real mount: a C build's outputs work as files, never enter history."""

from __future__ import annotations

import json

from mount_harness import MountFactory, need

from helixfs.vcs import Repository

MAKEFILE = "app: a.o b.o\n\tgcc -o app a.o b.o\n%.o: %.c\n\tgcc -c -o $@ $<\n"


def test_a_c_build_in_the_mount_commits_no_object_file(make_mount: MountFactory) -> None:
    need("gcc", "make", "git")
    mount = make_mount(0)  # every operation is a commit: nothing hides in a window
    root = mount.path
    (root / ".gitignore").write_text("*.o\n/app\nbuild/\n")
    (root / "Makefile").write_text(MAKEFILE)
    (root / "a.c").write_text("int twice(int x) { return 2 * x; }\n")
    (root / "b.c").write_text("int twice(int);\nint main(void) { return twice(21) - 42; }\n")
    before = len(mount.log())
    mount.sh("make && mkdir -p build/cache && cp app build/cache/ && ./app")
    assert (root / "a.o").stat().st_size > 0  # the build's outputs are real files
    built = mount.log()
    assert len(built) == before  # the build changed nothing a commit holds: no commit

    status = json.loads(mount.helix("status", "--json").stdout)
    assert status["ignored"] == ["a.o", "app", "b.o", "build/"]
    assert "ignored, in the work tree but never committed (4):" in mount.helix("status").stdout
    assert "    build/\n" in (root / ".helix" / "status").read_text()

    (root / ".gitignore").write_text("*.o\nbuild/\n")  # the binary is to be committed now
    listed = mount.helix("ls", "HEAD").stdout.split()
    assert "app" in listed and "a.o" not in listed
    (root / "a.c").write_text("int twice(int x) { return x + x; }\n")
    mount.sh("make")
    # a `git init` in the mount: its .git/info/exclude is read, under the .gitignore
    mount.sh("git init -q && printf '/notes.txt\\n*.c\\n' >>.git/info/exclude && echo n >notes.txt")
    listed = mount.helix("ls", "HEAD").stdout.split()
    assert "notes.txt" not in listed and "a.c" in listed  # tracked stays tracked
    mount.stop()
    with Repository.open(mount.store) as repo:
        for commit in repo.log():
            paths = [p for p, _ in repo.trees.walk(commit.tree)]
            assert not [p for p in paths if p.endswith(b".o") or p.startswith(b"build")]
