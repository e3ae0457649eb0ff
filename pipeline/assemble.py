"""Helpers the stages use to write their release configs, and the changelog's previous manifest.

Each stage writes its own configs (:meth:`pipeline.stage.Stage.write_release`); these helpers
turn items into rows: ``blueprint_rows`` (the ``blueprints`` config), ``group_rows`` (rows by
config and split, sorted by id) and ``write_groups``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pipeline.release import ReleaseWriter
from pipeline.schemas import schema_for
from pipeline.stats import RowStats


def blueprint_rows(items: Iterable[dict]) -> dict[str, list[dict]]:
    """The ``blueprints`` config: one row per scaled blueprint, by split."""
    rows: dict[str, list[dict]] = defaultdict(list)
    for item in items:
        bp = item["blueprint"]
        negative, explicit, rm = bp.get("negative") or {}, bp.get("explicit") or {}, bp.get("rm") or {}
        rows[item["split"]].append({
            "id": item["id"], "seed_id": item["seed_id"], "dimension": bp["dimension"], "subtype": bp["subtype"],
            "domain": bp["domain"], "topic": bp["topic"], "cwe": bp.get("cwe"),
            "constraints": [c["text"] for c in bp["constraints"]], "trigger": bp["trigger"]["text"],
            "overload": bp["overload"], "negative_kind": negative.get("kind"), "negative_text": negative.get("text"),
            "explicit_method": explicit.get("method"), "explicit_text": explicit.get("text"),
            "reference_intent": bp["reference_intent"], "gold_slots": bp["gold_slots"],
            "rm_question": rm.get("question"), "rm_answer": rm.get("answer"), "rm_aliases": rm.get("aliases"),
            "slot_choice": json.dumps(item["slot_choice"], sort_keys=True),
            "blueprint": json.dumps(bp, sort_keys=True, ensure_ascii=False),
            "provenance": json.dumps(item["provenance"], sort_keys=True),
            "oracles": json.dumps(item.get("oracles"), sort_keys=True),
        })
    return rows


def group_rows(items: Iterable[dict]) -> dict[tuple[str, str], list[dict]]:
    """Rows by (config, split), sorted by id."""
    grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in items:
        grouped[(row["config"], row["split"])].append(row)
    for rows in grouped.values():
        rows.sort(key=lambda r: r["id"])
    return grouped


def write_groups(writer: ReleaseWriter, groups: dict[tuple[str, str], list[dict]], stats: RowStats | None = None) -> None:
    """Write each (config, split) group with its schema; ``stats`` observes every row when given."""
    for (name, split), rows in sorted(groups.items()):
        writer.write_config(name, split, schema_for(name), rows, observe=stats.observer(name) if stats else None)


def previous_manifest(out_root: Path, version: str) -> dict[str, Any] | None:
    """The manifest of the newest release under ``out_root`` older than ``version`` (for the changelog).

    Versions are ordered by PEP 440 (``packaging.version``: ``0.0.1rc1 < 0.0.1 < 0.0.1.5``);
    a directory whose name is no version is not a release and is skipped.
    """
    current = Version(version)
    releases = {}
    for path in out_root.glob("*/manifest.json"):
        try:
            releases[path] = Version(path.parent.name)
        except InvalidVersion:
            continue
    older = [p for p, v in releases.items() if v < current]
    if not older:
        return None
    newest = max(older, key=releases.__getitem__)
    return json.loads(newest.read_text(encoding="utf-8"))
