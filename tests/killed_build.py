"""Run ``triggerbench build ARGS`` and SIGKILL the process in the middle of one map stage.

``python -m tests.killed_build STAGE COMMITTED KILLED -- BUILD ARGS``: while ``STAGE`` runs, the
item cache commits after the stage's ``COMMITTED``-th computed item, and the process kills itself
with SIGKILL after the ``KILLED``-th (``KILLED > COMMITTED``), so the cache holds some of the stage's
items and loses the ones pending. A crash at a point the test chooses, not a race with a poller: on a
small corpus a stage can finish between two polls.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from pipeline import runner
from pipeline.cli import main as cli_main


def kill_mid_stage(stage_name: str, committed: int, killed: int) -> None:
    """Wrap the runner's map loop so that ``stage_name`` dies after ``killed`` items (see the module doc)."""
    run_map = runner._run_map

    def dying_run_map(stage: Any, inputs: Any, ctx: Any, cache: Any) -> Any:
        if stage.name == stage_name:
            put, count = cache.put, 0

            def put_then_maybe_die(key: str, value: Any) -> None:
                nonlocal count
                put(key, value)
                count += 1
                if count == committed:
                    cache.flush()
                if count == killed:
                    os.kill(os.getpid(), signal.SIGKILL)

            cache.put = put_then_maybe_die
        return run_map(stage, inputs, ctx, cache)

    runner._run_map = dying_run_map


def main(argv: list[str]) -> int:
    stage_name, committed, killed, separator, *build_args = argv
    if separator != "--" or not 0 < int(committed) < int(killed):
        raise SystemExit("usage: python -m tests.killed_build STAGE COMMITTED KILLED -- BUILD ARGS (0 < COMMITTED < KILLED)")
    kill_mid_stage(stage_name, int(committed), int(killed))
    return cli_main(build_args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
