"""The week stage item and its flattened release tables, loaded back with ``datasets.load_dataset``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.stage import StageContext
from stages.week.model import Week
from stages.week.release import week_configs
from stages.week.stage import PMBenchWeekStage


def _stage_item(seed: int = 0) -> dict:
    out = PMBenchWeekStage({"week_seed": seed}).run({}, StageContext(seed=99, stage="pmbench_week"))
    assert len(out.items) == 1
    return out.items[0]


def test_stage_returns_one_validated_week_independent_of_build_seed() -> None:
    item = _stage_item()
    assert item["id"] == "pmbench-week-seed0"
    week = Week.model_validate(item["week"])
    assert week.id == item["id"] and week.seed == 0
    other_build_seed = PMBenchWeekStage({"week_seed": 0}).run({}, StageContext(seed=1, stage="pmbench_week"))
    assert other_build_seed.items[0] == item
    assert PMBenchWeekStage.name == "pmbench_week" and PMBenchWeekStage.inputs == ()


def _write_release(root: Path, configs: dict[str, tuple[pa.Schema, list[dict]]]) -> None:
    lines = ["---", "configs:"]
    for name, (schema, rows) in configs.items():
        target = root / "data" / name / "test-00000-of-00001.parquet"
        target.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), target)
        lines += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: data/{name}/test-*.parquet"]
    (root / "README.md").write_text("\n".join(lines + ["---", "", "# PM-Bench week test release", ""]))


def test_release_tables_load_with_datasets(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import datasets

    item = _stage_item()
    configs = week_configs(item["week"])
    assert sorted(configs) == ["pmbench_week", "pmbench_week_tasks"]
    assert configs == week_configs(json.loads(json.dumps(item["week"])))  # deterministic, JSON round-trip safe
    release = tmp_path / "release"
    _write_release(release, configs)
    (release / "week").mkdir()
    (release / "week" / "week.json").write_text(json.dumps(item["week"], indent=2, sort_keys=True))

    steps = datasets.load_dataset(str(release), "pmbench_week", split="test")
    tasks = datasets.load_dataset(str(release), "pmbench_week_tasks", split="test")
    assert steps.num_rows == 80 and tasks.num_rows == 83
    assert steps[0]["step_id"] == "d1_s01" and steps[0]["day_opening"].startswith("Good morning")
    assert steps[1]["day_opening"] is None
    due_rows = sum(len(r) for r in steps["due_task_ids"])
    assert due_rows == 81  # every scored task is due at exactly one step
    assert sum(tasks["scored"]) == 81 and sum(tasks["canceled"]) == 2
    assert sum(t == "time" for t in tasks["trigger"]) == 26
    week = json.loads((release / "week" / "week.json").read_text())
    by_id = {t["id"]: t for t in week["tasks"]}
    for row in tasks:
        assert row["label"] == by_id[row["task_id"]]["label"]
        assert (row["due_step_id"] is None) == row["canceled"]
    for row in steps:
        menu = {m["handle"]: m["ref_id"] for m in row["menu"]}
        assert [menu[h] for h in row["due_handles"]] == row["due_task_ids"]
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"
