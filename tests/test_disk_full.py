"""A full disk under ``--out`` or ``--cache-dir`` is one line naming the path (issue 18, item 2).

Needs a small tmpfs, so it runs only where the test may mount one (root in a container);
elsewhere it is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import small_corpus

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRIGGERBENCH_PROGRESS": "0", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)


def test_a_full_out_disk_names_the_release_path_and_leaves_nothing(full_disk: Path, tmp_path: Path) -> None:
    config = ["--config", str(small_corpus(tmp_path / "inputs")), "--limit", "1"]
    warm = cli("build", *config, "--only", "stretch", "--cache-dir", str(tmp_path / "cache"))
    assert warm.returncode == 0, warm.stderr[-2000:]
    result = cli("build", *config, "--out", str(full_disk / "out"), "--cache-dir", str(tmp_path / "cache"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"triggerbench build: no space left on device writing the release under {full_disk / 'out'} (")
    assert list((full_disk / "out").iterdir()) == []  # the partial staging directory was removed


def test_a_full_cache_disk_names_the_cache_and_leaves_no_temp_file(full_disk: Path, tmp_path: Path) -> None:
    config = ["--config", str(small_corpus(tmp_path / "inputs")), "--limit", "1"]
    result = cli("build", *config, "--out", str(tmp_path / "out"), "--cache-dir", str(full_disk / "cache"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"triggerbench build: no space left on device writing the cache under {full_disk / 'cache'} (")
    assert list((full_disk / "cache").rglob("*.tmp")) == []
