"""Distractor loaders on the real formats, the time-expression filter, and source resolution."""

from __future__ import annotations

import json
import re
import time
import zipfile
from pathlib import Path

import pytest

from stages.distractors import loaders
from stages.distractors.resolve import DistractorSourceError, resolve
from stages.distractors.units import exchanges, has_time_expression, time_patterns
from tests.conftest import run_cli


@pytest.mark.parametrize("text", ["I want to leave after 17:15 .", "arrive by 9 : 30 please", "a table at 7pm",
                                  "around 10:30 am", "tomorrow works", "see you tonight", "at noon", "on Saturdays",
                                  "it is 5 o'clock", "by 6 p.m. sharp", "I need it for 3 nights and 2 people .",
                                  "it takes two hours", "half an hour", "this evening", "on 4/5/2018"])
def test_time_expressions_found(text: str) -> None:
    assert has_time_expression(text)


@pytest.mark.parametrize("text", ["The ticket is 17.60 pounds .", "I am looking for a cheap hotel .",
                                  "It has 4 stars and free parking .", "We're here 24/7 if you need us .",
                                  "Have a nice day .", "It serves breakfast .", "May I have the postcode ?"])
def test_non_times_kept(text: str) -> None:
    assert not has_time_expression(text)


def _multiwoz_21(shared: Path) -> dict:
    with zipfile.ZipFile(shared / "multiwoz" / "val.json.zip") as archive:
        return json.loads(archive.read("val.json"))


# (dialogue, turn, pattern) of real MultiWOZ 2.1 validation lines, each holding one kind of time expression
REAL_TIME_LINES = [
    ("MUL0012", 14, "clock"), ("MUL0016", 14, "clock"), ("MUL0376", 15, "clock"), ("MUL2064", 18, "clock"),
    ("PMUL2975", 18, "clock"),  # "I need to leave the hotel at 24:30 ." (MultiWOZ writes past midnight as 24:xx)
    ("MUL0051", 15, "duration"), ("MUL0293", 5, "duration"), ("MUL0227", 11, "duration"), ("MUL0637", 9, "duration"),
    ("MUL1988", 15, "part-of-day"), ("MUL0759", 12, "part-of-day"), ("MUL0142", 12, "part-of-day"),
    ("MUL0013", 11, "relative-day"), ("MUL2677", 0, "relative-day"), ("PMUL0912", 12, "relative-day"),
    ("MUL0106", 12, "weekday"), ("MUL0206", 2, "weekday"), ("MUL0209", 6, "weekday"),
    ("MUL0128", 4, "date"), ("SNG01626", 2, "date"),
]


@pytest.fixture(scope="module")
def multiwoz_21(shared_data: Path) -> dict:
    return _multiwoz_21(shared_data)


@pytest.mark.parametrize("dialogue, turn, pattern", REAL_TIME_LINES)
def test_time_patterns_on_real_multiwoz_lines(multiwoz_21: dict, dialogue: str, turn: int, pattern: str) -> None:
    """Each real line is caught by its pattern, both as the corpus spells it and once detokenised."""
    text = multiwoz_21[dialogue]["log"][turn]["text"]
    assert pattern in time_patterns(text), text
    (readable,) = loaders.multiwoz({dialogue: multiwoz_21[dialogue]})
    assert pattern in time_patterns(readable.messages[turn][1]), readable.messages[turn][1]


def test_multiwoz_three_shapes_agree(shared_data: Path) -> None:
    data = _multiwoz_21(shared_data)
    conversations = loaders.multiwoz(data)
    assert len(conversations) == 999
    key = sorted(data)[0]
    log = [turn["text"] for turn in data[key]["log"]]
    v21 = next(c for c in conversations if c.id == f"multiwoz:{key}")
    assert [role for role, _ in v21.messages[:4]] == ["user", "assistant", "user", "assistant"]
    assert log[0] == "I need information on a hotel that includes free parking please ."
    assert v21.messages[0][1] == "I need information on a hotel that includes free parking please."
    v22_file = [{"dialogue_id": key, "services": [], "turns": [
        {"turn_id": str(i), "speaker": "USER" if i % 2 == 0 else "SYSTEM", "utterance": text, "frames": []}
        for i, text in enumerate(log)]}]
    hf_row = {"dialogue_id": key, "services": [], "turns": {"turn_id": [str(i) for i in range(len(log))],
                                                            "speaker": [i % 2 for i in range(len(log))],
                                                            "utterance": log}}
    assert loaders.multiwoz(v22_file)[0].messages == v21.messages
    assert loaders.multiwoz([hf_row])[0].messages == v21.messages


def test_multiwoz_detokenised(multiwoz_21: dict) -> None:
    """Real lines lose the corpus's tokenizer spacing; hardly any turn keeps it."""
    (mul0209,) = loaders.multiwoz({"MUL0209": multiwoz_21["MUL0209"]})
    assert multiwoz_21["MUL0209"]["log"][6]["text"].startswith("I do n't have a specific time I need to arrive , but")
    assert mul0209.messages[6][1].startswith("I don't have a specific time I need to arrive, but")
    conversations = loaders.multiwoz(multiwoz_21)
    texts = [content for c in conversations for _, content in c.messages]
    spaced = re.compile(r" [.,?!]( |$)| '(?:s|m|d|re|ll|ve)\b| n't\b")
    raw = [turn["text"] for dialogue in multiwoz_21.values() for turn in dialogue["log"]]
    assert sum(bool(spaced.search(t)) for t in raw) > 0.9 * len(raw)
    assert sum(bool(spaced.search(t)) for t in texts) < 0.01 * len(texts)


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


