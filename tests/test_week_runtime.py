"""Query-then-act runtime: protocol errors, state replies, heartbeat, ledger, handles, JSONL logs."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from stages.week.generator import generate_week
from stages.week.index import WeekIndex
from stages.week.model import Week
from stages.week.policies import Oracle
from stages.week.runtime import (
    Observation,
    RuntimeConfig,
    TrajectoryError,
    read_trajectory,
    run_week,
    write_trajectory,
)
from stages.week.scorer import score_trajectory

CHOOSE_NOTHING = '{"action":"choose","choice":"A","task_ids":[],"channel":"NONE"}'


@lru_cache(maxsize=1)
def _week() -> Week:
    return generate_week(0)


class Scripted:
    """Replies from a script at the first step of the week, then with ``default``; records observations."""

    name = "scripted"

    def __init__(self, script: list[str], default: str = CHOOSE_NOTHING) -> None:
        self.script, self.default = list(script), default
        self.seen: list[Observation] = []

    def act(self, observation: Observation) -> str:
        self.seen.append(observation)
        return self.script.pop(0) if self.script else self.default


class Raising:
    name = "raising"

    def act(self, observation: Observation) -> str:
        raise ConnectionError("server went away")


def test_malformed_outputs_are_protocol_errors_not_crashes() -> None:
    week = _week()
    script = [
        "I think I will pick A",
        '{"action":"choose","choice":"D","task_ids":[],"channel":"NONE"}',
        '{"action":"choose","choice":"A","task_ids":["task_999"],"channel":"NONE"}',
        '{"action":"choose","choice":"A","task_ids":["task_1","task_1"],"channel":"NONE"}',
        '{"action":"check_time","choice":"NONE","task_ids":[],"channel":"email"}',
        '{"action":"query_state","choice":"NONE","task_ids":[],"channel":"weather"}',
        '{"action":"set_heartbeat","heartbeat_enabled":true,"heartbeat_minutes":30}',
        "[1, 2]",
    ]
    agent = Scripted(script)
    events = run_week(week, agent, RuntimeConfig())
    first = [e for e in events if e.get("step_id") == "d1_s01"]
    errors = [e["error"] for e in first if e["type"] == "protocol_error"]
    assert len(errors) == len(script)
    assert "not one JSON object" in errors[0] and "choice A, B or C" in errors[1]
    assert "task_999" in errors[2] and "repeats" in errors[3] and "clock" in errors[4]
    assert "weather" in errors[5] and "optional-heartbeat" in errors[6]
    assert agent.seen[1].kind == "error" and agent.seen[1].text.startswith("Protocol error:")
    chooses = [e for e in events if e["type"] == "choose"]
    assert len(chooses) == 80 and not any(e["forced"] for e in chooses)
    assert events[-1] == {"type": "run_end", "run_id": "run-0", "steps": 80, "protocol_errors": len(script)}


def test_agent_exceptions_and_endless_garbage_force_the_step_forward() -> None:
    week = _week()
    events = run_week(week, Raising(), RuntimeConfig(max_turns_per_step=3))
    chooses = [e for e in events if e["type"] == "choose"]
    assert len(chooses) == 80 and all(e["forced"] and e["selected"] == [] for e in chooses)
    errors = [e for e in events if e["type"] == "protocol_error"]
    assert len(errors) == 3 * 80 and "ConnectionError: server went away" in errors[0]["error"]
    assert score_trajectory(week, events)["runs"][0]["fn"] == 81


def test_state_replies_are_one_line() -> None:
    week = _week()
    first = week.days[0].steps[0]
    hours, minutes = map(int, first.time.split(":"))
    agent = Scripted([
        '{"action":"check_time","choice":"NONE","task_ids":[],"channel":"clock"}',
        '{"action":"query_state","choice":"NONE","task_ids":[],"channel":"clock"}',
        '{"action":"query_state","choice":"NONE","task_ids":[],"channel":"email"}',
    ])
    events = run_week(week, agent, RuntimeConfig())
    replies = [e["reply"] for e in events if e["type"] == "query"]
    clock = f"State [clock]: Time {first.time} | Stopwatch: {(hours - 7) * 60 + minutes} min"
    assert replies == [clock, clock, f"State [email]: {first.channel_states['email'].text}"]
    assert [e["legacy"] for e in events if e["type"] == "query"] == [True, False, False]
    assert all("\n" not in r for r in replies)


def _expected_heartbeat_steps(week: Week, minutes: int) -> list[str]:
    """For each tick 07:00 + k*minutes, the first step at or after it (per day)."""
    fired = []
    for day in week.days:
        times = [(int(s.time[:2]) * 60 + int(s.time[3:]), s.id) for s in day.steps]
        for tick in range(7 * 60, 22 * 60 + 1, minutes):
            step = next((sid for t, sid in times if t >= tick), None)
            if step is not None and step not in fired:
                fired.append(step)
    return fired


@pytest.mark.parametrize("mode,minutes", [("auto30", 30), ("auto60", 60)])
def test_auto_heartbeat(mode: str, minutes: int) -> None:
    week = _week()
    events = run_week(week, Scripted([]), RuntimeConfig(heartbeat=mode))
    fired = [e["step_id"] for e in events if e["type"] == "heartbeat"]
    assert fired == _expected_heartbeat_steps(week, minutes)
    assert all(e["minutes"] == minutes for e in events if e["type"] == "heartbeat")


def test_optional_heartbeat_is_set_by_the_agent() -> None:
    week = _week()
    enable = '{"action":"set_heartbeat","heartbeat_enabled":true,"heartbeat_minutes":60}'
    agent = Scripted([enable])
    events = run_week(week, agent, RuntimeConfig(heartbeat="optional"))
    assert [e["type"] for e in events[1:3]] == ["set_heartbeat", "choose"]
    assert agent.seen[1].kind == "info"
    fired = [e["step_id"] for e in events if e["type"] == "heartbeat"]
    expected = [s for s in _expected_heartbeat_steps(week, 60) if s != "d1_s01"]  # enabled during step 1
    assert fired == expected
    off = run_week(week, Scripted([]), RuntimeConfig(heartbeat="optional"))
    assert not [e for e in off if e["type"] == "heartbeat"]


def test_todo_ledger_is_carried_and_checked() -> None:
    week = _week()
    item = {"task_id": "task_3", "when": "11:00", "status": "pending", "notes": "call"}
    good = json.dumps({"action": "choose", "choice": "B", "task_ids": [], "channel": "NONE", "ledger": [item]})
    too_long = json.dumps({"action": "choose", "choice": "B", "task_ids": [], "channel": "NONE",
                           "ledger": [item] * 6})
    agent = Scripted([good, too_long])
    events = run_week(week, agent, RuntimeConfig(ledger=True))
    second_step = next(o for o in agent.seen if o.step_id == "d1_s02")
    assert second_step.ledger == [item] and "Your TODO ledger: " + json.dumps([item]) in second_step.text
    step2 = [e for e in events if e.get("step_id") == "d1_s02"]
    assert [e["type"] for e in step2] == ["choose", "protocol_error"]
    assert "at most 5" in step2[1]["error"]
    third = next(o for o in agent.seen if o.step_id == "d1_s03")
    assert third.ledger == [item]  # a rejected ledger leaves the previous one in place


def test_handles_reshuffled_per_day_and_completed_tasks_leave_the_menu() -> None:
    week = _week()
    ix = WeekIndex(week)
    handles_by_text: dict[str, set[str]] = {}
    for day in week.days:
        for entry in day.menu:
            handles_by_text.setdefault(ix.menu_text(entry.ref_id, day.steps[0].id), set()).add(entry.handle)
    recurring = {text: h for text, h in handles_by_text.items() if len(h) > 1}
    assert recurring, "recurring actions should get different handles on different days"

    class Watching(Oracle):
        def __init__(self, w: Week) -> None:
            super().__init__(w)
            self.menus: dict[str, dict[str, str]] = {}

        def act(self, observation: Observation) -> str:
            if observation.kind == "step":
                self.menus[observation.step_id] = dict(observation.menu)
            return super().act(observation)

    agent = Watching(week)
    run_week(week, agent, RuntimeConfig())
    canceled = {u.task_id for u in week.updates if u.kind == "cancel"}
    for task in week.tasks:
        handle = next(m.handle for m in week.days[task.day - 1].menu if m.ref_id == task.id)
        due = ix.due_step_of[task.id]
        for step in week.days[task.day - 1].steps:
            on_menu = handle in agent.menus[step.id]
            if task.id in canceled or ix.order[step.id] <= ix.order[due]:
                assert on_menu, (task.id, step.id)
            else:
                assert not on_menu, (task.id, step.id)


def test_trajectory_jsonl_round_trip_and_bad_line(tmp_path: Path) -> None:
    week = _week()
    events = run_week(week, Oracle(week), RuntimeConfig(), run_id="a")
    path = tmp_path / "traj.jsonl"
    write_trajectory(path, events)
    write_trajectory(path, run_week(week, Scripted([]), RuntimeConfig(), run_id="b"), append=True)
    loaded = read_trajectory(path)
    assert loaded[: len(events)] == json.loads(json.dumps(events))
    report = score_trajectory(week, loaded)
    assert [r["run_id"] for r in report["runs"]] == ["a", "b"]
    assert report["macro_set_f1"] == pytest.approx(0.5)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("{broken\n")
    n_lines = len(path.read_text().splitlines())
    with pytest.raises(TrajectoryError, match=f"traj.jsonl:{n_lines}: not JSON"):
        read_trajectory(path)
