"""``triggerbench eval judge-check`` against a scripted judge over real HTTP (fast: no release)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import REPO, run_cli
from tests.servers.scripted import Reply, ScriptedServer

FIXTURE = REPO / "tests" / "fixtures" / "eval_judge_check.yaml"


def test_labelled_file_covers_every_dimension_and_kind() -> None:
    cases = yaml.safe_load(FIXTURE.read_text())
    pairs = {(c["dimension"], c["kind"]) for c in cases}
    assert len(pairs) == len(cases) == 20  # 5 dimensions x 4 kinds, once each
    assert {c["label"] for c in cases if c["kind"] in ("positive", "paraphrase")} == {"YES"}
    assert {c["label"] for c in cases if c["kind"] in ("negative", "keyword_only")} == {"NO"}


def test_always_yes_judge_agrees_half_with_kappa_zero() -> None:
    with ScriptedServer(handler=lambda body, i: Reply.ok('{"verdict": "YES", "reason": "always"}')) as server:
        done = run_cli("eval", "judge-check", "--judge-model", "scripted-model", "--judge-base-url", server.base_url, "--json")
        assert len(server.chat_requests()) == 20
        system = server.chat_requests()[0].body["messages"][0]["content"]
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # 10 YES labels right, 10 NO labels wrong; p_o = p_e = 0.5 -> kappa 0
    assert report["overall"] == {"n": 20.0, "accuracy": 0.5, "kappa": 0.0}
    assert report["by_kind"]["paraphrase"]["accuracy"] == 1.0 and report["by_kind"]["keyword_only"]["accuracy"] == 0.0
    assert system.startswith("You grade replies")


def test_judge_check_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "labels.yaml"
    bad.write_text(yaml.safe_dump([{"id": "x", "dimension": "state_tracking", "kind": "positive", "context": "c",
                                    "trigger": "t", "intent": "i", "response": "r", "label": "MAYBE"}]))
    done = run_cli("eval", "judge-check", "--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1", "--file", str(bad))
    assert done.returncode == 1 and f"{bad}: case 1: label:" in done.stderr and "Traceback" not in done.stderr