def test_swe_agent_trajectory_as_a_help_session(shared_data: Path) -> None:
    """The user asks for help with the issue; the agent's thoughts, commands and outputs are assistant turns."""
    root = shared_data / "trajectories" / "swe-agent"
    path = next(root.rglob("pydicom__pydicom-1458.traj"))
    data = json.loads(path.read_text())
    conversation = loaders.trajectory(data, path.name)
    roles = [role for role, _ in conversation.messages]
    assert roles[0] == "user" and roles[-1] == "assistant" and all(a != b for a, b in zip(roles, roles[1:]))
    first = conversation.messages[0][1]
    assert first.startswith("Could you help me with this?")
    assert "Pixel Representation attribute should be optional" in first
    assert "INSTRUCTIONS" not in first and "We're currently solving" not in first
    text = "\n".join(content for _, content in conversation.messages)
    assert "SETTING: You are an autonomous programmer" not in text and "bash-$" not in text
    # every step of the real trajectory, in order, inside assistant turns: thought, command, output
    assistant = "\n".join(content for role, content in conversation.messages if role == "assistant")
    position = 0
    history = [m for m in data["history"] if m["role"] != "system" and not m.get("is_demo")]
    for message, following in zip(history, history[1:] + [{}]):
        if message["role"] != "assistant":
            continue
        output = ("Output:",) if following.get("role") == "user" else ()
        for part in (message["thought"].strip()[:60], f"```\n{message['action'].strip()[:40]}", *output):
            found = assistant.find(part, position)
            assert found >= 0, part
            position = found
    users = [content for role, content in conversation.messages[1:] if role == "user"]
    assert users and all(len(u) < 40 for u in users)  # the user only says to go on
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
    (user, first), (go_on, last) = exchanges(conversation.messages)
    assert user == ("user", "Could you help me with this?\n\nFix the failing test.")
    assert first == ("assistant", "Let me look.\n\n```\nbash({\"cmd\": \"pytest -x\"})\n```\n\nOutput:\n```\n1 failed\n```")
    assert go_on[0] == "user" and len(go_on[1]) < 40  # one agent step per assistant turn; the user says to go on
    assert last == ("assistant", "The assertion is off by one; editing.")


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


def test_semantic_filter_skips_snippets_close_to_the_constraint(multiwoz_21: dict) -> None:
    """Real MultiWOZ hotel bookings echo a hotel-rate-cap constraint; an attraction query does not."""
    from stages.audit.embeddings import Embedder, load_bundled
    from stages.distractors.semantic import SemanticFilter

    conversations = {c.id: c for c in loaders.multiwoz(multiwoz_21)}
    hotel = conversations["multiwoz:MUL0012"].messages[:4]  # a hotel with free parking and wifi
    attraction = next(c.messages[:2] for c in conversations.values() if "museum" in c.messages[0][1].lower()
                      and "hotel" not in " ".join(m for _, m in c.messages[:2]).lower())
    snippets = [{"id": "hotel", "source": "multiwoz", "messages": [list(m) for m in hotel]},
                {"id": "attraction", "source": "multiwoz", "messages": [list(m) for m in attraction]}]
    semantic = SemanticFilter(Embedder(load_bundled()), snippets, percentile=95.0, floor=0.3)
    verdict = semantic.judge(
        "multiwoz", ["hotel", "attraction"],
        ["Our travel policy caps hotels at $180 a night; finance bounces anything above that."],
        "I'm going to repaint the spare bedroom a pale green.",
        ["What is a good way to back up a large photo library?", "How do I find duplicate pictures on my laptop?",
         "Should I sort my photos by year or by event?"])
    assert verdict.reasons == ["semantic_constraint", None], verdict
    assert verdict.constraint_threshold >= 0.3
    assert verdict.nearest_constraint[0] > verdict.constraint_threshold > verdict.nearest_constraint[1]


def test_semantic_filter_checks_each_sentence_of_a_constraint_inside_a_question(multiwoz_21: dict) -> None:
    """la-me-hotel-rate-cap's constraint rides inside a question about a conference talk. Embedded whole, the
    turn is closest to the talk, and a real MultiWOZ hotel booking falls below the turn's threshold; its
    rule sentence, checked on its own against its own background, catches the booking."""
    from stages.audit.embeddings import Embedder, load_bundled
    from stages.distractors.semantic import SemanticFilter, constraint_sentences

    conversations = {c.id: c for c in loaders.multiwoz(multiwoz_21)}
    hotel = conversations["multiwoz:MUL0012"].messages[:4]
    snippets = [{"id": "hotel", "source": "multiwoz", "messages": [list(m) for m in hotel]}]
    constraint = ("My talk got accepted for the conference, which is thrilling and slightly terrifying. Our new travel "
                  "policy is strict: hotels can't go over $180 a night, and anything above that gets bounced back by "
                  "finance no matter who signed off on it. Now I need to pitch a technical talk to a very mixed "
                  "audience, from engineers to sales people. Where do I even start?")
    background = ["How long should the talk's opening story be before I get to the point?",
                  "Should I put the architecture diagram early or keep it for the questions?",
                  "What do I do if the sales people start checking their phones halfway through my talk?",
                  "How many slides is too many for a twenty-five minute slot?"]
    sentences = constraint_sentences([constraint])
    assert sentences[1].startswith("Our new travel policy is strict") and len(sentences) == 4  # "Where do I even start?"
    assert constraint_sentences(["One sentence only, so nothing to split."]) == []
    semantic = SemanticFilter(Embedder(load_bundled()), snippets, percentile=95.0, floor=0.3)
    verdict = semantic.judge("multiwoz", ["hotel"], [constraint], None, background)
    assert verdict.nearest_constraint[0] <= verdict.constraint_threshold  # the whole turn alone would keep it
    assert verdict.reasons == ["semantic_constraint"], verdict
