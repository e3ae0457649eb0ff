"""The rebuild caches: release shards by rows key (pipeline/shardcache.py) and audit results by
the shards they read (stages/audit/cache.py): a hit, a miss after one input changed, and a
corrupted or partial entry ignored. Small inputs only (no build)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from pipeline.release import ReleaseWriter, SplitJob  # noqa: E402
from pipeline.shardcache import ShardCache  # noqa: E402

SCHEMA = pa.schema([("id", pa.string()), ("n_tokens", pa.int64()), ("text", pa.string())])


def _rows(edit: str = "") -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "n_tokens": i, "text": f"row {i}{edit if i == 1 else ''}"} for i in range(3)]


def _write(out: Path, cache: ShardCache, rows: Any, key: str | None = None) -> tuple[ReleaseWriter, list[dict]]:
    writer = ReleaseWriter(out, "0.0.1", cache)
    seen: list[dict] = []
    writer.write_config("demo", "test", SCHEMA, rows, observe=seen.append, key=key)
    return writer, seen


def _shard(writer: ReleaseWriter) -> Path:
    return writer.staging / writer.configs["demo"]["test"]["files"][0]


def test_shard_cache_hit_links_identical_bytes_and_replays_observe(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    first, seen_first = _write(tmp_path / "a", cache, _rows())
    assert (first.cache_hits, first.cache_misses) == (0, 1)
    second, seen_second = _write(tmp_path / "b", cache, _rows())
    assert (second.cache_hits, second.cache_misses) == (1, 0)
    assert _shard(first).read_bytes() == _shard(second).read_bytes()
    assert second.configs == first.configs and second.digests == first.digests
    assert seen_second == seen_first  # the card's statistics see the same rows
    assert first.finish({"name": "x"}).joinpath("manifest.json").read_bytes() == \
        second.finish({"name": "x"}).joinpath("manifest.json").read_bytes()


def test_prewrite_makes_splits_in_workers_that_write_config_then_links(tmp_path: Path) -> None:
    """Splits written by forked workers into the shard cache, then asked for in order: every one a hit, the same
    shards, manifest and observed rows as one process writing them, and no scratch folder left in the release."""
    rows = {(config, split): [{"id": f"{config}-{split}-{i}", "n_tokens": i, "text": f"{config} {split} row {i} " * 40}
                              for i in range(30)] for config in ("a", "b", "c") for split in ("test", "dev")}

    def write(out: Path, cache: ShardCache | None, workers: int) -> tuple[ReleaseWriter, dict[str, list[dict]]]:
        writer = ReleaseWriter(out, "0.0.1", cache)
        jobs = [SplitJob(config, split, SCHEMA, lambda made=made: iter(made), f"key-{config}-{split}")
                for (config, split), made in rows.items()]
        writer.prewrite(jobs, workers)
        seen: dict[str, list[dict]] = {}
        for job in jobs:
            writer.write_config(job.config, job.split, job.schema, job.rows(), observe=seen.setdefault(job.config, []).append,
                                key=job.key)
        return writer, seen

    alone, seen_alone = write(tmp_path / "alone", None, 1)
    forked, seen_forked = write(tmp_path / "forked", ShardCache(tmp_path / "cache"), 2)
    assert (forked.cache_hits, forked.cache_misses) == (6, 0)
    assert not (forked.staging / ".prewrite").exists()
    assert {config: [row["id"] for row in seen] for config, seen in seen_forked.items()} == \
        {config: [row["id"] for row in seen] for config, seen in seen_alone.items()}
    assert alone.finish({"name": "x"}).joinpath("manifest.json").read_bytes() == \
        forked.finish({"name": "x"}).joinpath("manifest.json").read_bytes()  # sha256 of every shard included


def test_prewrite_with_one_split_left_to_write_leaves_the_release_where_it_was(tmp_path: Path) -> None:
    """Of two splits, one is cached already: the one left is not forked, prewrite does nothing, and the writer
    still stages (and finishes) the release in its own folder."""
    cache = ShardCache(tmp_path / "cache")
    cached, left = (SplitJob(config, "test", SCHEMA, lambda: iter(_rows()), f"key-{config}") for config in ("a", "b"))
    ReleaseWriter(tmp_path / "earlier", "0.0.1", cache).write_config("a", "test", SCHEMA, cached.rows(), key=cached.key)
    writer = ReleaseWriter(tmp_path / "out", "0.0.1", cache)
    staging = writer.staging
    writer.prewrite([cached, left], 2)
    assert writer.staging == staging and (writer.cache_hits, writer.cache_misses) == (0, 0)
    for job in (cached, left):
        writer.write_config(job.config, job.split, job.schema, job.rows(), key=job.key)
    assert (writer.cache_hits, writer.cache_misses) == (1, 1)
    release = writer.finish({"name": "x"})
    assert (release / "data" / "a").is_dir() and (release / "data" / "b").is_dir()
    assert not (release / ".prewrite").exists()


def test_shard_cache_misses_when_a_row_changes(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    _write(tmp_path / "a", cache, _rows())
    edited, seen = _write(tmp_path / "b", cache, _rows(" (edited)"))
    assert (edited.cache_hits, edited.cache_misses) == (0, 1)
    assert seen[1]["text"] == "row 1 (edited)"


def test_shard_cache_generator_needs_a_key_and_is_never_read_on_a_hit(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    plain, _ = _write(tmp_path / "a", cache, iter(_rows()))
    assert (plain.cache_hits, plain.cache_misses) == (0, 0)  # no key: written, not cached
    _write(tmp_path / "b", cache, iter(_rows()), key="k1")

    def untouchable() -> Any:
        raise AssertionError("rows read on a cache hit")
        yield

    hit, _ = _write(tmp_path / "c", cache, untouchable(), key="k1")
    assert hit.cache_hits == 1 and hit.configs["demo"]["test"]["rows"] == 3


@pytest.mark.parametrize("damage", ["truncate", "drop_entry", "drop_observed"])
def test_shard_cache_ignores_a_corrupted_or_partial_entry(tmp_path: Path, damage: str) -> None:
    cache = ShardCache(tmp_path / "cache")
    first, _ = _write(tmp_path / "a", cache, _rows())
    expected = _shard(first).read_bytes()
    entry = next((tmp_path / "cache").glob("*/*/entry.json")).parent
    if damage == "truncate":
        shard = next(entry.glob("*.parquet"))
        data = shard.read_bytes()
        shard.unlink()  # the release's hard link keeps its bytes
        shard.write_bytes(data[:-10])
    else:
        (entry / ("entry.json" if damage == "drop_entry" else "observed.jsonl.gz")).unlink()
    again, _ = _write(tmp_path / "b", cache, _rows())
    assert (again.cache_hits, again.cache_misses) == (0, 1)
    assert _shard(again).read_bytes() == expected
    third, _ = _write(tmp_path / "c", cache, _rows())  # the entry was rewritten whole
    assert third.cache_hits == 1


def test_shard_cache_leaves_no_temp_entry(tmp_path: Path) -> None:
    cache = ShardCache(tmp_path / "cache")
    _write(tmp_path / "a", cache, _rows())
    assert not list((tmp_path / "cache").rglob("*.tmp"))


# -- audit cache ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.test_audit_release import write_release

    return write_release(tmp_path_factory.mktemp("release") / "0.0.1")


def _audit(release: Path, out: Path, cache: Path) -> Any:
    from stages.audit import run_audit

    return run_audit(release, out, cache_dir=cache / "embeddings", result_cache=cache / "audit")


def test_audit_cache_hit_miss_and_corrupt_entry(small_release: Path, tmp_path: Path, monkeypatch: Any) -> None:
    import stages.audit.run as run_module

    cache = tmp_path / "cache"
    first = _audit(small_release, tmp_path / "a", cache)
    calls = []
    real = run_module.ShortcutCollector
    monkeypatch.setattr(run_module, "ShortcutCollector", lambda s: calls.append(s) or real(s))
    second = _audit(small_release, tmp_path / "b", cache)
    assert calls == []  # a hit: nothing recomputed
    assert second.files == first.files and second.shortcuts.verdict == first.shortcuts.verdict
    for name in first.files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert second.card_markdown() == first.card_markdown()

    entries = list((cache / "audit").glob("*/*/result.pkl"))
    assert len(entries) == 2  # by the shards' sha256 and by the audited columns' digest
    for entry in entries:
        entry.write_bytes(b"not a pickle")  # a corrupted entry is recomputed
    _audit(small_release, tmp_path / "c", cache)
    assert len(calls) == 1
    for entry in (cache / "audit").glob("*/*/report.md"):
        entry.unlink()  # a partial entry is recomputed too
    _audit(small_release, tmp_path / "c2", cache)
    assert len(calls) == 2

    from tests.test_audit_release import SCHEMA, fixture_rows

    config, splits = next(iter(fixture_rows().items()))
    split, rows = next(iter(splits.items()))

    def edited_copy(name: str, column: str) -> Path:
        import pyarrow.parquet as pq

        copy = tmp_path / name
        shutil.copytree(small_release, copy)
        changed = [dict(row) for row in rows]
        changed[0][column] = f"{changed[0][column]}-edited"
        pq.write_table(pa.Table.from_pylist(changed, schema=SCHEMA),
                       copy / "data" / config / f"{split}-00000-of-00001.parquet", compression="zstd")
        return copy

    unread = _audit(edited_copy("unread", "expected"), tmp_path / "d", cache)  # a column the audit never reads
    assert len(calls) == 2 and unread.files == first.files
    _audit(edited_copy("read", "id"), tmp_path / "e", cache)
    assert len(calls) == 3  # a row the audit reads changed: a miss
    assert not list((cache / "audit").rglob("*.tmp"))
