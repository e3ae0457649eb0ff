"""``run_audit``: read a release, audit every row, write the tables, rows file, report and plots."""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.progress import progress
from pipeline.text import MIN_WORD_LENGTH, STOPWORD_LIST_NAME
from pipeline.vocabulary import CONSTRAINT_FORMS, CONTEXTS, DIMENSIONS, VARIANTS
from stages.audit import lexical, semantic
from stages.audit.cache import AuditCache, audit_key, column_digests, input_digests
from stages.audit.embeddings import EmbedStats, Embedder, EmbeddingModelChoice, load_embedding_model
from stages.audit.reader import ReleaseSource, iter_rows, open_source
from stages.audit.shortcuts import ShortcutAudit, ShortcutCollector, ShortcutSettings, score, settings_from

log = logging.getLogger(__name__)

DIMENSION_ORDER, VARIANT_ORDER, CONTEXT_ORDER, FORM_ORDER = DIMENSIONS, VARIANTS, CONTEXTS, CONSTRAINT_FORMS
LEXICAL_KEYS = ("constraint_form", "context", "dimension", "variant")
SEMANTIC_KEYS = ("constraint_form", "context", "dimension", "variant")
ROW_SCHEMA = pa.schema([
    ("id", pa.string()), ("config", pa.string()), ("split", pa.string()), ("dimension", pa.string()),
    ("variant", pa.string()), ("constraint_form", pa.string()), ("context", pa.string()),
    ("distractor_source", pa.string()), ("jaccard", pa.float64()), ("overlap", pa.float64()),
    ("shared_count", pa.int32()), ("shared_words", pa.list_(pa.string())), ("constraint_words", pa.int32()),
    ("trigger_words", pa.int32()), ("injected_turns", pa.int32()), ("injected_sharing_slot_words", pa.int32()),
    ("injected_mentioning_slot", pa.int32()), ("injected_slot_words", pa.list_(pa.string())),
    ("cos_ct", pa.float64()), ("cos_c_theta", pa.float64()), ("cos_t_theta", pa.float64()),
    ("cos_theta_theta", pa.float64()), ("t_rank", pa.int32()), ("n_theta", pa.int32()),
    ("embedding_model", pa.string()),
])


