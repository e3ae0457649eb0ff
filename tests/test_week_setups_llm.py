"""All eight setups over real HTTP: ``week play --policy llm`` against the scripted server, then ``week score``.

The server's handler plays each role from its system prompt: subagents answer the votes of
:data:`tests.test_week_setups.VOTES_BY_STEP` (one bad handle, one reply that is not JSON), the
coordinator and the single agents query the calendar and select the three due tasks when its
reply shows the cue. Every number below follows from that script by hand.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from stages.week import cli
from stages.week.model import dump_week
from stages.week.setups import PLAY_SETUPS, SETUPS
from tests.servers.scripted import Reply, ScriptedServer
from tests.test_week_scorer import a4_week
from tests.test_week_setups import VOTES_BY_STEP

pytestmark = pytest.mark.llm

SECRET = "sk-week-setups-secret"
CHOOSE_ALL = {"action": "choose", "choice": "B", "task_ids": ["task_1", "task_2", "task_3"], "channel": "NONE"}
CHOOSE_NONE = {"action": "choose", "choice": "A", "task_ids": [], "channel": "NONE"}
QUERY_CALENDAR = {"action": "query_state", "choice": "NONE", "task_ids": [], "channel": "calendar"}


def _step_of(text: str) -> str:
    match = re.search(r"step (\d+) of 3\]", text)
    return f"d1_s{int(match.group(1)):02d}" if match else ""


def handler(body: dict[str, Any], index: int) -> Reply:
    messages = body["messages"]
    system, last = messages[0]["content"], messages[-1]["content"]
    role = re.search(r"Your role: (\w+)\.", system)
    if role:
        step = _step_of(last)
        if role.group(1) == "update_watcher" and step == "d1_s03":
            return Reply.ok("Nothing changes here, I think.")
        signal: dict[str, Any] = {"candidate_due": VOTES_BY_STEP[step][role.group(1)], "evidence": "scripted"}
        if role.group(1) == "status_watcher":
            signal["query_suggestions"] = ["calendar"]
        if role.group(1) == "update_watcher" and step == "d1_s01":
            signal["do_not_select"] = ["task_99"]
        return Reply.ok(json.dumps(signal))
    ledger = {"ledger": []} if "Keep a TODO ledger" in system else {}
    if "Cue for moved_calendar_call." in last:
        return Reply.ok(json.dumps({**CHOOSE_ALL, **ledger}))
    if last.startswith("State [calendar]") or "You coordinate three helpers" in system:
        return Reply.ok(json.dumps({**CHOOSE_NONE, **ledger}))
    return Reply.ok(json.dumps(QUERY_CALENDAR))


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triggerbench")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.configure(sub.add_parser("week"))
    return cli.run(parser.parse_args(list(argv)))


def test_all_eight_setups_on_the_scripted_server(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    week = a4_week()
    day = week.days[0].model_copy(update={"opening": "Today: " + "; ".join(t.label for t in week.tasks) + "."})
    week_file = tmp_path / "week.json"
    week_file.write_text(dump_week(week.model_copy(update={"days": [day]})))
    traj = tmp_path / "llm.jsonl"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with ScriptedServer(handler=handler) as server:
        for name in PLAY_SETUPS:
            assert _cli("week", "play", "--setup", name, "--policy", "llm", "--week", str(week_file), "--out",
                        str(traj), "--append", "--run-id", name, "--llm-base-url", server.base_url) == 0
        requests = server.chat_requests()
    assert SECRET not in traj.read_text()
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in requests)
    # five single-agent runs x 3 steps x (query + choose), and one union-query run x 3 steps x (3 subagents + 1)
    assert len(requests) == 5 * 3 * 2 + 3 * 4
    council = [r.body["messages"][-1]["content"] for r in requests if "Your role:" in r.body["messages"][0]["content"]]
    assert len(council) == 9 and not council[0].startswith("State replies")
    # from step 2 on, each subagent first reads what the union's queries returned one step earlier
    assert all(text.startswith("State replies at the previous step:\nState [calendar]: ") for text in council[3:])
    assert "Cue for moved_calendar_call." in council[6]
    capsys.readouterr()
    assert _cli("week", "score", str(traj), "--week", str(week_file), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    rows = {row["setup"]: row for row in report["setups"]}
    assert list(rows) == list(SETUPS)
    for name in PLAY_SETUPS:
        assert (rows[name]["tp"], rows[name]["fp"], rows[name]["fn"], rows[name]["set_f1"]) == (3, 0, 0, 1.0)
        assert rows[name]["query_state"] == 3 and rows[name]["check_time"] == 0
        assert rows[name]["llm_requests"] == (12 if name == "union-query" else 6)
    major, unan = rows["majority-vote"], rows["unanimous-vote"]
    assert (major["tp"], major["fp"], major["fn"]) == (2, 1, 1) and major["set_f1"] == pytest.approx(2 / 3)
    assert (unan["tp"], unan["fp"], unan["fn"]) == (1, 0, 2) and unan["set_f1"] == pytest.approx(0.5)
    events = [json.loads(line) for line in traj.read_text().splitlines()]
    uq = [e for e in events if e["run_id"] == "union-query"]
    assert set(uq[0]["prompts"]) == {"event_watcher", "status_watcher", "update_watcher", "coordinator"}
    signals = {e["step_id"]: {s["role"]: s for s in e["signals"]} for e in uq if e["type"] == "subagents"}
    assert signals["d1_s01"]["update_watcher"]["dropped"] == ["do_not_select: 'task_99'"]
    assert signals["d1_s03"]["update_watcher"]["error"] == "not one JSON object (JSONDecodeError)"
    assert [e["choice"] for e in uq if e["type"] == "choose"] == ["A", "B", "A"]
    assert _cli("week", "score", str(traj), "--week", str(week_file)) == 0
    table = capsys.readouterr().out.splitlines()[3:11]
    assert [line.split()[0] for line in table] == list(SETUPS)
