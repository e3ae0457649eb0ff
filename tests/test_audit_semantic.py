"""Per-row cosine figures and the trigger's retrieval rank on hand-made unit vectors."""

from __future__ import annotations

import numpy as np
import pytest

from stages.audit.semantic import filler_indices, row_similarities, summarize, utterances


def test_row_similarities_by_hand() -> None:
    c = np.array([[1.0, 0.0]])
    t = np.array([0.6, 0.8])
    theta = np.array([[0.8, 0.6], [0.0, 1.0]])
    sims = row_similarities(c, t, theta)
    assert sims["ct"] == pytest.approx(0.6)  # c·t
    assert sims["c_theta"] == pytest.approx((0.8 + 0.0) / 2)
    assert sims["t_theta"] == pytest.approx((0.48 + 0.48 + 0.8) / 2)  # t·θ1 = .6*.8 + .8*.6, t·θ2 = .8
    assert sims["theta_theta"] == pytest.approx(0.6)  # θ1·θ2
    assert sims["t_rank"] == 2  # θ1 (0.8) is nearer to C than T (0.6); θ2 (0.0) is not


def test_two_constraint_turns_are_averaged_and_single_filler_has_no_pairs() -> None:
    c = np.array([[1.0, 0.0], [0.0, 1.0]])
    t = np.array([0.6, 0.8])
    theta = np.array([[1.0, 0.0]])
    sims = row_similarities(c, t, theta)
    assert sims["ct"] == pytest.approx((0.6 + 0.8) / 2)
    assert sims["c_theta"] == pytest.approx((1.0 + 0.0) / 2)
    assert sims["theta_theta"] is None
    assert sims["t_rank"] == 1  # T scores 0.7 against the constraints, θ 0.5


def test_summary_top1_share_and_chance() -> None:
    rows = [
        {"cos_ct": 0.2, "cos_c_theta": 0.1, "cos_t_theta": 0.1, "cos_theta_theta": 0.3, "t_rank": 1, "n_theta": 3},
        {"cos_ct": 0.4, "cos_c_theta": 0.3, "cos_t_theta": 0.2, "cos_theta_theta": None, "t_rank": 3, "n_theta": 1},
    ]
    summary = summarize(rows)
    assert summary["n"] == 2
    assert summary["ct_mean"] == pytest.approx(0.3) and summary["ct_std"] == pytest.approx(0.1)
    assert summary["theta_theta_mean"] == pytest.approx(0.3) and summary["theta_theta_std"] == 0.0
    assert summary["t_top1_pct"] == pytest.approx(50.0)
    assert summary["t_top1_chance_pct"] == pytest.approx(100 * (1 / 4 + 1 / 2) / 2)


def test_utterances_strip_timestamps_and_derive_fillers_when_absent() -> None:
    row = {"messages": [{"role": "user", "content": "[2025-01-01T10:00] Filler question?"},
                        {"role": "assistant", "content": "Filler answer."},
                        {"role": "user", "content": "[2025-01-01T10:05] The constraint."},
                        {"role": "user", "content": "[2025-01-01T10:09] The trigger."}],
           "constraint_turns": [2], "trigger_turn": 3}
    assert filler_indices(row) == [0, 1]
    part = utterances(row)
    assert part.constraint == ("The constraint.",) and part.trigger == "The trigger."
    assert part.filler == ("Filler question?", "Filler answer.")
    assert filler_indices(row | {"filler_turns": [1]}) == [1]
