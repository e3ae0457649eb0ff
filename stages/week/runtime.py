"""Query-then-act runtime: plays a week with an agent and logs the trajectory.

In: a :class:`Week`, an :class:`Agent` (anything with ``name`` and ``act(observation) ->
str``) and a :class:`RuntimeConfig`. Out: a list of trajectory events (JSON dicts, one per
line in a ``.jsonl`` file) that :mod:`stages.week.scorer` replays. The runtime never
raises on agent output: malformed replies become ``protocol_error`` events and the agent
is asked again; after ``max_turns_per_step`` turns the step advances with no actions.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from stages.week.index import WeekIndex
from stages.week.model import DAY_START, Day, Step, Week, to_minutes
from stages.week.protocol import parse_action, state_line, system_prompt

HeartbeatMode = Literal["off", "optional", "auto30", "auto60"]


@dataclass(frozen=True)
class RuntimeConfig:
    """How a run is set up (the paper's single / ledger / heartbeat variants)."""

    heartbeat: HeartbeatMode = "off"
    ledger: bool = False
    max_handles: int | None = 8
    max_turns_per_step: int = 12
    days: tuple[int, ...] | None = None  # play only these days (a smoke run); None = the whole week
    hierarchical: bool = False  # the union-query multi-agent setup (the agent is a HierarchicalAgent)


@dataclass
class Observation:
    """What the agent sees on one turn; ``text`` is the exact message an LLM agent would get."""

    kind: Literal["step", "state", "error", "info"]
    text: str
    day: int
    step_id: str
    menu: dict[str, str] = field(default_factory=dict)
    narrative: str = ""
    options: dict[str, str] = field(default_factory=dict)
    opening: str | None = None
    channel: str | None = None
    heartbeat: bool = False
    ledger: list[dict[str, Any]] | None = None
    replies: dict[str, str] = field(default_factory=dict)  # channel -> state line already fetched this step


class Agent(Protocol):
    """Anything that answers observations with one JSON action string per turn.

    Optional extras the runtime uses when present: ``pop_trace() -> list[dict]`` (events to log
    at the current step, e.g. the subagent signals of the hierarchical setup) and ``cost() ->
    dict`` (LLM request counters, written into ``run_end`` as ``llm``).
    """

    name: str

    def act(self, observation: Observation) -> str: ...


@dataclass
class _RunState:
    completed: set[str] = field(default_factory=set)
    heartbeat_minutes: int | None = None
    heartbeat_since: int | None = None
    ledger: list[dict[str, Any]] = field(default_factory=list)
    errors: int = 0


def _crossed(since: int | None, now: int, minutes: int | None) -> bool:
    """Whether a heartbeat tick (07:00 + k * minutes) falls in (since, now]."""
    if minutes is None or since is None:
        return False
    origin = to_minutes(DAY_START)
    return (now - origin) // minutes > (since - origin) // minutes or since < origin <= now


def _step_text(day: Day, step: Step, menu: dict[str, str], opening: str | None, heartbeat: str | None,
               ledger: list[dict[str, Any]] | None) -> str:
    lines = [f"[{day.name}, day {day.index} of 7 | step {step.index + 1} of {len(day.steps)}]"]
    if opening:
        lines.append(opening)
    if heartbeat:
        lines.append(heartbeat)
    if ledger is not None:
        lines.append("Your TODO ledger: " + json.dumps(ledger, ensure_ascii=False))
    lines.append(step.narrative)
    lines.append("Ongoing options: " + "  ".join(f"{k}) {v}" for k, v in sorted(step.options.items())))
    lines.append("Action menu:" if menu else "Action menu: (empty)")
    lines += [f"{handle}: {text}" for handle, text in menu.items()]
    return "\n".join(lines)


def run_week(week: Week, agent: Agent, config: RuntimeConfig = RuntimeConfig(), run_id: str = "run-0") -> list[dict]:
    """Play every step of the week; returns the trajectory events in order."""
    ix = WeekIndex(week)
    channels = [c.name for c in week.channels]
    events: list[dict[str, Any]] = [{
        "type": "run_start", "run_id": run_id, "week_id": week.id, "week_sha256": week.digest(),
        "agent": agent.name, "config": {**asdict(config), "days": list(config.days) if config.days else None},
        "system_prompt": system_prompt(channels, config.heartbeat, config.ledger, config.max_handles)}]
    if isinstance(getattr(agent, "prompts", None), dict):
        events[0]["prompts"] = dict(agent.prompts)  # the hierarchical setup's subagent / coordinator prompts
    state = _RunState()
    for day in week.days:
        if config.days is not None and day.index not in config.days:
            continue
        if config.heartbeat in ("auto30", "auto60"):
            state.heartbeat_minutes = int(config.heartbeat[4:])
        state.heartbeat_since = to_minutes(DAY_START) - 1 if state.heartbeat_minutes else None
        for step in day.steps:
            events += _play_step(ix, day, step, agent, config, state, channels, run_id)
    played = sum(len(d.steps) for d in week.days if config.days is None or d.index in config.days)
    end: dict[str, Any] = {"type": "run_end", "run_id": run_id, "steps": played, "protocol_errors": state.errors}
    cost = getattr(agent, "cost", None)
    if callable(cost):
        end["llm"] = cost()
    events.append(end)
    return events


def _trace(agent: Agent, base: dict[str, Any]) -> list[dict[str, Any]]:
    """Events the agent wants logged at this step (``pop_trace``), stamped with run, day and step."""
    pop = getattr(agent, "pop_trace", None)
    return [{**event, **base} for event in pop()] if callable(pop) else []


def _play_step(ix: WeekIndex, day: Day, step: Step, agent: Agent, config: RuntimeConfig, state: _RunState,
               channels: list[str], run_id: str) -> list[dict[str, Any]]:
    base = {"run_id": run_id, "day": day.index, "step_id": step.id}
    events: list[dict[str, Any]] = []
    now = to_minutes(step.time)
    menu = {m.handle: ix.menu_text(m.ref_id, step.id) for m in day.menu if m.ref_id not in state.completed}
    refs = {m.handle: m.ref_id for m in day.menu}
    beat = _crossed(state.heartbeat_since, now, state.heartbeat_minutes)
    if state.heartbeat_minutes is not None:
        state.heartbeat_since = now
    nudge = None
    if beat:
        nudge = "Heartbeat: consider whether any state channel is worth checking (" + ", ".join(channels) + ")."
        events.append({**base, "type": "heartbeat", "minutes": state.heartbeat_minutes})
    opening = day.opening if step.index == 0 else None
    ledger = list(state.ledger) if config.ledger else None
    message = Observation("step", _step_text(day, step, menu, opening, nudge, ledger), day.index, step.id, menu,
                          step.narrative, dict(step.options), opening, heartbeat=beat, ledger=ledger)
    for _turn in range(config.max_turns_per_step):
        try:
            raw = agent.act(message)
        except Exception as exc:  # noqa: BLE001 - an agent failure is recorded, never fatal to the run
            events += _trace(agent, base)
            state.errors += 1
            events.append({**base, "type": "protocol_error", "raw": "",
                           "error": f"agent raised {exc.__class__.__name__}: {exc}"[:2000]})
            continue  # the same observation is offered again
        events += _trace(agent, base)
        action, error = parse_action(raw, channels, set(menu), config.max_handles, config.ledger)
        if action is not None and action.kind == "set_heartbeat" and config.heartbeat != "optional":
            action, error = None, "set_heartbeat is only available in the optional-heartbeat mode"
        if action is None:
            state.errors += 1
            events.append({**base, "type": "protocol_error", "raw": str(raw)[:2000], "error": error})
            message = Observation("error", f"Protocol error: {error}. Reply with one JSON action.", day.index,
                                  step.id, menu)
            continue
        if action.kind in ("query_state", "check_time"):
            reply = state_line(step, action.channel or "")
            events.append({**base, "type": "query", "channel": action.channel, "legacy": action.kind == "check_time",
                           "reply": reply})
            message = Observation("state", reply, day.index, step.id, menu, channel=action.channel)
            continue
        if action.kind == "set_heartbeat":
            state.heartbeat_minutes = action.heartbeat_minutes
            state.heartbeat_since = now if action.heartbeat_enabled else None
            events.append({**base, "type": "set_heartbeat", "enabled": action.heartbeat_enabled,
                           "minutes": action.heartbeat_minutes})
            text = f"Heartbeat {'on every ' + str(action.heartbeat_minutes) + ' min' if action.heartbeat_enabled else 'off'}."
            message = Observation("info", text, day.index, step.id, menu)
            continue
        selected = [refs[h] for h in action.handles]
        _complete(ix, step, selected, state)
        events.append({**base, "type": "choose", "choice": action.choice, "task_ids": list(action.handles),
                       "selected": selected, "forced": False})
        if config.ledger:
            if action.ledger_error:
                state.errors += 1
                events.append({**base, "type": "protocol_error", "raw": str(raw)[:2000],
                               "error": f"ledger: {action.ledger_error}"})
            else:
                state.ledger = list(action.ledger or [])
                events.append({**base, "type": "ledger", "ledger": state.ledger})
        return events
    events.append({**base, "type": "choose", "choice": None, "task_ids": [], "selected": [], "forced": True})
    return events


def _complete(ix: WeekIndex, step: Step, selected: list[str], state: _RunState) -> None:
    """A task leaves later menus once it is selected at its due step or within its late window."""
    for ref in selected:
        if ref in ix.tasks and (ix.due_step_of.get(ref) == step.id or step.id in ix.late_steps(ref)):
            state.completed.add(ref)


def write_trajectory(path: Path, events: list[dict[str, Any]], append: bool = False) -> None:
    """Write events as JSONL (one compact JSON object per line)."""
    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        for event in events:
            handle.write(json.dumps(event, ensure_ascii=False, sort_keys=True) + "\n")


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read; the message names the file and line."""


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL trajectory; raises :class:`TrajectoryError` naming the bad line."""
    events = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TrajectoryError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(event, dict) or "type" not in event:
                raise TrajectoryError(f"{path}:{number}: an event must be an object with a 'type'")
            events.append(event)
    return events
