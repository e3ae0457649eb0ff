"""Shared fixtures: paths to the repo and to ``../shared/data``, and one full default build.

Under pytest-xdist (``make test`` runs ``-n logical``) every worker is its own process, so a
session fixture would run once per worker. The default build is instead made once per run:
when a selected test needs it, the first worker to take a file lock starts the build in the
background, in a directory all workers share, and every worker's ``default_build`` waits for
that one build's result. Tests that need it run last, so the others run meanwhile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BUILD_TIMEOUT = 1800

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRIGGERBENCH_PROGRESS", "0")


def run_cli(*args: str, cwd: Path = REPO, env: dict | None = None, timeout: int = 1800) -> subprocess.CompletedProcess:
    """Run ``python -m pipeline ARGS`` in a subprocess and capture its output."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def pool_path(blueprints: Path, topic: str) -> Path:
    """The YAML file of a blueprint's thematic pool: its own story (``stories/``) or a shared filler pool."""
    story = blueprints / "stories" / f"{topic}.yaml"
    return story if story.exists() else blueprints / "fillers" / f"{topic}.yaml"


def config_args() -> list[str]:
    """``--config FILE`` when TRIGGERBENCH_TEST_CONFIG points at a smaller corpus (development only)."""
    config = os.environ.get("TRIGGERBENCH_TEST_CONFIG")
    return ["--config", config] if config else []


def shared_tmp(factory: pytest.TempPathFactory) -> Path:
    """A temporary directory shared by every xdist worker of this run (this run's own without xdist)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


# A child process that runs the default build and then writes ``result.json`` (atomically).
_BUILD_SCRIPT = """
import json, os, subprocess, sys
root, args = sys.argv[1], sys.argv[2:]
try:
    done = subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, timeout=%d)
    result = {"returncode": done.returncode, "output": done.stdout + done.stderr}
except subprocess.TimeoutExpired as exc:
    result = {"returncode": -1, "output": f"the default build did not finish within {exc.timeout} s"}
with open(os.path.join(root, "result.tmp"), "w", encoding="utf-8") as handle:
    json.dump(result, handle)
os.replace(os.path.join(root, "result.tmp"), os.path.join(root, "result.json"))
""" % BUILD_TIMEOUT


class DefaultBuild:
    """The one default build of a test run, in ``<shared tmp>/default_build``."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.root = shared_tmp(factory) / "default_build"
        self.out, self.cache = self.root / "releases", self.root / "cache"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the build unless some worker already did (non-blocking)."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root) + ".lock"):
            if self.root.exists():
                return
            self.root.mkdir()
            args = ["build", "--out", str(self.out), "--cache-dir", str(self.cache), *config_args()]
            self.process = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, str(self.root), *args], cwd=REPO,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait(self) -> dict:
        """Block until the build has finished; the fixture's value."""
        self.start()
        result_file = self.root / "result.json"
        deadline = time.monotonic() + BUILD_TIMEOUT + 60
        while not result_file.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"the default build wrote no {result_file} in time")
            time.sleep(0.5)
        result = json.loads(result_file.read_text(encoding="utf-8"))
        assert result["returncode"] == 0, result["output"][-4000:]
        releases = [p for p in self.out.iterdir() if p.is_dir() and not p.name.startswith(".")]
        assert len(releases) == 1
        return {"release": releases[0], "out": self.out, "cache": self.cache, "output": result["output"],
                "root": self.root}

    def finish(self) -> None:
        """At the end of this worker's session: let a build it started finish (others may wait for it)."""
        if self.process is not None:
            try:
                self.process.wait(timeout=BUILD_TIMEOUT + 60)
            except (KeyboardInterrupt, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=30)
                raise


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need the default build go last (a stable sort: the same order in every worker)."""
    items.sort(key=lambda item: "default_build" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session", autouse=True)
def _default_build_starter(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Start the default build before the first test when any selected test needs it."""
    builder = DefaultBuild(tmp_path_factory)
    if any("default_build" in item.fixturenames for item in request.session.items):
        builder.start()
    yield builder
    builder.finish()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.fail(f"{SHARED_DATA} is missing: tests read real data from ../shared/data beside the checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def default_build(_default_build_starter: DefaultBuild) -> dict:
    """The default release, built once per test run (shared by all xdist workers) with its own cache."""
    return _default_build_starter.wait()
