"""An LLM agent plays a PM-Bench day over real HTTP (llama.cpp server with SmolLM2-135M)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from stages.week import cli
from stages.week.generator import generate_week
from stages.week.model import dump_week
from tests.servers.llama import LlamaServer, llama_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.llm


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triggerbench week")
    cli.configure(parser)
    return cli.run(parser.parse_args(list(argv)))


def test_llm_agent_plays_one_day(llama_server: LlamaServer, tmp_path: Path, monkeypatch,  # noqa: F811
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-week-test-secret")
    week = generate_week(0)
    week_file = tmp_path / "week.json"
    week_file.write_text(dump_week(week))
    traj = tmp_path / "llm.jsonl"
    code = _cli("play", "--policy", "llm", "--week", str(week_file), "--out", str(traj), "--days", "1",
                "--max-turns", "2", "--context-tokens", "1800", "--llm-base-url", llama_server.base_url)
    assert code == 0, capsys.readouterr().err
    events = [json.loads(line) for line in traj.read_text().splitlines()]
    assert "sk-week-test-secret" not in traj.read_text()
    start = events[0]
    assert start["type"] == "run_start" and start["agent"] == f"llm:{llama_server.model}"
    assert start["config"]["days"] == [1] and "State [channel]" in start["system_prompt"] or "State [" in start[
        "system_prompt"]
    day1 = [s.id for s in week.days[0].steps]
    assert [e["step_id"] for e in events if e["type"] == "choose"] == day1
    turns = [e for e in events if e["type"] in ("choose", "query", "protocol_error")]
    assert len(turns) <= 2 * len(day1)  # at most --max-turns replies per step
    capsys.readouterr()
    assert _cli("score", str(traj), "--week", str(week_file), "--json") == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    due_day1 = len({t.id for t in week.tasks if t.day == 1} - {u.task_id for u in week.updates if u.kind == "cancel"})
    assert run["tp"] + run["fn"] == due_day1
    assert run["missing_steps"] == 0 and run["protocol_errors"] == sum(e["type"] == "protocol_error" for e in events)
