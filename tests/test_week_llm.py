"""An LLM agent plays PM-Bench steps over real HTTP (llama.cpp server with SmolLM2-135M).

A 135M model mostly answers with prose, so this checks the protocol, not the model: every
reply becomes an action or a recorded protocol error, every step ends with a choose, the run
is scored, and the API key never reaches the trajectory.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.llm import LLMClient, LLMConfig
from stages.week.llm_agent import LLMAgent
from stages.week.protocol import system_prompt
from stages.week.runtime import RuntimeConfig, read_trajectory, run_week, write_trajectory
from stages.week.scorer import score_trajectory
from tests.servers.llama import LlamaServer, llama_server  # noqa: F401 - the fixture
from tests.test_week_scorer import a4_week

pytestmark = pytest.mark.llm


def test_llm_agent_plays_through_the_runtime(llama_server: LlamaServer, tmp_path: Path) -> None:  # noqa: F811
    week = a4_week()  # one day, three steps, three tasks due at the second step
    secret = "sk-week-test-secret"
    client = LLMClient(LLMConfig(base_url=llama_server.base_url, api_key=secret, timeout=300))
    config = RuntimeConfig(max_turns_per_step=1)  # one reply per step keeps the test cheap
    prompt = system_prompt([c.name for c in week.channels], config.heartbeat, config.ledger, config.max_handles)
    agent = LLMAgent(client, prompt, context_tokens=1200, max_tokens=40)
    events = run_week(week, agent, config, run_id="smollm2")
    path = tmp_path / "llm.jsonl"
    write_trajectory(path, events)
    assert secret not in path.read_text()
    loaded = read_trajectory(path)
    assert loaded[0]["agent"] == f"llm:{llama_server.model}" and loaded[0]["system_prompt"] == prompt
    assert [e["step_id"] for e in loaded if e["type"] == "choose"] == ["d1_s01", "d1_s02", "d1_s03"]
    replies = [e for e in loaded if e["type"] in ("choose", "query", "protocol_error") and not e.get("forced")]
    assert len(replies) == 3  # exactly one reply per step: an action, or a recorded protocol error
    assert client.stats.as_dict()["requests"] >= len(replies)  # retries under load may add requests
    assert client.stats.as_dict()["failures"] == 0  # the server answered (a crashed one fails every request)
    assert all(turn[0] in ("user", "assistant") for turn in agent.turns)
    run = score_trajectory(week, loaded)["runs"][0]
    assert run["tp"] + run["fn"] == 3 and run["missing_steps"] == 0
    assert run["protocol_errors"] == sum(e["type"] == "protocol_error" for e in loaded)
    assert json.loads(json.dumps(run)) == run


@pytest.mark.slow  # twelve SmolLM2 requests
def test_union_query_council_over_the_real_protocol(llama_server: LlamaServer) -> None:  # noqa: F811
    from stages.week.hierarchy import HierarchicalAgent, coordinator_prompt
    from stages.week.llm_agent import LLMCouncil

    week = a4_week()
    client = LLMClient(LLMConfig(base_url=llama_server.base_url, timeout=300))
    channels = [c.name for c in week.channels]
    config = RuntimeConfig(max_turns_per_step=1, hierarchical=True)
    council = LLMCouncil(client, channels, context_tokens=1500, max_tokens=40)
    coordinator = LLMAgent(client, coordinator_prompt(system_prompt(channels, "off", False, 8)),
                           context_tokens=1500, max_tokens=40)
    events = run_week(week, HierarchicalAgent(council, coordinator, channels, council.prompts), config, run_id="uq")
    council_events = [e for e in events if e["type"] == "subagents"]
    assert [e["step_id"] for e in council_events] == ["d1_s01", "d1_s02", "d1_s03"]
    for event in council_events:  # every subagent reply became a signal: parsed, or an error
        assert [s["role"] for s in event["signals"]] == ["event_watcher", "status_watcher", "update_watcher"]
        assert all(s["error"] is None or s["error"].startswith(("not one JSON", "no answer")) for s in event["signals"])
    assert events[-1]["llm"]["requests"] >= 3 * 4 and events[-1]["llm"]["failures"] == 0
    report = score_trajectory(week, events)
    assert [r["setup"] for r in report["runs"]] == ["union-query", "majority-vote", "unanimous-vote"]
    assert all(r["tp"] + r["fn"] == 3 for r in report["runs"])
