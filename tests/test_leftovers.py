"""Staging hygiene: leftovers of killed builds are removed, a live build's never (issue 18, item 5)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.hashing import sha256_file
from pipeline.leftovers import remove_leftovers
from tests.conftest import small_corpus

REPO = Path(__file__).resolve().parents[1]


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def staging(out: Path, name: str, host: str | None, pid: int) -> Path:
    path = out / name
    (path / "data").mkdir(parents=True)
    (path / "data" / "x.parquet").write_bytes(b"partial")
    if host is not None:
        (out / f"{name}.owner").write_text(json.dumps({"host": host, "pid": pid}), encoding="utf-8")
    return path


def test_only_leftovers_of_dead_processes_on_this_host_are_removed(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    here, dead = socket.gethostname(), dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        killed = staging(out, f".staging-0.1.0-{dead}", here, dead)
        legacy = staging(out, f".staging-0.0.9-{dead}", None, dead)  # written before owner files existed
        running = staging(out, f".staging-0.2.0-{live.pid}", here, live.pid)
        elsewhere = staging(out, f".staging-0.3.0-{dead}", "another-host", dead)
        artifacts = cache / "artifacts" / "scale"
        artifacts.mkdir(parents=True)
        orphan = artifacts / f"{dead}@{here}~abc.tmp"
        writing = artifacts / f"{live.pid}@{here}~def.tmp"
        old_legacy, new_legacy = artifacts / "tmpold.tmp", artifacts / "tmpnew.tmp"
        for path in (orphan, writing, old_legacy, new_legacy):
            path.write_bytes(b"x")
        os.utime(old_legacy, (time.time() - 7200, time.time() - 7200))
        removed = remove_leftovers(out, cache)
        assert not killed.exists() and not (out / f"{killed.name}.owner").exists() and not legacy.exists()
        assert running.exists() and elsewhere.exists() and (out / f"{running.name}.owner").exists()
        assert not orphan.exists() and not old_legacy.exists() and writing.exists() and new_legacy.exists()
        assert len(removed) == 4 and all("no longer runs" in r for r in removed if ".staging-" in r)
    finally:
        live.kill()
        live.wait()


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRIGGERBENCH_PROGRESS": "0", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)


def digests(release: Path) -> dict[str, str]:
    return {p.relative_to(release).as_posix(): sha256_file(p) for p in sorted(release.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sigkill_while_the_release_is_written_then_rerun_leaves_no_staging_and_the_same_bytes(tmp_path: Path) -> None:
    cache, clean, out = tmp_path / "cache", tmp_path / "clean", tmp_path / "out"
    args = ["build", "--config", str(small_corpus(tmp_path / "inputs")), "--limit", "2", "--cache-dir", str(cache)]
    first = cli(*args, "--out", str(clean))
    assert first.returncode == 0, first.stderr[-3000:]
    (reference,) = clean.iterdir()
    env = {**os.environ, "TRIGGERBENCH_PROGRESS": "0", "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen([sys.executable, "-m", "pipeline", *args, "--out", str(out)], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # every stage is cached: the build goes straight to writing the release; kill it once data is there
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None:
            if any(out.glob(".staging-*/data/*/*.parquet")):
                break
            time.sleep(0.02)
        assert process.poll() is None, "the build finished before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert [p.name for p in out.iterdir() if p.is_dir()] == [f".staging-{reference.name}-{process.pid}"]
    rerun = cli(*args, "--out", str(out))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"removed a leftover of a build that no longer runs: {out}/.staging-" in rerun.stderr
    assert sorted(p.name for p in out.iterdir()) == [reference.name]  # no staging directory, no owner file
    assert digests(out / reference.name) == digests(reference)
