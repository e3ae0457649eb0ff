"""Each appendix A.3 invariant is caught on a week mutated to break it, with a message naming where."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import pytest

from stages.week.generator import generate_week
from stages.week.model import Week
from stages.week.validator import Problem, validate_week


@lru_cache(maxsize=1)
def _base() -> dict[str, Any]:
    return generate_week(0).to_json()


def _problems(mutate: Callable[[dict[str, Any]], None]) -> list[Problem]:
    data = copy.deepcopy(_base())
    mutate(data)
    return validate_week(Week.model_validate(data))


def _step(data: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for d in data["days"] for s in d["steps"] if s["id"] == step_id)


def _task(data: dict[str, Any], pred: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(t for t in data["tasks"] if pred(t))


def _cue(data: dict[str, Any], cue_id: str) -> dict[str, Any]:
    return next(c for c in data["cues"] if c["id"] == cue_id)


def _messages(problems: list[Problem], code: str) -> list[str]:
    return [p.message for p in problems if p.code == code]


def test_generated_week_is_valid() -> None:
    assert validate_week(Week.model_validate(_base())) == []


def test_duplicate_task_id_and_lure_task_collision() -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["lures"][0]["id"] = data["tasks"][5]["id"]
        data["days"][1]["steps"][3]["id"] = data["days"][1]["steps"][2]["id"]

    problems = _problems(mutate)
    messages = _messages(problems, "unique_ids")
    task_id = _base()["tasks"][5]["id"]
    assert any(f"lure {task_id} collides with task {task_id}" in m for m in messages)
    assert any("step id d2_s03 is used 2 times" in m for m in messages)


def test_non_monotonic_step_times() -> None:
    def mutate(data: dict[str, Any]) -> None:
        steps = data["days"][2]["steps"]
        steps[4]["time"], steps[5]["time"] = steps[5]["time"], steps[4]["time"]

    messages = _messages(_problems(mutate), "step_times")
    assert any(m.startswith("day 3 step d3_s06") and "does not come after" in m for m in messages)


def test_time_task_not_aligned_with_a_step_time() -> None:
    base = _task(_base(), lambda t: t["trigger"] == "time")

    def mutate(data: dict[str, Any]) -> None:
        _task(data, lambda t: t["id"] == base["id"])["target_time"] = "07:01"

    messages = _messages(_problems(mutate), "time_alignment")
    assert any(f"task {base['id']}" in m and f"day {base['day']}" in m and "07:01" in m for m in messages)


def test_narrative_cue_that_never_appears() -> None:
    base = _task(_base(), lambda t: t["kind"] == "narrative")
    cue = _cue(_base(), base["cue_id"])

    def mutate(data: dict[str, Any]) -> None:
        step = _step(data, cue["step_id"])
        step["narrative"] = step["narrative"].replace(cue["text"], "")

    messages = _messages(_problems(mutate), "cue_realizable")
    assert any(f"step {cue['step_id']} task {base['id']}" in m and "does not appear in the narrative" in m
               for m in messages)


def test_channel_cue_missing_from_its_hidden_channel() -> None:
    base = _task(_base(), lambda t: t["kind"] == "channel")
    cue = _cue(_base(), base["cue_id"])

    def mutate(data: dict[str, Any]) -> None:
        _step(data, cue["step_id"])["channel_states"][cue["source"]]["text"] = "Nothing new."

    messages = _messages(_problems(mutate), "cue_realizable")
    assert any(f"task {base['id']}" in m and f"does not appear in the {cue['source']}" in m for m in messages)


def test_update_pointing_to_missing_or_finished_task() -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["updates"][0]["task_id"] = "no_such_task"

    messages = _messages(_problems(mutate), "update_targets")
    assert any(f"update {_base()['updates'][0]['id']}" in m and "no_such_task" in m for m in messages)

    cancel = next(u for u in _base()["updates"] if u["kind"] == "cancel")
    task = _task(_base(), lambda t: t["id"] == cancel["task_id"])
    day_steps = next(d for d in _base()["days"] if d["index"] == task["day"])["steps"]

    def cancel_too_late(data: dict[str, Any]) -> None:
        update = next(u for u in data["updates"] if u["id"] == cancel["id"])
        update["step_id"] = day_steps[-1]["id"]

    messages = _messages(_problems(cancel_too_late), "update_targets")
    assert any(f"update {cancel['id']}" in m and f"task {task['id']} is no longer pending" in m for m in messages)


def test_reschedule_moving_a_task_back_before_the_update() -> None:
    update = next(u for u in _base()["updates"] if u["kind"] == "reschedule")
    update_time = _step(_base(), update["step_id"])["time"]

    def mutate(data: dict[str, Any]) -> None:
        next(u for u in data["updates"] if u["id"] == update["id"])["new_target_time"] = update_time

    messages = _messages(_problems(mutate), "update_not_backward")
    assert any(m.startswith(f"day {update['step_id'][1]} step {update['step_id']} update {update['id']}")
               and update["task_id"] in m for m in messages)


def test_override_moving_a_cue_back_before_the_update() -> None:
    update = next(u for u in _base()["updates"] if u["kind"] == "override")
    task = _task(_base(), lambda t: t["id"] == update["task_id"])
    first = next(d for d in _base()["days"] if d["index"] == task["day"])["steps"][0]["id"]

    def mutate(data: dict[str, Any]) -> None:
        _cue(data, update["new_cue_id"])["step_id"] = first

    messages = _messages(_problems(mutate), "update_not_backward")
    assert any(f"update {update['id']}" in m and f"task {task['id']}" in m for m in messages)


def test_canceled_instruction_repeated_later() -> None:
    cancel = next(u for u in _base()["updates"] if u["kind"] == "cancel")
    task = _task(_base(), lambda t: t["id"] == cancel["task_id"])
    day = next(d for d in _base()["days"] if d["index"] == task["day"])
    later = day["steps"][[s["id"] for s in day["steps"]].index(cancel["step_id"]) + 1]["id"]

    def mutate(data: dict[str, Any]) -> None:
        _step(data, later)["narrative"] += f" A sticky note reminds you: {task['label']}."

    messages = _messages(_problems(mutate), "no_stale_cancel")
    assert any(f"step {later} task {task['id']}" in m for m in messages)


def test_current_time_leaking_into_the_narrative() -> None:
    step = _base()["days"][3]["steps"][2]
    hour, minute = map(int, step["time"].split(":"))
    spoken = f"{hour % 12 or 12}:{minute:02d} {'pm' if hour >= 12 else 'am'}"

    def mutate(data: dict[str, Any]) -> None:
        _step(data, step["id"])["narrative"] += f" The oven clock reads {spoken}."
        other = _base()["days"][3]["steps"][3]
        _step(data, other["id"])["narrative"] += f" The meeting was booked for {step['time']}."  # not its own time

    messages = _messages(_problems(mutate), "no_time_leak")
    assert messages == [f"day 4 step {step['id']}: narrative states the current time ({spoken})"]


def test_cross_day_task_re_announced_on_its_due_day() -> None:
    task = _task(_base(), lambda t: t["cross_day"])

    def mutate(data: dict[str, Any]) -> None:
        day = next(d for d in data["days"] if d["index"] == task["day"])
        day["opening"] += f"\n- {task['action_text']}."

    messages = _messages(_problems(mutate), "cross_day_exposure")
    assert messages == [f"day {task['day']} task {task['id']}: re-announced in the opening of its due day"]

    def same_day(data: dict[str, Any]) -> None:
        _task(data, lambda t: t["id"] == task["id"])["encoding"] = {"day": task["day"], "step_id": None}

    messages = _messages(_problems(same_day), "cross_day_exposure")
    assert any(f"task {task['id']}" in m and "earlier day" in m for m in messages)


def test_dependency_cycle_and_missing_prerequisite() -> None:
    dependent = _task(_base(), lambda t: bool(t["depends_on"]))
    prereq = dependent["depends_on"][0]

    def cycle(data: dict[str, Any]) -> None:
        _task(data, lambda t: t["id"] == prereq)["depends_on"] = [dependent["id"]]

    messages = _messages(_problems(cycle), "dependencies")
    assert any("dependency cycle" in m and dependent["id"] in m and prereq in m for m in messages)

    def missing(data: dict[str, Any]) -> None:
        _task(data, lambda t: t["id"] == dependent["id"])["depends_on"] = ["ghost_task"]

    messages = _messages(_problems(missing), "dependencies")
    assert messages == [f"day {dependent['day']} task {dependent['id']}: prerequisite ghost_task does not exist "
                        "or is itself"]


def test_process_channel_completes_without_in_progress_stage() -> None:
    base = _base()
    process = {c["name"] for c in base["channels"] if c["type"] == "snapshot (process)"}
    task = _task(base, lambda t: t["cue_channel"] in process)
    channel = task["cue_channel"]

    def mutate(data: dict[str, Any]) -> None:
        day = next(d for d in data["days"] if d["index"] == task["day"])
        for step in day["steps"]:
            if step["channel_states"][channel]["stage"] == "in_progress":
                step["channel_states"][channel]["stage"] = "idle"

    cue_step = _cue(base, task["cue_id"])["step_id"]
    messages = _messages(_problems(mutate), "process_channels")
    assert messages == [f"day {task['day']} step {cue_step} channel {channel}: complete without an in_progress "
                        "stage before it"]


@pytest.mark.parametrize("code", ["encoding", "menus"])
def test_structural_extras(code: str) -> None:
    def mutate(data: dict[str, Any]) -> None:
        if code == "encoding":
            task = _task(data, lambda t: t["kind"] == "one_off" and t["encoding"]["step_id"] is None)
            day = next(d for d in data["days"] if d["index"] == task["day"])
            day["opening"] = day["opening"].replace(task["label"], "something else")
        else:
            data["days"][0]["menu"][1]["handle"] = data["days"][0]["menu"][0]["handle"]

    assert _messages(_problems(mutate), code)
