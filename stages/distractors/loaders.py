"""Readers of the real distractor formats -> :class:`Conversation` lists.

- MultiWOZ 2.0/2.1 ``data.json`` (dict id -> {"log": [{"text"}...]}, USER/SYSTEM alternate),
  2.2 ``dialogues_*.json`` (list of {"dialogue_id", "turns": [{"speaker", "utterance"}]}),
  and the Hugging Face ``multi_woz_v22`` rows (``turns`` column-wise, speaker 0=USER 1=SYSTEM).
- OpenThoughts: ``OpenThoughts-114k`` default (``conversations: [{from, value}]``) and
  metadata (``problem``, ``deepseek_reasoning``, ``deepseek_solution``) configs, ``OpenThoughts3``.
- MATH worked solutions (``{problem, solution}`` JSON lines).
- Coding-agent trajectories: SWE-agent ``.traj`` (``history``) and OpenAI-style message lists
  with tool calls, rendered as a user asking for help and the assistant's work (thought, command,
  output) inside assistant turns.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
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


def trajectory(data: Any, name: str, source: str = "swe-agent", max_turn_chars: int = 0) -> Conversation:
    """A coding-agent trajectory (SWE-agent ``.traj`` dict or an OpenAI-style message list) as a help session.

    The user asks for help with the task (the agent's first observation, without the agent
    framework's instructions); the assistant's turns hold its work, step after step: the thought,
    the command in a code block and the command's output. Steps are grouped into assistant turns of
    at most ``max_turn_chars`` (default 0: one step per turn, so the time filter drops single
    steps); between two turns the user says to go on.
    """
    messages = data.get("history", []) if isinstance(data, dict) else data
    conversation_id = f"{source}:{name}"
    task, steps = _agent_steps(messages)
    if not task:
        return Conversation(conversation_id, source, ())
    turns: list[Message] = [("user", f"Could you help me with this?\n\n{task}")]
    current: list[str] = []
    for step in steps:
        if current and sum(map(len, current)) + len(step) > max_turn_chars:
            turns += [("assistant", "\n\n".join(current)), ("user", _go_on(conversation_id, len(turns)))]
            current = []
        current.append(step)
    if current:
        turns.append(("assistant", "\n\n".join(current)))
    return Conversation(conversation_id, source, normalise(turns))


_GO_ON = ("Go ahead.", "OK, what next?", "Keep going.", "Makes sense, carry on.", "Alright, continue.",
          "Sounds good, what's the next step?", "Thanks, please continue.", "Got it. Go on.")


def _go_on(conversation_id: str, index: int) -> str:
    """A short "go on" from the user, picked by a digest of the position (deterministic, varied)."""
    return _GO_ON[zlib.crc32(f"{conversation_id}#{index}".encode()) % len(_GO_ON)]


_FRAMEWORK_LINE = re.compile(r"^\((?:Open file|Current directory|Interactive session)[^\n]*\)$|^bash-\$$", re.MULTILINE)


def _agent_steps(messages: list[dict]) -> tuple[str, list[str]]:
    """The task the user brings and the agent's rendered steps (thought, command, output)."""
    task = ""
    steps: list[list[str]] = []
    for message in messages:
        role = message.get("role")
        if role == "system" or message.get("message_type") == "demonstration" or message.get("is_demo"):
            continue
        content = _text(message.get("content"))
        if role == "assistant":
            thought, command = _thought_and_command(message, content)
            steps.append([thought.strip(), f"```\n{command.strip()}\n```" if command.strip() else ""])
        elif not task and not steps:
            task = _task_text(content)
        elif steps:  # user, tool, function: the output of the last command
            output = _FRAMEWORK_LINE.sub("", content).strip()
            steps[-1].append(f"Output:\n```\n{output}\n```" if output else "(no output)")
    return task, ["\n\n".join(part for part in step if part) for step in steps]


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _task_text(content: str) -> str:
    """The problem statement without the agent framework's framing and instructions."""
    body = content.split("INSTRUCTIONS:", 1)[0]
    if "ISSUE:" in body:
        body = body.split("ISSUE:", 1)[1]
    lines = body.strip().splitlines()
    if lines and lines[0].startswith("We're currently solving"):
        lines = lines[1:] if "The description is:" not in lines[0] else [lines[0].split("The description is:", 1)[1], *lines[1:]]
    return "\n".join(lines).strip()


def _thought_and_command(message: dict, content: str) -> tuple[str, str]:
    """An assistant step's thought and its command (``action`` field, tool calls, or a trailing code block)."""
    thought = message.get("thought")
    action = message.get("action")
    calls = message.get("tool_calls")
    if not action and calls:
        calls = json.loads(calls.replace("'", '"')) if isinstance(calls, str) and calls.startswith("[") and '"' in calls else calls
        action = "\n".join(_render_call(call) for call in calls) if isinstance(calls, list) else str(calls)
    if thought is None:
        thought = content
        if action and action.strip() in thought:
            thought = thought.replace(f"```\n{action.strip()}\n```", "").replace(action.strip(), "")
    return thought, action or ""


def _render_call(call: Any) -> str:
    if isinstance(call, dict) and "function" in call:
        function = call["function"]
        return f"{function.get('name')}({function.get('arguments')})"
    return str(call)
