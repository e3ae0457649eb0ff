"""Slot placeholders: ``{name}`` in text fields, filled from a blueprint's ``slots``."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

from pipeline.blueprints.schema import Blueprint, SlotValue

PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")

Choice = dict[str, int]  # slot name -> index of the chosen alternative


def placeholder_names(text: str) -> set[str]:
    """Names of the ``{slot}`` placeholders in ``text``."""
    return set(PLACEHOLDER.findall(text))


def values_of(alternative: SlotValue, slot: str) -> dict[str, str]:
    """Placeholder -> value for one alternative of one slot."""
    return dict(alternative) if isinstance(alternative, dict) else {slot: alternative}


def provided_names(blueprint: Blueprint) -> set[str]:
    """Every placeholder name some slot fills."""
    names: set[str] = set()
    for slot, alternatives in blueprint.slots.items():
        for alternative in alternatives:
            names |= set(values_of(alternative, slot))
    return names


def fill(text: str, values: dict[str, str]) -> str:
    """Replace known placeholders; unknown ones are left for lint to report."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def choice_values(blueprint: Blueprint, choice: Choice) -> dict[str, str]:
    values: dict[str, str] = {}
    for slot, alternatives in blueprint.slots.items():
        values.update(values_of(alternatives[choice.get(slot, 0)], slot))
    return values


def render(blueprint: Blueprint, choice: Choice | None = None, new_id: str | None = None) -> Blueprint:
    """The blueprint with every placeholder filled by ``choice`` (default: first alternatives)."""
    values = choice_values(blueprint, choice or {})
    data: dict[str, Any] = _fill_tree(blueprint.model_dump(exclude={"slots"}), values)
    data["slots"] = {}
    if new_id:
        data["id"] = new_id
    return Blueprint.model_validate(data)


def _fill_tree(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return fill(value, values)
    if isinstance(value, dict):
        return {k: _fill_tree(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_tree(v, values) for v in value]
    return value


def all_choices(blueprint: Blueprint) -> Iterator[Choice]:
    """Every combination of slot alternatives, in a stable order (first = the seed)."""
    names = sorted(blueprint.slots)
    ranges = [range(len(blueprint.slots[name])) for name in names]
    for combo in itertools.product(*ranges):
        yield dict(zip(names, combo))


def single_changes(blueprint: Blueprint) -> Iterator[Choice]:
    """The seed choice, then each slot alternative on its own (others at the seed's value)."""
    yield {}
    for name in sorted(blueprint.slots):
        for index in range(1, len(blueprint.slots[name])):
            yield {name: index}
