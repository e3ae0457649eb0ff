"""Replay scorer: the paper's compact A.4 example, diagnostics on a hand-built day, reference policies."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pytest

from stages.week.generator import generate_week
from stages.week.model import Channel, ChannelState, Cue, Day, Encoding, Lure, MenuEntry, Step, Task, Update, Week
from stages.week.policies import make_policy
from stages.week.runtime import RuntimeConfig, run_week
from stages.week.scorer import ScoringError, score_trajectory

CHANNELS = [Channel(name="clock", type="snapshot", description="time"),
            Channel(name="calendar", type="delta", description="calendar changes")]


def _event(task_id: str, step: int, source: str = "narrative", depends_on: tuple[str, ...] = ()) -> Task:
    return Task(id=task_id, kind="narrative" if source == "narrative" else "channel", trigger="event", regular=False,
                day=1, label=f"do {task_id}", action_text=f"Do {task_id}", cue_id=f"cue_{task_id}",
                cue_channel=None if source == "narrative" else source, encoding=Encoding(day=1),
                depends_on=list(depends_on))


def _timed(task_id: str, target: str) -> Task:
    return Task(id=task_id, kind="one_off", trigger="time", regular=False, day=1, label=f"do {task_id} at {target}",
                action_text=f"Do {task_id}", target_time=target, encoding=Encoding(day=1))


def _week(times: list[str], tasks: list[Task], cue_steps: dict[str, int], updates: list[Update],
          extra_cues: list[Cue] = ()) -> Week:
    """A one-day week: steps at ``times``; each event task's cue at ``cue_steps[task]`` (0-based)."""
    cues = [Cue(id=f"cue_{t.id}", day=1, step_id=f"d1_s{cue_steps[t.id] + 1:02d}", source=t.cue_channel or "narrative",
                text=f"Cue for {t.id}.") for t in tasks if t.trigger == "event"] + list(extra_cues)
    steps = []
    for idx, time in enumerate(times):
        sid = f"d1_s{idx + 1:02d}"
        texts = [c.text for c in cues if c.step_id == sid and c.source == "narrative"]
        calendar = next((c.text for c in cues if c.step_id == sid and c.source == "calendar"), "No changes.")
        steps.append(Step(id=sid, day=1, index=idx, time=time, narrative=" ".join(["A scene.", *texts]),
                          options={"A": "a", "B": "b", "C": "c"},
                          channel_states={"calendar": ChannelState(text=calendar)}))
    lure = Lure(id="lure_irrelevant", day=1, action_text="Do something irrelevant")
    refs = [t.id for t in tasks] + [lure.id]
    menu = [MenuEntry(handle=f"task_{i + 1}", ref_id=ref) for i, ref in enumerate(refs)]
    day = Day(index=1, name="Monday", archetype="test", opening="Plans.", steps=steps, menu=menu)
    return Week(id="mini", seed=0, generator_version="test", intro="", channels=CHANNELS, days=[day], tasks=tasks,
                lures=[lure], cues=cues, updates=updates)


def _run(week: Week, run_id: str, picks: dict[str, list[str]]) -> list[dict[str, Any]]:
    """A trajectory that selects the given task/lure ids at the given steps (handles from the menu)."""
    handle = {m.ref_id: m.handle for m in week.days[0].menu}
    events: list[dict[str, Any]] = [{"type": "run_start", "run_id": run_id, "agent": "scripted",
                                     "week_sha256": week.digest()}]
    for step in week.days[0].steps:
        events.append({"type": "choose", "run_id": run_id, "day": 1, "step_id": step.id, "choice": "A",
                       "task_ids": [handle[r] for r in picks.get(step.id, [])]})
    events.append({"type": "run_end", "run_id": run_id, "steps": len(week.days[0].steps), "protocol_errors": 0})
    return events


def a4_week() -> Week:
    tasks = [_event("budget_note", 1), _event("moved_calendar_call", 1, source="calendar"),
             _event("manager_checkin", 1)]
    return _week(["09:00", "10:00", "11:00"], tasks, {t.id: 1 for t in tasks}, [])


def test_paper_compact_scoring_example() -> None:
    week = a4_week()
    first_two = _run(week, "first-two", {"d1_s02": ["budget_note", "moved_calendar_call"]})
    with_irrelevant = _run(week, "with-irrelevant", {"d1_s02": ["budget_note", "lure_irrelevant"]})
    report = score_trajectory(week, first_two + with_irrelevant)
    a, b = report["runs"]
    # "two true positives, one false negative, zero false positives, and no exact-set match"
    assert (a["tp"], a["fn"], a["fp"], a["exact_set_match"], a["wrong_content"]) == (2, 1, 0, 0, 0)
    # "one true positive, one false positive, and two false negatives; ... a wrong-content error"
    assert (b["tp"], b["fp"], b["fn"], b["wrong_content"]) == (1, 1, 2, 1)
    assert a["set_f1"] == pytest.approx(2 * 2 / (2 * 2 + 0 + 1))
    assert b["set_f1"] == pytest.approx(2 * 1 / (2 * 1 + 1 + 2))
    assert report["macro_set_f1"] == pytest.approx((0.8 + 0.4) / 2)
    assert report["micro"]["set_f1"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 3))
    assert report["micro"]["precision"] == pytest.approx(3 / 4)


