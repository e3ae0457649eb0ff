"""Stop a build whose LLM oracle drops too much of a dimension (issue 18, item 9).

A weak model as oracle (the necessity or sufficiency filter) can silently empty a release:
it "guesses" every intervention or fails every skeleton, and the data look like the problem.
``guard_oracles(max_share, proceed)`` returns a runner check: after an LLM oracle stage, if it
dropped more than ``max_share`` of the blueprints of some dimension (transient LLM failures
are not counted: they are handled by the runner), the build stops with one line naming the
oracle, its model and the share, unless ``proceed`` (then it only warns).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from pipeline.stage import Item, Stage, StageOutput

log = logging.getLogger("triggerbench")
ORACLE_STAGES = ("oracle_sufficiency", "oracle_necessity")


class OracleDropsTooMuch(Exception):
    """An LLM oracle dropped more than the allowed share of a dimension."""


def guard_oracles(max_share: float, proceed: bool) -> Callable[[Stage, StageOutput, dict[str, list[Item]]], None]:
    """The runner check; see the module docstring."""

    def check(stage: Stage, output: StageOutput, inputs: dict[str, list[Item]]) -> None:
        method = str(output.stats.get("method") or "")
        if stage.name not in ORACLE_STAGES or not method.startswith("llm:"):
            return
        dimension = {item["id"]: item["blueprint"]["dimension"] for item in inputs[stage.inputs[0]]}
        totals = Counter(dimension.values())
        dropped = Counter(dimension[d.item_id] for d in output.dropped
                          if d.item_id in dimension and not d.reason.startswith("llm_"))
        for name, count in sorted(dropped.items()):
            share = count / totals[name]
            if share <= max_share:
                continue
            oracle = stage.name.removeprefix("oracle_")
            message = (f"the {oracle} oracle ({method.removeprefix('llm:')}) dropped {count} of {totals[name]} "
                       f"{name} blueprints ({share:.0%}, more than {max_share:.0%}): the oracle, not the data, is "
                       "the likely problem; use a stronger --oracle-model, or --oracle-proceed to keep going")
            if not proceed:
                raise OracleDropsTooMuch(message)
            log.warning("%s (going on: --oracle-proceed)", message)

    return check
