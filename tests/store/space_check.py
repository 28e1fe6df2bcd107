"""Quick space check for delta frames (not a test: run `python tests/store/space_check.py`).

Builds N AI-style variants of a 200-file project (1-3 files per variant, 1-3 hunks of a
few lines each) as sequential commits, stores them in a RocksStore the way vcs does
(blobs + one tree per directory + root tree + commit, each hinted against its previous
version), and compares disk use with (a) the LZ4-compressed unique file contents and
(b) the same history in git after `git gc`. The official benchmark lives in benchmarks/.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import lz4.block

from helixfs.ids import ObjectId, object_id
from helixfs.store import RefUpdate
from helixfs.store.rocks import RocksStore

SOURCE_ROOT = Path("/usr/lib/python3.11")


def load_project(count: int, seed: int) -> dict[str, bytes]:
    files = sorted(SOURCE_ROOT.glob("**/*.py"))
    random.Random(seed).shuffle(files)
    project: dict[str, bytes] = {}
    for path in files:
        data = path.read_bytes()
        if 1500 <= len(data) <= 40_000:
            project[f"pkg{len(project) % 10}/{path.name}"] = data
        if len(project) == count:
            break
    return project


def ai_edit(data: bytes, rnd: random.Random) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rnd.randint(1, 3)):
        at, span = rnd.randrange(len(lines)), rnd.randint(1, 4)
        new = [
            b"    # agent: handle edge case %d" % rnd.randrange(10**6),
            b"    if value is None: return default_%d" % rnd.randrange(1000),
        ][: rnd.randint(1, 2)]
        if rnd.random() < 0.5:
            lines[at : at + span] = new
        else:
            lines[at:at] = new
    return b"\n".join(lines)


def blob(data: bytes) -> bytes:
    return b"HLX\x01\x01" + data


def tree(entries: dict[str, tuple[ObjectId, int]], mtime: int) -> bytes:
    parts = [b"HLX\x02\x01"]
    for name in sorted(entries):
        oid, size = entries[name]
        raw = name.encode()
        fixed = struct.pack("<IQQ", 0o100644, size, mtime)
        parts.append(struct.pack("<H", len(raw)) + raw + fixed + oid)
    return b"".join(parts)


def commit(root: ObjectId, parent: ObjectId | None, number: int, paths: list[str]) -> bytes:
    meta = {"process": "claude", "pid": 4242, "changed": paths}
    body = b"tree %s\nparent %s\ntime %d\nauthor agent\n\nvariant %d\n%s" % (
        root.hex().encode(),
        (parent or b"").hex().encode(),
        1_700_000_000 + number,
        number,
        json.dumps(meta).encode(),
    )
    return b"HLX\x03\x01" + body


def disk_usage(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class Simulation:
    def __init__(self, store: RocksStore, project: dict[str, bytes]) -> None:
        self.store = store
        self.files = dict(project)
        self.blob_ids: dict[str, ObjectId] = {}
        self.tree_ids: dict[str, ObjectId] = {}
        self.head: ObjectId | None = None
        self.unique: dict[ObjectId, bytes] = {}
        self.write_times: list[float] = []

    def commit(self, number: int, changed: list[str]) -> None:
        objects: dict[ObjectId, bytes] = {}
        hints: dict[ObjectId, ObjectId] = {}
        for path in changed:
            record = blob(self.files[path])
            oid = object_id(record)
            objects[oid] = record
            self.unique[oid] = self.files[path]
            if path in self.blob_ids:
                hints[oid] = self.blob_ids[path]
            self.blob_ids[path] = oid
        root_entries: dict[str, tuple[ObjectId, int]] = {}
        for folder in sorted({p.split("/")[0] for p in self.files}):
            entries = {
                p.split("/")[1]: (self.blob_ids[p], len(self.files[p]))
                for p in self.files
                if p.startswith(folder + "/")
            }
            record = tree(entries, 1_700_000_000_000_000_000)
            oid = object_id(record)
            if self.tree_ids.get(folder) != oid:
                objects[oid] = record
                if folder in self.tree_ids:
                    hints[oid] = self.tree_ids[folder]
                self.tree_ids[folder] = oid
            root_entries[folder] = (oid, 0)
        root = tree(root_entries, 0)
        root_id = object_id(root)
        if "" in self.tree_ids:
            hints[root_id] = self.tree_ids[""]
        objects[root_id] = root
        self.tree_ids[""] = root_id
        record = commit(root_id, self.head, number, changed)
        cid = object_id(record)
        objects[cid] = record
        started = time.perf_counter()
        self.store.write(
            objects, [RefUpdate("branches/main", cid, expected=self.head)], delta_bases=hints
        )
        self.write_times.append(time.perf_counter() - started)
        self.head = cid


def git_size(
    project: dict[str, bytes], history: list[dict[str, bytes]], where: Path, aggressive: bool
) -> int:
    """The same history in git, via fast-import, after `git gc` (or `gc --aggressive`)."""
    repo = where / "git"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    stream = bytearray()
    for number, change in enumerate([project, *history]):
        stream += b"commit refs/heads/main\ncommitter a <a@b> %d +0000\n" % (1_700_000_000 + number)
        message = b"variant %d" % number
        stream += b"data %d\n%s\n" % (len(message), message)
        for path, data in change.items():
            stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)
    subprocess.run(["git", "fast-import", "--quiet"], input=bytes(stream), cwd=repo, check=True)
    # fast-import's own deltas are poor and plain `gc` keeps them; `repack -f` recomputes
    # them the way `gc` does for a repository built by ordinary `git commit`s.
    subprocess.run(["git", "repack", "-q", "-a", "-d", "-f"], cwd=repo, check=True)
    gc = ["git", "gc", "-q", *(["--aggressive"] if aggressive else [])]
    subprocess.run(gc, cwd=repo, check=True)
    return disk_usage(repo / ".git" / "objects")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--variants", type=int, default=1000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-git", action="store_true")
    parser.add_argument("--aggressive", action="store_true", help="git gc --aggressive")
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    project = load_project(args.files, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        store = RocksStore(where / "store")
        sim = Simulation(store, project)
        sim.commit(0, sorted(project))
        history: list[dict[str, bytes]] = []
        for number in range(1, args.variants + 1):
            changed = rnd.sample(sorted(project), rnd.randint(1, 3))
            for path in changed:
                sim.files[path] = ai_edit(sim.files[path], rnd)
            history.append({p: sim.files[p] for p in changed})
            sim.commit(number, changed)
        stats = store.stats()
        store.compact()
        store.close()
        helix = disk_usage(where / "store")
        lz4_unique = sum(len(lz4.block.compress(d)) for d in sim.unique.values())
        git = 0 if args.no_git else git_size(project, history, where, args.aggressive)
        times = sorted(sim.write_times[1:])
        report = {
            "variants": args.variants,
            "unique_blobs": len(sim.unique),
            "raw_unique_bytes": sum(len(d) for d in sim.unique.values()),
            "lz4_unique_bytes": lz4_unique,
            "helix_disk_bytes": helix,
            "helix_stored_bytes": stats.stored_bytes,
            "helix_vs_lz4": round(helix / lz4_unique, 3),
            "git_gc_bytes": git,
            "helix_vs_git": round(helix / git, 3) if git else None,
            "delta_objects": stats.extra["delta_objects"],
            "objects": stats.objects,
            "write_median_us": round(times[len(times) // 2] * 1e6, 1),
        }
        print(json.dumps(report, indent=2))
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
