"""Write a release directory atomically: stage everything, hash it, then rename.

``ReleaseWriter`` writes into ``<out>/.staging-<version>-<pid>``; ``finish`` writes
``manifest.json`` (sha256 of every other file) and renames the staging directory to
``<out>/<version>``. An owner file beside the staging directory (:mod:`pipeline.leftovers`)
lets a later build remove it if this process dies. An existing release is never overwritten; a failed build leaves no
partial release behind (``abort`` removes the staging directory).

With a :class:`pipeline.shardcache.ShardCache`, a config's split whose rows key (given by the caller,
or the digest of the rows when they are a list) was written before is linked from the cache
instead of written again: same rows, schema and writer code give byte-identical shards.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.forked import can_fork, fork_map
from pipeline.hashing import combine, sha256_file, sha256_json, source_digest
from pipeline.leftovers import write_owner
from pipeline.schemas import conform
from pipeline.shardcache import ShardCache, light, place

SHARD_BYTES = 256 * 1024 * 1024  # text per shard file
GROUP_BYTES = 16 * 1024 * 1024  # text per row group (bounds memory while writing)
GROUP_ROWS = 5000
# Keys a row may carry besides its columns: the config and split it is routed by (``pipeline.assemble.group_rows``).
ROUTING_KEYS = frozenset({"config", "split"})


@dataclass(frozen=True)
class SplitJob:
    """One config's split for :meth:`ReleaseWriter.prewrite`: what :meth:`ReleaseWriter.write_config` takes,
    with the rows as a function that makes them (called in the worker) and the key they are cached by."""

    config: str
    split: str
    schema: pa.Schema
    rows: Callable[[], Iterable[dict]]
    key: str


class ReleaseExists(Exception):
    """The target release directory already exists (releases are immutable)."""


class ReleaseWriter:
    """Builds one release directory; see the module docstring."""

    def __init__(self, out_root: Path, version: str, shard_cache: ShardCache | None = None) -> None:
        self.final = out_root / version
        if self.final.exists():
            raise ReleaseExists(f"{self.final} already exists; releases are never overwritten (bump the version or use --out)")
        out_root.mkdir(parents=True, exist_ok=True)
        self.staging = out_root / f".staging-{version}-{os.getpid()}"
        if self.staging.exists():
            shutil.rmtree(self.staging)
        self.owner = write_owner(self.staging)  # lets a later build tell a dead build's leftovers from a live one
        self.staging.mkdir()
        self.configs: dict[str, dict[str, dict[str, Any]]] = {}
        self.shard_cache = shard_cache
        self.digests: dict[str, str] = {}  # sha256 of shards known at write time (manifest need not re-read them)
        self.cache_hits = self.cache_misses = 0

    def write_config(
        self,
        config: str,
        split: str,
        schema: pa.Schema,
        rows: Iterable[dict],
        observe: Callable[[dict], None] | None = None,
        key: str | None = None,
    ) -> int:
        """Stream ``rows`` into ``data/<config>/<split>-NNNNN-of-NNNNN.parquet``; return the row count.

        Rows are written in row groups of about ``GROUP_BYTES`` of text, so memory stays bounded
        however long the rows; a new shard starts past ``SHARD_BYTES``. An empty split writes nothing
        (``datasets`` cannot read a zero-row parquet file) and is left out of the card. Each row must
        have exactly the schema's columns (plus, optionally, :data:`ROUTING_KEYS`), else
        :class:`~pipeline.schemas.RowSchemaError`.
        ``key``: the digest of what ``rows`` are made from (default for a list: the rows' own
        digest); with a shard cache, a known key links the cached shards and ``rows`` is never read.
        """
        full_key = self._cache_key(config, split, schema, rows, key)
        if full_key is not None:
            assert self.shard_cache is not None
            cached = self.shard_cache.get(full_key)
            if cached is not None:
                self.cache_hits += 1
                return self._link_cached(config, split, cached, observe)
            self.cache_misses += 1
            observed: list[dict] = []
            watch = observe

            def observe(row: dict) -> None:  # noqa: F811 - also keeps what the cache entry replays
                observed.append(light(row))
                if watch:
                    watch(row)

        count = self._write_rows(config, split, schema, rows, observe)
        if full_key is not None and count:
            assert self.shard_cache is not None
            split_info = self.configs[config][split]
            paths = [self.staging / f for f in split_info["files"]]
            self.shard_cache.put(full_key, paths, [self.digests[f] for f in split_info["files"]], count, observed)
        return count

    def prewrite(self, splits: list[SplitJob], workers: int) -> None:
        """Write ``splits`` into the shard cache in ``workers`` forked processes, so that the
        :meth:`write_config` calls for them that follow (same config, split, schema and key) link their shards:
        splits are independent, and one process would write them one after another. Splits with a cache entry
        are skipped (``write_config`` verifies it, and rewrites a damaged one); with fewer than two left, no
        shard cache or no second worker, nothing happens (``write_config`` writes)."""
        if self.shard_cache is None:
            return
        cache = self.shard_cache
        todo = [job for job in splits if not cache.has(self._cache_key(job.config, job.split, job.schema, [], job.key))]
        if not can_fork(workers, len(todo)):
            return
        scratch = self.staging / ".prewrite"

        def write(index: int) -> int:
            job, worker = todo[index], copy.copy(self)  # a writer of its own, in its own folder
            worker.staging, worker.configs, worker.digests = scratch / str(index), {}, {}
            try:
                return worker.write_config(job.config, job.split, job.schema, job.rows(), key=job.key)
            finally:
                shutil.rmtree(worker.staging, ignore_errors=True)  # the cache keeps hard links to the shards

        try:
            for _ in fork_map(write, list(range(len(todo))), workers):
                pass
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _cache_key(self, config: str, split: str, schema: pa.Schema, rows: Iterable[dict], key: str | None) -> str | None:
        """The shard-cache key of a split (None: no cache, or rows that cannot be hashed)."""
        if self.shard_cache is None:
            return None
        if key is None:
            if not isinstance(rows, list):
                return None
            try:
                key = sha256_json(rows)
            except (TypeError, ValueError):
                return None
        return combine("release-shards", WRITER_VERSION, config, split, sha256_json(schema.to_string()), key)

    def _link_cached(self, config: str, split: str, cached: Any, observe: Callable[[dict], None] | None) -> int:
        """Place a cache entry's shards into the staging release; replay its observed rows."""
        folder = self.staging / "data" / config
        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for name, digest in zip(cached.names, cached.digests):
            place(cached.directory / name, folder / name)
            files.append(f"data/{config}/{name}")
            self.digests[files[-1]] = digest
        if observe:
            for row in cached.observed():
                observe(row)
        self.configs.setdefault(config, {})[split] = {"rows": cached.rows, "files": files}
        return cached.rows

    def _write_rows(self, config: str, split: str, schema: pa.Schema, rows: Iterable[dict],
                    observe: Callable[[dict], None] | None) -> int:
        """Write ``rows`` as parquet shards (see :meth:`write_config`); return the row count.

        A row group is encoded and compressed on a second thread (pyarrow lets go of the GIL) while this one
        makes the next group's rows; one group at a time, in order, so shards are the same bytes."""
        folder = self.staging / "data" / config
        shards: list[Path] = []
        writer: pq.ParquetWriter | None = None
        pending: Future | None = None
        batch: list[dict] = []
        batch_bytes = shard_bytes = count = 0

        def flush_group() -> None:
            nonlocal writer, batch, batch_bytes, shard_bytes, pending
            if writer is None:
                folder.mkdir(parents=True, exist_ok=True)
                shards.append(folder / f".{split}-{len(shards):05d}.tmp")
                writer = pq.ParquetWriter(shards[-1], schema, compression="zstd", compression_level=6,
                                          write_statistics=False)
            table = pa.Table.from_pylist(batch, schema=schema)
            shard_bytes += batch_bytes
            batch, batch_bytes = [], 0
            if pending is not None:
                pending.result()
            pending = encoder.submit(_write_group, writer, table, shard_bytes >= SHARD_BYTES)
            if shard_bytes >= SHARD_BYTES:
                writer, shard_bytes = None, 0

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="parquet") as encoder:
            for row in rows:
                if observe:
                    observe(row)
                batch.append(conform(row, schema, config=config, ignore=ROUTING_KEYS))
                batch_bytes += _approx_bytes(row)
                count += 1
                if batch_bytes >= GROUP_BYTES or len(batch) >= GROUP_ROWS:
                    flush_group()
            if batch:
                flush_group()
            if pending is not None:
                pending.result()
        if writer is not None:
            writer.close()
        if count == 0:
            return 0
        files = []
        for index, temp in enumerate(shards):
            name = f"{split}-{index:05d}-of-{len(shards):05d}.parquet"
            temp.rename(folder / name)
            files.append(f"data/{config}/{name}")
            if self.shard_cache is not None:
                self.digests[files[-1]] = sha256_file(folder / name)
        self.configs.setdefault(config, {})[split] = {"rows": count, "files": files}
        return count

    def write_text(self, relative: str, text: str) -> Path:
        path = self.staging / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def write_jsonl(self, relative: str, records: Iterable[dict]) -> Path:
        lines = "".join(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in records)
        return self.write_text(relative, lines)

    def finish(self, manifest: dict[str, Any]) -> Path:
        """Hash every file, write manifest.json, and move the release into place."""
        files = {}
        for path in sorted(p for p in self.staging.rglob("*") if p.is_file()):
            relative = path.relative_to(self.staging).as_posix()
            files[relative] = self.digests.get(relative) or sha256_file(path)
        manifest = {**manifest, "configs": self.configs, "files": files}
        self.write_text("manifest.json", json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        if self.final.exists():
            raise ReleaseExists(f"{self.final} appeared while building; not overwriting it")
        os.rename(self.staging, self.final)
        self.owner.unlink(missing_ok=True)
        return self.final

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        self.owner.unlink(missing_ok=True)


def _write_group(writer: pq.ParquetWriter, table: pa.Table, last: bool) -> None:
    """Append ``table`` as a row group; close the shard after its ``last`` group."""
    writer.write_table(table)
    if last:
        writer.close()


# how shards are written: this module, the row conformer and the parquet library
WRITER_VERSION = combine(source_digest(ReleaseWriter, conform), pa.__version__)


def _approx_bytes(row: dict) -> int:
    messages = row.get("messages") or []
    return sum(len(m["content"]) for m in messages) + 512
