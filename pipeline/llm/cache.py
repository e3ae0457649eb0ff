"""The LLM request cache: answered requests in SQLite, keyed by what changes the answer.

The key (:func:`request_key`) is a sha256 over the model name, the messages, the sampling
parameters, the requested output schema and the sample index; the endpoint URL and the
API key are deliberately not part of it, so moving the same model to another host keeps
the cache. Only successful answers are stored. The database runs in WAL mode with a busy
timeout, so several threads or processes can share it; each write commits at once, so a
killed build loses nothing it had already paid for.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pipeline.hashing import sha256_json

KEY_VERSION = "llm-request-v1"


def request_key(model: str, payload: dict[str, Any]) -> str:
    """sha256 of the model and the output-relevant request ``payload`` (canonical JSON)."""
    return sha256_json({"v": KEY_VERSION, "model": model, "request": payload})


class RequestCache:
    """key -> answer (a JSON object) in one SQLite file; safe across threads and processes."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer for ``key``, or None."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """Stored answers for those of ``keys`` that have one."""
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT key, value FROM responses WHERE key IN ({marks})"
                for key, value in self._conn.execute(query, chunk):
                    found[key] = json.loads(value)
        return found

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store an answer (first answer wins if two processes raced for the same key)."""
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO responses (key, value, created) VALUES (?, ?, ?)", (key, text, time.time())
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"RequestCache({str(self.path)!r})"
