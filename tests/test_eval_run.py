"""``triggerbench eval`` end to end over real HTTP on a small real release.

The release is the run's small release (tests/conftest.py: the repo's own blueprints, two seeds per
dimension; for logical adherence one flipped-trigger and one flipped-state negative) with
``--limit``. A scripted server answers the evaluated model by fixed rules keyed on the row's
user turns, and plays a scripted judge:

- Pos-Clean: an intervention naming every gold slot (one safe-coding row: HTTP 400, a failure);
- Pos-Over: logical adherence names only the first slot, the others stay silent;
- Neg-Clean: state tracking intervenes (a false alarm), the others stay silent;
- RM: state tracking gives the reference answer, temporal grounding a paraphrase, others "No idea.";
- judge: YES exactly when the response holds one of the two intervention phrases or the paraphrase.

Every expected metric is worked out below from these rules and the rows, never from the code.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO, run_cli
from tests.servers.llama import LlamaServer
from tests.servers.scripted import Reply, ScriptedServer

pytestmark = pytest.mark.slow

ALL = "Before you go on: {slots}. Please check."
FIRST = "Hold on, remember {slot}."
SILENT = "Happy to help with that."
PARAPHRASE = "PARAPHRASE of the fact"


@pytest.fixture(scope="module")
def release(small_build: dict) -> Path:
    """The run's small release (tests/conftest.py: two seeds per dimension, 20K long contexts)."""
    return small_build["release"]


def _rows(release: Path, config: str) -> list[dict[str, Any]]:
    return pq.read_table(release / "data" / config / "test-00000-of-00001.parquet").to_pylist()


def _users(messages: list[dict[str, str]]) -> tuple[str, ...]:
    return tuple(m["content"] for m in messages if m["role"] == "user")


def _pm_rule(row: dict[str, Any], failing: str) -> Reply:
    slots, variant, dimension = row["gold_slots"], row["variant"], row["dimension"]
    if row["id"] == failing:
        return Reply.error(400, "scripted refusal")
    if variant == "pos_clean" or (variant == "neg_clean" and dimension == "state_tracking"):
        return Reply.ok(ALL.format(slots="; ".join(slots)))
    if variant == "pos_over" and dimension == "logical_adherence":
        return Reply.ok(FIRST.format(slot=slots[0]))
    return Reply.ok(SILENT)


def _rm_rule(row: dict[str, Any]) -> Reply:
    if row["dimension"] == "state_tracking":
        return Reply.ok(f"I believe: {row['reference_answer']}")
    return Reply.ok(PARAPHRASE if row["dimension"] == "temporal_grounding" else "No idea.")


class Rules:
    """The scripted model (keyed on a request's user turns) and the scripted judge."""

    def __init__(self, release: Path, silent: bool = False) -> None:
        self.replies: dict[tuple[str, ...], Reply] = {}
        self.failing = next(r["id"] for r in _rows(release, "pm_base")
                            if r["dimension"] == "safe_coding" and r["variant"] == "pos_clean")
        for config in ("pm_base", "pm_20k"):
            for row in _rows(release, config):
                self.replies[_users(row["messages"])] = Reply.ok(SILENT) if silent else _pm_rule(row, self.failing)
        for config in ("rm_base",):
            for row in _rows(release, config):
                self.replies[_users(row["messages"])] = _rm_rule(row)

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        messages = body["messages"]
        if messages[0]["role"] == "system" and messages[0]["content"].startswith("You grade"):
            case = messages[-1]["content"]
            hit = any(mark in case for mark in ("Before you go on", "Hold on, remember", f"RESPONSE: {PARAPHRASE}"))
            return Reply.ok(json.dumps({"verdict": "YES" if hit else "NO", "reason": "scripted"}))
        return self.replies.get(_users(messages), Reply.ok("Noted."))


