"""Conversations from any corpus, and the snippets cut from them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

Message = tuple[str, str]  # (role, content), role in {"user", "assistant"}

_TIME = re.compile(
    r"\b\d{1,2}\s?:\s?\d{2}\b"                       # clock times 14:30, 9 : 15
    r"|\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b"          # 9am, 10:30 pm (bare "am" is "I am")
    r"|\b[ap]\.m\.|\bpm\b"
    r"|\b(?:today|tomorrow|tonight|yesterday|noon|midnight|o'?clock)\b"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b",
    re.IGNORECASE,
)


def has_time_expression(text: str) -> bool:
    """Whether ``text`` holds a clock time, am/pm, a relative day word, noon/midnight or a weekday.

    Prices such as ``17.60 pounds`` and the pronoun phrase ``I am`` are not times.
    """
    return _TIME.search(text) is not None


@dataclass(frozen=True)
class Conversation:
    """A whole dialogue, trajectory or reasoning trace from one corpus, roles normalised."""

    id: str
    source: str
    messages: tuple[Message, ...]


def normalise(messages: Iterable[Message]) -> tuple[Message, ...]:
    """Merge consecutive same-role messages and drop empty ones, keeping order."""
    merged: list[list[str]] = []
    for role, content in messages:
        content = content.strip()
        if not content:
            continue
        if merged and merged[-1][0] == role:
            merged[-1][1] += "\n\n" + content
        else:
            merged.append([role, content])
    return tuple((role, content) for role, content in merged)


def exchanges(messages: tuple[Message, ...]) -> list[tuple[Message, Message]]:
    """Consecutive (user, assistant) pairs; a leading assistant or trailing user message is dropped."""
    pairs = []
    index = 0
    while index + 1 < len(messages):
        if messages[index][0] == "user" and messages[index + 1][0] == "assistant":
            pairs.append((messages[index], messages[index + 1]))
            index += 2
        else:
            index += 1
    return pairs
