"""``triggerbench eval --memory``: RAG and Letta-Sim over real HTTP on a small real release.

The release is the run's small release (tests/conftest.py: two seeds per dimension, pm_base and pm_20k).
The scripted model always answers silently and the scripted judge says NO: accuracy is not the
point here, what the memory put in front of the model is. Expected retrieval sets are computed
here with numpy from the bundled embedding model's vectors, not by the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from stages.eval.source import locate, read_rows
from tests.conftest import run_cli
from tests.servers.scripted import Reply, ScriptedServer
from tests.test_eval_run import _rows

pytestmark = pytest.mark.slow

SILENT = "Happy to help with that."
CURATOR_MARK = "You maintain the core memory"
MEM0_MARK = "Memory Extractor"
LIMIT = "6"


@pytest.fixture(scope="module")
def release(small_build: dict) -> Path:
    return small_build["release"]


def _bundled_vectors(texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer
    from stages.audit.embeddings import bundled_model_dir

    model = SentenceTransformer(str(bundled_model_dir()), device="cpu")
    vectors = model.encode(texts, convert_to_numpy=True)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _hand_top6(row: dict[str, Any]) -> list[int]:
    """Top 6 earlier turns by cosine to the trigger, the last 4 messages before it excluded."""
    messages = row["messages"]
    last = len(messages) - 1
    candidates = list(range(0, max(0, last - 4)))
    if not candidates:
        return []
    vectors = _bundled_vectors([messages[i]["content"] for i in candidates] + [messages[last]["content"]])
    cosine = vectors[:-1] @ vectors[-1]
    best = sorted(range(len(candidates)), key=lambda j: (-cosine[j], j))[:6]
    return sorted(candidates[j] for j in best)


def _judge_no(body: dict[str, Any], index: int) -> Reply:
    if body["messages"][0]["content"].startswith("You grade"):
        return Reply.ok(json.dumps({"verdict": "NO", "reason": "scripted"}))
    return Reply.ok(SILENT)


def _eval(release: Path, base_url: str, out: Path, memory: str, *rows: str) -> Any:
    """``eval --memory`` on pm_20k; ``rows``: which rows (``--limit``, ``--per-dimension``)."""
    return run_cli("eval", str(release), "--config", "pm_20k", *rows, "--model", "scripted-model",
                   "--base-url", base_url, "--out", str(out), "--temperature", "0", "--memory", memory, timeout=900)


def _long_rows(release: Path, limit: int | None = None, per_dimension: int | None = None) -> list[dict[str, Any]]:
    """The pm_20k test rows ``eval --limit LIMIT --per-dimension PER_DIMENSION`` answers."""
    return read_rows(locate(str(release)), "pm_20k", "test", limit=limit, per_dimension=per_dimension)


def _cell(results: dict[str, Any], dimension: str) -> dict[str, Any]:
    return next(c for c in results["cells"] if (c["dimension"], c["variant"]) == (dimension, "all"))


def _hit(row: dict[str, Any], turns: set[int], core: list[str]) -> bool:
    slots = [s.lower() for s in row["gold_slots"]]
    return bool(set(row["constraint_turns"]) & turns) or any(s in f.lower() for f in core for s in slots)


def test_rag_retrieval_matches_hand_computed_sets(release: Path, tmp_path: Path) -> None:
    rows = {r["id"]: r for r in _long_rows(release, limit=2)}  # each holds a few hundred turns to embed
    with ScriptedServer(handler=_judge_no) as server:
        done = _eval(release, server.base_url, tmp_path / "rag", "rag", "--limit", "2")
        assert done.returncode == 0, done.stderr[-3000:]
    lines = {x["row_id"]: x for x in pq.read_table(tmp_path / "rag" / "responses.parquet").to_pylist()}
    long_rows = [r for r in rows.values() if len(r["messages"]) > 12]
    assert len(long_rows) >= 2
    for row in long_rows[:2]:  # the retrieval set, computed by hand with numpy
        line = lines[row["id"]]
        hand = _hand_top6(row)
        assert json.loads(line["memory_retrieved"]) == hand
        last = len(row["messages"]) - 1
        assert json.loads(line["memory_context_turns"]) == sorted(set(hand) | set(range(last - 4, last)))
        request = json.loads(line["request"])
        assert all(row["messages"][i]["content"] in request[0]["content"] for i in hand)
        assert [m["content"] for m in request[1:]] == [m["content"] for m in row["messages"][last - 4:]]
    results = json.loads((tmp_path / "rag" / "results.json").read_text())
    assert results["memory"]["kind"] == "rag" and results["memory"]["k"] == 6
    for dimension in sorted({r["dimension"] for r in rows.values()}):
        mine = [r for r in rows.values() if r["dimension"] == dimension]
        expected = np.mean([bool(set(r["constraint_turns"]) & set(json.loads(lines[r["id"]]["memory_context_turns"])))
                            for r in mine])
        assert _cell(results, dimension)["constraint_retrieval"]["value"] == pytest.approx(expected, abs=1e-6)
        assert all(lines[r["id"]]["constraint_in_context"] == _hit(r, set(json.loads(lines[r["id"]]["memory_context_turns"])), [])
                   for r in mine)
    assert "constraint retrieval" in (tmp_path / "rag" / "report.md").read_text()


class Curator:
    """Scripted Letta-Sim curator: keeps a fact for constraint turns of state tracking and safe coding."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.facts = {}
        for row in rows:
            if row["dimension"] in ("state_tracking", "safe_coding"):
                for turn in row["constraint_turns"]:
                    self.facts[row["messages"][turn]["content"]] = f"User noted {row['gold_slots'][0]}"

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        system = body["messages"][0]["content"]
        if system.startswith(CURATOR_MARK):
            text = body["messages"][-1]["content"]
            current = re.findall(r"^- (.+)$", text.split("NEW TURNS:")[0], flags=re.M)
            new = [fact for content, fact in self.facts.items() if content in text.split("NEW TURNS:")[1]]
            return Reply.ok(json.dumps({"facts": list(dict.fromkeys(current + new))}))
        return _judge_no(body, index)


