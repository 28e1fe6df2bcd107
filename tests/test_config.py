"""helixfs/config.py and `helix config`: every key set, read back, in effect, and a bad
value refused with nothing changed. In-process (cli.main.run), real RocksDB stores."""

from __future__ import annotations

import io
import json
import os
import re
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helixfs import config
from helixfs.cli.main import run
from helixfs.daemon.collector import Collector
from helixfs.daemon.lifecycle import MountConfig
from helixfs.errors import InvalidInput
from helixfs.ids import hex_id
from helixfs.memory import Memory
from helixfs.memory.embed import ModelUnavailableWarning, load_configured
from helixfs.memory.retrieval import memory_weight
from helixfs.store import RefUpdate
from helixfs.store.frame import Codec, codec_of
from helixfs.vcs import retention
from helixfs.vcs.repo import Repository
from helixfs.vcs.sync import host_name

DOCS = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
GOOD = {  # a valid value per key, not its default
    "cache.frames": "128MiB",
    "cache.records": "1MiB",
    "store.compression": "zstd",
    "store.zstd_level": "9",
    "mount.quiet_window": "2s",
    "mount.fuse_wait": "block",
    "gc.growth": "1GiB",
    "gc.retention": "3d",
    "gc.snapshot_ttl": "48h",
    "memory.half_life": "7d",
    "memory.model_dir": "/models/mine",
    "memory.model": "BAAI/bge-small-en-v1.5",
    "memory.embed_threads": "3",
    "memory.lexical": "true",
    "memory.cache_dir": "/var/cache/helix",
    "commit.author": 'Ada "A" Lovelace',
    "remote.host": "build-7",
}
BAD = {  # a malformed value per key
    "cache.frames": "lots",
    "cache.records": "1 parsec",
    "store.compression": "gzip",
    "store.zstd_level": "30",
    "mount.quiet_window": "soon",
    "mount.fuse_wait": "nap",
    "gc.growth": "1.5 parsecs",
    "gc.retention": "3 fortnights",
    "gc.snapshot_ttl": "forever",
    "memory.half_life": "0",
    "memory.model_dir": "two\nlines",
    "memory.model": "nul\x00",
    "memory.embed_threads": "many",
    "memory.lexical": "perhaps",
    "memory.cache_dir": "a\nb",
    "commit.author": "x\ny",
    "remote.host": "\x00",
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for spec in config.KEYS.values():
        monkeypatch.delenv(spec.env, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    Repository.init(path).close()
    return path


def helix(store: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--store", str(store), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def test_every_key_is_tested_and_documented() -> None:
    assert set(GOOD) == set(BAD) == set(config.KEYS)
    page = DOCS.read_text()
    for name, spec in config.KEYS.items():
        assert f"`{name}`" in page, f"{name} is not on docs/configuration.md"
        assert f"`{spec.env}`" in page, f"{spec.env} is not on docs/configuration.md"


@pytest.mark.parametrize("name", list(config.KEYS))
def test_set_get_unset_and_a_bad_value_changes_nothing(store: Path, name: str) -> None:
    code, out, err = helix(store, "config", "set", name, GOOD[name])
    assert code == 0, err
    assert "set " + name in out
    before = config.store_file(store).read_bytes()
    assert helix(store, "config", "get", name)[1].strip() in (GOOD[name], GOOD[name].lower())
    code, out, err = helix(store, "config", "set", name, BAD[name])
    assert code == 1 and f"bad value for {name}" in err and "the keys are:" in err
    assert config.store_file(store).read_bytes() == before  # nothing changed
    assert helix(store, "config", "unset", name)[0] == 0
    code, out, _ = helix(store, "--json", "config", "get", name)
    assert json.loads(out)["source"] == "default"


def _set_many_times(path: Path, name: str, start: Any) -> None:
    start.wait()
    for _ in range(20):
        config.set_value(path, name, GOOD[name])


def test_concurrent_sets_of_different_keys_all_land(tmp_path: Path) -> None:
    """Each `config set` reads, changes and rewrites the whole file: without the file's
    lock, two at once lose one key, or one fails renaming the other's temporary."""
    import multiprocessing

    path = tmp_path / "config.toml"
    names = list(config.KEYS)
    context = multiprocessing.get_context("fork")
    start = context.Barrier(len(names))
    workers = [context.Process(target=_set_many_times, args=(path, name, start)) for name in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0] * len(names)
    assert set(config.read_file(path, checked=False)) == set(names)


def test_an_unknown_key_is_refused_with_the_keys(store: Path) -> None:
    code, _, err = helix(store, "config", "set", "cache.frame", "1MiB")
    assert code == 1 and "unknown config key 'cache.frame'" in err
    assert all(name in err for name in config.KEYS)
    assert not config.store_file(store).exists()
    assert helix(store, "config", "get", "nope")[0] == 1


def test_precedence_flag_env_store_user_default(store: Path, tmp_path: Path) -> None:
    user = config.user_file()
    assert user == tmp_path / "xdg" / "helixfs" / "config.toml"  # XDG_CONFIG_HOME
    assert config.load(store)["cache.frames"] == 64 << 20
    assert helix(store, "config", "set", "--user", "cache.frames", "16MiB")[0] == 0
    assert config.load(store).entries["cache.frames"].source == f"user {user}"
    assert helix(store, "config", "set", "cache.frames", "32MiB")[0] == 0
    assert config.load(store)["cache.frames"] == 32 << 20
    env = {"HELIX_CACHE_FRAMES": "48MiB"}
    assert config.load(store, env)["cache.frames"] == 48 << 20
    flagged = config.load(store, env).with_flags({"cache.frames": 1 << 20})
    assert flagged["cache.frames"] == 1 << 20
    code, out, _ = helix(store, "config", "set", "--user", "cache.frames", "8MiB")
    assert "the store's config.toml sets cache.frames and wins" in out
    home = config.user_file({"HOME": str(tmp_path)})
    assert home == Path.home() / ".config" / "helixfs" / "config.toml"


def test_list_shows_every_key_with_its_source(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELIX_AUTHOR", "from-env")
    code, out, _ = helix(store, "--json", "config", "list")
    rows = {row["key"]: row for row in json.loads(out)["settings"]}
    assert set(rows) == set(config.KEYS)
    assert rows["commit.author"]["source"] == "env HELIX_AUTHOR"
    assert rows["cache.frames"]["source"] == "default" and rows["cache.frames"]["live"]


def test_a_broken_file_is_refused_where_it_is_read(store: Path) -> None:
    config.store_file(store).write_text("[cache]\nframes = 'lots'\n")
    with pytest.raises(InvalidInput, match="bad value for cache.frames in .*config.toml"):
        Repository.open(store)
    config.store_file(store).write_text("[cache]\nframe = 1\n")
    with pytest.raises(InvalidInput, match="unknown config key 'cache.frame'"):
        config.load(store)
    config.store_file(store).write_text("[cache]\nframes = 'lots'\nframe = 1\n")
    code, _, err = helix(store, "config", "list")
    assert code == 1 and "`helix config unset cache.frames` removes it" in err
    assert helix(store, "config", "unset", "cache.frames")[0] == 0  # fixable by the CLI
    assert helix(store, "config", "unset", "cache.frame")[0] == 0  # a typo, even
    assert config.load(store)["cache.frames"] == 64 << 20
    Repository.open(store).close()
    config.store_file(store).write_text("[cache\n")
    code, _, err = helix(store, "config", "list")
    assert code == 1 and "is not valid TOML" in err


@given(st.text())
def test_the_writer_round_trips_any_text(text: str) -> None:
    parsed = tomllib.loads(f"v = {config.toml_value(text)}\n")["v"]
    assert parsed == text


def test_a_quiet_window_without_its_unit_is_refused(store: Path) -> None:
    """`--quiet-window 300` is ms: the key must not read a bare 300 as 300 seconds."""
    code, _, err = helix(store, "config", "set", "mount.quiet_window", "300")
    assert code == 1 and "say 300ms or 300s" in err
    assert helix(store, "config", "set", "mount.quiet_window", "0")[0] == 0
    assert config.load(store, {"HELIX_QUIET_WINDOW": "1.5s"})["mount.quiet_window"] == 1.5


def test_sizes_and_durations_parse() -> None:
    assert config.parse_size("1.5 GiB") == 3 << 29 and config.parse_size(4096) == 4096
    assert config.parse_duration("300ms") == 0.3 and config.parse_duration("2w") == 14 * 86400
    with pytest.raises(ValueError):
        config.parse_size(True)


# ---------------------------------------------------------------- each key's effect


def test_caches_are_sized_at_open_and_live(store: Path) -> None:
    config.set_value(config.store_file(store), "cache.frames", "3MiB")
    config.set_value(config.store_file(store), "cache.records", "1MiB")
    with Repository.open(store) as repo:
        counters = repo.store.cache_counters()  # type: ignore[attr-defined]
        assert counters["frame_cache_limit_bytes"] == 3 << 20
        assert counters["record_cache_limit_bytes"] == 1 << 20
        repo.commit({f"f{n}": os.urandom(2000) for n in range(200)}, "fill")
        for n in range(200):
            repo.read("HEAD", f"f{n}")
        repo.reconfigure(repo.settings.with_flags({"cache.records": 64 << 10}))
        counters = repo.store.cache_counters()  # type: ignore[attr-defined]
        assert counters["record_cache_bytes"] <= 64 << 10  # evicted down to the new bound


def _codec(repo: Repository, path: str) -> Codec:
    entry = repo.entry("HEAD", path)
    assert entry is not None
    raw = repo.store._db.get_column_family("objects")  # type: ignore[attr-defined]
    return codec_of(entry.oid, raw[entry.oid])


def test_compression_of_new_objects_and_reads_of_both(store: Path) -> None:
    text = b"the same line of a source file, again and again\n" * 200
    with Repository.open(store) as repo:
        repo.commit({"lz4.txt": text}, "lz4")
        assert _codec(repo, "lz4.txt") is Codec.LZ4
    config.set_value(config.store_file(store), "store.compression", "zstd")
    config.set_value(config.store_file(store), "store.zstd_level", "19")
    with Repository.open(store) as repo:
        repo.commit({"zstd.txt": text + b"!"}, "zstd")
        assert _codec(repo, "zstd.txt") is Codec.ZSTD
        assert repo.read("HEAD", "lz4.txt") == text  # both codecs read back
        repo.reconfigure(repo.settings.with_flags({"store.compression": "none"}))
        repo.commit({"raw.txt": text + b"?"}, "none")
        assert _codec(repo, "raw.txt") is Codec.RAW
        assert repo.fsck().ok


def test_quiet_window_and_gc_growth_reach_the_mount_flags_win(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "mnt"
    target.mkdir()
    config.set_value(config.store_file(store), "mount.quiet_window", "2s")
    config.set_value(config.store_file(store), "gc.growth", "1GiB")
    mount = MountConfig.build(store, target)
    assert (mount.quiet_window, mount.gc_growth) == (2.0, 1 << 30)
    flagged = MountConfig.build(store, target, 50, ["gc_growth=0"])
    assert (flagged.quiet_window, flagged.gc_growth) == (0.05, 0)
    assert dict(flagged.flags) == {"mount.quiet_window": 0.05, "gc.growth": 0}


def test_retention_of_unreachable_commits_by_the_automatic_gc(store: Path) -> None:
    with Repository.open(store) as repo:
        collector = Collector(repo, growth=1)
        repo.create_branch("scratch")
        lost = repo.commit({"f": os.urandom(1 << 20)}, "lost", branch="scratch")
        repo.delete_branch("scratch")
        collector.collect_if_due()  # 14 days by default: kept
        assert repo.read(hex_id(lost), "f")
        collector = Collector(repo, growth=1)  # due again once the store doubles
        repo.commit({"g": os.urandom(repo.store.disk_bytes() + (1 << 20))}, "grow again")
        repo.reconfigure(repo.settings.with_flags({"gc.retention": 0.0}))
        collector.collect_if_due()
        assert repo.lost() == [] and repo.fsck().ok


def _age(repo: Repository, name: str, days: float, pinned: bool = False) -> None:
    made = time.time_ns() - int(days * 86400e9)
    repo.store.write({}, [RefUpdate(retention.info_ref(name), retention.encode(made, pinned))])


def test_snapshot_ttl_removes_old_unpinned_snapshots_at_gc(store: Path) -> None:
    config.set_value(config.store_file(store), "gc.snapshot_ttl", "2d")
    with Repository.open(store) as repo:
        repo.create_branch("side")
        repo.commit({"only-old-holds-it": os.urandom(4096)}, "soon gone", branch="side")
        for name in ("old", "pinned", "new"):
            repo.create_snapshot(name, "HEAD" if name != "old" else "side")
        repo.delete_branch("side")
        _age(repo, "old", 3)
        _age(repo, "pinned", 3, pinned=True)
    code, out, err = helix(store, "--json", "gc", "--dry-run")
    assert code == 0, err
    dry = json.loads(out)
    assert dry["snapshots_removed"] == ["old"] and dry["unreachable"] >= 3  # commit, tree, blob
    code, out, err = helix(store, "snapshot")
    assert "old" in out  # still there after a dry run
    code, out, err = helix(store, "--json", "gc")
    done = json.loads(out)
    assert done["snapshots_removed"] == ["old"]
    assert (done["unreachable"], done["logical_bytes"]) == (
        dry["unreachable"],
        dry["logical_bytes"],
    )
    code, out, _ = helix(store, "snapshot")
    assert "old" not in out and "pinned" in out and "new" in out


def test_a_snapshot_imported_old_is_young_here(store: Path) -> None:
    """A git tag of a commit from years ago becomes a snapshot made now: an age limit
    counts from when this store got it, not from the commit's date."""
    with Repository.open(store) as repo:
        old = repo.commit({"a": b"1"}, "long ago")
        repo.move_refs({"snapshots/v1.0": old})
        made = retention.decode(repo.store.ref(retention.info_ref("v1.0")) or b"")
        assert made is not None and made[1] is False  # its own made time, not the commit's
        assert retention.expired(repo, 60.0) == []


def test_gc_before_and_keep_last(store: Path) -> None:
    with Repository.open(store) as repo:
        for n in range(4):
            repo.create_snapshot(f"s{n}")
            _age(repo, f"s{n}", 4 - n)  # s0 4 days old ... s3 1 day old
        repo.create_branch("gone")
        lost = repo.commit({"x": b"unreachable"}, "lost", branch="gone")
        repo.delete_branch("gone")
    assert helix(store, "snapshot", "s3", "--pin")[0] == 0
    code, out, err = helix(store, "--json", "gc", "--before", "36h", "--keep-last", "1")
    assert code == 0, err
    assert json.loads(out)["snapshots_removed"] == ["s1", "s0"]  # s3 pinned, s2 the newest
    with Repository.open(store) as repo:
        assert repo.read(hex_id(lost), "x") == b"unreachable"  # younger than 36h: kept
    assert helix(store, "gc", "--before", "soon")[0] == 2
    assert helix(store, "gc", "--keep-last", "-1")[0] == 2
    assert helix(store, "snapshot", "nope", "--pin")[0] == 1


def test_memory_half_life_weighs_recency(store: Path) -> None:
    config.set_value(config.store_file(store), "memory.half_life", "1d")
    with Memory.open(store / "memory.db", None, warn_lexical=False) as memory:
        assert memory.half_life_days == 1.0
    row: dict[str, Any] = {"updated": 0.0, "salience": 0.5, "confidence": 1.0}
    row["status"] = "active"
    ten_days = 10 * 86400.0
    assert memory_weight(row, ten_days, 1.0) < memory_weight(row, ten_days, 90.0)


def test_memory_model_keys_choose_what_loads(store: Path, tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_bytes(b"not a model")
    file = config.store_file(store)
    config.set_value(file, "memory.model_dir", str(folder))
    config.set_value(file, "memory.model", "no/such-model")
    config.set_value(file, "memory.embed_threads", "1")
    config.set_value(file, "memory.cache_dir", str(tmp_path / "cache"))
    with pytest.warns(ModelUnavailableWarning, match=re.escape(f"no/such-model from {folder}")):
        assert load_configured(config.load(store)) is None
    config.set_value(file, "memory.lexical", "on")
    assert load_configured(config.load(store)) is None  # no load tried: no warning


def test_commit_author_and_remote_host(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config.set_value(config.store_file(store), "commit.author", "configured")
    config.set_value(config.store_file(store), "remote.host", "my.box")
    with Repository.open(store) as repo:
        repo.commit({"a": b"1"}, "by the file")
        assert repo.commit_info("HEAD").author == "configured"
        assert host_name(repo.settings) == "my.box"
    monkeypatch.setenv("HELIX_AUTHOR", "env wins")
    with Repository.open(store) as repo:
        repo.commit({"a": b"2"}, "by the env")
        assert repo.commit_info("HEAD").author == "env wins"


def test_stats_show_activity_caches_and_rocksdb(store: Path) -> None:
    with Repository.open(store) as repo:
        repo.create_branch("side")
        for n in range(3):
            repo.commit({"a": str(n).encode()}, f"c{n}", branch="side")
        repo.create_snapshot("snap")
    code, out, err = helix(store, "--json", "stats")
    assert code == 0, err
    doc = json.loads(out)
    activity = doc["activity"]
    assert activity["per_branch"]["side"]["last_hour"] == 4  # 3 + the init commit
    assert activity["commits_last_day"] >= 5 and activity["active_branches"] == 2
    assert activity["snapshots"] == 1 and activity["active_snapshots"] == 1
    assert set(doc["caches"]) == {"frames", "records", "blobs"}
    assert 0.0 <= doc["caches"]["records"]["hit_ratio"] <= 1.0
    assert "compaction_pending_bytes" in doc["rocksdb"] and doc["compression_ratio"] > 0
    assert "daemon" not in doc  # no mount: no daemon memory
