"""``triggerbench validate`` on broken blueprint files: exit 1, ``path:line: field: message``, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

VALID = (REPO / "tests" / "fixtures" / "valid_blueprint.yaml").read_text(encoding="utf-8")


def _validate(*paths: Path) -> tuple[int, str, str]:
    result = run_cli("validate", *map(str, paths))
    assert "Traceback" not in result.stderr + result.stdout
    return result.returncode, result.stdout, result.stderr


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


def test_valid_fixture_passes(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(VALID)
    code, out, err = _validate(path)
    assert code == 0, out + err
    assert "ok: 1 blueprint(s)" in err


@pytest.mark.parametrize(
    ("name", "text", "needle", "field", "message"),
    [
        ("syntax", VALID.replace("domain: transit_travel", "domain: transit: travel"), "domain", "<file>",
         "YAML syntax error"),
        ("missing", "\n".join(l for l in VALID.splitlines() if not l.startswith("reference_intent")), None,
         "reference_intent", "required field is missing"),
        ("wrong-type", VALID.replace('gold_slots: ["{item}", trunk]', "gold_slots: 5"), "gold_slots", "gold_slots",
         "valid list"),
        ("enum", VALID.replace("dimension: state_tracking", "dimension: memory_lane"), "dimension", "dimension",
         "unknown value 'memory_lane'"),
        ("bad-time", VALID.replace("at: 2026-05-09T18:52", "at: 6:52pm"), "  at: 6:52pm", "trigger.at",
         "expected a time like"),
        ("duplicate-key", VALID.replace("domain: transit_travel", "domain: transit_travel\ndomain: automotive"),
         "domain: automotive", "domain", "duplicate key"),
        ("empty", "", None, "<file>", "file is empty"),
    ],
)
def test_broken_file_reports_path_line_field(tmp_path: Path, name: str, text: str, needle: str | None, field: str,
                                             message: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    code, out, _ = _validate(path)
    assert code == 1
    lines = [l for l in out.splitlines() if l.startswith(str(path))]
    assert lines, out
    expected_line = _line_of(text, needle) if needle else 1
    matching = [l for l in lines if f":{expected_line}: {field}: " in l and message in l]
    assert matching, f"expected {path}:{expected_line}: {field}: ...{message}... in:\n{out}"


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(VALID)
    second.write_text(VALID)
    code, out, _ = _validate(tmp_path)
    assert code == 1
    assert f"{second}:1: id: duplicate id 'fixture-taxi-instrument' (first in {first}:1)" in out


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    code, out, _ = _validate(tmp_path / "nowhere.yaml", tmp_path)
    assert code == 1
    assert f"{tmp_path / 'nowhere.yaml'}:1: <file>: no such file or directory" in out
    assert f"{tmp_path}:1: <dir>: no .yaml files found" in out


def test_usage_error_exit_code() -> None:
    assert run_cli("validate").returncode == 2
