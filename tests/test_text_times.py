"""``pipeline.text.time_expressions``: the audit's and the lint's independent time scan.

Real lines from the injected corpora that are not times (MATH decimals and prices, MultiWOZ
addresses, counts of marbles) must not be flagged; clock times, dates and durations must be.
"""

from __future__ import annotations

import pytest

from pipeline.text import time_expressions


@pytest.mark.parametrize("text", [
    "A shirt's sale price is marked $\\$14.40$, which is $60\\%$ off the original price.",
    "Multiplying numerator and denominator by 5 gives $3/20=15/100 = \\boxed{0.15}$.",
    "They are an expensive Italian restaurant located at 12 Market Hill City Centre.",
    "In a bag with 20 marbles, five of them are blue.",
    "The diameter of a cone is 30 decimeters.",
    "The entrance fee is 17.60 pounds.",
])
def test_not_a_time(text: str) -> None:
    assert time_expressions(text) == []


@pytest.mark.parametrize("text, kind", [
    ("The train leaves at 14:30 from platform two.", "clock"),
    ("I need to leave the hotel at 24:30.", "clock"),  # MultiWOZ's spelling of half past midnight
    ("Let's meet at 9.30 by the gate.", "clock"),
    ("I booked it for 12 March.", "date"),
    ("It opens on the 3rd of May.", "date"),
    ("The table will be reserved for 15 minutes.", "duration"),
    ("Can you call me tomorrow?", "relative_day"),
])
def test_a_time(text: str, kind: str) -> None:
    assert kind in time_expressions(text)
