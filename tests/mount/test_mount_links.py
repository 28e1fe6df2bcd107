"""Hard links in a real mount (ADR 0043): the tools that make them give the same
result in the mount as in a local-disk folder, and the links outlive a remount, an
export and an import."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from mount_harness import Mount, MountFactory, need, run_both, sh, wait_until

pytestmark = [pytest.mark.mount, pytest.mark.timeout(300)]


# Each file's link count and the names that are the same file as the first name of it.
SHOW_LINKS = (
    "find . -path ./.git -prune -o ! -type d -print | LC_ALL=C sort | while read -r f; do"
    ' printf "%s %s =" "$(stat -c %h "$f")" "$f";'
    ' find . -samefile "$f" ! -path "$f" | LC_ALL=C sort | tr "\\n" " "; echo; done'
)


def test_ln_then_an_edit_through_the_new_name_as_on_a_local_disk(
    mnt: Mount, tmp_path: Path
) -> None:
    session = (
        "echo one > a && ln a b && echo two >> b && cat a && stat -c %h a b"
        " && [ a -ef b ] && echo same && mkdir d && ln b d/c && mv b d/moved"
        " && [ a -ef d/moved ] && rm a && cat d/c && stat -c %h d/c && ln d/c d/c"
        "; ln d x/y; mkdir x && ln d x/d"
    )
    _, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk
    assert "one\ntwo\n2\n2\nsame\none\ntwo\n2\n" in in_mount and "File exists" in in_mount


def test_tar_x_of_an_archive_with_hard_links(mnt: Mount, tmp_path: Path) -> None:
    need("tar")
    archive = tmp_path / "links.tar"
    with tarfile.open(archive, "w") as tar:
        data = tmp_path / "data"
        data.write_bytes(b"linked content\n")
        tar.add(data, "pkg/lib/data")
        for name in ("pkg/bin/alias", "pkg/other"):
            info = tarfile.TarInfo(name)
            info.type = tarfile.LNKTYPE
            info.linkname = "pkg/lib/data"
            tar.addfile(info)
    session = f"tar xf {archive} && {SHOW_LINKS} && cat pkg/bin/alias"
    _, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk
    assert "3 ./pkg/bin/alias =./pkg/lib/data ./pkg/other \n" in in_mount


def test_cp_al_and_rsync_ah_keep_the_links(mnt: Mount, tmp_path: Path) -> None:
    need("rsync")
    session = (
        "mkdir -p src/a src/b && echo x > src/a/f && ln src/a/f src/b/g && echo y > src/solo"
        " && cp -al src farm && rsync -aH src/ copy/ && echo changed > farm/a/f"
        f" && cat src/b/g copy/b/g && {SHOW_LINKS}"
    )
    work, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk
    assert "changed\nx\n" in in_mount
    assert (work / "farm" / "b" / "g").stat().st_ino == (work / "src" / "a" / "f").stat().st_ino
    assert (work / "copy" / "a" / "f").stat().st_nlink == 2


def test_git_clone_local_hard_links_the_objects(mnt: Mount, tmp_path: Path) -> None:
    need("git")
    git = "git -c user.name=a -c user.email=a@b"
    session = (
        f"git init -q -b main origin && cd origin && echo a > a && git add a && {git} commit -qm a"
        f" && cd .. && git clone -q --local origin linked && cd linked && git fsck --strict"
        " && echo b > b && git add b && git -c user.name=a -c user.email=a@b commit -qm b"
        " && cat a && cd .. && find linked/.git/objects -type f -links 2 | wc -l"
        " && git -C origin log --oneline | wc -l"
    )
    _, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk
    assert in_mount.endswith("a\n3\n1\nexit=0\n")  # blob, tree, commit: shared with origin


# What pnpm does, without pnpm: a content-addressed store of files, each hard-linked
# into the packages of several projects; an edit of the store shows in every project.
PNPM_LIKE = r"""
import hashlib, os
os.makedirs("store", exist_ok=True)
files = {f"lib{i}/index.js": f"module.exports = {i};\n".encode() for i in range(30)}
for name, data in files.items():
    held = os.path.join("store", hashlib.sha256(data).hexdigest())
    with open(held, "wb") as f:
        f.write(data)
    for project in ("app1", "app2", "app3"):
        target = os.path.join(project, "node_modules", name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.link(held, target)
counts = {os.stat(os.path.join("store", h)).st_nlink for h in os.listdir("store")}
same = all(
    os.path.samefile(f"app1/node_modules/{n}", f"app3/node_modules/{n}") for n in files
)
os.unlink("app2/node_modules/lib0/index.js")
with open("app1/node_modules/lib1/index.js", "a") as f:
    f.write("// patched\n")
print(sorted(counts), same, os.stat("app3/node_modules/lib0/index.js").st_nlink)
print(open("app3/node_modules/lib1/index.js").read(), end="")
"""


def test_a_pnpm_like_store_of_hard_linked_files(mnt: Mount, tmp_path: Path) -> None:
    (tmp_path / "pnpm_like.py").write_text(PNPM_LIKE)
    session = f"python3 {tmp_path / 'pnpm_like.py'}"
    _, in_mount, on_disk = run_both(mnt, tmp_path, session)
    assert in_mount == on_disk == "[4] True 3\nmodule.exports = 1;\n// patched\nexit=0\n"


def test_pnpm_install_hard_links_from_its_store(mnt: Mount, tmp_path: Path) -> None:
    """A real `pnpm install`, offline: a package from a local tarball goes into a store
    in the same folder and is hard-linked into node_modules (import method hardlink:
    pnpm fails rather than copy)."""
    need("pnpm", "node", "tar")
    package = tmp_path / "package"
    package.mkdir()
    (package / "package.json").write_text('{"name": "dep", "version": "1.0.0"}\n')
    (package / "index.js").write_text("module.exports = 42;\n")
    sh("tar czf dep-1.0.0.tgz package", tmp_path)
    manifest = {"name": "app", "version": "1.0.0", "dependencies": {"dep": "file:../dep.tgz"}}
    session = (
        f"cp {tmp_path / 'dep-1.0.0.tgz'} dep.tgz && mkdir app && cd app"
        f" && echo '{json.dumps(manifest)}' > package.json"
        " && pnpm install --offline --store-dir ../store --config.package-import-method=hardlink"
        " --reporter=silent && node -e 'console.log(require(\"dep\"))'"
        " && find node_modules/.pnpm -name index.js -links 2 | wc -l"
    )
    env = {**os.environ, "npm_config_update_notifier": "false", "CI": "true"}
    outputs = []
    for root in (mnt.path, tmp_path):
        work = root / "work"
        work.mkdir()
        done = subprocess.run(
            ["bash", "-c", session], cwd=work, capture_output=True, text=True, env=env, timeout=240
        )
        outputs.append(f"{done.stdout}exit={done.returncode}\n")
    assert outputs[0] == outputs[1] == "42\n1\nexit=0\n", outputs


def test_links_outlive_a_remount_and_go_out_and_in_as_links(
    make_mount: MountFactory, tmp_path: Path
) -> None:
    mount = make_mount(0)
    (mount.path / "p").mkdir()
    (mount.path / "q").mkdir()
    (mount.path / "p" / "a").write_text("v1\n")
    os.link(mount.path / "p" / "a", mount.path / "q" / "b")
    mount.stop()
    again = make_mount(0, store=mount.store)
    a, b = again.path / "p" / "a", again.path / "q" / "b"
    assert a.stat().st_nlink == 2  # counted before q/ is loaded
    b.write_text("v2\n")
    assert a.read_text() == "v2\n" and a.stat().st_ino == b.stat().st_ino
    shown = [
        again.helix("diff", "--name-status", f"{c['id']}~1", c["id"]).stdout.split()
        for c in again.log()[:-1]
    ]
    assert ["A", "q/b"] in shown  # the link: one added path
    again.helix("export", "HEAD", tmp_path / "out")
    out = tmp_path / "out"
    assert (out / "p" / "a").stat().st_ino == (out / "q" / "b").stat().st_ino
    assert (out / "q" / "b").read_text() == "v2\n"
    (out / "p" / "a").unlink()
    (out / "c").write_text("c\n")
    os.link(out / "c", out / "q" / "c2")
    again.helix("import", out)
    wait_until(lambda: not a.exists(), what="the kernel told p/a is gone")
    assert b.stat().st_nlink == 1
    assert (again.path / "c").stat().st_ino == (again.path / "q" / "c2").stat().st_ino


def test_a_link_out_of_the_tree_is_a_cross_device_link(mnt: Mount) -> None:
    (mnt.path / "a").write_text("x\n")
    mnt.sh("mkdir .helix/branches/other")
    for target in (".helix/branches/other/a2", ".helix/a2"):
        refused = mnt.sh(f"ln a {target}", check=False)
        assert refused.returncode == 1
        assert "Invalid cross-device link" in refused.stderr, refused.stderr
    mnt.sh("ln a .helix/branches/main/a2")  # HEAD's branch: a link to the root, ../..
    assert (mnt.path / "a2").stat().st_ino == (mnt.path / "a").stat().st_ino
    mnt.sh("mkdir .helix/snapshots/snap")
    refused = mnt.sh("ln a .helix/snapshots/snap/a3", check=False)
    assert "Invalid cross-device link" in refused.stderr, refused.stderr


def test_a_merge_brings_an_edit_to_every_name_of_a_link_made_on_the_other_side(
    mnt: Mount,
) -> None:
    """`ln a b` on main, `a` edited on a branch: after `helix merge`, `a` and `b` are
    one file holding the edit, as if both had happened on one disk (ADR 0043)."""
    mnt.sh("echo base > a && mkdir .helix/branches/other && ln a b")
    mnt.sh("echo edited > .helix/branches/other/a")
    mnt.helix("merge", "other")
    mnt.sh("test a -ef b")  # one inode, again, after the reload the merge caused
    assert (mnt.path / "b").read_text() == "edited\n" and (mnt.path / "a").stat().st_nlink == 2


def test_a_name_moved_to_another_file_with_its_bytes_is_seen_and_merged(mnt: Mount) -> None:
    """`rm b; ln a b` on a branch, where `a` held b's bytes: `helix diff` marks both
    names as link changes, and merging the branch keeps them one file (ADR 0043)."""
    mnt.sh("echo same > a && echo same > b && mkdir .helix/branches/other")
    before = mnt.log("other", 1)[0]["id"]
    mnt.sh("cd .helix/branches/other && rm b && ln a b && echo new > c")
    shown = mnt.helix("diff", "--name-status", before, "other").stdout
    assert "M (link)  a" in shown and "M (link)  b" in shown, shown
    mnt.helix("merge", "other")
    mnt.sh("test a -ef b")
    assert (mnt.path / "a").stat().st_nlink == 2 and (mnt.path / "c").read_text() == "new\n"
