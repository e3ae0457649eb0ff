"""Every row of every long-context config: length, filters, timestamps, identity with base, shared distractors."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

from pipeline import tokenizer
from pipeline.text import mentions, strip_timestamp
from stages.distractors.units import has_time_expression

pytestmark = pytest.mark.slow
LENGTHS = {"20k": 20000, "40k": 40000, "60k": 60000, "80k": 80000, "100k": 100000}
LONG_CONFIGS = [f"{family}_{context}" for family in ("pm", "rm") for context in LENGTHS] + ["explicit_40k"]
STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\] ")


def _iter_rows(release: Path, config: str) -> Iterator[dict]:
    for split in ("test", "dev"):
        for path in sorted((release / "data" / config).glob(f"{split}-*.parquet")):
            for batch in pq.ParquetFile(path).iter_batches(batch_size=64):
                for row in batch.to_pylist():
                    yield {**row, "split": split}


def _base(release: Path, config: str) -> dict[str, dict]:
    return {row["id"]: row for row in _iter_rows(release, config)}


def _unfillable(release: Path) -> set[str]:
    """Plans the stretch stage dropped (``<blueprint>@<context>``), each with a reason."""
    path = release / "exclusions" / "stretch.jsonl"
    if not path.exists():
        return set()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(r["reason"] == "pool-too-small" and r["detail"] for r in records)
    return {r["id"] for r in records}


def test_long_configs_load_and_match_base_counts(default_build: dict) -> None:
    """Every base row has its long rows, except plans dropped with a reason (corpus too small)."""
    release = default_build["release"]
    unfillable = _unfillable(release)
    for config in LONG_CONFIGS:
        family, context = config.split("_")
        for split in ("test", "dev"):
            long_rows = datasets.load_dataset(str(release), config, split=split)
            base_rows = datasets.load_dataset(str(release), f"{family}_base", split=split)
            expected = [r for r in base_rows if f"{r['blueprint_id']}@{context}" not in unfillable]
            assert sorted(long_rows["id"]) == sorted(r["id"].rsplit(".", 1)[0] + f".{context}" for r in expected)
            assert len(long_rows) > 0, (config, split)


@pytest.mark.parametrize("config", LONG_CONFIGS)
def test_every_long_row(default_build: dict, config: str) -> None:
    release = default_build["release"]
    family, context = config.split("_")
    base = _base(release, f"{family}_base")
    target = LENGTHS[context]
    counted: dict[str, int] = {}
    injected_by_plan: dict[tuple[str, str], list] = defaultdict(list)
    seen = 0
    for row in _iter_rows(release, config):
        seen += 1
        base_row = base[row["id"].rsplit(".", 1)[0] + ".base"]
        messages = row["messages"]
        total = 0
        for message in messages:
            text = message["content"]
            if text not in counted:
                counted[text] = tokenizer.count(text)
            total += counted[text]
        assert total == row["n_tokens"], row["id"]
        assert abs(total - target) <= 0.01 * target, (row["id"], total)
        times = [STAMP.match(m["content"]).group(1) for m in messages if m["role"] == "user"]
        assert times == sorted(times), row["id"]
        for long_index, base_index in zip(row["constraint_turns"], base_row["constraint_turns"]):
            assert messages[long_index] == base_row["messages"][base_index]
        assert messages[-1] == base_row["messages"][-1]
        if family == "pm" or family == "explicit":
            injected = [messages[i] for i in row["injected_turns"]]
            assert injected and injected[0]["role"] == "user" and injected[-1]["role"] == "assistant"
            assert max(row["constraint_turns"]) < row["injected_turns"][0] and row["injected_turns"][-1] < row["trigger_turn"]
            without = messages[: row["injected_turns"][0]] + messages[row["injected_turns"][-1] + 1:]
            assert without == base_row["messages"], row["id"]
            for message in injected:
                body = strip_timestamp(message["content"])
                assert not has_time_expression(body), (row["id"], body[:80])
                assert not any(mentions(body, slot) for slot in row["gold_slots"]), row["id"]
            injected_by_plan[(row["blueprint_id"], context)].append(injected)
    assert seen > 0
    for plan, blocks in injected_by_plan.items():
        assert all(block == blocks[0] for block in blocks), plan


def test_rm_and_explicit_share_pos_clean_distractors(default_build: dict) -> None:
    release = default_build["release"]

    pm = {row["blueprint_id"]: row for row in _iter_rows(release, "pm_40k") if row["variant"] == "pos_clean"}
    for row in _iter_rows(release, "rm_40k"):
        clean = pm[row["blueprint_id"]]
        assert row["messages"][:-1] == clean["messages"][:-1]
    for row in _iter_rows(release, "explicit_40k"):
        clean = pm[row["blueprint_id"]]
        assert [clean["messages"][i] for i in clean["injected_turns"]] == [row["messages"][i] for i in row["injected_turns"]]
