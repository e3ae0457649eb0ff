"""``make bench``: run every benchmark under bench/ in turn (each prints its own ratios)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = ["rebuild.py", "long_context.py", "audit_embedding.py", "llm_throughput.py", "eval_throughput.py"]


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = 0
    for name in BENCHES:
        print(f"== bench/{name}", flush=True)
        failed += subprocess.run([sys.executable, str(here / name)], cwd=here.parent).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
