"""Start the project's scripted OpenAI-compatible server (tests/servers/scripted.py) for a benchmark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_scripted(*options: str) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process with ``options`` (e.g. ``--latency 0.5``), and its base URL."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "tests.servers.scripted", *options]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    base_url = process.stdout.readline().strip()
    if not base_url.startswith("http"):
        process.terminate()
        raise RuntimeError("the scripted server did not start")
    return process, base_url
