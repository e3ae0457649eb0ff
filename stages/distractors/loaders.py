"""Readers of the real distractor formats -> :class:`Conversation` lists.

- MultiWOZ 2.0/2.1 ``data.json`` (dict id -> {"log": [{"text"}...]}, USER/SYSTEM alternate),
  2.2 ``dialogues_*.json`` (list of {"dialogue_id", "turns": [{"speaker", "utterance"}]}),
  and the Hugging Face ``multi_woz_v22`` rows (``turns`` column-wise, speaker 0=USER 1=SYSTEM).
- OpenThoughts: ``OpenThoughts-114k`` default (``conversations: [{from, value}]``) and
  metadata (``problem``, ``deepseek_reasoning``, ``deepseek_solution``) configs, ``OpenThoughts3``.
- MATH worked solutions (``{problem, solution}`` JSON lines).
- Coding-agent trajectories: SWE-agent ``.traj`` (``history``) and OpenAI-style message lists
  with tool calls (tool output becomes the user side of an exchange).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from stages.distractors.units import Conversation, Message, normalise

USER_ROLES = {"user", "human", "USER", 0, "0"}
ASSISTANT_ROLES = {"assistant", "gpt", "SYSTEM", "system_turn", 1, "1"}


class Detokenizer:
    """MultiWOZ's tokenizer spacing ("I 'm", "Thank you .") -> readable text, with sacremoses.

    The Moses detokenizer knows clitics as Moses splits them ("'m", "'s"); MultiWOZ also splits
    negations the Penn Treebank way ("do n't"), which is joined first.
    """

    _NEGATION = re.compile(r"(?<=\w) n't\b")

    def __init__(self) -> None:
        from sacremoses import MosesDetokenizer

        self._moses = MosesDetokenizer(lang="en")

    def __call__(self, text: str) -> str:
        return self._moses.detokenize(self._NEGATION.sub("n't", text).split())


def multiwoz(data: Any, source: str = "multiwoz") -> list[Conversation]:
    """Conversations from any of the three MultiWOZ shapes (detected from the data), detokenised."""
    readable = Detokenizer()
    if isinstance(data, dict) and all(isinstance(v, dict) and "log" in v for v in list(data.values())[:5]):
        return [
            Conversation(f"{source}:{key}", source, normalise(
                ("user" if i % 2 == 0 else "assistant", readable(turn["text"])) for i, turn in enumerate(dialogue["log"])))
            for key, dialogue in sorted(data.items())
        ]
    rows = data if isinstance(data, list) else [data]
    out = []
    for row in rows:
        turns = row["turns"]
        if isinstance(turns, dict):  # Hugging Face multi_woz_v22: column-wise turns
            pairs = zip(turns["speaker"], turns["utterance"])
        else:  # MultiWOZ 2.2 dialogues_*.json
            pairs = ((t["speaker"], t["utterance"]) for t in turns)
        messages = normalise(("user" if speaker in USER_ROLES else "assistant", readable(text)) for speaker, text in pairs)
        out.append(Conversation(f"{source}:{row['dialogue_id']}", source, messages))
    return sorted(out, key=lambda c: c.id)


def openthoughts(rows: Iterable[dict], source: str = "openthoughts") -> list[Conversation]:
    """Conversations from OpenThoughts rows (default/OpenThoughts3 ``conversations`` or metadata)."""
    out = []
    for index, row in enumerate(rows):
        if "conversations" in row:
            messages = normalise(
                ("user" if turn["from"] in USER_ROLES else "assistant", _strip_thought_tags(turn["value"]))
                for turn in row["conversations"])
        else:
            answer = f"{row.get('deepseek_reasoning') or ''}\n\n{row.get('deepseek_solution') or ''}"
            messages = normalise([("user", row["problem"]), ("assistant", answer)])
        out.append(Conversation(f"{source}:{index}", source, messages))
    return out


_THOUGHT_TAGS = re.compile(r"<\|(?:begin|end)_of_(?:thought|solution)\|>|</?think>")


def _strip_thought_tags(text: str) -> str:
    """Drop reasoning/solution delimiters, keeping the parts as paragraphs."""
    return "\n\n".join(part.strip() for part in _THOUGHT_TAGS.split(text) if part.strip())


def math_solutions(lines: Iterable[str], source: str = "math") -> list[Conversation]:
    """Conversations from MATH JSON lines: the problem, then its worked solution."""
    out = []
    for line in lines:
        if line.strip():
            row = json.loads(line)
            key = row.get("idx", row.get("id", len(out)))
            out.append(Conversation(f"{source}:{key}", source, normalise([("user", row["problem"]), ("assistant", row["solution"])])))
    return out


def trajectory(data: Any, name: str, source: str = "swe-agent") -> Conversation:
    """A coding-agent trajectory (SWE-agent ``.traj`` dict or an OpenAI-style message list)."""
    messages = data.get("history", []) if isinstance(data, dict) else data
    return Conversation(f"{source}:{name}", source, normalise(_agent_messages(messages)))


def _agent_messages(messages: list[dict]) -> Iterator[Message]:
    for message in messages:
        role = message.get("role")
        if role == "system" or message.get("message_type") == "demonstration" or message.get("is_demo"):
            continue
        content = message.get("content") or ""
        if isinstance(content, list):  # content parts
            content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        if role == "assistant":
            calls = message.get("tool_calls")
            action = message.get("action")
            if calls and not action:
                calls = json.loads(calls.replace("'", '"')) if isinstance(calls, str) and calls.startswith("[") and '"' in calls else calls
                rendered = [_render_call(call) for call in calls] if isinstance(calls, list) else [str(calls)]
                content = "\n".join([content, *rendered])
            elif action and action.strip() not in content:
                content = f"{content}\n\n{action}"
            yield "assistant", content
        else:  # user, tool, function: what the agent observes
            yield "user", content


def _render_call(call: Any) -> str:
    if isinstance(call, dict) and "function" in call:
        function = call["function"]
        return f"{function.get('name')}({function.get('arguments')})"
    return str(call)
