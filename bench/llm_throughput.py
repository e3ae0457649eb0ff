"""Throughput of the LLM client against a local server with a fixed response latency.

Starts the scripted OpenAI-compatible server in its own process (so it does not share the
client's interpreter lock), sends N distinct requests at concurrency C through
``LLMClient.map`` with the request cache on, and prints the measured wall time, the ideal
bound ``N x latency / C`` and their ratio (goal: >= 0.9). A second pass over the same
requests shows the cache: 0 requests sent.

Then adaptive concurrency (AIMD, ``pipeline/llm/adaptive.py``) against the same client with a
fixed in-flight limit, measured in the same run: against a one-slot server (one request
served at a time, the others queue, as llama.cpp by default) with a timeout shorter than a
full queue, requests sent, timeouts, failures and wall time; against the many-slot server,
the wall-time ratio fixed/adaptive (goal: >= 0.95, no loss of throughput).

    .venv/bin/python bench/llm_throughput.py --requests 400 --concurrency 16 --latency 0.05
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripted_server import start_scripted  # noqa: E402 (bench/ is on sys.path)
from pipeline.llm import ChatRequest, LLMClient, LLMConfig, RequestCache, RetryPolicy  # noqa: E402


def start_server(latency: float, slots: int = 0) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process, and its base URL."""
    return start_scripted("--latency", str(latency), "--slots", str(slots))


def measure(base_url: str, cache_path: Path | None, n: int, concurrency: int, tag: str, timeout: float = 30,
            adaptive: bool = True, require_ok: bool = True) -> tuple[float, dict]:
    """Wall time of one ``map`` over ``n`` requests, and the client's statistics."""
    config = LLMConfig(base_url=base_url, model="scripted-model", concurrency=concurrency, timeout=timeout,
                       adaptive=adaptive, retry=RetryPolicy(base_delay=0.05, max_delay=0.5, max_retries=6))
    client = LLMClient(config, RequestCache(cache_path) if cache_path is not None else None)
    batch = [ChatRequest([{"role": "user", "content": f"{tag} request {i}"}], max_tokens=16) for i in range(n)]
    started = time.perf_counter()
    results = client.map(batch, desc=f"bench c={concurrency}")
    elapsed = time.perf_counter() - started
    assert not require_ok or all(r.ok for r in results), "the benchmark server never fails"
    client.close()
    return elapsed, client.stats.as_dict()


def compare_adaptive(latency: float, n: int, concurrency: int) -> None:
    """Fixed vs adaptive in-flight limit, against a one-slot and a many-slot server."""
    print(f"\nadaptive concurrency: cap {concurrency}, {n} requests, {latency * 1000:.0f} ms per request")
    print(f"{'server':>10} {'limit':>8} {'wall_s':>7} {'answered':>8} {'requests':>8} {'timeouts':>8} {'cuts':>4} "
          f"{'effective':>9}")
    for slots, timeout in ((1, latency * 3.5), (0, 30.0)):
        process, base_url = start_server(latency, slots)
        try:
            walls = {}
            for adaptive in (False, True):
                wall, stats = measure(base_url, None, n, concurrency, f"s{slots}-{adaptive}", timeout=timeout,
                                      adaptive=adaptive, require_ok=False)
                walls[adaptive] = wall
                print(f"{'one-slot' if slots else 'many-slot':>10} {'adaptive' if adaptive else 'fixed':>8} {wall:>7.2f} "
                      f"{n - stats['failures']:>8} {stats['requests']:>8} {stats['timeouts']:>8} "
                      f"{stats['concurrency_cuts']:>4} {stats['effective_concurrency']:>9.2f}")
            if not slots:  # on the one-slot server the fixed limit does not finish the work: no ratio
                print(f"{'':>10} wall time fixed/adaptive = {walls[False] / walls[True]:.3f} (goal >= 0.95)")
        finally:
            process.terminate()
            process.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="LLM client throughput vs the ideal bound")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--latency", type=float, default=0.05, help="server latency per request (s)")
    parser.add_argument("--adaptive-requests", type=int, default=40, help="requests per run of the adaptive comparison")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRIGGERBENCH_PROGRESS", "0")
    process, base_url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            print(f"server latency {args.latency * 1000:.0f} ms, {args.requests} requests per run")
            print(f"{'concurrency':>11} {'measured_s':>10} {'ideal_s':>8} {'ideal/measured':>14} {'requests':>8}")
            for concurrency in args.concurrency:
                cache = Path(scratch) / f"c{concurrency}.sqlite"
                elapsed, stats = measure(base_url, cache, args.requests, concurrency, f"c{concurrency}")
                ideal = args.requests * args.latency / concurrency
                print(f"{concurrency:>11} {elapsed:>10.3f} {ideal:>8.3f} {ideal / elapsed:>14.3f} {stats['requests']:>8}")
                cached_elapsed, cached = measure(base_url, cache, args.requests, concurrency, f"c{concurrency}")
                print(
                    f"{'(rerun)':>11} {cached_elapsed:>10.3f} {'-':>8} {'-':>14} {cached['requests']:>8}"
                    f"  cache_hits={cached['cache_hits']}"
                )
    finally:
        process.terminate()
        process.wait(timeout=10)
    compare_adaptive(max(args.latency, 0.05), args.adaptive_requests, max(args.concurrency))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
