"""Every row of every long-context config: length, filters, timestamps, identity with base, shared distractors."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
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


# An independent scan for time expressions (not the pool's filter): clock times, durations, parts of the
# day, relative days, weekdays, month names and numeric dates.
INDEPENDENT_TIME = re.compile(
    r"\b(?:[01]?\d|2[0-4]):[0-5]\d\b|\b\d{1,2} ?[ap]m\b|\bo'clock\b|\b(?:noon|midnight)\b"
    r"|\b(?:minutes?|hours?|mins|hrs)\b|\b(?:\d+|two|three|four|five|ten) (?:days?|nights?|weeks?|months?|years?)\b"
    r"|\b(?:mornings?|afternoons?|evenings?|nights?|tonight|today|tomorrow|yesterday|weekends?)\b"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b"
    r"|\b(?:january|february|april|june|july|august|september|october|november|december)\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b",
    re.IGNORECASE)


def _alternates(messages: list[dict]) -> bool:
    roles = [m["role"] for m in messages]
    return roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:]))


def _interruption(row: dict, base_row: dict) -> list[int]:
    """Index of the attention-recovery interruption: right after the constraint's reply (a seed on a shared
    filler pool), or the last exchange before the trigger (a seed on its own story pool)."""
    if row["dimension"] != "attention_recovery":
        return []
    return [row["constraint_turns"][0] + 2, len(base_row["messages"]) - 3]


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of message indices as (first, last)."""
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and runs[-1][1] == index - 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def _unfillable(release: Path) -> set[str]:
    """Plans the stretch stage dropped (``<blueprint>@<context>``), each with a reason."""
    path = release / "exclusions" / "stretch.jsonl"
    if not path.exists():
        return set()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(r["reason"] in {"pool_too_small", "time_window_too_short", "semantic_constraint", "semantic_trigger"}
               and r["detail"] for r in records)
    return {r["id"] for r in records if r["reason"] in ("pool_too_small", "time_window_too_short")}


def test_long_configs_load_and_match_base_counts(default_build: dict) -> None:
    """Every base row has its long rows, except plans dropped with a reason (corpus too small)."""
    release = default_build["release"]
    unfillable = _unfillable(release)
    for config in LONG_CONFIGS:
        family, context = config.split("_")
        for split in ("test", "dev"):
            # streaming reads the files as they are (a cached copy of an older release at the same path cannot answer)
            long_ids = [r["id"] for r in datasets.load_dataset(str(release), config, split=split, streaming=True)]
            base_rows = list(datasets.load_dataset(str(release), f"{family}_base", split=split, streaming=True))
            expected = [r for r in base_rows if f"{r['blueprint_id']}@{context}" not in unfillable]
            assert sorted(long_ids) == sorted(r["id"].rsplit(".", 1)[0] + f".{context}" for r in expected)
            assert long_ids, (config, split)


@pytest.mark.parametrize("config", LONG_CONFIGS)
def test_every_long_row(default_build: dict, config: str) -> None:
    release = default_build["release"]
    family, context = config.split("_")
    base = _base(release, f"{family}_base")
    target = LENGTHS[context]
    counted: dict[str, int] = {}
    block_of_plan: dict[tuple[str, str], str] = {}  # plan -> digest of its first row's injected turns
    timeless: set[str] = set()
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
        assert max(Counter(times).values()) <= 2, row["id"]  # a person's pace: never 3 user turns in one minute
        assert _alternates(messages), row["id"]
        for long_index, base_index in zip(row["constraint_turns"], base_row["constraint_turns"]):
            assert strip_timestamp(messages[long_index]["content"]) == strip_timestamp(base_row["messages"][base_index]["content"])
        assert messages[-1] == base_row["messages"][-1]
        if family == "pm" or family == "explicit":
            injected = [messages[i] for i in row["injected_turns"]]
            runs = _runs(row["injected_turns"])
            for first, last in runs:  # whole exchanges, between exchanges of the conversation
                assert messages[first]["role"] == "user" and messages[last]["role"] == "assistant", row["id"]
                assert first == 0 or messages[first - 1]["role"] == "assistant", row["id"]
            assert runs[-1][1] < row["trigger_turn"]
            if row["dimension"] == "attention_recovery":  # one block: the interruption's problem
                assert len(runs) == 1 and runs[0][0] - 2 in _interruption(row, base_row), row["id"]
            injected_at = set(row["injected_turns"])
            own = [m for i, m in enumerate(messages) if i not in injected_at]
            assert [strip_timestamp(m["content"]) for m in own] == [strip_timestamp(m["content"]) for m in base_row["messages"]]
            if row["dimension"] == "temporal_grounding":  # the deadline keeps its meaning: constraint and trigger keep their times
                constraint = row["constraint_turns"][0]
                assert messages[constraint] == base_row["messages"][base_row["constraint_turns"][0]], row["id"]
            plan = (row["blueprint_id"], context)
            # variants of one plan share their block (asserted below), so each block is scanned once, and a
            # distractor turn that recurs across plans has its time scan once
            digest = hashlib.sha256(json.dumps(injected).encode()).hexdigest()
            if plan not in block_of_plan:
                bodies = [strip_timestamp(message["content"]) for message in injected]
                for body in set(bodies) - timeless:
                    assert not has_time_expression(body), (row["id"], body[:80])
                    assert not INDEPENDENT_TIME.search(body), (row["id"], INDEPENDENT_TIME.search(body).group(0), body[:80])
                    timeless.add(body)
                block = "\n".join(bodies)  # a slot is a phrase without line breaks: one search per slot and block
                assert not any(mentions(block, slot) for slot in row["gold_slots"]), row["id"]
                block_of_plan[plan] = digest
            assert digest == block_of_plan[plan], (plan, row["id"])  # the variants of one plan share their block
    assert seen > 0


