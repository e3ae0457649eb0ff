"""Distractor loaders on the real formats, the time-expression filter, and source resolution."""

from __future__ import annotations

import json
import time
import zipfile
from pathlib import Path

import pytest

from stages.distractors import loaders
from stages.distractors.resolve import DistractorSourceError, resolve
from stages.distractors.units import exchanges, has_time_expression
from tests.conftest import run_cli


@pytest.mark.parametrize("text", ["I want to leave after 17:15 .", "arrive by 9 : 30 please", "a table at 7pm",
                                  "around 10:30 am", "tomorrow works", "see you tonight", "at noon", "on Saturdays",
                                  "it is 5 o'clock", "by 6 p.m. sharp"])
def test_time_expressions_found(text: str) -> None:
    assert has_time_expression(text)


@pytest.mark.parametrize("text", ["The ticket is 17.60 pounds .", "I am looking for a cheap hotel .",
                                  "It has 4 stars and free parking .", "I need it for 3 nights and 2 people ."])
def test_non_times_kept(text: str) -> None:
    assert not has_time_expression(text)


def _multiwoz_21(shared: Path) -> dict:
    with zipfile.ZipFile(shared / "multiwoz" / "val.json.zip") as archive:
        return json.loads(archive.read("val.json"))


def test_multiwoz_three_shapes_agree(shared_data: Path) -> None:
    data = _multiwoz_21(shared_data)
    conversations = loaders.multiwoz(data)
    assert len(conversations) == 999
    key = sorted(data)[0]
    log = [turn["text"] for turn in data[key]["log"]]
    v21 = next(c for c in conversations if c.id == f"multiwoz:{key}")
    assert [role for role, _ in v21.messages[:4]] == ["user", "assistant", "user", "assistant"]
    assert v21.messages[0][1] == log[0].strip()
    v22_file = [{"dialogue_id": key, "services": [], "turns": [
        {"turn_id": str(i), "speaker": "USER" if i % 2 == 0 else "SYSTEM", "utterance": text, "frames": []}
        for i, text in enumerate(log)]}]
    hf_row = {"dialogue_id": key, "services": [], "turns": {"turn_id": [str(i) for i in range(len(log))],
                                                            "speaker": [i % 2 for i in range(len(log))],
                                                            "utterance": log}}
    assert loaders.multiwoz(v22_file)[0].messages == v21.messages
    assert loaders.multiwoz([hf_row])[0].messages == v21.messages


def test_openthoughts_configs() -> None:
    default = {"system": "Your role as an assistant involves thoroughly exploring questions...",
               "conversations": [{"from": "user", "value": "Return your final response within \\boxed{}. What is 2+3?"},
                                 {"from": "assistant", "value": "<|begin_of_thought|>\n\nAdd them.\n\n<|end_of_thought|>\n\n"
                                                                "<|begin_of_solution|>\n\n\\boxed{5}\n\n<|end_of_solution|>"}]}
    metadata = {"problem": "What is 2+3?", "deepseek_reasoning": "Add them.", "deepseek_solution": "\\boxed{5}",
                "ground_truth_solution": "5", "domain": "math", "source": "x", "test_cases": "", "starter_code": ""}
    ot3 = {"difficulty": 3, "source": "x", "domain": "math",
           "conversations": [{"from": "human", "value": "What is 2+3?"}, {"from": "gpt", "value": "<think>Add.</think>5"}]}
    first, second, third = loaders.openthoughts([default, metadata, ot3])
    assert first.messages == (("user", "Return your final response within \\boxed{}. What is 2+3?"),
                              ("assistant", "Add them.\n\n\\boxed{5}"))
    assert second.messages == (("user", "What is 2+3?"), ("assistant", "Add them.\n\n\\boxed{5}"))
    assert third.messages == (("user", "What is 2+3?"), ("assistant", "Add.\n\n5"))


def test_math_solutions(shared_data: Path) -> None:
    lines = (shared_data / "math" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    conversations = loaders.math_solutions(lines)
    assert len(conversations) == 5000
    assert conversations[0].messages[0][0] == "user" and "\\boxed" in conversations[0].messages[1][1]


def test_swe_agent_trajectory(shared_data: Path) -> None:
    root = shared_data / "trajectories" / "swe-agent"
    path = next(root.rglob("6e44b9__sweagenttestrepo-1c2844.traj"))
    data = json.loads(path.read_text())
    conversation = loaders.trajectory(data, path.name)
    roles = [role for role, _ in conversation.messages]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))
    assert not any("SETTING: You are an autonomous programmer" in c for _, c in conversation.messages)
    agent_turns = [m for m in data["history"] if m["role"] == "assistant"]
    assert roles.count("assistant") == len(agent_turns)
    assert len(exchanges(conversation.messages)) >= 4


def test_openai_messages_with_tool_calls() -> None:
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\": \"pytest -x\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
        {"role": "assistant", "content": "The assertion is off by one; editing."},
    ]
    conversation = loaders.trajectory(messages, "example")
    assert conversation.messages == (
        ("user", "Fix the failing test."),
        ("assistant", "Let me look.\nbash({\"cmd\": \"pytest -x\"})"),
        ("user", "1 failed"),
        ("assistant", "The assertion is off by one; editing."),
    )


def test_resolution_prefers_local_then_fails_fast_and_clearly(shared_data: Path, tmp_path: Path) -> None:
    assert resolve("state_tracking", ["multiwoz"], shared_data).kind == "local"
    assert resolve("attention_recovery", ["openthoughts", "math"], shared_data).name == "math"
    started = time.monotonic()
    with pytest.raises(DistractorSourceError) as error:
        resolve("attention_recovery", ["openthoughts"], tmp_path, hub_ok=None)
    assert time.monotonic() - started < 3
    assert "--distractors-dir" in str(error.value) and "Hub" in str(error.value)


def test_build_without_any_distractor_source(tmp_path: Path) -> None:
    started = time.monotonic()
    result = run_cli("build", "--distractors-dir", str(tmp_path), "--out", str(tmp_path / "out"),
                     "--cache-dir", str(tmp_path / "cache"))
    assert result.returncode == 1
    assert "no distractor source" in result.stderr and "--distractors-dir" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 30
