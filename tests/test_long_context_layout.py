"""Where the distractor block goes and when its turns happen, on a real ``--limit`` build and on unit inputs."""

from __future__ import annotations

import random
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stages.stretch import insert_index
from stages.timing import TypingModel
from tests.conftest import run_cli

STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\] ")


@pytest.fixture(scope="module")
def smoke_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``--limit 3`` build (attention-recovery blueprints: a constraint, then an interruption)."""
    root = tmp_path_factory.mktemp("layout")
    result = run_cli("build", "--limit", "3", "--out", str(root / "out"), "--cache-dir", str(root / "cache"))
    assert result.returncode == 0, result.stderr[-3000:]
    (release,) = [p for p in (root / "out").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return release


def _rows(release: Path, config: str) -> list[dict]:
    return [row for path in sorted((release / "data" / config).glob("*.parquet")) for row in pq.read_table(path).to_pylist()]


def test_block_follows_the_reply_to_the_last_constraint_side_turn(smoke_release: Path) -> None:
    long_configs = sorted(p.name for p in (smoke_release / "data").iterdir() if re.fullmatch(r"(pm|rm|explicit)_\d+k", p.name))
    assert "pm_20k" in long_configs
    for config in long_configs:
        rows = _rows(smoke_release, config)
        assert rows, config
        for row in rows:
            roles = [m["role"] for m in row["messages"]]
            assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:])), (config, row["id"])
            if not config.startswith("rm"):
                assert row["dimension"] == "attention_recovery"
                first = row["injected_turns"][0]
                # constraint and its reply, the interruption and its reply (right after the constraint with a
                # shared filler pool, last before the trigger with a story pool), then the block
                assert first >= row["constraint_turns"][0] + 4 and roles[first - 1] == "assistant", row["id"]
                assert first == row["constraint_turns"][0] + 4 or row["injected_turns"][-1] == len(roles) - 2, row["id"]


def test_injected_turns_are_spread_like_a_person_typing(smoke_release: Path) -> None:
    """Few injected user turns share a minute, and the block of a longer context spans longer."""
    spans: dict[str, list[float]] = {}
    for config in ("pm_20k", "pm_40k"):
        for row in _rows(smoke_release, config):
            stamps = [STAMP.match(row["messages"][i]["content"]).group(1) for i in row["injected_turns"]
                      if row["messages"][i]["role"] == "user"]
            assert max(Counter(stamps).values()) <= 6, row["id"]
            times = [datetime.fromisoformat(s) for s in stamps]
            spans.setdefault(config, []).append((times[-1] - times[0]).total_seconds() / 3600)
    assert min(spans["pm_20k"]) > 0.5
    assert sorted(spans["pm_40k"])[len(spans["pm_40k"]) // 2] > 1.5 * sorted(spans["pm_20k"])[len(spans["pm_20k"]) // 2]


def test_insert_index_needs_user_turns_and_replies() -> None:
    turns = [
        {"role": "user", "kind": "filler"}, {"role": "assistant", "kind": "filler"},
        {"role": "user", "kind": "constraint"}, {"role": "assistant", "kind": "constraint"},
        {"role": "user", "kind": "filler"}, {"role": "assistant", "kind": "filler"},
        {"role": "user", "kind": "constraint"}, {"role": "assistant", "kind": "constraint"},
        {"role": "user", "kind": "filler"}, {"role": "assistant", "kind": "filler"},
        {"role": "user", "kind": "trigger"},
    ]
    assert insert_index(turns) == 8  # after the reply to the second constraint, not before it
    with pytest.raises(ValueError, match="no assistant reply"):
        insert_index(turns[:7] + turns[8:])


def test_typing_model_gaps_grow_with_words_and_are_seeded() -> None:
    model = TypingModel()
    tiny = [model.gap(10, 5, random.Random(k)) for k in range(200)]
    short = [model.gap(60, 20, random.Random(k)) for k in range(200)]
    long = [model.gap(300, 60, random.Random(k)) for k in range(200)]
    assert min(tiny) == model.params.min_gap_seconds  # nobody reads and answers faster than the floor
    assert sorted(long)[100] > 2 * sorted(short)[100]
    assert len({round(g) for g in short}) > 20  # jittered, not a few round values
    exchanges = [(40, 12)] * 3000
    first = model.gaps(exchanges, random.Random(7))
    assert first == model.gaps(exchanges, random.Random(7))
    assert sum(first) > 24 * 3600  # 3,000 exchanges take more than a day, breaks included
    assert sum(1 for g in first if g % 300 == 0) == 0


def test_placement_moves_the_head_back_or_compresses() -> None:
    model = TypingModel()
    exchanges = [(30, 10)] * 400
    free = model.place(exchanges, 600.0, None, random.Random(1))
    assert free.scale == 1.0 and free.head_shift > 60  # needs hours; the head moves back
    assert free.offsets == tuple(sorted(free.offsets)) and free.offsets[-1] <= 600.0 + 60 * free.head_shift
    bounded = model.place(exchanges, 600.0, 30, random.Random(1))
    assert bounded.head_shift == 30 and bounded.scale < 1.0
    assert bounded.offsets[-1] <= 600.0 + 60 * 30
    roomy = model.place([(30, 10)] * 3, 86400.0, 0, random.Random(1))
    assert roomy.head_shift == 0 and roomy.scale == 1.0 and roomy.offsets[-1] < 3600
