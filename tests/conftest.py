"""Shared fixtures: paths to the repo and to ``../shared/data``, and the two releases a run shares.

Under pytest-xdist (``make test`` runs ``-n logical``) every worker is its own process, so a
session fixture would run once per worker. The shared builds are instead made once per run:
when a selected test needs one, the first worker to take its file lock starts it in the
background, in a directory all workers share, and every worker's fixture waits for that one
build's result. Tests that need a build run last, so the others run meanwhile.

- ``default_build``: the default release (``configs/default.yaml``, every blueprint, every length), built
  with the checkout's build cache (``.cache``, the one ``make build-dataset`` fills), so a run after a build
  or after another run recomputes only what changed since (a clean clone's run builds it cold).
- ``small_build``: two seeds per dimension, two scaled blueprints each, 20K long contexts: the
  release that determinism, crash-resume and eval tests need, built in about half a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from filelock import FileLock

from pipeline.build import EMBEDDING_CACHE_ENV, default_cache_dir, embedding_cache_dir

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
BUILD_TIMEOUT = 1800

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRIGGERBENCH_PROGRESS", "0")


def shared_vectors() -> Path | None:
    """The run's shared embedding cache (set by the session fixture below), for stage runs inside tests."""
    shared = os.environ.get(EMBEDDING_CACHE_ENV)
    return Path(shared) if shared else None


def embedding_cache(build: dict) -> str:
    """The embedding cache a shared build used (the run's shared one; else the build's own)."""
    return str(shared_vectors() or build["cache"] / "embeddings")


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


# A child process that runs one build and then writes ``result.json`` (atomically).
_BUILD_SCRIPT = """
import json, os, subprocess, sys
root, args = sys.argv[1], sys.argv[2:]
try:
    done = subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, timeout=%d)
    result = {"returncode": done.returncode, "output": done.stdout + done.stderr}
except subprocess.TimeoutExpired as exc:
    result = {"returncode": -1, "output": f"the build did not finish within {exc.timeout} s"}
with open(os.path.join(root, "result.tmp"), "w", encoding="utf-8") as handle:
    json.dump(result, handle)
os.replace(os.path.join(root, "result.tmp"), os.path.join(root, "result.json"))
""" % BUILD_TIMEOUT


def small_corpus(root: Path) -> Path:
    """Write a small build's inputs under ``root``: two seeds per dimension (one ``flip_trigger`` and one
    ``flip_state`` for logical adherence) with every story and filler pool, and a config that scales each
    seed twice and stretches to 20K. Returns the config file."""
    source, target = REPO / "blueprints", root / "blueprints"
    shutil.copytree(source / "fillers", target / "fillers")
    shutil.copytree(source / "stories", target / "stories")
    for dimension in ("attention_recovery", "safe_coding", "state_tracking", "temporal_grounding"):
        (target / dimension).mkdir()
        for path in sorted((source / dimension).glob("*.yaml"))[:2]:
            shutil.copy(path, target / dimension / path.name)
    (target / "logical_adherence").mkdir()
    for kind in ("flip_trigger", "flip_state"):
        path = next(p for p in sorted((source / "logical_adherence").glob("*.yaml")) if f"kind: {kind}" in p.read_text())
        shutil.copy(path, target / "logical_adherence" / path.name)
    config = yaml.safe_load((REPO / "configs" / "default.yaml").read_text())
    config.update(blueprints="blueprints")
    config["stages"]["scale"]["max_per_seed"] = 2
    config["distractors"].update(dir=str(SHARED_DATA), lengths=[20000])
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root / "config.yaml"


def release_in(out: Path) -> Path:
    """The one release directory a build wrote under ``out`` (staging directories start with a dot)."""
    (release,) = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return release


