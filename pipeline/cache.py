"""Content-addressed caches: whole stage outputs, and per-item results of map stages.

- :class:`ArtifactStore` keeps one stage output per fingerprint as a gzipped JSONL file,
  written to a temporary name and renamed, so a crash never leaves a partial artifact.
- :class:`ItemCache` keeps per-item results in SQLite (WAL mode, safe across processes),
  committed in small batches, so a build killed mid-stage resumes without redoing the
  items it had finished.
"""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from pipeline.leftovers import tmp_prefix
from pipeline.stage import Dropped, Item, StageOutput


class ArtifactStore:
    """Stage outputs on disk, keyed by (stage name, fingerprint)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, stage: str, fingerprint: str) -> Path:
        return self.root / "artifacts" / stage / f"{fingerprint}.jsonl.gz"

    def has(self, stage: str, fingerprint: str) -> bool:
        return self._path(stage, fingerprint).exists()

    def load(self, stage: str, fingerprint: str) -> StageOutput:
        with gzip.open(self._path(stage, fingerprint), "rt", encoding="utf-8") as handle:
            header = json.loads(handle.readline())
            items = [json.loads(line) for line in handle]
        dropped = [Dropped(d["id"], d["reason"], d.get("detail", "")) for d in header["dropped"]]
        return StageOutput(items=items, dropped=dropped, stats=header["stats"])

    def save(self, stage: str, fingerprint: str, output: StageOutput) -> None:
        path = self._path(stage, fingerprint)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"dropped": [d.as_json() for d in output.dropped], "stats": output.stats}
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=tmp_prefix(), suffix=".tmp")
        os.close(fd)
        try:
            with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=3) as handle:
                handle.write(json.dumps(header, ensure_ascii=False) + "\n")
                for item in output.items:
                    handle.write(json.dumps(item, ensure_ascii=False) + "\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)  # a full disk or a kill leaves no orphan behind
            raise


class ItemCache:
    """Per-item results of map stages: key -> JSON value, in one SQLite file."""

    def __init__(self, path: Path, commit_every: int = 64, commit_seconds: float = 2.0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(path, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS items (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._pending: list[tuple[str, str]] = []
        self._commit_every = commit_every
        self._commit_seconds = commit_seconds
        self._last_commit = time.monotonic()

    def get(self, key: str) -> Any | None:
        row = self._conn.execute("SELECT value FROM items WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, value in self._conn.execute(f"SELECT key, value FROM items WHERE key IN ({marks})", chunk):
                found[key] = json.loads(value)
        return found

    def put(self, key: str, value: Any) -> None:
        self._pending.append((key, json.dumps(value, ensure_ascii=False)))
        if len(self._pending) >= self._commit_every or time.monotonic() - self._last_commit > self._commit_seconds:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        with self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO items (key, value) VALUES (?, ?)", self._pending)
        self._pending.clear()
        self._last_commit = time.monotonic()

    def close(self) -> None:
        self.flush()
        self._conn.close()


def item_result_to_json(result: list[Item | Dropped] | Any) -> dict[str, Any]:
    """Encode a map-stage result (items, possibly with dropped derived items, or a Drop)."""
    if isinstance(result, list):
        return {"items": [x for x in result if isinstance(x, dict)],
                "dropped": [x.as_json() for x in result if isinstance(x, Dropped)]}
    return {"drop": result.reason, "detail": result.detail}
