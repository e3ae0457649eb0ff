"""End-to-end builds: loading, determinism, caching, crash resume.

The default release is rebuilt from its own cache (nothing may be recomputed). Fresh rebuilds and the
crash-resume build use the run's small release (tests/conftest.py), which goes through every stage of
the default build on ten seeds: byte identity is a property of the code, and a second full build would
cost the suite minutes for no other check.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest

from pipeline.hashing import sha256_file
from tests.conftest import REPO, config_args, run_cli

pytestmark = pytest.mark.slow


def _data_files(release: Path) -> dict[str, str]:
    return {p.relative_to(release).as_posix(): sha256_file(p) for p in sorted(release.rglob("*.parquet"))}


def _manifest(release: Path) -> dict:
    return json.loads((release / "manifest.json").read_text())


def test_load_dataset_offline(default_build: dict, tmp_path: Path) -> None:
    release = default_build["release"]
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"
    manifest = _manifest(release)
    for config in ("pm_base", "explicit_base", "rm_base", "blueprints"):
        for split in ("test", "dev"):
            # a private cache: ~/.cache/huggingface/datasets can serve another 0.1.0's rows (README, Quick start)
            rows = datasets.load_dataset(str(release), config, split=split, cache_dir=str(tmp_path / "datasets"))
            assert len(rows) == manifest["configs"][config][split]["rows"] > 0


def test_manifest_hashes_every_file_and_accounts_for_items(default_build: dict) -> None:
    release = default_build["release"]
    manifest = _manifest(release)
    on_disk = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()} - {"manifest.json"}
    assert set(manifest["files"]) == on_disk
    for name, digest in manifest["files"].items():
        assert sha256_file(release / name) == digest
    for stage in manifest["stages"]:
        assert set(stage) >= {"name", "fingerprint", "items_in", "items_out", "dropped"}
        if stage["name"] in {"dedupe", "split", "dialogues", "load_blueprints"}:
            assert stage["items_in"] == stage["items_out"] + sum(stage["dropped"].values()), stage
    dropped_stages = {s["name"] for s in manifest["stages"] if s["dropped"]}
    assert {p.stem for p in (release / "exclusions").glob("*.jsonl")} == dropped_stages


def test_same_seed_same_bytes_and_nothing_recomputed(default_build: dict, small_build: dict, tmp_path: Path) -> None:
    first = default_build["release"]
    started = time.monotonic()
    cached = run_cli("build", *default_build["args"], "--out", str(tmp_path / "again"), "--cache-dir", str(default_build["cache"]))
    cached_seconds = time.monotonic() - started
    assert cached.returncode == 0, cached.stderr[-3000:]
    assert "stages recomputed: none" in cached.stderr
    assert _data_files(tmp_path / "again" / first.name) == _data_files(first)
    assert _manifest(tmp_path / "again" / first.name)["files"] == _manifest(first)["files"]
    # a fresh build in another process, with another string-hash seed, gives the same bytes
    small = small_build["release"]
    fresh = run_cli("build", *small_build["args"], "--out", str(tmp_path / "fresh"), "--cache-dir", str(tmp_path / "fresh-cache"),
                    env={"PYTHONHASHSEED": "12345"})
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert _data_files(tmp_path / "fresh" / small.name) == _data_files(small)
    assert _manifest(tmp_path / "fresh" / small.name)["files"] == _manifest(small)["files"]
    print(f"cached rebuild took {cached_seconds:.1f}s")


def test_existing_release_is_never_overwritten(default_build: dict) -> None:
    release = default_build["release"]
    before = _data_files(release)
    result = run_cli("build", *config_args(), "--out", str(default_build["out"]), "--cache-dir", str(default_build["cache"]))
    assert result.returncode == 1
    assert "already exists" in result.stderr and "Traceback" not in result.stderr
    assert _data_files(release) == before


def test_only_and_limit(small_build: dict, tmp_path: Path) -> None:
    """``--only STAGE`` runs up to that stage and writes no release; ``--limit N`` keeps the first N seeds (the
    rest dropped as ``beyond_limit``). Run on a copy of the small build's cache, so finished items are reused."""
    cache = tmp_path / "c"
    shutil.copytree(small_build["cache"], cache)
    config = ["--config", str(small_build["root"] / "config.yaml")]  # the small corpus, without its --limit
    only = run_cli("build", *config, "--only", "dedupe", "--out", str(tmp_path / "out"), "--cache-dir", str(cache))
    assert only.returncode == 0, only.stderr[-2000:]
    assert not (tmp_path / "out").exists()
    assert "dialogues" not in only.stdout and "dedupe" in only.stdout
    limited = run_cli("build", *config, "--limit", "3", "--out", str(tmp_path / "small"), "--cache-dir", str(cache))
    assert limited.returncode == 0, limited.stderr[-2000:]
    manifest = _manifest(next((tmp_path / "small").iterdir()))
    load = next(s for s in manifest["stages"] if s["name"] == "load_blueprints")
    assert load["items_out"] == 3 and load["dropped"]["beyond_limit"] == load["items_in"] - 3 == 7
    bad = run_cli("build", *config, "--only", "nonsense", "--cache-dir", str(cache))
    assert bad.returncode == 1 and "unknown stage" in bad.stderr


def test_sigkill_mid_stage_then_resume_gives_same_bytes(small_build: dict, tmp_path: Path) -> None:
    """SIGKILL in the middle of ``stretch`` (3 of its items committed, 2 pending and lost); the rerun takes the
    committed items from the cache, computes the rest, and writes the release of an uninterrupted build."""
    stage, out, cache = "stretch", tmp_path / "out", tmp_path / "cache"
    args = ["build", *small_build["args"], "--out", str(out), "--cache-dir", str(cache)]
    killed = subprocess.run([sys.executable, "-m", "tests.killed_build", stage, "3", "5", "--", *args], cwd=REPO,
                            env={**os.environ, "TRIGGERBENCH_PROGRESS": "0"}, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    killed_log = _log_text(cache)
    assert f"stage {stage:16s} running" in killed_log and f"stage {stage:16s} done" not in killed_log
    assert not out.exists() or not any(p for p in out.iterdir() if not p.name.startswith("."))

    rerun = run_cli(*args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    line = next(l for l in rerun.stderr.splitlines() if l.startswith(f"stage {stage:16s}") and "items cached" in l)
    cached, total = (int(x) for x in line.split()[2:5:2])
    assert cached == 3 and total > 5, line
    release = out / small_build["release"].name
    assert _data_files(release) == _data_files(small_build["release"])
    assert _manifest(release)["files"] == _manifest(small_build["release"])["files"]


def _log_text(cache: Path) -> str:
    logs = sorted((cache / "logs").glob("build-*.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1].read_text() if logs else ""
