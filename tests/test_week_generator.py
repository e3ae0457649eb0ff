"""Generator: Table 1 composition of the default week, determinism, other seeds, Table 4/5 shapes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from stages.week import cli
from stages.week.generator import generate_week
from stages.week.index import WeekIndex
from stages.week.model import dump_week
from stages.week.oracle import audit_week
from stages.week.validator import validate_week

# Table 1 of the PM-Bench paper (000_420ee992325e13b4.txt), copied by hand.
TABLE1 = {
    "days": 7,
    "steps": 80,
    "task_definitions": 83,
    "scored_tasks": 81,
    "event_tasks": 57,
    "time_tasks": 26,
    "regular_tasks": 28,
    "non_regular_tasks": 55,
    "channel_tasks": 15,
    "cross_day_tasks": 7,
    "updates": {"cancel": 2, "override": 3, "reschedule": 6},
    "lures": 74,
}
# Table 5 of the paper.
TABLE5 = {
    "clock": "snapshot", "email": "delta", "calendar": "delta", "course_portal": "delta",
    "price_tracker": "snapshot", "bank_balance": "snapshot", "shipment_status": "snapshot (process)",
    "laundry_status": "snapshot (process)", "library_hold": "delta", "reservation_waitlist": "delta",
    "appointment_portal": "delta",
}
SPEC_KEYS = ["days", "steps", "steps_per_day", "task_definitions", "scored_tasks", "event_tasks", "time_tasks",
             "regular_tasks", "non_regular_tasks", "channel_tasks", "cross_day_tasks", "updates", "channels", "lures"]


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triggerbench week")
    cli.configure(parser)
    return cli.run(parser.parse_args(list(argv)))


def test_stats_json_of_default_week_equals_table_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "week.json"
    assert _cli("generate", "--out", str(out)) == 0
    capsys.readouterr()
    assert _cli("stats", str(out), "--json") == 0
    stats = json.loads(capsys.readouterr().out)
    assert sorted(stats) == sorted(SPEC_KEYS)
    for key, value in TABLE1.items():
        assert stats[key] == value, key
    assert stats["channels"] == TABLE5
    assert len(stats["steps_per_day"]) == 7 and sum(stats["steps_per_day"]) == 80
    assert all(10 <= n <= 13 for n in stats["steps_per_day"])
    assert len(set(stats["steps_per_day"])) > 1  # irregular schedules


def test_generation_is_deterministic() -> None:
    assert dump_week(generate_week(0)) == dump_week(generate_week(0))
    assert dump_week(generate_week(3)) != dump_week(generate_week(0))


@pytest.mark.parametrize("seed", [1, 2, 7, 12345])
def test_other_seeds_give_valid_solvable_weeks(seed: int) -> None:
    week = generate_week(seed)
    assert week.id == f"pmbench-week-seed{seed}" and week.seed == seed
    assert validate_week(week) == []
    audit = audit_week(week)
    assert audit.passed and audit.hits == 81


def test_week_structure_follows_the_recipe() -> None:
    week = generate_week(0)
    ix = WeekIndex(week)
    assert len({d.archetype for d in week.days}) == 7  # seven distinct archetypes
    for day in week.days:
        tasks = [t for t in week.tasks if t.day == day.index and not t.cross_day]
        kinds = [t.kind for t in tasks]
        assert kinds.count("routine") == 4
        assert 2 <= kinds.count("narrative") <= 4 and 1 <= kinds.count("one_off") <= 2
        assert 1 <= kinds.count("channel") <= 3
        assert 10 <= sum(lure.day == day.index for lure in week.lures) <= 12
    for task in week.tasks:
        if task.cross_day:  # Table 4: announced on an earlier day, cued later
            assert task.encoding.day < task.day and task.offset_days == task.day - task.encoding.day
            assert ix.cues[task.cue_id].step_id.startswith(f"d{task.day}_")
    overrides = [u for u in week.updates if u.kind == "override"]
    assert all(u.new_cue_id and u.new_cue_id != ix.tasks[u.task_id].cue_id for u in overrides)
    # varied cue wording: no cue sentence is reused for two different tasks on the same day
    pairs = [(c.day, c.text) for c in week.cues]
    assert len(pairs) == len(set(pairs))
    routine_cues: dict[str, set[str]] = {}
    for task in week.tasks:
        if task.regular and task.trigger == "event":
            routine_cues.setdefault(task.action_text, set()).add(ix.cues[task.cue_id].text)
    assert any(len(texts) > 1 for texts in routine_cues.values())
