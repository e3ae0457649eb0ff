"""The eight agent setups: union-query runs, their vote replays, the setup table, cut trajectories."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from stages.week import cli
from stages.week.generator import generate_week
from stages.week.hierarchy import HierarchicalAgent, ScriptedCouncil, Signal, parse_signal
from stages.week.model import Week
from stages.week.policies import Oracle, make_policy
from stages.week.runtime import Observation, RuntimeConfig, read_trajectory, run_week
from stages.week.scorer import ScoringError, score_trajectory
from stages.week.setups import PLAY_SETUPS, SETUPS, setup_of
from tests.test_week_scorer import a4_week

# a4_week menu: task_1 budget_note (scene cue at step 2), task_2 moved_calendar_call (calendar cue at
# step 2), task_3 manager_checkin (scene cue at step 2), task_4 lure_irrelevant. Due set: step 2 = {1, 2, 3}.
VOTES_BY_STEP = {
    "d1_s01": {"event_watcher": ["task_4"], "status_watcher": ["task_4"], "update_watcher": []},
    "d1_s02": {"event_watcher": ["task_1", "task_3"], "status_watcher": ["task_1", "task_2", "task_3"],
               "update_watcher": ["task_1"]},
    "d1_s03": {"event_watcher": [], "status_watcher": [], "update_watcher": []},
}


class FixedCouncil:
    """Signals from :data:`VOTES_BY_STEP`; the status watcher always suggests the calendar."""

    def propose(self, observation: Observation, channels: list[str]) -> list[Signal]:
        votes = VOTES_BY_STEP[observation.step_id]
        return [Signal(role, query_suggestions=["calendar"] if role == "status_watcher" else [],
                       candidate_due=handles) for role, handles in votes.items()]


@lru_cache(maxsize=1)
def _default_week() -> Week:
    return generate_week(0)


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triggerbench")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.configure(sub.add_parser("week"))
    return cli.run(parser.parse_args(list(argv)))


def test_vote_replays_against_hand_counts() -> None:
    week = a4_week()
    agent = HierarchicalAgent(FixedCouncil(), Oracle(week), ["clock", "calendar"])
    events = run_week(week, agent, RuntimeConfig(hierarchical=True), run_id="uq")
    assert [e["step_id"] for e in events if e["type"] == "subagents"] == ["d1_s01", "d1_s02", "d1_s03"]
    # the union (calendar) is queried once per step and the oracle coordinator needs nothing more
    assert [(e["step_id"], e["channel"]) for e in events if e["type"] == "query"] == [
        ("d1_s01", "calendar"), ("d1_s02", "calendar"), ("d1_s03", "calendar")]
    runs = {r["run_id"]: r for r in score_trajectory(week, events)["runs"]}
    assert set(runs) == {"uq", "uq+majority", "uq+unanimous"}
    assert [runs[k]["setup"] for k in ("uq", "uq+majority", "uq+unanimous")] == [
        "union-query", "majority-vote", "unanimous-vote"]
    assert (runs["uq"]["tp"], runs["uq"]["fp"], runs["uq"]["fn"]) == (3, 0, 0)
    # majority (>= 2 of 3): step 1 {lure}, step 2 {budget, manager}; unanimous: step 2 {budget}
    major, unan = runs["uq+majority"], runs["uq+unanimous"]
    assert (major["tp"], major["fp"], major["fn"]) == (2, 1, 1)
    assert major["set_f1"] == pytest.approx(4 / 6)
    assert (unan["tp"], unan["fp"], unan["fn"], unan["precision"]) == (1, 0, 2, 1.0)
    assert unan["set_f1"] == pytest.approx(2 / 4)
    # the replays keep the evidence: the same queries, so the same query cost
    assert all(runs[k]["query_state"] == 3 and runs[k]["check_time"] == 0 for k in runs)
    assert runs["uq+majority"]["replay_of"] == "uq"


class FlakyCouncil(FixedCouncil):
    """Raises at the first call of step 2 (an endpoint outage), then answers as :class:`FixedCouncil`."""

    def __init__(self) -> None:
        self.failed = False

    def propose(self, observation: Observation, channels: list[str]) -> list[Signal]:
        if observation.step_id == "d1_s02" and not self.failed:
            self.failed = True
            raise ConnectionError("subagents unreachable")
        return super().propose(observation, channels)


def test_a_council_failure_is_a_protocol_error_and_the_step_is_played_again() -> None:
    week = a4_week()
    agent = HierarchicalAgent(FlakyCouncil(), Oracle(week), ["clock", "calendar"])
    events = run_week(week, agent, RuntimeConfig(hierarchical=True), run_id="uq")
    errors = [e for e in events if e["type"] == "protocol_error"]
    assert [(e["step_id"], e["error"]) for e in errors] == [
        ("d1_s02", "agent raised ConnectionError: subagents unreachable")]
    assert [e["step_id"] for e in events if e["type"] == "subagents"] == ["d1_s01", "d1_s02", "d1_s03"]
    runs = {r["run_id"]: r for r in score_trajectory(week, events)["runs"]}
    assert (runs["uq"]["tp"], runs["uq"]["fp"], runs["uq"]["protocol_errors"]) == (3, 0, 1)
    assert (runs["uq+majority"]["tp"], runs["uq+majority"]["fp"]) == (2, 1)  # the retried step's votes count


class FlakyCoordinator:
    """Fails on its first view of step 2, then selects the handles of every ``Cue for`` it is shown."""

    name = "flaky-coordinator"

    def __init__(self) -> None:
        self.seen: list[Observation] = []

    def act(self, observation: Observation) -> str:
        self.seen.append(observation)
        if observation.step_id == "d1_s02" and len(self.seen) == 2:
            raise TimeoutError("coordinator timed out")
        picks = {"budget_note": "task_1", "moved_calendar_call": "task_2", "manager_checkin": "task_3"}
        handles = [h for name, h in picks.items() if f"Cue for {name}." in observation.text]
        return json.dumps({"action": "choose", "choice": "A", "task_ids": handles, "channel": "NONE"})


def test_a_coordinator_failure_offers_it_the_same_combined_view_again() -> None:
    week = a4_week()
    coordinator = FlakyCoordinator()
    events = run_week(week, HierarchicalAgent(FixedCouncil(), coordinator, ["clock", "calendar"]),
                      RuntimeConfig(hierarchical=True), run_id="uq")
    # step 2: the runtime offers the calendar reply again, the coordinator gets its combined view again
    retried = [o for o in coordinator.seen if o.step_id == "d1_s02"]
    assert len(retried) == 2 and retried[0].text == retried[1].text and "Subagent signals:" in retried[1].text
    assert retried[1].replies == {"calendar": "State [calendar]: Cue for moved_calendar_call."}
    assert [e["step_id"] for e in events if e["type"] == "query"] == ["d1_s01", "d1_s02", "d1_s03"]
    run = score_trajectory(week, events, replays=False)["runs"][0]
    assert (run["tp"], run["fp"], run["fn"], run["protocol_errors"]) == (3, 0, 0, 1)


def test_replays_are_not_added_twice_or_when_disabled() -> None:
    week = a4_week()
    events = run_week(week, HierarchicalAgent(FixedCouncil(), Oracle(week), ["clock", "calendar"]),
                      RuntimeConfig(hierarchical=True), run_id="uq")
    assert score_trajectory(week, events, replays=False)["n_runs"] == 1
    single = run_week(week, Oracle(week), RuntimeConfig(), run_id="plain")
    assert score_trajectory(week, single)["n_runs"] == 1  # no replay for a run without subagents


def test_parse_signal_drops_what_is_not_on_the_menu() -> None:
    raw = '```json\n{"query_suggestions":["clock","weather"],"candidate_due":["task_1","task_9","task_1"],' \
          '"do_not_select":"task_2","evidence":"saw it"}\n```'
    signal = parse_signal("event_watcher", raw, ["clock", "email"], {"task_1", "task_2"})
    assert (signal.query_suggestions, signal.candidate_due, signal.do_not_select) == (["clock"], ["task_1"], [])
    assert signal.dropped == ["query_suggestions: 'weather'", "candidate_due: 'task_9'", "candidate_due: 'task_1'",
                              "do_not_select is not a list"]
    unreadable = parse_signal("x", "I would query the clock", ["clock"], set())
    assert unreadable.error == "not one JSON object (JSONDecodeError)"


def test_scripted_council_on_the_default_week() -> None:
    week = _default_week()
    events = run_week(week, HierarchicalAgent(ScriptedCouncil(week), Oracle(week), [c.name for c in week.channels]),
                      RuntimeConfig(hierarchical=True), run_id="uq")
    report = score_trajectory(week, events)
    runs = {r["run_id"]: r for r in report["runs"]}
    single = score_trajectory(week, run_week(week, Oracle(week), RuntimeConfig()))["runs"][0]
    live = runs["uq"]
    assert (live["set_f1"], live["hits"], live["fp"]) == (1.0, 81, 0)
    # the status watcher suggests exactly the oracle's queries: the coordinator adds none
    assert (live["check_time"], live["query_state"]) == (single["check_time"], single["query_state"])
    # recount both votes from the logged signals, independently of the replay module
    signals = {e["step_id"]: e["signals"] for e in events if e["type"] == "subagents"}
    assert len(signals) == 80
    for vote, need in (("majority", 2), ("unanimous", 3)):
        replay = runs[f"uq+{vote}"]
        expected_picks = 0
        for sigs in signals.values():
            counts = Counter(h for s in sigs for h in s["candidate_due"])
            expected_picks += sum(c >= need for c in counts.values())
        assert replay["tp"] + replay["fp"] == expected_picks
    assert runs["uq+unanimous"]["precision"] == 1.0  # all three agree only on scene cues, which are due
    assert runs["uq+majority"]["fp"] > 0  # two watchers guess rescheduled time tasks without the clock


def test_every_play_setup_is_named_back_from_its_trajectory() -> None:
    week = a4_week()
    for name, options in PLAY_SETUPS.items():
        agent = Oracle(week)
        if options["hierarchical"]:
            agent = HierarchicalAgent(FixedCouncil(), agent, ["clock", "calendar"])
        events = run_week(week, agent, RuntimeConfig(**options), run_id=name)
        assert setup_of(events[0]) == name
    assert setup_of({"config": {"ledger": True, "heartbeat": "auto30"}}) == "ledger+heartbeat-auto30"


@pytest.fixture(scope="module")
def week_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("week") / "week.json"
    assert _cli("week", "generate", "--out", str(path)) == 0
    return path


def test_score_table_lists_all_eight_setups(week_file: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    traj = tmp_path / "runs.jsonl"
    for name in PLAY_SETUPS:
        assert _cli("week", "play", "--setup", name, "--policy", "oracle", "--week", str(week_file), "--out",
                    str(traj), "--append", "--run-id", f"oracle-{name}") == 0
    assert _cli("week", "play", "--setup", "single", "--policy", "never-act", "--week", str(week_file), "--out",
                str(traj), "--append", "--run-id", "never") == 0
    capsys.readouterr()
    assert _cli("week", "score", str(traj), "--week", str(week_file), "--json") == 0
    rows = {row["setup"]: row for row in json.loads(capsys.readouterr().out)["setups"]}
    assert list(rows) == list(SETUPS)
    for name in PLAY_SETUPS:
        expected = 0.5 if name == "single" else 1.0  # single pools the oracle and never-act
        assert rows[name]["macro_set_f1"] == pytest.approx(expected)
    assert rows["single"]["runs"] == 2 and rows["single"]["fn"] == 81 and rows["single"]["set_f1"] == pytest.approx(
        2 * 81 / (2 * 81 + 81))
    assert rows["heartbeat-optional"]["queries"] == 73 + 104  # the oracle's clock and channel queries
    assert _cli("week", "score", str(traj), "--week", str(week_file)) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line.split()[0] for line in lines[3:11]]
    assert lines[1].split()[:3] == ["setup", "runs", "macroF1"] and table == list(SETUPS)


def test_cut_trajectory_is_refused_or_scored_as_flagged_partial(week_file: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    full = tmp_path / "full.jsonl"
    assert _cli("week", "play", "--policy", "oracle", "--week", str(week_file), "--out", str(full)) == 0
    lines = full.read_text().splitlines(keepends=True)
    chooses = [n for n, line in enumerate(lines) if json.loads(line)["type"] == "choose"]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[: chooses[29] + 1]))  # cut at a line boundary after the 30th step
    capsys.readouterr()
    assert _cli("week", "score", str(cut), "--week", str(week_file)) == 1
    err = capsys.readouterr().err
    assert err == (f"error: {cut}: run oracle has no run_end: the trajectory was cut after 30 step(s); rerun it, "
                   "or pass --allow-partial to score the steps it reached\n")
    assert _cli("week", "score", str(cut), "--week", str(week_file), "--allow-partial", "--json") == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("warning: PARTIAL score: run(s) oracle have no run_end")
    report = json.loads(captured.out)
    run = report["runs"][0]
    week = cli.load_week(week_file)
    steps = [s.id for d in week.days for s in d.steps][:30]
    due_by_hand = sum(1 for t in week.tasks if _due_step(week, t.id) in steps)
    assert run["partial"] and report["partial_runs"] == ["oracle"]
    assert (run["tp"], run["fp"], run["fn"], run["misses"], run["missing_steps"]) == (due_by_hand, 0, 0, 0, 0)
    assert report["setups"][0]["partial"] == 1
    assert _cli("week", "score", str(cut), "--week", str(week_file), "--allow-partial") == 0
    assert "single (PARTIAL 1)" in capsys.readouterr().out


def _due_step(week: Week, task_id: str) -> str | None:
    from stages.week.index import WeekIndex

    return WeekIndex(week).due_step_of.get(task_id)


def test_two_runs_under_one_run_id_are_refused(week_file: Path) -> None:
    week = cli.load_week(week_file)
    events = run_week(week, make_policy("never-act", week), RuntimeConfig(days=(1,)), run_id="same")
    with pytest.raises(ScoringError, match="run same has events after its run_end"):
        score_trajectory(week, events + events)


def test_setup_flag_conflicts_are_one_line(week_file: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x.jsonl"
    assert _cli("week", "play", "--setup", "union-query", "--ledger", "--policy", "oracle", "--week", str(week_file),
                "--out", str(out)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--setup union-query already sets" in err and not out.exists()


def test_union_query_trajectory_round_trips_through_jsonl(week_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "uq.jsonl"
    assert _cli("week", "play", "--setup", "union-query", "--policy", "oracle", "--week", str(week_file), "--out",
                str(out), "--days", "3") == 0
    events = read_trajectory(out)
    assert events[0]["config"]["hierarchical"] is True
    first = next(e for e in events if e["type"] == "subagents")
    assert [s["role"] for s in first["signals"]] == ["event_watcher", "status_watcher", "update_watcher"]
    assert first["day"] == 3 and first["run_id"] == "oracle"
    week = cli.load_week(week_file)
    assert score_trajectory(week, events)["runs"][0]["set_f1"] == 1.0
