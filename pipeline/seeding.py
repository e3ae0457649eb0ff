"""Seeded randomness: every random choice derives from (seed, item id, stage).

Never use the global ``random`` module in stages; ask for ``rng_for(...)`` instead, so that
one item's draws do not depend on which other items exist or in which order they run.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, item_id: str, stage: str, *extra: str) -> int:
    """A 64-bit integer seed that depends only on its arguments."""
    key = "\x1f".join([str(seed), item_id, stage, *extra]).encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


def rng_for(seed: int, item_id: str, stage: str, *extra: str) -> random.Random:
    """An independent ``random.Random`` for one item in one stage."""
    return random.Random(derive_seed(seed, item_id, stage, *extra))


def stable_fraction(*parts: str) -> float:
    """A number in [0, 1) that depends only on ``parts`` (for hash-based splits)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64
