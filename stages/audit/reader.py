"""Read the ``pm_*``, ``explicit_*`` and ``rm_*`` configs of a release, row by row.

A source is a local release directory or a Hub dataset id. A local release is read shard by shard
with ``pyarrow.parquet.ParquetFile.iter_batches`` (the SPEC's ``data/<config>/<split>-*.parquet``
files as they are, so long contexts are never copied into a cache). The ``pyarrow.dataset`` scanner
behind ``load_dataset(..., streaming=True)`` is avoided on purpose: its reader threads can outlive
the interpreter and abort it at exit ("terminate called without an active exception",
apache/arrow#45214), which made ``triggerbench show`` exit with SIGABRT after printing its row. A Hub
id goes through ``load_dataset(id, config, revision=...)``, which also works offline from the datasets
cache; with the Hub unreachable and nothing cached it fails at once with :class:`AuditSourceError`.
Both paths yield the same plain rows (lists, dicts, strings, ints).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline.hub.offline import endpoint, hub_reachable

AUDITED_PREFIXES = ("pm_", "explicit_", "rm_")  # rm rows: the shortcut audit's row invariants only
SPLIT_ORDER = ("test", "dev")
COLUMNS = (
    "id", "blueprint_id", "seed_id", "dimension", "variant", "constraint_form", "context", "messages", "constraint_turns",
    "trigger_turn", "resolution_turn", "gold_slots", "distractor_source", "filler_turns", "injected_turns",
)
# Rows converted to Python at a time. A 100K-token row is about 0.3 MB of text and a thousand message dicts:
# reading pm_100k and explicit_40k peaks at 1,106 MiB with 256-row batches, 506 with 64, 323 with 8.
READ_BATCH_ROWS = 16
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_]+)-\d+-of-\d+\.parquet$")


class AuditSourceError(RuntimeError):
    """The release cannot be found or read (bad path, unknown id, Hub unreachable)."""


@dataclass(frozen=True)
class ReleaseSource:
    """Where a release lives: ``local`` directory or Hub ``repo_id`` (+ ``revision``)."""

    source: str
    local: Path | None
    revision: str | None
    configs: tuple[str, ...]

    @property
    def name(self) -> str:
        """Short name for default output directories (``0.1.0``, ``name-v0.1.0``)."""
        return release_name(self.source, self.revision)


def release_name(source: str | Path, revision: str | None = None) -> str:
    """A release's short name: the directory name, or the Hub repo name (plus ``-revision``)."""
    path = Path(str(source)).expanduser()
    if path.exists():
        return path.resolve().name
    base = str(source).rstrip("/").split("/")[-1]
    return f"{base}-{revision}" if revision else base


def _audited(names: list[str]) -> tuple[str, ...]:
    return tuple(sorted(n for n in names if n.startswith(AUDITED_PREFIXES)))


def _local_configs(directory: Path) -> tuple[str, ...]:
    """Config names from the card's ``configs:`` YAML, else from ``data/<config>/`` folders."""
    from datasets import get_dataset_config_names

    names = _audited(get_dataset_config_names(str(directory))) if (directory / "README.md").exists() else ()
    if names:
        return names
    data = directory / "data"
    return _audited([p.name for p in data.iterdir() if p.is_dir()]) if data.is_dir() else ()


def open_source(source: str | Path, revision: str | None = None) -> ReleaseSource:
    """Locate a release and list its audited configs; raise :class:`AuditSourceError` if impossible."""
    text = str(source)
    path = Path(text).expanduser()
    if path.exists():
        if not path.is_dir():
            raise AuditSourceError(f"{path} is not a release directory")
        if revision:
            raise AuditSourceError("--revision applies to Hub ids only, not to a release directory")
        configs = _local_configs(path.resolve())
        if not configs:
            raise AuditSourceError(f"{path} has no pm_* or explicit_* configs (README.md configs or data/<config>/)")
        return ReleaseSource(text, path.resolve(), None, configs)
    if not _HUB_ID.match(text):
        raise AuditSourceError(f"{text!r} is neither an existing release directory nor a Hub dataset id (org/name)")
    return _open_hub(text, revision)


def _open_hub(repo_id: str, revision: str | None) -> ReleaseSource:
    from datasets import get_dataset_config_names

    online = hub_reachable()
    try:
        names = _audited(get_dataset_config_names(repo_id, revision=revision))
    except (OSError, ValueError) as error:
        if not online:
            raise AuditSourceError(
                f"the Hugging Face Hub ({endpoint()}) is unreachable (offline) and {repo_id!r} "
                f"{'at ' + revision + ' ' if revision else ''}is not in the local datasets cache; "
                "audit a local release directory instead, or retry with network access"
            ) from error
        raise AuditSourceError(f"cannot read {repo_id!r} from the Hub: {error}") from error
    if not names:
        raise AuditSourceError(f"{repo_id!r} has no pm_* or explicit_* configs")
    return ReleaseSource(repo_id, None, revision, names)


def _split_key(split: str) -> tuple[int, str]:
    return (SPLIT_ORDER.index(split) if split in SPLIT_ORDER else len(SPLIT_ORDER), split)


def _local_shards(folder: Path) -> dict[str, list[Path]]:
    """``split -> shard files`` of one config folder of a local release, in file order."""
    shards: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.parquet")):
        if match := _SHARD.match(path.name):
            shards.setdefault(match["split"], []).append(path)
    if not shards:
        raise AuditSourceError(f"{folder} holds no <split>-NNNNN-of-NNNNN.parquet shards")
    return shards


def _local_rows(files: list[Path], columns: tuple[str, ...] | None) -> Iterator[dict[str, Any]]:
    for path in files:
        shard = pq.ParquetFile(path)
        names = shard.schema_arrow.names
        wanted = names if columns is None else [c for c in columns if c in names]
        for batch in shard.iter_batches(batch_size=READ_BATCH_ROWS, columns=wanted):
            yield from batch.to_pylist()


def iter_rows(release: ReleaseSource, config: str,
              columns: tuple[str, ...] | None = COLUMNS) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(split, row)`` for every row of ``config`` (all splits, test first).

    ``columns`` picks the columns a row carries (those the release has); None keeps them all.
    """
    if release.local is not None:
        shards = _local_shards(release.local / "data" / config)
        for split in sorted(shards, key=_split_key):
            yield from ((split, row) for row in _local_rows(shards[split], columns))
        return
    from datasets import load_dataset

    splits = load_dataset(release.source, config, revision=release.revision)
    for split in sorted(splits.keys(), key=_split_key):
        dataset = splits[split]
        if columns is not None:
            dataset = dataset.select_columns([c for c in columns if c in dataset.column_names])
        yield from ((split, row) for row in dataset)
