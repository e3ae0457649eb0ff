"""Unit tests of ``pipeline/runner.py`` and ``pipeline/cache.py`` with three tiny stages.

``Numbers`` makes items from its parameters, ``Square`` (a MapStage) maps each item and
counts its calls, ``Total`` sums everything. Stores live in ``tmp_path``; no release is built.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from pipeline.cache import ArtifactStore, ItemCache, item_result_to_json
from pipeline.forked import WORKERS_VARIABLE, worker_count
from pipeline.runner import UnknownStage, run_stages, select
from pipeline.stage import Drop, Dropped, Item, MapStage, Stage, StageContext, StageOutput


class NumbersParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    values: tuple[int, ...] = (1, 2, 3)


class Numbers(Stage):
    name = "numbers"
    Params = NumbersParams

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        return StageOutput(items=[{"id": f"n{v}", "value": v} for v in self.params.values])


class SquareParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    offset: int = 0


class Square(MapStage):
    name = "square"
    inputs = ("numbers",)
    Params = SquareParams
    calls: list[int] = []  # values processed, across instances (reset by the fixture)
    prepared: list[list[int]] = []  # the values each ``prepare`` call was given
    crash_on: int | None = None  # raise on this value: a crash mid-stage (not a parameter: same fingerprint)

    def environment_keys(self) -> tuple[str, ...]:
        return ("model",)

    def prepare(self, items: list[Item], ctx: StageContext) -> None:
        Square.prepared.append([item["value"] for item in items])

    def process(self, item: Item, ctx: StageContext) -> list[Item | Dropped] | Drop:
        Square.calls.append(item["value"])
        if item["value"] == Square.crash_on:
            raise RuntimeError("crash")
        if item["value"] < 0:
            return Drop("negative", f"{item['value']} < 0")
        if item["value"] == 0:
            return []
        value = item["value"] ** 2 + self.params.offset
        return [{"id": f"{item['id']}.sq", "value": value}]


class Total(Stage):
    name = "total"
    inputs = ("square",)

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        return StageOutput(items=[{"id": "total", "value": sum(i["value"] for i in inputs["square"])}], stats={"n": 1})


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    Square.calls, Square.prepared, Square.crash_on = [], [], None


class ForkableSquare(Square):
    """Square, computed in forked workers when the run has more than one (``Square.calls`` then stays empty
    here: the workers append to their own copies)."""

    forkable = True


def build(tmp_path: Path, numbers: dict | None = None, square: dict | None = None, env: dict | None = None,
          seed: int = 0, commit_every: int = 64, square_stage: type[Square] = Square) -> Any:
    stages: list[Stage] = [Numbers(numbers), square_stage(square), Total()]
    environment = {"model": "offline", **(env or {})}

    def make_context(stage: Stage) -> StageContext:
        return StageContext(seed=seed, stage=stage.name, environment=environment)

    items = ItemCache(tmp_path / "items.sqlite", commit_every=commit_every)
    try:
        return run_stages(stages, make_context, ArtifactStore(tmp_path), items)
    finally:
        items.close()


def cached(result: Any) -> dict[str, bool]:
    return {record.name: record.cached for record in result.records}


# ---------------------------------------------------------------- runner


def test_outputs_records_and_a_rerun_that_recomputes_nothing(tmp_path: Path) -> None:
    first = build(tmp_path)
    assert first.outputs["total"].items == [{"id": "total", "value": 1 + 4 + 9}]
    assert Square.calls == [1, 2, 3] and cached(first) == {"numbers": False, "square": False, "total": False}
    record = {r.name: r for r in first.records}["square"]
    assert (record.items_in, record.items_out, record.dropped) == (3, 3, {})
    again = build(tmp_path)
    assert Square.calls == [1, 2, 3]  # nothing processed again
    assert cached(again) == {"numbers": True, "square": True, "total": True}
    assert again.fingerprints == first.fingerprints and again.outputs["total"].items == first.outputs["total"].items


def test_changing_params_seed_or_declared_environment_changes_fingerprints(tmp_path: Path) -> None:
    base = build(tmp_path).fingerprints
    offset = build(tmp_path, square={"offset": 1}).fingerprints
    assert offset["numbers"] == base["numbers"] and offset["square"] != base["square"]
    assert offset["total"] != base["total"]  # downstream of a changed stage
    seed = build(tmp_path, seed=1).fingerprints
    assert all(seed[name] != base[name] for name in base)
    model = build(tmp_path, env={"model": "other"}).fingerprints
    assert model["numbers"] == base["numbers"] and model["square"] != base["square"]
    unrelated = build(tmp_path, env={"unrelated": "x"}).fingerprints  # no stage declares it
    assert unrelated == base


def test_map_stage_recomputes_only_changed_items(tmp_path: Path) -> None:
    build(tmp_path, numbers={"values": (1, 2, 3)})
    assert Square.prepared == [[1, 2, 3]]  # batch work for every item, once, before the first process
    Square.calls, Square.prepared = [], []
    result = build(tmp_path, numbers={"values": (1, 2, 7)})
    assert Square.calls == [7]  # 1 and 2 come from the per-item cache
    assert Square.prepared == [[7]]  # and prepare is given only the item to compute
    Square.prepared = []
    build(tmp_path, numbers={"values": (1, 2, 7)})
    assert Square.prepared == []  # everything cached: neither setup nor prepare runs
    assert cached(result)["square"] is False  # the stage ran, its items were cached
    assert result.outputs["total"].items[0]["value"] == 1 + 4 + 49


def test_a_crashed_stage_resumes_without_redoing_finished_items(tmp_path: Path) -> None:
    Square.crash_on = 3
    with pytest.raises(RuntimeError, match="crash"):
        build(tmp_path, numbers={"values": (1, 2, 3, 4)}, commit_every=1)
    assert Square.calls == [1, 2, 3]
    with sqlite3.connect(tmp_path / "items.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM items").fetchone()[0] == 2
    Square.calls, Square.crash_on = [], None
    result = build(tmp_path, numbers={"values": (1, 2, 3, 4)}, commit_every=1)
    assert Square.calls == [3, 4]  # 1 and 2 were finished before the crash
    assert [i["value"] for i in result.outputs["square"].items] == [1, 4, 9, 16]


def test_a_forkable_stage_computes_in_workers_with_the_results_and_order_of_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = {"values": tuple(range(-2, 40))}
    alone = build(tmp_path / "alone", numbers=values)
    assert Square.calls == list(range(-2, 40))
    Square.calls = []
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    forked = build(tmp_path / "forked", numbers=values, square_stage=ForkableSquare)
    assert Square.calls == [] and Square.prepared == [list(range(-2, 40))] * 2  # computed in the workers, prepared here
    assert forked.outputs["square"].items == alone.outputs["square"].items
    assert forked.outputs["square"].dropped == alone.outputs["square"].dropped
    assert forked.fingerprints == alone.fingerprints  # where items are computed is no input
    again = build(tmp_path / "forked", numbers=values, square_stage=ForkableSquare)
    assert cached(again)["square"] is True and Square.calls == []


def test_an_error_in_a_worker_stops_the_stage_and_what_came_before_it_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    Square.crash_on = 20
    with pytest.raises(RuntimeError, match="crash"):
        build(tmp_path, numbers={"values": tuple(range(1, 41))}, commit_every=1, square_stage=ForkableSquare)
    with sqlite3.connect(tmp_path / "items.sqlite") as db:
        kept = db.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    assert 10 <= kept <= 19  # the items before 20, but for those that shared a worker's chunk with it
    Square.crash_on = None
    monkeypatch.setenv(WORKERS_VARIABLE, "1")  # one process: Square.calls shows what is recomputed
    result = build(tmp_path, numbers={"values": tuple(range(1, 41))}, commit_every=1, square_stage=ForkableSquare)
    assert Square.calls == list(range(kept + 1, 41))
    assert [i["value"] for i in result.outputs["square"].items] == [v * v for v in range(1, 41)]
    monkeypatch.setenv(WORKERS_VARIABLE, "none")
    with pytest.raises(ValueError, match=f"{WORKERS_VARIABLE}='none'"):
        worker_count()


KILLED_PARENT = """
import os, signal, sys, time
from pipeline.forked import fork_map

