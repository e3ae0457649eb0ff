"""Typed model of a PM-Bench week (the ``week.json`` format).

A week is seven days of time-anchored steps. Tasks are deferred intentions with a
trigger (an event cue or a target time); lures are distractor actions; cues say where an
event becomes observable (the narrative or a hidden state channel); updates cancel,
override or reschedule a task at a given step. Everything is identified by stable ids;
times are ``"HH:MM"`` strings on a 07:00-22:00 day.

In: JSON dicts (``Week.model_validate``). Out: JSON dicts (``Week.to_json``), with
sorted keys when dumped by :func:`dump_week`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.hashing import sha256_json

ChannelType = Literal["snapshot", "delta", "snapshot (process)"]
TaskKind = Literal["routine", "narrative", "one_off", "channel", "cross_day"]
Trigger = Literal["event", "time"]
UpdateKind = Literal["cancel", "override", "reschedule"]
ProcessStage = Literal["idle", "in_progress", "complete", "after", "none"]

DAY_START = "07:00"
DAY_END = "22:00"
NARRATIVE = "narrative"
CLOCK = "clock"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Channel(_Strict):
    """A queryable state channel and its Table 5 type."""

    name: str
    type: ChannelType
    description: str


class ChannelState(_Strict):
    """What a non-clock channel shows at one step; ``stage`` is used by process channels."""

    text: str
    stage: ProcessStage = "none"


class Step(_Strict):
    """One decision point: time, visible narrative, A/B/C options, hidden channel states."""

    id: str
    day: int
    index: int
    time: str
    narrative: str
    options: dict[str, str]
    channel_states: dict[str, ChannelState]
    cue_ids: list[str] = Field(default_factory=list)
    update_ids: list[str] = Field(default_factory=list)
    encoded_task_ids: list[str] = Field(default_factory=list)


class MenuEntry(_Strict):
    """An anonymous handle (``task_N``) and the task or lure id behind it."""

    handle: str
    ref_id: str


class Day(_Strict):
    """A day: archetype, opening agenda, steps in time order, the day's handle menu."""

    index: int
    name: str
    archetype: str
    opening: str
    steps: list[Step]
    menu: list[MenuEntry]


class Encoding(_Strict):
    """When a task becomes known: at the opening of ``day`` (``step_id`` None) or at a step."""

    day: int
    step_id: str | None = None


class Task(_Strict):
    """A deferred intention as first encoded (updates are applied by :func:`effective_task`)."""

    id: str
    kind: TaskKind
    trigger: Trigger
    regular: bool
    day: int
    label: str
    action_text: str
    cue_id: str | None = None
    cue_channel: str | None = None
    target_time: str | None = None
    encoding: Encoding
    cross_day: bool = False
    offset_days: int = 0
    depends_on: list[str] = Field(default_factory=list)


class Lure(_Strict):
    """A distractor action offered on one day's menu; never due."""

    id: str
    day: int
    action_text: str


class Cue(_Strict):
    """Where and when an event becomes observable: ``source`` is ``narrative`` or a channel."""

    id: str
    day: int
    step_id: str
    source: str
    text: str


class Update(_Strict):
    """A cancel / override / reschedule announced in the narrative of ``step_id``."""

    id: str
    kind: UpdateKind
    task_id: str
    step_id: str
    text: str
    new_cue_id: str | None = None
    new_target_time: str | None = None
    new_action_text: str | None = None


class Week(_Strict):
    """A whole PM-Bench week."""

    id: str
    seed: int
    generator_version: str
    intro: str
    channels: list[Channel]
    days: list[Day]
    tasks: list[Task]
    lures: list[Lure]
    cues: list[Cue]
    updates: list[Update]

    def to_json(self) -> dict[str, Any]:
        """The week as a JSON-compatible dict."""
        return self.model_dump(mode="json")

    def digest(self) -> str:
        """sha256 of the week's canonical JSON (trajectories record it)."""
        return sha256_json(self.to_json())


def dump_week(week: Week) -> str:
    """Serialize deterministically: sorted keys, two-space indent, trailing newline."""
    return json.dumps(week.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def to_minutes(hhmm: str) -> int:
    """``"07:35"`` -> 455. Raises ValueError on anything else."""
    hours, sep, minutes = hhmm.partition(":")
    if not sep or len(hours) != 2 or len(minutes) != 2 or not (hours + minutes).isdigit():
        raise ValueError(f"not an HH:MM time: {hhmm!r}")
    value = int(hours) * 60 + int(minutes)
    if int(minutes) >= 60 or value >= 24 * 60:
        raise ValueError(f"not an HH:MM time: {hhmm!r}")
    return value


def to_hhmm(minutes: int) -> str:
    """455 -> ``"07:35"``."""
    return f"{minutes // 60:02d}:{minutes % 60:02d}"