def test_letta_sim_core_memory_and_exact_rerun(release: Path, tmp_path: Path) -> None:
    rows = _long_rows(release, per_dimension=1)
    assert {"state_tracking", "safe_coding"} <= {r["dimension"] for r in rows}  # the curator keeps their facts
    curator = Curator(rows)
    with ScriptedServer(handler=curator) as server:
        done = _eval(release, server.base_url, tmp_path / "letta", "letta-sim", "--per-dimension", "1")
        assert done.returncode == 0, done.stderr[-3000:]
        sent = server.chat_requests()
        again = _eval(release, server.base_url, tmp_path / "letta", "letta-sim", "--per-dimension", "1")
        assert again.returncode == 0 and len(server.chat_requests()) == len(sent)  # a rerun sends nothing
    assert "model requests sent     0" in again.stdout and "judge requests sent     0" in again.stdout
    curations = [r.body["messages"][-1]["content"] for r in sent if r.body["messages"][0]["content"].startswith(CURATOR_MARK)]
    answers = [r for r in sent if r.body["messages"][0]["content"].startswith("You are")]
    assert curations and all(len(re.findall(r"^\[turn \d+\]", c.split("NEW TURNS:")[1], flags=re.M)) <= 12
                             for c in curations)
    read = "\n".join(curations)
    for row in rows:  # the curator read every earlier turn of every row
        assert all(f"] {m['role']}: {m['content']}" in read for m in row["messages"][:-1])
    lines = {x["row_id"]: x for x in pq.read_table(tmp_path / "letta" / "responses.parquet").to_pylist()}
    results = json.loads((tmp_path / "letta" / "results.json").read_text())
    assert len({x["request"] for x in lines.values()}) == len(answers)  # identical requests are sent once
    for row in rows:
        line = lines[row["id"]]
        core = json.loads(line["memory_core"])
        expected_core = [f"User noted {row['gold_slots'][0]}"] if row["dimension"] in ("state_tracking", "safe_coding") else []
        assert set(expected_core) <= set(core)
        assert line["constraint_in_context"] == _hit(row, set(json.loads(line["memory_context_turns"])), core)
        if expected_core:
            assert line["constraint_in_context"] and expected_core[0] in json.loads(line["request"])[0]["content"]
    for dimension in ("state_tracking", "safe_coding"):
        if any(r["dimension"] == dimension for r in rows):
            assert _cell(results, dimension)["constraint_retrieval"]["value"] == 1.0


