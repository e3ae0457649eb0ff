"""``triggerbench audit`` on the default release's ``pm_base`` and on a copy with cues planted by hand:
the planted cues are flagged, and nothing else changes."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import embedding_cache, run_cli

pytestmark = pytest.mark.slow
PLANTED_DIMENSION = "safe_coding"


def _pm_base_copy(release: Path, target: Path) -> Path:
    """A release directory holding only ``pm_base`` (no card: the audit finds configs by folder)."""
    shutil.copytree(release / "data" / "pm_base", target / "data" / "pm_base")
    return target


def _plant(directory: Path) -> int:
    """In every safe-coding Pos-Clean row: the constraint's reply made the longest of the row; in
    every state-tracking row: a second user turn right after the first. Returns rows changed."""
    changed = 0
    for shard in sorted((directory / "data" / "pm_base").glob("*.parquet")):
        table = pq.read_table(shard)
        rows = table.to_pylist()
        for row in rows:
            messages = row["messages"]
            if row["dimension"] == PLANTED_DIMENSION and row["variant"] == "pos_clean":
                reply = row["constraint_turns"][0] + 1
                longest = max(len(m["content"]) for m in messages)
                messages[reply]["content"] = (messages[reply]["content"] + " ") * (longest // max(len(messages[reply]["content"]), 1) + 2)
                changed += 1
            if row["dimension"] == "state_tracking":
                messages.insert(1, dict(messages[0]))
                row["constraint_turns"] = [i + 1 for i in row["constraint_turns"]]
                row["trigger_turn"] += 1
                row["filler_turns"] = [i + (i >= 1) for i in row["filler_turns"]]
                changed += 1
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), shard, compression="zstd")
    return changed


def _cells(out: Path) -> dict[tuple, dict]:
    with (out / "shortcuts.csv").open(encoding="utf-8") as handle:
        return {(r["section"], r["config"], r["context"], r["constraint_form"], r["dimension"], r["variant"],
                 r["finder"]): r for r in csv.DictReader(handle)}


def test_planted_cues_are_flagged(default_build: dict, tmp_path: Path) -> None:
    clean = _pm_base_copy(default_build["release"], tmp_path / "clean")
    tampered = _pm_base_copy(default_build["release"], tmp_path / "tampered")
    assert _plant(tampered) > 50
    cache = embedding_cache(default_build)
    runs = {name: run_cli("audit", str(path), "--out", str(tmp_path / f"audit-{name}"), "--cache-dir", cache, "--no-verify")
            for name, path in (("clean", clean), ("tampered", tampered))}
    for name, done in runs.items():
        assert done.returncode in (0, 1) and "shortcut check:" in done.stdout, (name, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
    before, after = _cells(tmp_path / "audit-clean"), _cells(tmp_path / "audit-tampered")
    longest = ("constraint_finder", "", "base", "implicit", PLANTED_DIMENSION, "pos_clean", "longest_reply")
    assert before[longest]["fails"] == "False" and after[longest]["fails"] == "True"
    assert float(after[longest]["value"]) == pytest.approx(1.0)
    breaks = ("invariant", "pm_base", "base", "", "state_tracking", "", "role_break_rows")
    assert before[breaks]["value"] == "0" and before[breaks]["fails"] == "False"
    assert int(after[breaks]["value"]) > 0 and after[breaks]["fails"] == "True"
    untouched = ("constraint_finder", "", "base", "implicit", "temporal_grounding", "pos_clean", "longest_reply")
    assert before[untouched] == after[untouched]
    newly_failing = {k for k, r in after.items() if r["fails"] == "True"} - {k for k, r in before.items()
                                                                           if r["fails"] == "True"}
    assert longest in newly_failing and breaks in newly_failing
