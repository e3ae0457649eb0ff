"""Benchmark: a fresh default build, a rebuild with nothing changed, and a rebuild after editing one seed.

Prints each wall time and the rebuilds' ratios to the fresh build, with the per-stage item-cache
lines of the edited rebuild (only the edited seed's items are recomputed).

    .venv/bin/python bench/rebuild.py
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def build(config: Path, out: Path, cache: Path) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pipeline", "build", "--config", str(config), "--out", str(out),
                             "--cache-dir", str(cache)], cwd=REPO, capture_output=True, text=True,
                            env={"TRIGGERBENCH_PROGRESS": "0", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                                 "PATH": "/usr/bin:/bin"})
    if result.returncode:
        sys.exit(result.stderr[-3000:])
    return time.perf_counter() - started, result.stderr


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tb-rebuild-") as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "blueprints", work / "blueprints")
        config = work / "config.yaml"
        config.write_text((REPO / "configs" / "default.yaml").read_text())  # blueprints: resolved beside it
        fresh, _ = build(config, work / "a", work / "cache")
        same, log_same = build(config, work / "b", work / "cache")
        seed = sorted((work / "blueprints" / "state_tracking").glob("*.yaml"))[0]
        data = yaml.safe_load(seed.read_text())
        data["reference_intent"] += " (edited)"
        seed.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        edited, log_edited = build(config, work / "c", work / "cache")
        recomputed = re.search(r"stages recomputed: (.*)", log_same).group(1)
        print(f"fresh build: {fresh:.1f}s")
        print(f"rebuild, nothing changed: {same:.1f}s = {same / fresh:.2f}x of fresh (stages recomputed: {recomputed})")
        print(f"rebuild after editing {seed.name}: {edited:.1f}s = {edited / fresh:.2f}x of fresh")
        for line in log_edited.splitlines():
            if "items cached" in line:
                print("   ", line.strip())


if __name__ == "__main__":
    main()
