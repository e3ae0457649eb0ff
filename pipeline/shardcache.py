"""Release shards cached by the content of the rows they are made from.

A release config's split is written as parquet shards (:class:`pipeline.release.ReleaseWriter`).
When a rebuild would write the same rows with the same schema and writer code, the shards are
byte-identical to the ones written before; :class:`ShardCache` keeps them, keyed by
``combine(rows key, config, split, schema, writer code version)``, and a hit hard-links them
(copies across file systems) into the staging release instead of writing them again.

An entry is a directory ``<cache>/release-shards/<key[:2]>/<key>/`` holding the shard files,
``observed.jsonl.gz`` (each row as the writer's ``observe`` saw it, without ``messages``, so
the card's statistics are the same on a hit) and ``entry.json`` (row count, shard names, sizes
and sha256). It is assembled under a temporary name and renamed, so a crash never leaves a half
entry; an entry whose files do not match ``entry.json`` is ignored (and rewritten).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.hashing import sha256_file
from pipeline.leftovers import entry_dir

ENTRY = "entry.json"
OBSERVED = "observed.jsonl.gz"
HEAVY_COLUMNS = ("messages",)  # left out of the observed rows (the observers read counts, not texts)


@dataclass(frozen=True)
class CachedShards:
    """A valid cache entry: the shard files (in order), their sha256, the row count and observed rows."""

    directory: Path
    names: list[str]
    digests: list[str]
    rows: int

    def observed(self) -> list[dict[str, Any]]:
        with gzip.open(self.directory / OBSERVED, "rt", encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]


def light(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its heavy columns (what an entry keeps for ``observe``)."""
    return {k: v for k, v in row.items() if k not in HEAVY_COLUMNS}


def place(source: Path, target: Path) -> None:
    """Hard-link ``source`` to ``target``; copy when linking is impossible (another file system)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


class ShardCache:
    """Parquet shards by content key, under ``<cache dir>/release-shards``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def has(self, key: str) -> bool:
        """Whether an entry for ``key`` was stored (not verified: :meth:`get` verifies)."""
        return (self._dir(key) / ENTRY).is_file()

    def get(self, key: str) -> CachedShards | None:
        """The entry for ``key`` when complete and intact (sizes and sha256 as recorded), else None."""
        directory = self._dir(key)
        try:
            entry = json.loads((directory / ENTRY).read_text(encoding="utf-8"))
            names, sizes, digests = entry["names"], entry["sizes"], entry["digests"]
            for name, size, digest in zip(names, sizes, digests, strict=True):
                path = directory / name
                if path.stat().st_size != size or sha256_file(path) != digest:
                    return None
            if not (directory / OBSERVED).is_file():
                return None
            return CachedShards(directory, list(names), list(digests), int(entry["rows"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, shards: list[Path], digests: list[str], rows: int,
            observed: list[dict[str, Any]]) -> None:
        """Store ``shards`` (linked, else copied) as the entry for ``key``; atomic (temp dir + rename)."""
        with entry_dir(self._dir(key), lambda _: self.get(key) is not None) as temp:
            for shard in shards:
                place(shard, temp / shard.name)
            with gzip.open(temp / OBSERVED, "wt", encoding="utf-8", compresslevel=3) as handle:
                for row in observed:
                    handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            entry = {"names": [s.name for s in shards], "sizes": [s.stat().st_size for s in shards],
                     "digests": digests, "rows": rows}
            (temp / ENTRY).write_text(json.dumps(entry, sort_keys=True), encoding="utf-8")
