"""Oracles on their own endpoint and model, and guarded against emptying a dimension (issue 18, item 9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stages.oracles.prompts import JUDGE_PROMPT
from tests.servers.scripted import Reply, ScriptedServer
from tests.test_llm_generation import everything_model
from tests.test_llm_transient import cli, small_build


def gullible_judge(body: dict[str, Any], index: int) -> Reply:
    """A weak oracle model: its judge says every answer delivers the intent."""
    if body["messages"][0]["content"] == JUDGE_PROMPT:
        return Reply.ok(json.dumps({"verdict": "YES", "reason": "scripted"}))
    return Reply.ok("You should pack the violin first.")


@pytest.mark.slow
def test_a_weak_oracle_model_stops_the_build_naming_oracle_model_and_share(tmp_path: Path) -> None:
    args = small_build(tmp_path)
    with ScriptedServer(handler=everything_model) as generator, ScriptedServer(handler=gullible_judge) as oracle:
        flags = ["--llm-base-url", generator.base_url, "--oracle-base-url", oracle.base_url, "--oracle-model", "tiny"]
        stopped = cli(*args, "--out", str(tmp_path / "out"), *flags)
        assert stopped.returncode == 1 and "Traceback" not in stopped.stderr, stopped.stderr[-3000:]
        line = stopped.stderr.strip().splitlines()[-1]
        assert line.startswith("triggerbench build: the necessity oracle (tiny) dropped ")
        assert "more than 50%): the oracle, not the data, is the likely problem" in line
        judged = [r.body["model"] for r in oracle.chat_requests()]
        assert judged and set(judged) == {"tiny"}  # the oracles asked their own endpoint and model
        assert all(r.body["messages"][0]["content"] != JUDGE_PROMPT for r in generator.chat_requests())
        proceeded = cli(*args, "--out", str(tmp_path / "out"), *flags, "--oracle-proceed")
    assert "(going on: --oracle-proceed)" in proceeded.stderr
