"""Throughput of ``triggerbench eval`` against a scripted server with a fixed latency.

Starts the scripted OpenAI-compatible server in its own process (latency 0.5 s; structured
requests get a judge verdict, the others an echo), writes a release of N/2 PM rows in the
real layout, and times one eval run (N/2 model requests + N/2 judge requests = N requests at
concurrency C). The baseline, measured in the same run against the same server, is a bare
``AsyncOpenAI`` loop sending N requests at concurrency C. Prints both times and the ratio
baseline/eval (1.0 = as fast as the bare loop), then a rerun of the eval (0 requests sent).

    .venv/bin/python bench/eval_throughput.py --requests 400 --concurrency 32 --latency 0.5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripted_server import start_scripted  # noqa: E402 (bench/ is on sys.path)
from pipeline.schemas import PM_SCHEMA  # noqa: E402
from stages.eval.run import EvalOptions  # noqa: E402
from stages.eval.session import Selection, run_eval  # noqa: E402

VERDICT = '{"verdict": "YES", "reason": "scripted"}'


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process, and its base URL."""
    return start_scripted("--latency", str(latency), "--json-reply", VERDICT)


def write_release(root: Path, rows: int) -> Path:
    """A release directory with ``rows`` distinct pm_base test rows (parquet layout, no card)."""
    folder = root / "release" / "data" / "pm_base"
    folder.mkdir(parents=True)
    records = []
    for i in range(rows):
        messages = [{"role": "user", "content": f"[2026-05-09T18:05] I left bag {i} in the taxi trunk."},
                    {"role": "assistant", "content": "Noted."},
                    {"role": "user", "content": f"[2026-05-09T18:50] Arrived at stop {i}, hopping out."}]
        records.append({"id": f"bench-{i}.pos_clean.implicit.base", "blueprint_id": f"bench-{i}", "seed_id": f"bench-{i % 50}",
                        "dimension": "state_tracking", "variant": "pos_clean", "constraint_form": "implicit",
                        "context": "base", "messages": messages, "constraint_turns": [0], "trigger_turn": 2,
                        "reference_intent": f"Remind the user to take bag {i} from the trunk.",
                        "gold_slots": [f"bag {i}"], "expected": "intervene"})
    pq.write_table(pa.Table.from_pylist(records, schema=PM_SCHEMA), folder / "test-00000-of-00001.parquet")
    return root / "release"


async def bare_loop(base_url: str, n: int, concurrency: int) -> float:
    """Seconds for ``n`` distinct requests through one ``AsyncOpenAI`` at ``concurrency``."""
    import openai

    gate = asyncio.Semaphore(concurrency)
    async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-none", max_retries=0) as api:
        async def one(i: int) -> None:
            async with gate:
                await api.chat.completions.create(model="scripted-model", max_tokens=16,
                                                  messages=[{"role": "user", "content": f"bare request {i}"}])

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - started


def timed_eval(release: Path, base_url: str, out: Path, concurrency: int) -> tuple[float, dict]:
    options = EvalOptions(model="scripted-model", base_url=base_url, temperature=0.0, concurrency=concurrency)
    started = time.perf_counter()
    outcome = run_eval(Selection(source=str(release), configs=("pm_base",)), options, out)
    elapsed = time.perf_counter() - started
    assert outcome.results["rows"]["failed"] == 0, outcome.results["rows"]
    return elapsed, outcome.stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="eval throughput vs a bare AsyncOpenAI loop")
    parser.add_argument("--requests", type=int, default=400, help="requests per measurement (half model, half judge)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.5, help="server latency per request (s)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRIGGERBENCH_PROGRESS", "0")
    process, base_url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            release = write_release(Path(scratch), args.requests // 2)
            bare = asyncio.run(bare_loop(base_url, args.requests, args.concurrency))
            elapsed, stats = timed_eval(release, base_url, Path(scratch) / "run", args.concurrency)
            sent = stats["model"]["requests"] + stats["judge"]["requests"]
            rerun, again = timed_eval(release, base_url, Path(scratch) / "run", args.concurrency)
            resent = again["model"]["requests"] + again["judge"]["requests"]
    finally:
        process.terminate()
        process.wait(timeout=10)
    print(f"server latency {args.latency * 1000:.0f} ms, {args.requests} requests, concurrency {args.concurrency}")
    print(f"{'what':>22} {'seconds':>8} {'requests':>8}")
    print(f"{'bare AsyncOpenAI loop':>22} {bare:>8.3f} {args.requests:>8}")
    print(f"{'triggerbench eval':>22} {elapsed:>8.3f} {sent:>8}")
    print(f"{'eval rerun (cached)':>22} {rerun:>8.3f} {resent:>8}")
    print(f"throughput ratio eval/bare: {bare / elapsed:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
