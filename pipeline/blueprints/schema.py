"""The seed-blueprint schema: one YAML mapping per blueprint, typed with pydantic.

Text fields may contain ``{slot}`` placeholders; ``slots`` lists each slot's alternatives,
the first being the seed's own value. A slot alternative is either a string (fills
``{name}``) or a mapping of strings (fills several linked placeholders at once).
Dimension-specific requirements (which parts must or must not exist) are checked by
``pipeline.blueprints.rules``, so that each problem is reported at its own field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipeline.vocabulary import Dimension

Domain = Literal[
    "work_professional", "health_dietary", "transit_travel", "home_household", "finance_budget",
    "family_parenting", "social_relationships", "education_study", "shopping_errands", "pets_animals",
    "fitness_sports", "cooking_food", "technology_devices", "lab_science", "entertainment_media",
    "personal_care", "legal_admin", "outdoor_hobbies", "events_celebrations", "automotive",
    "software_engineering",
]
TIME_FORMAT = "%Y-%m-%dT%H:%M"
SlotValue = str | dict[str, str]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


def _minute_time(value: object) -> object:
    if isinstance(value, str):
        try:
            return datetime.strptime(value, TIME_FORMAT)
        except ValueError as exc:
            raise ValueError(f"expected a time like 2026-05-12T10:27, got {value!r}") from exc
    return value


class UserTurn(Strict):
    """A user utterance at a minute-precision time, with the assistant's reply if it gets one."""

    text: str = Field(min_length=1)
    at: datetime
    reply: str | None = None
    like: int | None = Field(None, ge=0, description="index of the story exchange whose shape this constraint turn "
                             "takes (assigned by `triggerbench like`, checked by the lint)")
    redraw: str | None = Field(None, min_length=1, description="why the first drawn exchange cannot carry this "
                               "turn's required facts; `like` then names the second draw")

    _parse_at = field_validator("at", mode="before")(_minute_time)


class Interruption(Strict):
    """Attention recovery: the user suspends the task for a math or coding problem."""

    text: str = Field(min_length=1)
    at: datetime
    source: Literal["math", "coding"]
    reply: str | None = None

    _parse_at = field_validator("at", mode="before")(_minute_time)


class Negative(Strict):
    """How Neg-Clean differs from Pos-Clean.

    - ``resolution`` (state tracking, safe coding): a user turn at ``at`` (between constraint
      and trigger) that resolves the risk; ``reply`` is the assistant's answer to it.
    - ``flip_trigger`` (logical adherence): ``text`` replaces the trigger, now compliant.
    - ``flip_state`` (logical adherence): ``text`` replaces constraint ``constraint``
      (e.g. the if-condition is not met), so the same trigger is compliant.
    """

    kind: Literal["resolution", "flip_trigger", "flip_state"]
    text: str = Field(min_length=1)
    at: datetime | None = None
    reply: str | None = None
    constraint: int | None = None

    _parse_at = field_validator("at", mode="before")(_minute_time)


class Update(Strict):
    """A benign turn of the same story, with its reply, that Pos-Clean carries where Neg-Clean carries
    the resolution (variant parity: turn counts, positions and lengths do not reveal the label)."""

    text: str = Field(min_length=1)
    reply: str = Field(min_length=1)


class Explicit(Strict):
    """The explicit-constraint ablation: ``append`` adds ``text`` after the constraint turn;
    ``rewrite`` replaces that turn's text with ``text`` (entities and slots kept verbatim)."""

    method: Literal["append", "rewrite"]
    text: str = Field(min_length=1)
    constraint: int = 0


class Timing(Strict):
    """Temporal grounding: the commitment's deadline, and its duration when it is relative."""

    kind: Literal["absolute", "relative"]
    deadline: datetime
    duration_minutes: int | None = Field(default=None, gt=0)

    _parse_deadline = field_validator("deadline", mode="before")(_minute_time)


class RMProbe(Strict):
    """The retrospective-memory question about the constraint, with 3-5 short aliases."""

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    aliases: list[str] = Field(min_length=3, max_length=5)


class Blueprint(Strict):
    """One hand-written seed blueprint (or, after scaling, one scaled blueprint)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{2,80}$")
    dimension: Dimension
    subtype: str
    domain: Domain
    topic: str = Field(pattern=r"^[a-z0-9_]+$")
    cwe: str | None = Field(default=None, pattern=r"^CWE-\d+$")
    constraints: list[UserTurn] = Field(min_length=1, max_length=2)
    interruption: Interruption | None = None
    trigger: UserTurn
    overload: str = Field(min_length=1)
    negative: Negative | None = None
    update: Update | None = None
    explicit: Explicit | None = None
    reference_intent: str = Field(min_length=1)
    gold_slots: list[str] = Field(min_length=1)
    timing: Timing | None = None
    rm: RMProbe | None = None
    slots: dict[str, list[SlotValue]] = Field(default_factory=dict)
    notes: str | None = None

    def text_fields(self) -> dict[str, str]:
        """Every text field by its dotted path (what slot placeholders may appear in)."""
        fields: dict[str, str] = {}
        for index, turn in enumerate(self.constraints):
            fields[f"constraints.{index}.text"] = turn.text
            if turn.reply:
                fields[f"constraints.{index}.reply"] = turn.reply
        if self.interruption:
            fields["interruption.text"] = self.interruption.text
            if self.interruption.reply:
                fields["interruption.reply"] = self.interruption.reply
        fields["trigger.text"] = self.trigger.text
        fields["overload"] = self.overload
        if self.negative:
            fields["negative.text"] = self.negative.text
            if self.negative.reply:
                fields["negative.reply"] = self.negative.reply
        if self.update:
            fields["update.text"] = self.update.text
            fields["update.reply"] = self.update.reply
        if self.explicit:
            fields["explicit.text"] = self.explicit.text
        fields["reference_intent"] = self.reference_intent
        for index, slot in enumerate(self.gold_slots):
            fields[f"gold_slots.{index}"] = slot
        if self.rm:
            fields["rm.question"] = self.rm.question
            fields["rm.answer"] = self.rm.answer
            for index, alias in enumerate(self.rm.aliases):
                fields[f"rm.aliases.{index}"] = alias
        return fields


def to_json(blueprint: Blueprint) -> dict:
    """A blueprint as a JSON-ready dict (times as ``YYYY-MM-DDTHH:MM``)."""
    data = blueprint.model_dump(mode="json", exclude_none=True)
    return _format_times(data)


def _format_times(value: object) -> object:
    if isinstance(value, dict):
        return {k: _format_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_format_times(v) for v in value]
    if isinstance(value, str) and len(value) == 19 and value[10] == "T" and value.endswith(":00"):
        try:
            return datetime.fromisoformat(value).strftime(TIME_FORMAT)
        except ValueError:
            return value
    return value