def test_attention_recovery_blocks_span_like_a_person_typing(default_build: dict) -> None:
    """Few injected user turns share a minute, and the block of a longer context spans longer."""
    spans: dict[str, list[float]] = {}
    for config in ("pm_20k", "pm_40k"):
        for path in sorted((default_build["release"] / "data" / config).glob("*.parquet")):
            table = pq.read_table(path, columns=["id", "dimension", "messages", "injected_turns"],
                                  filters=[("dimension", "=", "attention_recovery")])
            for row in table.to_pylist():
                stamps = [STAMP.match(row["messages"][i]["content"]).group(1) for i in row["injected_turns"]
                          if row["messages"][i]["role"] == "user"]
                assert max(Counter(stamps).values()) <= 2, row["id"]
                times = [datetime.fromisoformat(s) for s in stamps]
                spans.setdefault(config, []).append((times[-1] - times[0]).total_seconds() / 3600)
    assert len(spans["pm_20k"]) > 20 and len(spans["pm_40k"]) > 20
    assert min(spans["pm_20k"]) > 0.5
    assert sorted(spans["pm_40k"])[len(spans["pm_40k"]) // 2] > 1.5 * sorted(spans["pm_20k"])[len(spans["pm_20k"]) // 2]


def test_every_config_alternates(default_build: dict) -> None:
    """Every row of the base configs strictly alternates user/assistant (the long configs are checked
    row by row in ``test_every_long_row``)."""
    release = default_build["release"]
    checked = 0
    for directory in sorted((release / "data").iterdir()):
        if directory.name in LONG_CONFIGS or not re.fullmatch(r"(pm|rm|explicit)_\w+", directory.name):
            continue
        for path in sorted(directory.glob("*.parquet")):
            if "messages" not in pq.ParquetFile(path).schema_arrow.names:
                continue
            for row in pq.read_table(path, columns=["id", "messages"]).to_pylist():
                assert _alternates(row["messages"]), (directory.name, row["id"])
                checked += 1
    assert checked > 2000


def test_rm_and_explicit_share_pos_clean_distractors(default_build: dict) -> None:
    release = default_build["release"]

    pm = {row["blueprint_id"]: row for row in _iter_rows(release, "pm_40k") if row["variant"] == "pos_clean"}
    for row in _iter_rows(release, "rm_40k"):
        clean = pm[row["blueprint_id"]]
        assert row["messages"][:-1] == clean["messages"][:-1]
    for row in _iter_rows(release, "explicit_40k"):
        clean = pm[row["blueprint_id"]]
        assert [clean["messages"][i] for i in clean["injected_turns"]] == [row["messages"][i] for i in row["injected_turns"]]


def test_the_semantic_filter_runs_by_default_on_multiwoz_and_swe_agent_only(default_build: dict) -> None:
    """The default build skips snippets close in meaning to a constraint or a trigger (records per blueprint and
    reason in ``exclusions/stretch.jsonl``) in every MultiWOZ dimension, and never embeds the MATH problems."""
    records = [json.loads(line) for line in
               (default_build["release"] / "exclusions" / "stretch.jsonl").read_text().splitlines()]
    semantic = [r for r in records if r["reason"] in ("semantic_constraint", "semantic_trigger")]
    dimensions = {r["id"].split("-")[0] for r in semantic}
    assert {"st", "tg", "la"} <= dimensions, dimensions
    assert all(" math snippets" not in r["detail"] for r in semantic)
    assert any(" multiwoz snippets" in r["detail"] for r in semantic)
    card = (default_build["release"] / "README.md").read_text(encoding="utf-8")
    assert "Semantic anti-leakage filter" in card
