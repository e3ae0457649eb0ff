"""The paper's construction rules, checked on every row of the built default release."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import tokenizer

pytestmark = pytest.mark.slow
STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\] ")
TABLE2 = {  # the paper's Table 2: PM tasks per dimension and variant, RM probes per dimension
    ("state_tracking", "pos_clean"): 108, ("state_tracking", "pos_over"): 108, ("state_tracking", "neg_clean"): 108,
    ("temporal_grounding", "pos_clean"): 143, ("temporal_grounding", "pos_over"): 143,
    ("logical_adherence", "pos_clean"): 133, ("logical_adherence", "pos_over"): 133, ("logical_adherence", "neg_clean"): 133,
    ("attention_recovery", "pos_clean"): 56, ("attention_recovery", "pos_over"): 56,
    ("safe_coding", "pos_clean"): 48, ("safe_coding", "pos_over"): 48, ("safe_coding", "neg_clean"): 48,
}
NEGATIVE_DIMENSIONS = {"state_tracking", "safe_coding", "logical_adherence"}


def _rows(release: Path, config: str) -> list[dict]:
    rows = []
    for split in ("test", "dev"):
        for path in sorted((release / "data" / config).glob(f"{split}-*.parquet")):
            rows += [{**row, "split": split} for row in pq.read_table(path).to_pylist()]
    return rows


@pytest.fixture(scope="module")
def rows(default_build: dict) -> dict[str, list[dict]]:
    release = default_build["release"]
    return {config: _rows(release, config) for config in ("pm_base", "explicit_base", "rm_base", "blueprints")}


def _index(rows: list[dict]) -> dict[tuple[str, str], dict]:
    return {(row["blueprint_id"], row["variant"]): row for row in rows}


def test_counts_at_least_the_papers(rows: dict) -> None:
    counts = Counter((row["dimension"], row["variant"]) for row in rows["pm_base"])
    for key, minimum in TABLE2.items():
        assert counts[key] >= minimum, (key, counts[key])
    assert not [k for k in counts if k not in TABLE2], "unexpected dimension x variant"
    assert sum(counts.values()) >= 1265
    assert len(rows["rm_base"]) >= 440


def test_base_dialogues_have_the_papers_shape(rows: dict) -> None:
    """The paper's Table 6 (base context, Pos-Clean): every dimension's mean is 2,000-3,500 o200k tokens over
    13-20 messages (the story replies are full answers; short ones gave 1,400-1,750 tokens at the same turns)."""
    tokens: dict[str, list[int]] = defaultdict(list)
    turns: dict[str, list[int]] = defaultdict(list)
    for row in rows["pm_base"]:
        if row["variant"] == "pos_clean" and row["constraint_form"] == "implicit":
            tokens[row["dimension"]].append(row["n_tokens"])
            turns[row["dimension"]].append(row["n_turns"])
    shape = {d: (round(sum(t) / len(t)), round(sum(turns[d]) / len(turns[d]), 1)) for d, t in tokens.items()}
    assert len(shape) == 5, shape
    assert all(2000 <= mean_tokens <= 3500 and 13 <= mean_turns <= 20 for mean_tokens, mean_turns in shape.values()), shape


def test_message_shape_timestamps_and_token_counts(rows: dict) -> None:
    for config in ("pm_base", "explicit_base", "rm_base"):
        texts = [m["content"] for row in rows[config] for m in row["messages"]]
        counts = iter(tokenizer.count_many(texts))
        for row in rows[config]:
            messages = row["messages"]
            assert messages[-1]["role"] == "user" and row["n_turns"] == len(messages)
            times = []
            for message in messages:
                if message["role"] == "user":
                    match = STAMP.match(message["content"])
                    assert match, (row["id"], message["content"][:40])
                    times.append(match.group(1))
            assert times == sorted(times), row["id"]
            assert row["n_tokens"] == sum(next(counts) for _ in messages), row["id"]


def test_ids_are_blueprint_variant_form_context(rows: dict) -> None:
    for config, form in (("pm_base", "implicit"), ("explicit_base", "explicit")):
        ids = [row["id"] for row in rows[config]]
        assert len(ids) == len(set(ids))
        for row in rows[config]:
            assert row["id"] == f"{row['blueprint_id']}.{row['variant']}.{form}.base"
            assert row["trigger_turn"] == len(row["messages"]) - 1
            assert row["expected"] == ("silent" if row["variant"] == "neg_clean" else "intervene")


def test_pos_over_preserves_the_clean_trigger_as_prefix(rows: dict) -> None:
    for config in ("pm_base", "explicit_base"):
        index = _index(rows[config])
        for (blueprint_id, variant), row in index.items():
            if variant != "pos_over":
                continue
            clean = index[(blueprint_id, "pos_clean")]
            assert row["messages"][:-1] == clean["messages"][:-1]
            clean_trigger, over_trigger = clean["messages"][-1]["content"], row["messages"][-1]["content"]
            assert over_trigger.startswith(clean_trigger + " ") and len(over_trigger) > len(clean_trigger) + 10


def test_negatives_only_where_allowed_and_resolution_placed(rows: dict) -> None:
    by_dimension = defaultdict(set)
    for row in rows["pm_base"]:
        by_dimension[row["dimension"]].add(row["variant"])
        if row["variant"] != "neg_clean":
            assert row["resolution_turn"] is None
            continue
        assert row["dimension"] in NEGATIVE_DIMENSIONS
        if row["dimension"] in {"state_tracking", "safe_coding"}:
            turn = row["resolution_turn"]
            assert max(row["constraint_turns"]) < turn < row["trigger_turn"], row["id"]
            assert row["messages"][turn]["role"] == "user" and row["messages"][turn + 1]["role"] == "assistant"
    for dimension in NEGATIVE_DIMENSIONS:
        assert "neg_clean" in by_dimension[dimension]
    assert "neg_clean" not in by_dimension["temporal_grounding"] | by_dimension["attention_recovery"]
    index = _index(rows["pm_base"])
    for (blueprint_id, variant), row in index.items():
        if variant == "neg_clean" and row["dimension"] in {"state_tracking", "safe_coding"}:
            clean = index[(blueprint_id, "pos_clean")]
            turn = row["resolution_turn"]  # the parity slot: Pos-Clean has a benign exchange there
            assert len(row["messages"]) == len(clean["messages"])
            assert row["messages"][:turn] + row["messages"][turn + 2:] == clean["messages"][:turn] + clean["messages"][turn + 2:]
            assert row["messages"][turn]["content"][:18] == clean["messages"][turn]["content"][:18]  # same time


def test_explicit_rows_differ_only_in_the_constraint_turn(rows: dict) -> None:
    implicit = _index(rows["pm_base"])
    assert {row["dimension"] for row in rows["explicit_base"]} == {
        "state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery"}
    for row in rows["explicit_base"]:
        base = implicit[(row["blueprint_id"], row["variant"])]
        assert len(row["messages"]) == len(base["messages"])
        differing = [i for i, (a, b) in enumerate(zip(row["messages"], base["messages"])) if a != b]
        assert len(differing) == 1 and differing[0] in row["constraint_turns"], row["id"]


def test_rm_probe_appends_question_to_final_turn(rows: dict) -> None:
    implicit = _index(rows["pm_base"])
    for row in rows["rm_base"]:
        clean = implicit[(row["blueprint_id"], "pos_clean")]
        assert row["messages"][:-1] == clean["messages"][:-1]
        assert row["messages"][-1]["content"] == f"{clean['messages'][-1]['content']} {row['question']}"
        assert 3 <= len(row["answer_aliases"]) <= 5
        constraint_text = " ".join(row["messages"][i]["content"].lower() for i in row["constraint_turns"])
        assert any(alias.lower() in constraint_text for alias in [row["reference_answer"], *row["answer_aliases"]])


def test_dev_and_test_share_no_seed_family(rows: dict) -> None:
    for config, config_rows in rows.items():
        families = defaultdict(set)
        for row in config_rows:
            families[row["split"]].add(row["seed_id"])
        assert families["test"] and families["dev"], config
        assert not families["test"] & families["dev"], config
