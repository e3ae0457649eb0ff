"""The ``aime_probe`` stage through its contract, on real seeds and the real AIME-2025 file.

Rows come from the offline stages (``tests/test_stages_offline.py``'s chain) over two seeds per
dimension; the problems are ``../shared/data/aime2025/test.jsonl``. Expected values come from
that file and the rows, never from the stage.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pipeline.stage import StageContext
from stages.aime_probe import FORMAT_HINT, AimeProbe, load_problems
from stages.eval.scorers import aime_correct, aime_extract
from tests.test_stages_offline import corpus, through_variants

SEEDS = ("state_tracking/st-badge-side-door.yaml", "state_tracking/st-campervan-fob.yaml",
         "temporal_grounding/tg-rel-gel-run.yaml", "logical_adherence/la-it-glucose-cake.yaml",
         "attention_recovery/ar-math-wedding-toast.yaml", "attention_recovery/ar-code-flashcards.yaml",
         "safe_coding/sc-cookie-insecure.yaml")
STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\] ")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = through_variants(corpus(tmp_path_factory.mktemp("aime-seeds"), *SEEDS),
                           split={"dev_fraction": 0.0})
    return out["variants"].items


@pytest.fixture(scope="module")
def aime_env(shared_data: Path) -> dict[str, Any]:
    return {"aime": {"kind": "local", "location": str(shared_data), "files": ["aime2025/test.jsonl"], "digest": "x"}}


def _run(rows: list[dict], env: dict, **params: Any):
    stage = AimeProbe(params)
    return stage.run({"variants": rows}, StageContext(seed=0, stage=stage.name, environment=env))


def test_problems_load_with_integer_answers(aime_env: dict, shared_data: Path) -> None:
    problems = load_problems(aime_env["aime"])
    lines = [json.loads(line) for line in (shared_data / "aime2025" / "test.jsonl").read_text().splitlines()]
    assert len(problems) == 30 and [p["id"] for p in problems] == [str(i) for i in range(30)]
    assert {p["id"]: p["answer"] for p in problems} == {line["id"]: int(line["answer"]) for line in lines}
    assert problems[0]["answer"] == 70 and problems[29]["answer"] == 240  # AIME 2025 I-1 and II-15


def test_every_pair_meets_every_problem(rows: list[dict], aime_env: dict) -> None:
    out = _run(rows, aime_env, pairs_per_dimension=2)
    pos_clean = [r for r in rows if (r["config"], r.get("variant")) == ("pm_base", "pos_clean")]
    chosen = sorted({r["id"].rsplit(".", 1)[0] for r in out.items})
    per_dimension: dict[str, int] = {}
    for row in out.items:
        per_dimension[row["dimension"]] = per_dimension.get(row["dimension"], 0) + 1
    # two pairs per dimension where the seeds give two, each with all 30 problems
    assert set(per_dimension.values()) == {60} and len(out.items) == 30 * len(chosen)
    # attention recovery only from math interruptions: the coding seed is never picked
    assert not any(r["blueprint_id"].startswith("ar-code") for r in out.items)
    # one row per family first: both state-tracking seeds are used before a second rendering of either
    assert {r["seed_id"] for r in out.items if r["dimension"] == "state_tracking"} == {"st-badge-side-door",
                                                                                       "st-campervan-fob"}
    base = {r["id"]: r for r in pos_clean}
    problems = {p["id"]: p for p in load_problems(aime_env["aime"])}
    for row in out.items:
        source = base[row["id"].rsplit(".", 1)[0] + ".base"]
        messages, math = row["messages"], row["messages"][row["math_turn"]]
        assert messages[:row["math_turn"]] == source["messages"][:-1]  # the history as stored
        assert messages[-1] == source["messages"][-1] and row["trigger_turn"] == len(messages) - 1
        assert row["math_reply_turn"] == row["math_turn"] + 1 and messages[row["math_reply_turn"]] == {
            "role": "assistant", "content": ""}
        assert problems[row["aime_id"]]["problem"] in math["content"] and math["content"].endswith(FORMAT_HINT)
        assert row["aime_answer"] == problems[row["aime_id"]]["answer"]
        assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + ["user"]
        stamps = [STAMP.match(m["content"]).group(1) for m in messages if m["role"] == "user"]
        assert stamps == sorted(stamps), row["id"]
        assert row["constraint_turns"] == source["constraint_turns"] and row["expected"] == "intervene"


def test_the_probe_is_deterministic_and_needs_a_source(rows: list[dict], aime_env: dict) -> None:
    first, second = _run(rows, aime_env, pairs_per_dimension=3), _run(rows, aime_env, pairs_per_dimension=3)
    assert json.dumps(first.items, sort_keys=True) == json.dumps(second.items, sort_keys=True)
    missing = _run(rows, {"aime": None})
    assert not missing.items and [d.reason for d in missing.dropped] == ["no_aime_source"]


@pytest.mark.parametrize("response, value", [
    ("So the answer is \\boxed{70}.", 70),
    ("First \\boxed{12}, corrected: \\boxed{ 588 }", 588),
    ("The sum is 1,024 in all", 1024),
    ("No integer here.", None),
    ("\\boxed{x} then 33", 33),
])
def test_aime_extract(response: str, value: int | None) -> None:
    assert aime_extract(response) == value
    assert aime_correct(response, 70) == (value == 70)