class SharedBuild:
    """One build of a test run, in ``<shared tmp>/<name>``: ``prepare(root)`` (if any) writes its inputs there,
    ``args(root)`` are the arguments that choose them (``build ARGS``, which a test can rerun with its own
    ``--out`` and ``--cache-dir``); the release goes to ``root/releases`` and its cache to ``root/cache``, unless
    ``cache()`` names another (the default build's: the checkout's own)."""

    def __init__(self, factory: pytest.TempPathFactory, name: str, args: Callable[[Path], list[str]],
                 prepare: Callable[[Path], object] | None = None, cache: Callable[[], Path] | None = None) -> None:
        self.name, self.args, self.prepare = name, args, prepare
        self.root = shared_tmp(factory) / name
        self.out, self.cache = self.root / "releases", cache() if cache else self.root / "cache"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Start the build unless some worker already did (non-blocking)."""
        self.root.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.root) + ".lock"):
            if self.root.exists():
                return
            self.root.mkdir()
            if self.prepare is not None:
                self.prepare(self.root)
            args = ["build", *self.args(self.root), "--out", str(self.out), "--cache-dir", str(self.cache)]
            self.process = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, str(self.root), *args], cwd=REPO,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait(self) -> dict:
        """Block until the build has finished; the fixture's value."""
        self.start()
        result_file = self.root / "result.json"
        deadline = time.monotonic() + BUILD_TIMEOUT + 60
        while not result_file.exists():
            if time.monotonic() > deadline:
                pytest.fail(f"the {self.name} wrote no {result_file} in time")
            time.sleep(0.5)
        result = json.loads(result_file.read_text(encoding="utf-8"))
        assert result["returncode"] == 0, result["output"][-4000:]
        return {"release": release_in(self.out), "out": self.out, "cache": self.cache, "output": result["output"],
                "root": self.root, "args": self.args(self.root)}

    def finish(self) -> None:
        """At the end of this worker's session: let a build it started finish (others may wait for it)."""
        if self.process is not None:
            try:
                self.process.wait(timeout=BUILD_TIMEOUT + 60)
            except (KeyboardInterrupt, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=30)
                raise


# name -> (arguments, input writer, build cache: None for one of its own in the run's temporary directory)
SHARED_BUILDS: dict[str, tuple[Callable[[Path], list[str]], Callable[[Path], object] | None, Callable[[], Path] | None]] = {
    "default_build": (lambda root: config_args(), None, default_cache_dir),
    "small_build": (lambda root: ["--config", str(root / "config.yaml"), "--limit", "10"], small_corpus, None),
}


def _needs(item: pytest.Item) -> bool:
    return any(name in getattr(item, "fixturenames", ()) for name in SHARED_BUILDS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that need a shared build go last (a stable sort: the same order in every worker)."""
    items.sort(key=_needs)


@pytest.fixture(scope="session", autouse=True)
def _shared_builds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Start each shared build before the first test when any selected test needs it. Every build and stage of
    the run keeps its embedding vectors in one directory, the checkout's (content-keyed: a cold build embeds
    MultiWOZ for the semantic filter, which each of the run's builds would otherwise redo, and a later run or
    ``make build-dataset`` finds them there)."""
    os.environ.setdefault(EMBEDDING_CACHE_ENV, str(embedding_cache_dir(default_cache_dir())))
    builds = {name: SharedBuild(tmp_path_factory, name, *spec) for name, spec in SHARED_BUILDS.items()}
    for name, build in builds.items():
        if any(name in item.fixturenames for item in request.session.items):
            build.start()
    yield builds
    for build in builds.values():
        build.finish()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.fail(f"{SHARED_DATA} is missing: tests read real data from ../shared/data beside the checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def default_build(_shared_builds: dict[str, SharedBuild]) -> dict:
    """The default release, built once per test run (shared by all xdist workers) with its own cache."""
    return _shared_builds["default_build"].wait()


@pytest.fixture(scope="session")
def small_build(_shared_builds: dict[str, SharedBuild]) -> dict:
    """The small release (``small_corpus``), built once per test run; ``args`` rebuild it (``build ARGS``)."""
    return _shared_builds["small_build"].wait()
