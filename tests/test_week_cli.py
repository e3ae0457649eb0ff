"""``triggerbench week`` commands through an argparse root built here (as the lead's CLI does)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from stages.week import cli


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triggerbench")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.configure(sub.add_parser("week"))
    args = parser.parse_args(list(argv))
    return cli.run(args)


@pytest.fixture(scope="module")
def week_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("week") / "week.json"
    assert _cli("week", "generate", "--seed", "0", "--out", str(path)) == 0
    return path


def test_validate_ok(week_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli("week", "validate", str(week_file)) == 0
    assert "perfect-play audit passed (81/81 on time)" in capsys.readouterr().out


def test_validate_reports_invariant_with_location(week_file: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(week_file.read_text())
    step = data["days"][1]["steps"][4]
    step["narrative"] += f" The wall clock shows {step['time']}."
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert _cli("week", "validate", str(bad)) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{bad}: no_time_leak: day 2 step {step['id']}: narrative states the current time ({step['time']})"]


def test_unreadable_inputs_give_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.json"
    assert _cli("week", "validate", str(missing)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(missing) in err and "Traceback" not in err
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": "x",\n  oops}')
    assert _cli("week", "stats", str(broken)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {broken}:2: not JSON")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"id": "x", "seed": "zero"}))
    assert _cli("week", "validate", str(wrong)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(wrong) in err and "schema errors" in err


def test_play_and_score_reference_policies(week_file: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    traj = tmp_path / "runs.jsonl"
    for policy in ("oracle", "never-act", "act-on-everything", "clock-only"):
        assert _cli("week", "play", "--policy", policy, "--week", str(week_file), "--out", str(traj), "--append") == 0
    capsys.readouterr()
    assert _cli("week", "score", str(traj), "--week", str(week_file), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    f1 = {r["run_id"]: r["set_f1"] for r in report["runs"]}
    assert f1["oracle"] == 1.0 and f1["never-act"] == 0.0
    assert 0 < f1["act-on-everything"] < f1["clock-only"] < 1
    assert report["macro_set_f1"] == pytest.approx(sum(f1.values()) / 4)
    assert _cli("week", "score", str(traj), "--week", str(week_file)) == 0
    assert "macro Set-F1" in capsys.readouterr().out


def test_score_rejects_trajectory_of_another_week(week_file: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.json"
    assert _cli("week", "generate", "--seed", "5", "--out", str(other)) == 0
    traj = tmp_path / "t.jsonl"
    assert _cli("week", "play", "--policy", "oracle", "--week", str(other), "--out", str(traj)) == 0
    capsys.readouterr()
    assert _cli("week", "score", str(traj), "--week", str(week_file)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {traj}: run oracle was recorded on another week") and err.count("\n") == 1


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _cli("week", "generate")
    assert exc.value.code == 2
