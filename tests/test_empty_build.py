"""A build that drops every row says which stage emptied it and why (issue 18, item 2).

Before, the release writer got nothing and the audit died with a traceback naming the
staging directory. Now the CLI prints one line naming the stage, the drop reason and a
first example, exits 1, and writes no release (the traceback stays in the run log).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.config import DEFAULT_CONFIG
from tests.conftest import small_corpus

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRIGGERBENCH_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)


def config(tmp_path: Path, blueprints: Path, base: Path = DEFAULT_CONFIG, **dialogue_counts: list[int]) -> Path:
    """``base`` (a config file) reading ``blueprints``, with the dialogues' filler counts changed."""
    data = yaml.safe_load(base.read_text(encoding="utf-8"))
    data["blueprints"] = str(blueprints)
    data["stages"]["dialogues"]["filler_exchanges"].update(dialogue_counts)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def last_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_filler_counts_no_pool_can_fill_name_the_dialogues_stage_and_the_pool(tmp_path: Path) -> None:
    small = small_corpus(tmp_path / "inputs")
    path = config(tmp_path, small.parent / "blueprints", small, attention_recovery=[200, 300])  # the first seed is attention recovery
    result = cli("build", "--limit", "1", "--config", str(path), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache"))
    line = last_line(result)
    first = sorted((small.parent / "blueprints").glob("*/*.yaml"))[0].stem  # --limit 1 keeps the first seed by path
    assert line.startswith("triggerbench build: the build has no rows: stage dialogues dropped all 2 items "
                           f"(too_little_filler: 2); first: {first}--s00: topic "), line
    assert "slot-free exchanges, need" in line and "(run log: " in line
    assert not [p for p in (tmp_path / "out").glob("*")]  # no release, no staging left
    run_log = Path(line.rsplit("(run log: ", 1)[1].rstrip(")"))
    assert "Traceback" in run_log.read_text(encoding="utf-8")  # the traceback went to the run log


@pytest.mark.slow
def test_a_corpus_without_seed_blueprints_names_the_directory(tmp_path: Path) -> None:
    corpus = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints" / "fillers", corpus / "fillers")  # filler pools only
    small = small_corpus(tmp_path / "inputs")  # its config: 20K contexts only
    result = cli("build", "--config", str(config(tmp_path, corpus, small)), "--out", str(tmp_path / "out"),
                 "--cache-dir", str(tmp_path / "cache"))
    assert last_line(result).startswith(
        f"triggerbench build: the build has no rows: stage load_blueprints produced nothing (no seed blueprints under {corpus})")