def _extractor(body: dict[str, Any], index: int) -> Reply:
    """Scripted Mem0 extraction: one memory per user turn of the batch (its first 200 characters)."""
    system = body["messages"][0]["content"]
    if MEM0_MARK not in system:
        return _judge_no(body, index)
    new = body["messages"][-1]["content"].split("## New Messages")[1].split("## Observation Date")[0]
    facts = [{"text": _mem0_fact(line[len("user: "):])} for line in new.strip().splitlines() if line.startswith("user: ")]
    return Reply.ok(json.dumps({"memory": facts}))


def _mem0_fact(content: str) -> str:
    return "The user said: " + content[:200]


def test_mem0_reads_every_turn_recalls_for_the_trigger_and_reruns_from_the_cache(release: Path, tmp_path: Path) -> None:
    rows = _rows(release, "pm_base")[: int(LIMIT)]
    args = ("eval", str(release), "--config", "pm_base", "--limit", LIMIT, "--model", "scripted-model", "--temperature", "0",
            "--out", str(tmp_path / "mem0"), "--memory", "mem0")
    home = {"HOME": str(tmp_path / "home")}  # mem0 writes ~/.mem0 on import unless told otherwise
    with ScriptedServer(handler=_extractor) as server:
        done = run_cli(*args, "--base-url", server.base_url, env=home, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        sent = server.chat_requests()
        again = run_cli(*args, "--base-url", server.base_url, env=home, timeout=900)
        assert again.returncode == 0 and len(server.chat_requests()) == len(sent)  # the curation replays from the cache
    assert "model requests sent     0" in again.stdout and "Inserting" not in done.stderr + again.stderr
    assert not (tmp_path / "home" / ".mem0").exists() and not list((tmp_path / "mem0").glob("mem0-*"))  # nothing left
    extractions = [r.body["messages"][-1]["content"] for r in sent if MEM0_MARK in r.body["messages"][0]["content"]]
    lines = {x["row_id"]: x for x in pq.read_table(tmp_path / "mem0" / "responses.parquet").to_pylist()}
    for row in rows:
        mine = [e for e in extractions if any(m["content"] in e for m in row["messages"][:-1])]
        read = "\n".join(mine)
        assert all(f"{m['role']}: {m['content']}" in read for m in row["messages"][:-1])  # every earlier turn, in batches
        date = re.match(r"\[(\d{4}-\d{2}-\d{2})T", row["messages"][-1]["content"]).group(1)
        assert all(f"## Current Date\n{date}" in e and f"## Observation Date\n{date}" in e for e in mine)
        stated = {_mem0_fact(m["content"]) for m in row["messages"][:-1] if m["role"] == "user"}
        line = lines[row["id"]]
        core = json.loads(line["memory_core"])
        assert core and len(core) <= 6 and set(core) <= stated  # only this row's memories
        request = json.loads(line["request"])
        assert "Memories recalled for this message:" in request[0]["content"]
        assert all(fact in request[0]["content"] for fact in core)
        assert [m["content"] for m in request[1:]] == [m["content"] for m in row["messages"][-5:]]
        assert line["constraint_in_context"] == _hit(row, set(json.loads(line["memory_context_turns"])), core)
    results = json.loads((tmp_path / "mem0" / "results.json").read_text())
    assert results["memory"]["kind"] == "mem0" and results["memory"]["library"] == "mem0ai 2.2.1"
    for dimension in sorted({r["dimension"] for r in rows}):
        expected = np.mean([lines[r["id"]]["constraint_in_context"] for r in rows if r["dimension"] == dimension])
        assert _cell(results, dimension)["constraint_retrieval"]["value"] == pytest.approx(expected, abs=1e-6)


def test_memory_only_offline(release: Path, tmp_path: Path) -> None:
    bad = run_cli("eval", str(release), "--config", "pm_base", "--model", "m", "--out", str(tmp_path / "x"),
                  "--memory", "rag", "--setting", "online")
    assert bad.returncode == 2 and "--memory works with --setting offline only" in bad.stderr


def test_per_dimension_takes_the_first_rows_of_each_dimension(release: Path) -> None:
    rows = _rows(release, "pm_base")
    first = {}
    for row in rows:
        first.setdefault(row["dimension"], []).append(row["id"])
    picked = read_rows(locate(str(release)), "pm_base", "test", per_dimension=2)
    assert sorted(r["id"] for r in picked) == sorted(i for ids in first.values() for i in ids[:2])
    assert [r["id"] for r in read_rows(locate(str(release)), "pm_base", "test", limit=3, per_dimension=2)] == \
        [r["id"] for r in picked[:3]]