def slow(value):
    time.sleep(0.2)
    return os.getpid()

for pid in fork_map(slow, list(range(40)), 2):
    print(pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_die_with_a_killed_parent_and_leave_no_pipe_open() -> None:
    """A build SIGKILLed mid-stage (as tests/killed_build.py does) must not leave its workers running: they
    would keep its output pipes open, and whoever reads them (a test's subprocess.run) would wait forever."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", KILLED_PARENT], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == -signal.SIGKILL and time.monotonic() - started < 30, done.stderr[-2000:]
    worker = int(done.stdout.split()[0])
    for _ in range(50):
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"worker {worker} outlived its killed parent")


def test_drops_and_empty_results_are_accounted_for(tmp_path: Path) -> None:
    result = build(tmp_path, numbers={"values": (-1, 0, 2)})
    square = result.outputs["square"]
    assert square.items == [{"id": "n2.sq", "value": 4}]
    assert square.dropped == [Dropped("n-1", "negative", "-1 < 0"), Dropped("n0", "no_output", "the stage produced nothing for this item")]
    record = {r.name: r for r in result.records}["square"]
    assert record.dropped == {"negative": 1, "no_output": 1} and record.manifest_entry()["items_out"] == 1
    rerun = build(tmp_path, numbers={"values": (-1, 0, 2)})  # drops come back from the artifact store
    assert rerun.outputs["square"].dropped == square.dropped


def test_select_takes_dependencies_and_rejects_unknown_names() -> None:
    stages: list[Stage] = [Numbers(), Square(), Total()]
    assert [s.name for s in select(stages, ["square"])] == ["numbers", "square"]
    assert [s.name for s in select(stages, None)] == ["numbers", "square", "total"]
    with pytest.raises(UnknownStage, match="unknown stage.*nonsense.*stages are: numbers, square, total"):
        select(stages, ["nonsense"])


def test_missing_inputs_and_duplicate_ids_are_errors(tmp_path: Path) -> None:
    make: Callable[[Stage], StageContext] = lambda stage: StageContext(seed=0, stage=stage.name)  # noqa: E731
    items = ItemCache(tmp_path / "items.sqlite")
    with pytest.raises(RuntimeError, match="stage total needs \\['square'\\]"):
        run_stages([Numbers(), Total()], make, ArtifactStore(tmp_path), items)
    with pytest.raises(RuntimeError, match="duplicate id: 'n1'"):
        run_stages([Numbers({"values": (1, 1)})], make, ArtifactStore(tmp_path), items)
    items.close()


# ---------------------------------------------------------------- cache


def test_artifact_store_round_trip_is_atomic(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    output = StageOutput(items=[{"id": "a", "text": "naïve"}, {"id": "b", "n": [1, 2]}],
                         dropped=[Dropped("c", "lint", "why")], stats={"llm": {"requests": 2}})
    assert not store.has("stage", "f" * 64)
    store.save("stage", "f" * 64, output)
    assert store.has("stage", "f" * 64) and not store.has("stage", "e" * 64)
    assert store.load("stage", "f" * 64) == output
    folder = tmp_path / "artifacts" / "stage"
    assert [p.name for p in folder.iterdir()] == ["f" * 64 + ".jsonl.gz"]  # no temporary file left behind
    with gzip.open(folder / ("f" * 64 + ".jsonl.gz"), "rt", encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle]
    assert lines[0] == {"dropped": [{"id": "c", "reason": "lint", "detail": "why"}], "stats": {"llm": {"requests": 2}}}
    assert lines[1:] == output.items


def test_item_cache_persists_batches_and_is_shared(tmp_path: Path) -> None:
    path = tmp_path / "items.sqlite"
    writer = ItemCache(path, commit_every=1000, commit_seconds=3600)
    reader = ItemCache(path)
    writer.put("k0", {"items": []})
    assert reader.get("k0") is None  # not committed yet
    for k in range(1, 1200):
        writer.put(f"k{k}", {"items": [{"id": str(k)}]})
    writer.flush()
    found = reader.get_many([f"k{k}" for k in range(0, 1300)])  # more keys than one SQL query takes
    assert len(found) == 1200 and found["k1199"] == {"items": [{"id": "1199"}]}
    writer.close()
    reader.close()
    assert ItemCache(path).get("k7") == {"items": [{"id": "7"}]}


def test_item_results_encode_items_derived_drops_and_drops() -> None:
    assert item_result_to_json([{"id": "x"}, Dropped("x.b", "lint", "d")]) == {
        "items": [{"id": "x"}], "dropped": [{"id": "x.b", "reason": "lint", "detail": "d"}]}
    assert item_result_to_json(Drop("too_long", "9000 tokens")) == {"drop": "too_long", "detail": "9000 tokens"}