def _diagnostic_week() -> Week:
    """09:00 pill (time); water rescheduled 11:15 -> 09:40 at step 1; post_form needs pill; rsvp canceled."""
    tasks = [_timed("pill", "09:00"), _timed("water", "11:15"), _event("post_form", 1, depends_on=("pill",)),
             _event("budget_note", 2), _event("rsvp", 3)]
    updates = [Update(id="reschedule_water", kind="reschedule", task_id="water", step_id="d1_s01",
                      text="Water at 09:40 instead.", new_target_time="09:40"),
               Update(id="cancel_rsvp", kind="cancel", task_id="rsvp", step_id="d1_s02", text="No rsvp.")]
    return _week(["09:00", "09:40", "10:30", "11:15"], tasks, {"post_form": 1, "budget_note": 2, "rsvp": 3}, updates)


def test_late_miss_and_false_alarm_windows() -> None:
    week = _diagnostic_week()
    # Due sets by hand: s1 {pill}, s2 {water, post_form}, s3 {budget_note}, s4 {} (rsvp canceled).
    # pill at s2 is 40 min after 09:00 (late); budget_note at s4 is one step after its cue (late);
    # water is never chosen (miss); post_form is on time.
    run = score_trajectory(week, _run(week, "r", {"d1_s02": ["pill", "post_form"], "d1_s04": ["budget_note"]}))
    r = run["runs"][0]
    assert (r["hits"], r["late"], r["misses"]) == (1, 2, 1)
    assert (r["tp"], r["fp"], r["fn"]) == (1, 2, 3)  # late picks still count as FP at their step, FN at the due step
    assert r["false_alarms"] == 0
    # post_form was chosen at the same step as its prerequisite's (late) execution, not after it
    assert r["dependency_violations"] == 1


def test_time_task_after_its_sixty_minute_window_is_a_false_alarm() -> None:
    week = _diagnostic_week()
    r = score_trajectory(week, _run(week, "r", {"d1_s03": ["pill"]}))["runs"][0]  # 10:30 is 90 min after 09:00
    assert (r["late"], r["false_alarms"], r["misses"]) == (0, 1, 4)


def test_update_violations_for_stale_reschedule_and_canceled_task() -> None:
    week = _diagnostic_week()
    r = score_trajectory(week, _run(week, "r", {"d1_s04": ["water", "rsvp"]}))["runs"][0]
    assert r["update_violations"] == 2
    assert r["false_alarms"] == 2
    assert r["fp"] == 2 and r["tp"] == 0


def test_dependency_respected_when_prerequisite_done_first() -> None:
    week = _diagnostic_week()
    picks = {"d1_s01": ["pill"], "d1_s02": ["water", "post_form"], "d1_s03": ["budget_note"]}
    r = score_trajectory(week, _run(week, "r", picks))["runs"][0]
    assert (r["tp"], r["fp"], r["fn"], r["dependency_violations"], r["misses"]) == (4, 0, 0, 0, 0)
    assert r["set_f1"] == 1.0 and r["exact_set_match"] == 3 and r["due_steps"] == 3
    assert r["hit_rates"]["update"] == 1.0  # water (rescheduled) on time; rsvp canceled is not scored


def test_trajectory_errors_name_run_and_step() -> None:
    week = a4_week()
    events = _run(week, "r", {})
    events[2]["task_ids"] = ["task_99"]
    with pytest.raises(ScoringError, match=r"run r step d1_s02: handles task_99"):
        score_trajectory(week, events)
    events = _run(week, "r", {})
    events[0]["week_sha256"] = "0" * 64
    with pytest.raises(ScoringError, match="another week"):
        score_trajectory(week, events)


@lru_cache(maxsize=1)
def _default_week() -> Week:
    return generate_week(0)


@pytest.mark.parametrize("policy", ["oracle", "never-act", "act-on-everything", "clock-only"])
def test_reference_policies(policy: str) -> None:
    week = _default_week()
    events = run_week(week, make_policy(policy, week), RuntimeConfig(), run_id=policy)
    r = score_trajectory(week, events)["runs"][0]
    scored = 81
    time_tasks = [t for t in week.tasks if t.trigger == "time"]
    canceled = {u.task_id for u in week.updates if u.kind == "cancel"}
    if policy == "oracle":
        assert (r["set_f1"], r["hits"], r["fp"], r["late"], r["misses"]) == (1.0, scored, 0, 0, 0)
        assert r["exact_set_match"] == r["due_steps"]
    elif policy == "never-act":
        assert (r["set_f1"], r["tp"], r["fp"], r["fn"], r["misses"]) == (0.0, 0, 0, scored, scored)
    elif policy == "clock-only":
        expected_tp = len([t for t in time_tasks if t.id not in canceled])
        assert (r["tp"], r["fp"], r["fn"]) == (expected_tp, 0, scored - expected_tp)
        assert r["hit_rates"]["clock_required"] == 1.0 and r["hit_rates"]["non_clock_proactive"] == 0.0
        assert r["query_state"] == 0 and r["check_time"] > 0
    else:
        assert r["fp"] > r["tp"] > 0 and r["precision"] < 0.2
        assert r["protocol_errors"] == 0


def test_runs_scoped_to_some_days_are_scored_on_those_days_only() -> None:
    week = _default_week()
    events = run_week(week, make_policy("oracle", week), RuntimeConfig(days=(2, 5)), run_id="two-days")
    assert {e["day"] for e in events if e["type"] == "choose"} == {2, 5}
    r = score_trajectory(week, events)["runs"][0]
    canceled = {u.task_id for u in week.updates if u.kind == "cancel"}
    due = [t for t in week.tasks if t.day in (2, 5) and t.id not in canceled]
    assert (r["tp"], r["fp"], r["fn"], r["missing_steps"]) == (len(due), 0, 0, 0)
    stray = dict(events[-2], step_id="d1_s01", day=1)
    with pytest.raises(ScoringError, match="outside the run's days"):
        score_trajectory(week, events[:-1] + [stray, events[-1]])