def _expected_row(row: dict[str, Any], failing: str) -> tuple[float, float | None]:
    """(PM correct, slot recall) of one row under the rules."""
    variant, dimension, slots = row["variant"], row["dimension"], row["gold_slots"]
    if row["id"] == failing:
        return 0.0, 0.0
    if variant == "pos_clean":
        return 1.0, 1.0
    if variant == "pos_over":
        return (1.0, 1 / len(slots)) if dimension == "logical_adherence" else (0.0, 0.0)
    return (0.0 if dimension == "state_tracking" else 1.0), None


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _cell(results: dict[str, Any], config: str, dimension: str, variant: str) -> dict[str, Any]:
    return next(c for c in results["cells"] if (c["config"], c["dimension"], c["variant"]) == (config, dimension, variant))


def _eval(release: Path, base_url: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_cli("eval", str(release), "--model", "scripted-model", "--base-url", base_url, "--out", str(out),
                   "--temperature", "0", "--concurrency", "4", *extra, timeout=600)


def test_metrics_equal_hand_computed_values(release: Path, tmp_path: Path) -> None:
    rules = Rules(release)
    with ScriptedServer(handler=rules) as server:
        done = _eval(release, server.base_url, tmp_path / "run", "--config", "pm_base", "rm_base")
        assert done.returncode == 0, done.stderr[-3000:]
        first = len(server.chat_requests())
        again = _eval(release, server.base_url, tmp_path / "run", "--config", "pm_base", "rm_base")
        assert again.returncode == 0 and len(server.chat_requests()) == first  # a finished run resends nothing
        retried = _eval(release, server.base_url, tmp_path / "run", "--config", "pm_base", "rm_base", "--retry-failed")
        assert retried.returncode == 0 and len(server.chat_requests()) == first + 1  # only the failed request
    assert "model requests sent     0" in again.stdout and "judge requests sent     0" in again.stdout
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    pm = _rows(release, "pm_base")
    by_row = {r["id"]: _expected_row(r, rules.failing) for r in pm}
    for dimension in sorted({r["dimension"] for r in pm}) + ["all"]:
        mine = [r for r in pm if dimension in ("all", r["dimension"])]
        groups = {v: [r for r in mine if r["variant"] == v] for v in ("pos_clean", "pos_over", "neg_clean")}
        groups |= {"all_positive": [r for r in mine if r["variant"] != "neg_clean"], "all": mine}
        for variant, rows in groups.items():
            if not rows:
                continue
            cell = _cell(results, "pm_base", dimension, variant)
            assert cell["n"] == len(rows) and cell["failed"] == sum(r["id"] == rules.failing for r in rows)
            assert cell["pm_acc"]["value"] == pytest.approx(_mean([by_row[r["id"]][0] for r in rows]), abs=1e-6)
            slots = [by_row[r["id"]][1] for r in rows if r["variant"] != "neg_clean"]
            assert (cell["slot_match"] or {}).get("value") == (pytest.approx(_mean(slots), abs=1e-6) if slots else None)
            assert cell["pm_acc"]["low"] <= cell["pm_acc"]["value"] <= cell["pm_acc"]["high"]
    # the rules make these cells exact whatever the row counts
    assert _cell(results, "pm_base", "state_tracking", "neg_clean")["pm_acc"]["value"] == 0.0
    assert _cell(results, "pm_base", "logical_adherence", "neg_clean")["pm_acc"]["value"] == 1.0
    assert _cell(results, "pm_base", "logical_adherence", "pos_over")["pm_acc"]["value"] == 1.0
    assert _cell(results, "pm_base", "temporal_grounding", "pos_over")["slot_match"]["value"] == 0.0
    # RM: string match settles state tracking, the judge the paraphrase, the rest is wrong
    rm = _rows(release, "rm_base")
    for dimension in sorted({r["dimension"] for r in rm}):
        cell = _cell(results, "rm_base", dimension, "rm")
        assert cell["rm_acc"]["value"] == (1.0 if dimension in ("state_tracking", "temporal_grounding") else 0.0)
        assert cell["string_match"]["value"] == (1.0 if dimension == "state_tracking" else 0.0)
    assert results["rows"] == {"total": len(pm) + len(rm), "failed": 1, "failure_reasons": {"model:http_400": 1}}
    lines = pq.read_table(tmp_path / "run" / "responses.parquet").to_pylist()
    failed = [x for x in lines if x["status"] == "failed"]
    assert [x["row_id"] for x in failed] == [rules.failing] and "scripted refusal" in failed[0]["failure_detail"]
    assert all(x["verdict"] in ("YES", "NO") for x in lines if x["status"] == "ok" and not x["answer_matched"])
    assert all(len(x["prompt_hash"]) == 64 and x["model"] == x["judge_model"] == "scripted-model" for x in lines)
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Neg-Clean PM" in report and "## rm_base" in report
    assert (tmp_path / "run" / "accuracy_vs_context.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_long_context_limit_and_compare(release: Path, tmp_path: Path) -> None:
    with ScriptedServer(handler=Rules(release)) as server:
        assert _eval(release, server.base_url, tmp_path / "a", "--config", "pm_20k", "--limit", "20").returncode == 0
    with ScriptedServer(handler=Rules(release, silent=True)) as server:
        assert _eval(release, server.base_url, tmp_path / "b", "--config", "pm_20k", "--limit", "20").returncode == 0
    rows = _rows(release, "pm_20k")[:20]
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    assert _cell(results, "pm_20k", "all", "all")["n"] == 20
    expected = _mean([_expected_row(r, "none")[0] for r in rows])  # the failing row is a pm_base row only
    assert _cell(results, "pm_20k", "all", "all")["pm_acc"]["value"] == pytest.approx(expected, abs=1e-6)
    compared = run_cli("eval", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    assert compared.returncode == 0, compared.stderr
    table = json.loads(compared.stdout)
    positives = [r for r in rows if r["variant"] == "pos_clean"]
    entry = next(e for e in table if (e["dimension"], e["variant"], e["metric"]) == ("all", "pos_clean", "pm_acc"))
    # silent B loses every Pos-Clean row A got right: B - A = -1 on each, interval excludes 0
    assert entry["n"] == len(positives) and entry["a"] == 1.0 and entry["b"] == 0.0
    assert entry["difference"] == -1.0 and entry["excludes_zero"]
    text = run_cli("eval", "compare", str(tmp_path / "a"), str(tmp_path / "b")).stdout
    assert "| pm_20k | all | pos_clean | pm_acc |" in text


def test_settings_shape_the_requests(release: Path, tmp_path: Path) -> None:
    rows = {r["id"]: r for r in _rows(release, "pm_base")[:6]}
    with ScriptedServer(handler=Rules(release)) as server:
        assert _eval(release, server.base_url, tmp_path / "min", "--config", "pm_base", "--limit", "6",
                     "--setting", "minimal").returncode == 0
        minimal = [r.body for r in server.chat_requests() if not r.body["messages"][0]["content"].startswith("You grade")]
    for row in rows.values():
        # a flipped state turn is a constraint turn too: each kept exchange counts once
        starts = set(row["constraint_turns"]) | ({row["resolution_turn"]} if row["resolution_turn"] is not None else set())
        keep = 2 * len(starts) + 1
        trigger = row["messages"][-1]["content"]
        sent = [b for b in minimal if b["messages"][-1]["content"] == trigger and len(b["messages"]) == keep + 1]
        assert sent, f"no minimal request of {keep} turns for {row['id']}"
    with ScriptedServer(handler=Rules(release)) as server:
        assert _eval(release, server.base_url, tmp_path / "on", "--config", "pm_base", "--limit", "6",
                     "--setting", "online").returncode == 0
    lines = pq.read_table(tmp_path / "on" / "responses.parquet").to_pylist()
    for line in lines:
        replies = json.loads(line["online_replies"])
        request = json.loads(line["request"])
        row = rows[line["row_id"]]
        assert sorted(int(k) for k in replies) == [c + 1 for c in row["constraint_turns"]]
        for turn, text in replies.items():
            assert text == "Noted." and request[int(turn) + 1]["content"] == "Noted."  # +1: the system prompt


class AimeRules:
    """The scripted model on ``aime_probe``: problems with an even id are answered right, odd ones wrong
    (the reference + 1); at the trigger it intervenes exactly when its own math answer in the history
    was right, except in temporal grounding, where it never does. The judge as in :class:`Rules`."""

    def __init__(self, release: Path) -> None:
        self.rows = _rows(release, "aime_probe")
        self.by_math = {r["messages"][r["math_turn"]]["content"]: r for r in self.rows}

    @staticmethod
    def math_answer(row: dict[str, Any]) -> int:
        return row["aime_answer"] + (0 if int(row["aime_id"]) % 2 == 0 else 1)

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        messages = body["messages"]
        if messages[0]["content"].startswith("You grade"):
            hit = "Before you go on" in messages[-1]["content"]
            return Reply.ok(json.dumps({"verdict": "YES" if hit else "NO", "reason": "scripted"}))
        row = self.by_math.get(messages[-1]["content"])
        if row is not None:  # the math turn: a worked answer ending in a boxed integer
            return Reply.ok(f"Working through it step by step... so the answer is \\boxed{{{self.math_answer(row)}}}.")
        row = next(self.by_math[m["content"]] for m in messages if m["content"] in self.by_math)
        answered = messages[-2]["content"]  # the model's own math answer, kept in the history
        right = f"boxed{{{row['aime_answer']}}}" in answered
        if right and row["dimension"] != "temporal_grounding":
            return Reply.ok(ALL.format(slots="; ".join(row["gold_slots"])))
        return Reply.ok(SILENT)


def test_aime_probe_accuracy_and_conditional_pm_hit(release: Path, tmp_path: Path) -> None:
    """AIME accuracy, PM hit and PM hit given a right / wrong math answer equal the values the rules give."""
    rules = AimeRules(release)
    with ScriptedServer(handler=rules) as server:
        done = _eval(release, server.base_url, tmp_path / "aime", "--config", "aime_probe")
        assert done.returncode == 0, done.stderr[-3000:]
        sent = [r.body["messages"] for r in server.chat_requests() if not r.body["messages"][0]["content"].startswith("You grade")]
    assert len(sent) == 2 * len(rules.rows)  # per row: the math answer, then the trigger
    results = json.loads((tmp_path / "aime" / "results.json").read_text())
    dimensions = sorted({r["dimension"] for r in rules.rows})
    # the small release's two attention-recovery seeds interrupt with code, so it has no math pair
    assert len(dimensions) == 4 and all(len({r["aime_id"] for r in rules.rows if r["dimension"] == d}) == 30
                                        for d in dimensions)
    for dimension in [*dimensions, "all"]:
        mine = [r for r in rules.rows if dimension in ("all", r["dimension"])]
        cell = _cell(results, "aime_probe", dimension, "pos_clean")
        # 15 of the 30 problem ids are even: half the rows of every dimension are answered right
        assert cell["n"] == len(mine) and cell["aime_acc"]["value"] == pytest.approx(0.5, abs=1e-6)
        pm_when_right = 0.0 if dimension == "temporal_grounding" else 1.0
        if dimension == "all":
            pm_when_right = sum(r["dimension"] != "temporal_grounding" for r in mine) / len(mine)
        assert cell["pm_given_correct"]["value"] == pytest.approx(pm_when_right, abs=1e-6)
        assert cell["pm_given_wrong"]["value"] == 0.0
        assert cell["pm_acc"]["value"] == pytest.approx(pm_when_right / 2, abs=1e-6)
        assert cell["pm_delta"] == pytest.approx(pm_when_right, abs=1e-6)
    lines = pq.read_table(tmp_path / "aime" / "responses.parquet").to_pylist()
    assert all(x["math_correct"] == (int(x["row_id"].rsplit("aime", 1)[1]) % 2 == 0) for x in lines)
    report = (tmp_path / "aime" / "report.md").read_text()
    assert "| dimension | rows | failed | AIME acc | PM hit | PM given right | PM given wrong | Δ |" in report
    minimal = run_cli("eval", str(release), "--config", "aime_probe", "--model", "m", "--setting", "minimal",
                      "--out", str(tmp_path / "x"))
    assert minimal.returncode == 2 and "aime_probe keeps the whole conversation" in minimal.stderr


def test_fails_fast_on_a_wrong_endpoint(release: Path, tmp_path: Path) -> None:
    started = time.monotonic()
    dead = run_cli("eval", str(release), "--config", "pm_base", "--model", "m", "--base-url",
                   "http://127.0.0.1:9/v1", "--out", str(tmp_path / "dead"))
    assert dead.returncode == 1 and "cannot reach the endpoint http://127.0.0.1:9/v1" in dead.stderr
    assert time.monotonic() - started < 60 and "Traceback" not in dead.stderr
    with ScriptedServer() as server:
        wrong = run_cli("eval", str(release), "--config", "pm_base", "--model", "gpt-nope", "--base-url",
                        server.base_url, "--out", str(tmp_path / "wrong"))
        assert not server.chat_requests()
    assert wrong.returncode == 1 and "does not serve model 'gpt-nope'" in wrong.stderr
    unknown = run_cli("eval", str(release), "--config", "pm_999k", "--model", "m", "--out", str(tmp_path / "x"))
    assert unknown.returncode == 1 and "no config 'pm_999k'" in unknown.stderr
    usage = run_cli("eval", str(release), "--config", "pm_base")
    assert usage.returncode == 2 and "missing --model, --out" in usage.stderr


def test_sigkill_then_resume_gives_identical_results(release: Path, tmp_path: Path) -> None:
    args = ["--config", "pm_base", "rm_base"]
    with ScriptedServer(handler=Rules(release)) as server:
        assert _eval(release, server.base_url, tmp_path / "whole", *args).returncode == 0
        total = len(server.chat_requests())
    with ScriptedServer(handler=Rules(release), latency=0.15) as server:
        command = [sys.executable, "-m", "pipeline", "eval", str(release), "--model", "scripted-model",
                   "--base-url", server.base_url, "--out", str(tmp_path / "killed"), "--temperature", "0",
                   "--concurrency", "4", *args]
        process = subprocess.Popen(command, cwd=REPO, env={**os.environ}, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.chat_requests()) < total // 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        sent_before = len(server.chat_requests())
        assert 0 < sent_before < total
        assert not (tmp_path / "killed" / "results.json").exists()
        resumed = _eval(release, server.base_url, tmp_path / "killed", *args)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        resent = len(server.chat_requests()) - sent_before
    assert resent < total  # answered requests were not sent again
    assert (tmp_path / "killed" / "results.json").read_bytes() == (tmp_path / "whole" / "results.json").read_bytes()
    assert (tmp_path / "killed" / "responses.parquet").read_bytes() == (tmp_path / "whole" / "responses.parquet").read_bytes()


@pytest.mark.llm
def test_llama_cpp_smollm2_run_completes_and_reruns_offline(release: Path, tmp_path: Path) -> None:
    """The real protocol: SmolLM2 answers and judges 3 pm_base rows; a rerun sends 0 requests."""
    args = ["--config", "pm_base", "--limit", "3", "--max-tokens", "96", "--concurrency", "1"]
    with LlamaServer(n_ctx=8192) as server:  # base dialogues are ~2.8K SmolLM2 tokens
        command = ["eval", str(release), "--model", server.model, "--base-url", server.base_url, "--out", str(tmp_path / "run")]
        first = run_cli(*command, *args, timeout=1500)
        assert first.returncode == 0, first.stderr[-3000:]
        second = run_cli(*command, *args, timeout=600)
    assert second.returncode == 0
    assert "model requests sent     0" in second.stdout and "judge requests sent     0" in second.stdout, second.stdout
    lines = pq.read_table(tmp_path / "run" / "responses.parquet").to_pylist()
    assert len(lines) == 3
    for line in lines:
        assert line["verdict"] in ("YES", "NO") or (line["status"] == "failed" and line["failure"]), line
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["rows"]["total"] == 3 and results["judge_model"] == server.model
