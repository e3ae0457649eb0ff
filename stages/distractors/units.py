"""Conversations from any corpus, and the snippets cut from them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

Message = tuple[str, str]  # (role, content), role in {"user", "assistant"}

# Time expressions by kind. Words are separated by spaces only, never a line break, so code listings
# ("12:\n13:" line numbers, "may\n62") are not read as times.

_NUMBER = (r"(?:\d+(?:\.\d+)?|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|"
           r"thirty|forty|fifty|sixty|ninety|half|several|few|couple of|a couple of|a few)")
_MONTH = r"(?:january|february|april|june|july|august|september|october|november|december|jan|feb|apr|jun|jul|aug|sept?|oct|nov|dec)"
TIME_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        # 14:30, 9 : 15, 9am, 10:30 pm, a.m., o'clock, noon, midnight (bare "am" is "I am")
        # (hours 0-23, minutes 00-59, spaces but no line break around the colon: "12:\n13" are line numbers)
        "clock": r"\b(?:[01]?\d|2[0-4]) ?: ?[0-5]\d\b|\b\d{1,2} ?(?:am|pm)\b|\b[ap]\.m\.|\bpm\b|\bo'?clock\b|\bnoon\b|\bmidnight\b",
        # 15 minutes, two hours, an hour, half an hour, 4 nights, a couple of days, 79 mins; bare minutes/hours
        "duration": rf"\b{_NUMBER}[ -]+(?:seconds?|minutes?|mins?|hours?|hrs?|days?|nights?|weeks?|months?|years?|fortnights?)\b"
                    r"|\b(?:seconds|minutes|hours|mins|hrs)\b|\bminute\b|\bhour\b",
        # this evening, in the morning, afternoon, night, tonight, overnight, dawn, dusk
        "part-of-day": r"\b(?:morning|mornings|afternoons?|evenings?|nights?|tonight|overnight|dawn|dusk|daytime|nighttime)\b",
        # today, tomorrow, yesterday, next week, this weekend, last year
        "relative-day": r"\b(?:today|tomorrow|yesterday|weekends?)\b|\b(?:next|last|this|coming) +(?:week|month|year|day)\b",
        "weekday": r"\b(?:mon|tues|tue|wednes|wed|thurs|thu|fri|satur|sat|sun)days?\b",
        # March 3, 3rd of May, 12 June, 4/5/2018, 2018-04-05, "in 2019" (a bare 1999 is a number, not a date)
        "date": rf"\b{_MONTH}\.? +\d{{1,2}}(?:st|nd|rd|th)?\b|\b\d{{1,2}}(?:st|nd|rd|th)? +(?:of +)?(?:{_MONTH}|may|march)\b"
                r"|\b(?:may|march) +\d{1,2}(?:st|nd|rd|th)?\b|\b(?:january|february|april|june|july|august|september|october|november|december)\b"
                r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b\d{4}-\d{2}-\d{2}\b|\b(?:in|since|until|by|from|of|year|early|late|mid) +(?:19|20)\d{2}\b"
                r"|\bthe +\d{1,2}(?:st|nd|rd|th)\b",
    }.items()
}


def time_patterns(text: str) -> list[str]:
    """Names of the :data:`TIME_PATTERNS` that occur in ``text`` (in the dict's order; empty when none)."""
    return [name for name, pattern in TIME_PATTERNS.items() if pattern.search(text)]


def has_time_expression(text: str) -> bool:
    """Whether ``text`` holds a clock time, a duration, a part of the day, a relative day, a weekday or a date.

    Prices such as ``17.60 pounds`` and the pronoun phrase ``I am`` are not times.
    """
    return any(pattern.search(text) for pattern in TIME_PATTERNS.values())


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