def default_cache_dir() -> Path:
    """``$TRIGGERBENCH_CACHE`` when set, else ``$XDG_CACHE_HOME/triggerbench`` (``~/.cache/triggerbench``)."""
    if os.environ.get("TRIGGERBENCH_CACHE"):
        return Path(os.environ["TRIGGERBENCH_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triggerbench"


@dataclass
class AuditResult:
    """What an audit produced: summary tables, per-row audit, the embedding model, the files written."""

    lexical: pl.DataFrame
    semantic: pl.DataFrame
    rows: pl.DataFrame
    embedding: EmbeddingModelChoice
    embed_stats: EmbedStats
    out_dir: Path
    files: list[str]
    shortcuts: ShortcutAudit | None = None
    seconds: float = 0.0
    stopwords: str = STOPWORD_LIST_NAME
    min_word_length: int = MIN_WORD_LENGTH

    @property
    def embedding_model(self) -> str:
        """Name of the embedding model actually used."""
        return self.embedding.name

    def card_markdown(self) -> str:
        """The audit summary section for the dataset card."""
        from stages.audit.report import card_markdown

        return card_markdown(self)


def _order(value: str | None, known: Sequence[str]) -> tuple[int, str]:
    value = value or ""
    return (known.index(value) if value in known else len(known), value)


def group_key_order(keys: Sequence[str]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """Sort key for group tuples over ``keys`` using the paper's orders."""
    orders = {"constraint_form": FORM_ORDER, "context": CONTEXT_ORDER, "dimension": DIMENSION_ORDER,
              "variant": VARIANT_ORDER}
    return lambda group: tuple(_order(v, orders.get(k, ())) for k, v in zip(keys, group))


def _grouped(rows: Sequence[dict[str, Any]], keys: Sequence[str],
             summarize: Callable[[Sequence[dict[str, Any]]], dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in keys)].append(row)
    return [dict(zip(keys, group)) | summarize(groups[group]) for group in sorted(groups, key=group_key_order(keys))]


def _row_record(config: str, split: str, row: dict[str, Any]) -> dict[str, Any]:
    context = row.get("context") or config.split("_", 1)[-1]
    form = row.get("constraint_form") or ("explicit" if config.startswith("explicit_") else "implicit")
    return {"id": row["id"], "config": config, "split": split, "dimension": row.get("dimension"),
            "variant": row.get("variant"), "constraint_form": form, "context": context,
            "distractor_source": row.get("distractor_source")} | lexical.audit_row(row)


def _round_floats(frame: pl.DataFrame, digits: int = 4) -> pl.DataFrame:
    return frame.with_columns(pl.col(pl.Float64).round(digits))


def release_shortcut_settings(release: ReleaseSource) -> ShortcutSettings:
    """The gate settings a release was built with (its manifest's ``config.audit``), else the defaults."""
    manifest = release.local / "manifest.json" if release.local is not None else None
    if manifest is None or not manifest.is_file():
        return ShortcutSettings()
    try:
        config = json.loads(manifest.read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError):
        return ShortcutSettings()
    return settings_from(config.get("audit"))


def run_audit(source: str | Path, out_dir: Path, *, revision: str | None = None, embedding_model: str | None = None,
              cache_dir: Path | None = None, shortcut_settings: ShortcutSettings | None = None,
              result_cache: Path | None = None, known_digests: dict[str, str] | None = None) -> AuditResult:
    """Audit every row of the release at ``source`` and write into ``out_dir``.

    ``pm_*`` / ``explicit_*`` rows get the lexical, semantic and shortcut audits, ``rm_*`` rows
    the shortcut audit's row invariants. Writes ``lexical.csv``, ``semantic.csv``,
    ``shortcuts.csv``, ``families.csv``, ``rows.parquet``, ``report.md`` and PNG plots; returns
    the tables as an :class:`AuditResult`. ``shortcut_settings`` default: the release's own.
    ``result_cache``: a directory of cached audits (:mod:`stages.audit.cache`) keyed by the shards
    read (``known_digests``: their sha256 by release path, else hashed), code, settings and model.
    """
    started = time.monotonic()
    release = open_source(source, revision)
    settings = shortcut_settings or release_shortcut_settings(release)
    loaded = load_embedding_model(embedding_model, lazy=result_cache is not None)
    cache, keys = None, []
    if result_cache is not None and release.local is not None:
        cache = AuditCache(result_cache)
        for digests in (lambda: input_digests(release.local, release.configs, known_digests),
                        lambda: column_digests(release.local, release.configs)):
            keys.append(audit_key(digests(), settings, loaded.choice.key))
            if (hit := cache.get(keys[-1], Path(out_dir))) is not None:
                log.info("audit: the audited %s as before; results reused from the audit cache (%s)",
                         "shards" if len(keys) == 1 else "columns", keys[-1][:12])
                for key in keys[:-1]:
                    cache.put(key, hit)
                return hit
    if loaded.choice.origin != "bundled":  # the bundled weights wait for their first use (load_embedding_model)
        loaded.model  # noqa: B018 - a requested or HF-cache model loads before reading: a bad one fails fast
    collector = ShortcutCollector(settings)
    shortcut_seconds = 0.0
    records: list[dict[str, Any]] = []
    base_rows: list[tuple[int, dict[str, Any]]] = []
    for done, config in enumerate(release.configs, start=1):
        leakage = not config.startswith("rm_")
        for split, row in progress(iter_rows(release, config), desc=f"audit {config}"):
            tick = time.monotonic()
            collector.add(config, split, row)
            shortcut_seconds += time.monotonic() - tick
            if not leakage:
                continue
            record = _row_record(config, split, row)
            if record["context"] == "base":
                base_rows.append((len(records), row))
            records.append(record)
        collector.read_only(release.configs[done:])  # complete long contexts are fitted while the rest is read
    embedder = Embedder(loaded, cache_dir if cache_dir is not None else default_cache_dir())
    try:
        similarities = semantic.audit_rows([row for _, row in base_rows], embedder)
        tick = time.monotonic()
        shortcuts = score(collector, embedder.embed)
        shortcuts.seconds = shortcut_seconds + time.monotonic() - tick
    finally:
        embedder.close()
    empty = {f"cos_{pair}": None for pair in semantic.PAIRS} | {"t_rank": None, "n_theta": None}
    for record in records:
        record.update(empty, embedding_model=loaded.choice.name)
    for (position, _), sims in zip(base_rows, similarities):
        records[position].update(sims)
    records.sort(key=lambda r: (r["config"], _order(r["split"], ("test", "dev")), r["id"]))

    lexical_table = _round_floats(pl.DataFrame(_grouped(records, LEXICAL_KEYS, lexical.summarize)))
    base_records = [records[position] for position, _ in base_rows]
    semantic_rows = _grouped(base_records, SEMANTIC_KEYS, semantic.summarize)
    semantic_table = _round_floats(pl.DataFrame([r | {"model": loaded.choice.name} for r in semantic_rows]))
    rows_frame = pl.from_arrow(pa.Table.from_pylist(records, schema=ROW_SCHEMA))
    stats = embedder.stats
    log.info("audit: %d rows; %d distinct texts, %d from the embedding cache, %d encoded in %.1f s",
             len(records), stats.distinct, stats.cached, stats.encoded, stats.encode_seconds)
    result = AuditResult(lexical_table, semantic_table, rows_frame, loaded.choice, stats, Path(out_dir), [], shortcuts)
    result.seconds = time.monotonic() - started
    log.info("audit: shortcut check %s (%d failing cells); shortcut audit %.1f s of %.1f s",
             shortcuts.verdict, shortcuts.failing_count, shortcuts.seconds, result.seconds)
    result.files = write_outputs(result, Path(out_dir))
    for key in keys if cache is not None else ():
        cache.put(key, result)
    return result


def write_outputs(result: AuditResult, out_dir: Path) -> list[str]:
    """Write the CSVs, ``rows.parquet``, report and plots; return the file names written."""
    from stages.audit.report import PLOTS, write_report

    out_dir.mkdir(parents=True, exist_ok=True)
    lexical_table = result.lexical.with_columns(
        pl.lit(result.stopwords).alias("stopwords"), pl.lit(result.min_word_length).alias("min_word_length"),
        pl.lit(result.embedding.name).alias("embedding_model"),
    )
    lexical_table.write_csv(out_dir / "lexical.csv")
    result.semantic.write_csv(out_dir / "semantic.csv")
    pq.write_table(result.rows.to_arrow().cast(ROW_SCHEMA), out_dir / "rows.parquet", compression="zstd")
    written = ["lexical.csv", "semantic.csv", "rows.parquet"]
    if result.shortcuts is not None:
        written += result.shortcuts.write(out_dir)
    written += write_report(result, out_dir)
    for stale in sorted(set(PLOTS) - set(written)):  # a plot without data this time must not linger
        (out_dir / stale).unlink(missing_ok=True)
    return written
