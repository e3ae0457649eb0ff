"""``triggerbench show`` prints a row of the default release as a conversation a reviewer can read."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow


def _first_row(release, config: str, dimension: str) -> dict:
    shard = sorted((release / "data" / config).glob("test-*.parquet"))[0]
    return next(r for r in pq.read_table(shard).to_pylist() if r["dimension"] == dimension and r["variant"] == "neg_clean")


def test_show_marks_turns_collapses_injection_and_lists_twins(default_build: dict) -> None:
    release = default_build["release"]
    base = _first_row(release, "pm_base", "state_tracking")
    shown = run_cli("show", str(release), base["id"])
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout
    assert text.splitlines()[0] == f"{base['id']}  (pm_base)"
    assert text.count("<CONSTRAINT>") == len(base["constraint_turns"]) and text.count("<TRIGGER>") == 1
    assert "<RESOLUTION>" in text and "expected: silent" in text
    assert f"pm_base: {base['blueprint_id']}.pos_clean.implicit.base" in text
    assert f"rm_base: {base['blueprint_id']}.rm.implicit.base" in text
    long_id = base["id"].replace(".base", ".20k")
    long = run_cli("show", str(release), long_id)
    assert long.returncode == 0, long.stderr[-2000:]
    assert "injected turns (" in long.stdout and "--full prints them" in long.stdout
    long_row = next(r for r in pq.read_table(sorted((release / "data" / "pm_20k").glob("test-*.parquet"))[0]).to_pylist()
                    if r["id"] == long_id)
    headers = [line for line in long.stdout.splitlines() if line.startswith("[")]
    assert len(headers) == long_row["n_turns"] - len(long_row["injected_turns"])  # the block is collapsed
    missing = run_cli("show", str(release), "no-such-blueprint.pos_clean.implicit.base")
    assert missing.returncode == 1 and "no row" in missing.stderr and "Traceback" not in missing.stderr
