"""Rows of a release (local directory or Hub id) for evaluation: ``pm_*``, ``explicit_*``, ``rm_*``.

The release is located with the audit's reader (:func:`stages.audit.reader.open_source`); the
rows are read here, since evaluation needs columns the audit does not (reference intent, gold
slots, seed family, RM question and answers) and the ``rm_*`` configs. A local release is read
straight from its parquet shards (the release layout: ``data/<config>/<split>-*.parquet``); a Hub id through ``datasets.load_dataset``
(which also works offline from the datasets cache).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.audit.reader import AuditSourceError, ReleaseSource, open_source

PM_PREFIXES = ("pm_", "explicit_")
AIME_CONFIG = "aime_probe"
RM_PREFIX = "rm_"
PM_COLUMNS = (
    "id", "seed_id", "blueprint_id", "dimension", "variant", "constraint_form", "context", "messages",
    "constraint_turns", "trigger_turn", "resolution_turn", "reference_intent", "gold_slots", "expected",
)
AIME_COLUMNS = (*PM_COLUMNS, "math_turn", "math_reply_turn", "aime_id", "aime_answer")
RM_COLUMNS = (
    "id", "seed_id", "blueprint_id", "dimension", "context", "messages", "constraint_turns", "question",
    "reference_answer", "answer_aliases",
)
_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_]+)-\d+-of-\d+\.parquet$")


class EvalSourceError(ValueError):
    """The release, a config or a split cannot be read, or a row lacks a needed column."""


@dataclass(frozen=True)
class EvalSource:
    """A located release and every config it has that can be evaluated."""

    release: ReleaseSource
    configs: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.release.name


def config_kind(config: str) -> str:
    """``pm`` for ``pm_*`` / ``explicit_*``, ``rm`` for ``rm_*``, ``aime`` for ``aime_probe``; raises for anything else."""
    if config == AIME_CONFIG:
        return "aime"
    if config.startswith(PM_PREFIXES):
        return "pm"
    if config.startswith(RM_PREFIX):
        return "rm"
    raise EvalSourceError(f"config {config!r} cannot be evaluated: only pm_*, explicit_*, rm_* and aime_probe can")


def _evaluable(names: list[str]) -> tuple[str, ...]:
    return tuple(sorted(n for n in names if n.startswith((*PM_PREFIXES, RM_PREFIX)) or n == AIME_CONFIG))


def locate(source: str | Path, revision: str | None = None) -> EvalSource:
    """Open a release and list its evaluable configs; raise :class:`EvalSourceError` if impossible."""
    try:
        release = open_source(source, revision)
    except AuditSourceError as error:
        raise EvalSourceError(str(error)) from None
    if release.local is not None:  # the release layout: data/<config>/<split>-NNNNN-of-NNNNN.parquet
        data = release.local / "data"
        return EvalSource(release, _evaluable([p.name for p in data.iterdir() if p.is_dir()]))
    from datasets import get_dataset_config_names

    return EvalSource(release, _evaluable(get_dataset_config_names(release.source, revision=release.revision)))


class _LocalSplit:
    """One split of a local release, read straight from its parquet shards (fast, no datasets cache)."""

    def __init__(self, folder: Path, split: str) -> None:
        import pyarrow.parquet as pq

        files = sorted(p for p in folder.glob("*.parquet") if (m := _SHARD.match(p.name)) and m["split"] == split)
        if not files:
            found = sorted({m["split"] for p in folder.glob("*.parquet") if (m := _SHARD.match(p.name))})
            raise ValueError(f"splits found: {', '.join(found) or 'none'}")
        self.files = files
        self.column_names = pq.read_schema(files[0]).names
        self._columns: list[str] | None = None

    def select_columns(self, columns: list[str]) -> _LocalSplit:
        self._columns = columns
        return self

    def __iter__(self) -> Any:
        import pyarrow.parquet as pq

        for path in self.files:
            yield from pq.read_table(path, columns=self._columns).to_pylist()


def _load_split(source: EvalSource, config: str, split: str) -> Any:
    release = source.release
    if release.local is not None:
        return _LocalSplit(release.local / "data" / config, split)
    from datasets import load_dataset

    return load_dataset(release.source, config, split=split, revision=release.revision)


def read_rows(source: EvalSource, config: str, split: str, limit: int | None = None,
              per_dimension: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` rows (all when None) of ``config``/``split``, with the columns scoring needs;
    ``per_dimension`` keeps at most that many of each dimension (the first in file order)."""
    if config not in source.configs:
        known = ", ".join(source.configs) or "none"
        raise EvalSourceError(f"{source.release.source}: no config {config!r} (evaluable configs: {known})")
    columns = {"pm": PM_COLUMNS, "aime": AIME_COLUMNS}.get(config_kind(config), RM_COLUMNS)
    try:
        dataset = _load_split(source, config, split)
    except ValueError as error:
        raise EvalSourceError(f"{source.release.source}: config {config!r} has no split {split!r} ({error})") from None
    present = list(dataset.column_names or [])
    missing = [c for c in columns if c not in present and c != "seed_id"]
    if missing:
        raise EvalSourceError(f"{source.release.source}: config {config!r}: missing column(s) {', '.join(missing)}")
    rows: list[dict[str, Any]] = []
    taken: Counter[str] = Counter()
    for row in dataset.select_columns([c for c in columns if c in present]):
        if limit is not None and len(rows) >= limit:
            break
        if per_dimension is not None:
            if taken[row["dimension"]] >= per_dimension:
                continue
            taken[row["dimension"]] += 1
        row.setdefault("seed_id", row.get("blueprint_id"))
        if not row.get("messages"):
            raise EvalSourceError(f"{source.release.source}: config {config!r}: row {row.get('id')!r}: messages: empty")
        rows.append(row)
    return rows
