"""Shared fixtures: paths to the repo and to ``../shared/data``, and one full default build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRIGGERBENCH_PROGRESS", "0")


def run_cli(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run ``python -m pipeline ARGS`` in a subprocess and capture its output."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def config_args() -> list[str]:
    """``--config FILE`` when TRIGGERBENCH_TEST_CONFIG points at a smaller corpus (development only)."""
    config = os.environ.get("TRIGGERBENCH_TEST_CONFIG")
    return ["--config", config] if config else []


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.fail(f"{SHARED_DATA} is missing: tests read real data from ../shared/data beside the checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def default_build(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The default release, built once per test session with its own cache."""
    root = tmp_path_factory.mktemp("default_build")
    out, cache = root / "releases", root / "cache"
    result = run_cli("build", "--out", str(out), "--cache-dir", str(cache), *config_args())
    assert result.returncode == 0, result.stderr[-4000:]
    releases = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(releases) == 1
    return {"release": releases[0], "out": out, "cache": cache, "output": result.stdout + result.stderr, "root": root}
