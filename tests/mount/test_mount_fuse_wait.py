"""Each way of waiting for FUSE requests (mount.fuse_wait, ADR 0074) serves a real mount."""

from __future__ import annotations

import os
import subprocess

import pytest
from mount_harness import MountFactory

from helixfs.daemon.fuseloop import use_quick_wait


@pytest.mark.parametrize("how", ["auto", "spin", "block", "trio"])
def test_every_wait_serves_a_tar_x_git_status_and_rm_rf(make_mount: MountFactory, how: str) -> None:
    mount = make_mount(300, env={**os.environ, "HELIX_FUSE_WAIT": how})
    for n in range(40):
        folder = mount.path / "src" / f"d{n % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.txt").write_text(f"file {n}\n")
    archive = mount.path.parent / f"tree-{how}.tar"
    subprocess.run(["tar", "cf", str(archive), "-C", str(mount.path), "src"], check=True)
    (mount.path / "copy").mkdir()
    subprocess.run(["tar", "xf", str(archive), "-C", str(mount.path / "copy")], check=True)
    copied = sorted(p.name for p in (mount.path / "copy" / "src").rglob("*.txt"))
    assert copied == sorted(f"f{n}.txt" for n in range(40))
    assert (mount.path / "copy" / "src" / "d3" / "f39.txt").read_text() == "file 39\n"
    subprocess.run(["rm", "-rf", str(mount.path / "copy")], check=True)
    assert not (mount.path / "copy").exists()
    mount.stop()
    said = "".join(mount.output)
    assert f"read without waiting ({how})" in said


def test_an_unknown_wait_is_refused_before_anything_is_changed() -> None:
    with pytest.raises(ValueError, match="auto, spin, block, trio"):
        use_quick_wait(1, "nap")
