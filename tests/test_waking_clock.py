"""``stages.timing.WakingClock``: waking seconds skip the night and map back to the same times."""

from __future__ import annotations

from datetime import date, datetime

from stages.timing import WakingClock

CLOCK = WakingClock(origin=date(2026, 3, 1))


def test_daytime_round_trips_and_a_day_is_sixteen_and_a_half_hours() -> None:
    for at in (datetime(2026, 3, 1, 7, 0), datetime(2026, 3, 4, 14, 37, 12), datetime(2026, 3, 9, 23, 29, 59)):
        assert CLOCK.from_waking(CLOCK.to_waking(at)) == at
    assert CLOCK.day == 16.5 * 3600
    assert CLOCK.to_waking(datetime(2026, 3, 2, 7, 0)) - CLOCK.to_waking(datetime(2026, 3, 1, 23, 30)) == 0


def test_stepping_past_bedtime_lands_the_next_morning() -> None:
    evening = CLOCK.to_waking(datetime(2026, 3, 3, 23, 0))
    assert CLOCK.from_waking(evening + 45 * 60) == datetime(2026, 3, 4, 7, 15)
    assert CLOCK.awake(datetime(2026, 3, 3, 12, 0)) and not CLOCK.awake(datetime(2026, 3, 3, 3, 26))
