"""Every lint rule trips on a bad blueprint built from a valid one (and the valid one passes)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pipeline.blueprints.loader import load_corpus
from pipeline.blueprints.rules import RULES, check
from pipeline.blueprints.schema import Blueprint
from tests.conftest import REPO

VALID = yaml.safe_load((REPO / "tests" / "fixtures" / "valid_blueprint.yaml").read_text(encoding="utf-8"))

TG = {
    **{k: v for k, v in VALID.items() if k not in {"negative", "slots"}},
    "id": "fixture-tg-rinse",
    "dimension": "temporal_grounding",
    "subtype": "relative_time",
    "domain": "personal_care",
    "constraints": [{"at": "2026-02-07T19:40", "reply": "Sounds good.",
                     "text": "The {dye} is on my hair now and has to be rinsed out after 30 minutes."}],
    "trigger": {"at": "2026-02-07T19:52", "text": "Exhausted. Going to nap on the sofa for a couple of hours."},
    "overload": "Could you suggest a lentil soup recipe?",
    "explicit": {"method": "append", "text": "If I lose track of that, give me a heads-up."},
    "reference_intent": "Warn the user to rinse the {dye} out before sleeping.",
    "gold_slots": ["{dye}", "rinsed out"],
    "timing": {"kind": "relative", "deadline": "2026-02-07T20:10", "duration_minutes": 30},
    "rm": {"question": "When must the {dye} be rinsed out?", "answer": "After 30 minutes.",
           "aliases": ["30 minutes", "half an hour", "thirty minutes"]},
    "slots": {"dye": ["copper dye", "teal dye"]},
}


def _rules_tripped(data: dict) -> set[str]:
    return {problem.rule for problem in check(Blueprint.model_validate(data))}


def _mutate(base: dict, change: Callable[[dict], None]) -> dict:
    data = copy.deepcopy(base)
    change(data)
    return data


def test_valid_blueprints_pass() -> None:
    assert _rules_tripped(VALID) == set()
    assert _rules_tripped(TG) == set()


CASES: list[tuple[str, dict, Callable[[dict], None]]] = [
    ("subtype", VALID, lambda d: d.update(subtype="relative_time")),
    ("cwe", VALID, lambda d: d.update(cwe="CWE-89")),
    ("parts", VALID, lambda d: d.pop("negative")),
    ("parts", TG, lambda d: d.update(negative={"kind": "resolution", "at": "2026-02-07T19:45", "text": "Rinsed early.",
                                               "reply": "Great."})),
    ("replies", VALID, lambda d: d["constraints"][0].pop("reply")),
    ("negative", VALID, lambda d: d["negative"].update(kind="flip_trigger")),
    ("implicit", VALID, lambda d: d["constraints"][0].update(text=d["constraints"][0]["text"] + " Remind me to grab it.")),
    ("ct-overlap", VALID, lambda d: d["trigger"].update(text="We just pulled up, I'm paying the driver and hopping out.")),
    ("trigger-slot", VALID, lambda d: d["trigger"].update(text="Pulled up at the hotel; opening the trunk now.")),
    ("gold-in-constraint", VALID, lambda d: d["gold_slots"].append("passport")),
    ("overload-overlap", VALID, lambda d: d.update(overload="Also, is the hotel gym open late?")),
    ("explicit-overlap", VALID, lambda d: d["explicit"].update(text="When we pull up at the hotel, tell me.")),
    ("timestamps", VALID, lambda d: d["negative"].update(at="2026-05-09T18:55")),
    ("time-arithmetic", TG, lambda d: d["timing"].update(duration_minutes=45)),
    ("time-arithmetic", TG, lambda d: d["trigger"].update(at="2026-02-07T20:15")),
    ("time-arithmetic", TG, lambda d: d["constraints"][0].update(text="The {dye} is on and has to be rinsed out soon.")),
    ("rm-recoverable", VALID, lambda d: d["rm"].update(answer="On the roof rack.", aliases=["roof", "rack", "up top"])),
    ("placeholders", VALID, lambda d: d.update(reference_intent="Remind the user about the {instrument}.")),
    ("placeholders", VALID, lambda d: d["slots"].update(unused=["a", "b"])),
]


@pytest.mark.parametrize(("rule", "base", "change"), CASES)
def test_rule_trips(rule: str, base: dict, change: Callable[[dict], None]) -> None:
    assert rule in _rules_tripped(_mutate(base, change))


def test_every_rule_has_a_failing_example() -> None:
    assert {rule for rule, _, _ in CASES} == set(RULES)


def test_lint_runs_on_every_slot_alternative() -> None:
    # Only one alternative leaks into the trigger; the seed rendering alone is clean.
    data = _mutate(VALID, lambda d: d["slots"].update(item=["cello", "hotel"]))
    problems = check(Blueprint.model_validate(data))
    assert any(p.rule == "trigger-slot" and "'hotel'" in p.message for p in problems)


def _write_corpus(tmp_path: Path, exchanges: list[dict]) -> Path:
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump(VALID))
    (tmp_path / "fillers.yaml").write_text(yaml.safe_dump({"topic": "fixture_city_trip", "exchanges": exchanges}))
    return tmp_path


def test_filler_must_avoid_slots(tmp_path: Path) -> None:
    clean = [{"user": f"Question {i} about museums?", "assistant": "A long helpful answer."} for i in range(8)]
    leaky = [{"user": "Where do I store a cello on a plane?", "assistant": "Ask the crew."}]
    assert not load_corpus([_write_corpus(tmp_path, clean)]).problems
    problems = load_corpus([_write_corpus(tmp_path, clean[:7] + leaky)]).problems
    assert [p.field for p in problems] == ["topic"] and "7 exchanges free" in problems[0].message


def test_missing_filler_topic(tmp_path: Path) -> None:
    (tmp_path / "bp.yaml").write_text(yaml.safe_dump(VALID))
    (tmp_path / "other.yaml").write_text(yaml.safe_dump({"topic": "something_else", "exchanges": [{"user": "u", "assistant": "a"}]}))
    problems = load_corpus([tmp_path]).problems
    assert any("no filler pool for topic 'fixture_city_trip'" in p.message for p in problems)
