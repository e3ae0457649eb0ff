"""Choosing snippets for a token budget: whole snippets first, then runs of whole exchanges.

In: candidate snippets (``{"tokens": [...]}``, user/assistant alternating), a seeded order, a token
budget and the token cost of one timestamp prefix. Out: ``(snippet index, first message, end
message)`` picks whose total lands within a few tokens of the budget when the pool allows it.
"""

from __future__ import annotations

from pipeline.stage import Item


def _exchange_costs(snippet: Item, prefix: int) -> list[int]:
    tokens = snippet["tokens"]
    return [tokens[k] + tokens[k + 1] + prefix for k in range(0, len(tokens) - 1, 2)]


def fill_budget(candidates: list[Item], order: list[int], budget: int, prefix: int) -> list[tuple[int, int, int]]:
    """(snippet index, first message, end message) picks: whole snippets in ``order`` while they fit,
    then, while a gap remains, the longest run of consecutive whole exchanges of a further snippet
    that fits in it."""
    chosen: list[tuple[int, int, int]] = []
    used = 0
    leftovers = []
    for index in order:
        costs = _exchange_costs(candidates[index], prefix)
        if used + sum(costs) <= budget:
            chosen.append((index, 0, 2 * len(costs)))
            used += sum(costs)
            if budget - used < 16:
                return chosen
        else:
            leftovers.append(index)
    for index in leftovers:
        start, end, size = _longest_run(_exchange_costs(candidates[index], prefix), budget - used)
        if size:
            chosen.append((index, 2 * start, 2 * end))
            used += size
        if budget - used < 16:
            break
    return chosen


def _longest_run(costs: list[int], limit: int) -> tuple[int, int, int]:
    """The run of consecutive exchanges with the largest total not above ``limit``: (start, end, total)."""
    best = (0, 0, 0)
    left, total = 0, 0
    for right, cost in enumerate(costs):
        total += cost
        while total > limit and left <= right:
            total -= costs[left]
            left += 1
        if total > best[2]:
            best = (left, right + 1, total)
    return best
