"""Benchmark: long-context stretching (all five lengths) against a raw tiktoken encode of its output.

Runs the real ``distractor_pool`` and ``stretch`` stages from a fresh cache, materializes and writes
every long config (``pm_*k``, ``rm_*k``, ``explicit_40k``) through the release writer, then encodes
exactly the same output text with tiktoken's ``o200k_base`` (``encode_ordinary_batch``, same thread
count). Prints both wall times, their ratio (goal: <= 2x), and the peak RSS of a whole default build
run in a subprocess (goal: < 2 GiB).

    .venv/bin/python bench/long_context.py
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline import registry, tokenizer  # noqa: E402
from pipeline.build import BuildOptions, build_setting, environment  # noqa: E402
from pipeline.cache import ArtifactStore, ItemCache  # noqa: E402
from pipeline.config import load_config  # noqa: E402
from pipeline.release import ReleaseWriter  # noqa: E402
from pipeline.runner import run_stages, select  # noqa: E402
from pipeline.stage import StageContext  # noqa: E402
from pipeline.stats import RowStats  # noqa: E402


def _run(stages, env, config, cache: Path):
    def make_context(stage):
        return StageContext(seed=config.seed, stage=stage.name, environment=env)

    items = ItemCache(cache / "items.sqlite")
    try:
        return run_stages(stages, make_context, ArtifactStore(cache), items)
    finally:
        items.close()


def measure_stretch(work: Path) -> None:
    config, base = load_config()
    stages = registry.build_stages(config)
    env = environment(select(stages, ["stretch", "variants"]), build_setting(config, base, BuildOptions()), None)
    base_cache, fresh_cache = work / "base-cache", work / "fresh-cache"
    _run(select(stages, ["variants"]), env, config, base_cache)  # base rows: not timed
    shutil.copytree(base_cache, fresh_cache)
    started = time.perf_counter()
    run = _run(select(stages, ["stretch", "variants"]), env, config, fresh_cache)  # variants: from the cache
    stages_seconds = time.perf_counter() - started
    writer = ReleaseWriter(work / "out", config.version)
    write_started = time.perf_counter()
    next(s for s in stages if s.name == "stretch").write_release(writer, run, RowStats())
    write_seconds = time.perf_counter() - write_started
    texts = []
    for parquet in sorted(writer.staging.rglob("*.parquet")):
        import pyarrow.parquet as pq

        for messages in pq.read_table(parquet, columns=["messages"]).column("messages").to_pylist():
            texts.extend(message["content"] for message in messages)
    encoding = tokenizer.encoding()
    encode_started = time.perf_counter()
    total_tokens = 0
    for start in range(0, len(texts), 20000):
        total_tokens += sum(len(ids) for ids in encoding.encode_ordinary_batch(texts[start:start + 20000], num_threads=2))
    encode_seconds = time.perf_counter() - encode_started
    ours = stages_seconds + write_seconds
    print(f"long contexts: {len(texts):,} messages, {total_tokens:,} tokens written")
    print(f"  pipeline (pool + stretch stages {stages_seconds:.1f}s, materialize + write {write_seconds:.1f}s): {ours:.1f}s")
    print(f"  raw tiktoken encode of the same text: {encode_seconds:.1f}s")
    print(f"  ratio pipeline / raw encode: {ours / encode_seconds:.2f}x (goal <= 2x)")


def measure_build_rss(work: Path) -> None:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", "build", "--out", str(work / "rss-out"),
                    "--cache-dir", str(work / "rss-cache")], cwd=REPO, check=True, capture_output=True)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"whole default build (fresh cache): {time.perf_counter() - started:.1f}s, peak RSS {peak_kib / 1024:.0f} MiB "
          f"(goal < 2048 MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-rss", action="store_true", help="skip the whole-build peak RSS measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tb-bench-") as tmp:
        # the build first: a child forked from this process once it holds the written text would count
        # that text in its peak RSS (``ru_maxrss`` of children starts from the parent's at fork)
        if not args.skip_rss:
            measure_build_rss(Path(tmp))
        measure_stretch(Path(tmp))


if __name__ == "__main__":
    main()
