"""Range-checked number types for config models: one place for "what values make sense".

Use them as field annotations in stage ``Params`` and in :mod:`pipeline.config`; a value out
of range fails pydantic validation, and the build reports it as one line naming the field
and the file (or flag) it came from.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

MAX_CONTEXT_TOKENS = 1_048_576  # the longest context any current model reads; beyond it a length is a typo

Count = Annotated[int, Field(ge=1)]  # how many of something: at least one
NonNegative = Annotated[int, Field(ge=0)]
Tokens = Annotated[int, Field(ge=1, le=MAX_CONTEXT_TOKENS)]  # a token budget or a target length
Fraction = Annotated[float, Field(ge=0.0, lt=1.0)]  # a share that must leave something on the other side
Similarity = Annotated[float, Field(ge=0.0, le=1.0)]  # a cosine or Jaccard threshold
Temperature = Annotated[float, Field(ge=0.0, le=2.0)]  # the OpenAI API's range


def _ordered(pair: tuple[int, int]) -> tuple[int, int]:
    low, high = pair
    if low < 1:
        raise ValueError(f"minimum must be at least 1, got {low}")
    if low > high:
        raise ValueError(f"minimum {low} is larger than maximum {high}")
    return pair


CountRange = Annotated[tuple[int, int], AfterValidator(_ordered)]  # (min, max) with 1 <= min <= max
