"""Prompts of the LLM generation paths (our own wording): blueprint scaling, filler exchanges, RM probes.

Each builder returns chat messages (a list of ``{"role", "content"}``); the structured-output
instruction with the JSON schema is appended by :class:`pipeline.llm.ChatRequest` itself.
The system prompts are module constants, so tests (and a scripted server) can tell the
three kinds of request apart by their first message.
"""

from __future__ import annotations

import json
from typing import Any

SCALE_SYSTEM = """\
You design test scenarios for a benchmark of prospective memory in conversational assistants.
A scenario is a short chat: early on, the user mentions a fact that creates a hidden obligation
(the constraint turn); much later, the user says something ordinary (the trigger turn) at the
moment when an attentive assistant should bring that obligation up on its own.

Rules every scenario must follow:
- The constraint turn states the fact plainly and never asks to be reminded or alerted.
- The trigger turn must not repeat any meaningful word of the constraint turn, and must not name
  any gold slot. It only describes what the user is doing now.
- Every gold slot (the key entities an answer must mention) appears word for word in a constraint turn.
- The overload is an unrelated extra request sharing no meaningful word with the trigger.
- Times use the format YYYY-MM-DDTHH:MM and move forward: constraint, then any resolution, then trigger.
- reference_intent says in one sentence what the assistant should tell the user at the trigger.
- The rm block is a factual question about the constraint, a full answer, and 3 to 5 short
  answers that each appear in the constraint turn.
Keep the same structure, dimension and subtype as the example, but invent a new situation with
different people, objects, places and wording."""

FILLER_SYSTEM = """\
You write one exchange of an everyday conversation between a user and a helpful AI assistant.
The user asks one natural, self-contained question on the given theme; the assistant answers it
directly and helpfully. Write plain prose, no lists of headings, no greetings."""

RM_SYSTEM = """\
You write reading-comprehension questions about a conversation. Given what a user said, write one
natural factual question about the specific object, place, time or state the user established,
the complete answer as a sentence, and 3 to 5 short answers (a word or a few words each) that
are taken word for word from the user's text. The question must not contain its own answer."""

DIMENSION_HINTS = {
    "state_tracking": "what the user did with an object or where something is",
    "temporal_grounding": "the time or deadline the user mentioned",
    "logical_adherence": "the rule or condition the user set",
    "attention_recovery": "the task the user set aside",
    "safe_coding": "the code change the user made",
}


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def scale_messages(examples: list[dict[str, Any]], dimension: str, subtype: str, number: int) -> list[dict[str, str]]:
    """Ask for blueprint ``number`` of a seed's family, shown ``examples`` (drafts of the seed)."""
    shown = "\n\n".join(f"Example {i + 1}:\n{_compact(example)}" for i, example in enumerate(examples))
    task = (
        f"Dimension: {dimension}. Subtype: {subtype}.\n\n{shown}\n\n"
        f"Write new scenario number {number} for this dimension and subtype, in the same JSON shape "
        "as the examples, with a situation of your own."
    )
    return [{"role": "system", "content": SCALE_SYSTEM}, {"role": "user", "content": task}]


def lint_feedback(problems: list[str]) -> str:
    """The follow-up message asking to fix a scenario that broke the rules."""
    listed = "\n".join(f"- {problem}" for problem in problems)
    return f"That scenario breaks these rules:\n{listed}\nReply with the corrected scenario as one JSON object."


def filler_messages(topic: str, description: str, example: dict[str, str], number: int,
                    example_chars: int) -> list[dict[str, str]]:  # fmt: skip
    """Ask for filler exchange ``number`` on ``topic``, in the spirit of one pool ``example``."""
    user = example["user"][:example_chars]
    answer = example["assistant"][:example_chars]
    task = (
        f"Theme: {topic.replace('_', ' ')}. {description.strip()}\n\n"
        f"An example exchange on this theme:\nUser: {user}\nAssistant: {answer}\n\n"
        f"Write exchange number {number}: a different question on the same theme and its answer."
    )
    return [{"role": "system", "content": FILLER_SYSTEM}, {"role": "user", "content": task}]


def rm_messages(dimension: str, constraint_texts: list[str]) -> list[dict[str, str]]:
    """Ask for a retrospective-memory probe about the user's constraint turn(s)."""
    said = "\n".join(f"- {text}" for text in constraint_texts)
    focus = DIMENSION_HINTS.get(dimension, "the fact the user established")
    task = f"The user said:\n{said}\n\nWrite a question about {focus}."
    return [{"role": "system", "content": RM_SYSTEM}, {"role": "user", "content": task}]
