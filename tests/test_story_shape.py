"""Shape-matched story choice (stages/story_shape.py) through the dialogues stage, on the real corpus.

The seeds' placed turns have shapes (length, characters per word, digits and punctuation, question,
reply length) that story turns have less often; a random ordered subset of the story keeps that
difference, and a classifier over shape finds the constraint. The matched choice weights the story's
exchanges towards the dimension's placed-turn shapes, so the picked story turns come closer to the
constraints, without looking at the row's own constraint, and a shape classifier finds the
constraint less often.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from pipeline.stage import StageContext
from stages.dialogues import Dialogues
from stages.load_blueprints import LoadBlueprints, LoadFillers, corpus_digest
from stages.audit.shortcuts import learned
from stages.audit.shortcuts.turns import extract
from stages.story_shape import weighted_subset
from stages.variants import render_messages
from tests.conftest import REPO, shared_vectors

MARGIN = 0.22  # per dimension, above chance (attention recovery, the weakest now: +0.16)
# summed over the five dimensions: chance sums to about 0.60; the audit's three fold assignments read 1.10 (story
# replies of 75-95 words) and 1.12 (100-300 words); house-shaped constraints read 2.06. One assignment swings the
# sum by +-0.15 (0.93 and 1.17 on those two corpora), which is why the test scores as the audit does.
TOTAL_MARGIN = 0.60


def test_weighted_subset_is_seeded_ordered_and_follows_the_weights() -> None:
    weights = [20.0] + [1.0] * 9
    draws = [weighted_subset(range(10), weights, 3, random.Random(k)) for k in range(2000)]
    assert all(d == sorted(d) and len(set(d)) == 3 for d in draws)
    taken = Counter(i for d in draws for i in d)
    assert taken[0] > 0.9 * len(draws)  # the heavy exchange is nearly always in
    assert all(0.15 * len(draws) < taken[i] < 0.35 * len(draws) for i in range(1, 10))  # the rest share ~2/9 each
    assert weighted_subset(range(10), weights, 3, random.Random(7)) == weighted_subset(range(10), weights, 3, random.Random(7))


@pytest.fixture(scope="module")
def real_corpus() -> tuple[list[dict], list[dict]]:
    env = {"blueprints_dir": str(REPO / "blueprints"), "blueprints_digest": corpus_digest(REPO / "blueprints")}
    blueprints = LoadBlueprints().run({}, StageContext(seed=0, stage="load_blueprints", environment=env)).items
    fillers = LoadFillers().run({}, StageContext(seed=0, stage="load_fillers", environment=env)).items
    return blueprints, fillers


def _finder_hits(blueprints: list[dict], fillers: list[dict]) -> dict[str, tuple[float, float]]:
    """Per dimension: how often the audit's learned shape finder (family-grouped cross-validation over
    the base dialogues) ranks a constraint turn first, as the audit scores it, and the chance of that (mean share
    of constraint turns among the candidates)."""
    items = [{"id": f"{b['id']}--s{k:02d}", "seed_id": b["id"], "split": "test", "blueprint": b["blueprint"],
              "provenance": {}} for b in blueprints for k in range(2)]
    out = Dialogues().run(
        {"oracle_necessity": items, "load_fillers": fillers, "load_blueprints": blueprints},
        StageContext(seed=0, stage="dialogues", environment={"llm": "offline-rules"}, embedding_cache=shared_vectors()))
    rows = defaultdict(list)
    for d in out.items:
        messages = render_messages(d["turns"])
        constraints = [i for i, t in enumerate(d["turns"]) if t["kind"] == "constraint" and t["role"] == "user"]
        turns, _ = extract({"messages": messages, "constraint_turns": constraints, "trigger_turn": len(messages) - 1},
                           keep_texts=False)
        rows[d["blueprint"]["dimension"]].append((turns, d["seed_id"]))
    hits = {}
    with threadpool_limits(limits=1):  # as the audit fits it: no OpenMP threads fighting the other workers
        for dimension, group in rows.items():
            turns = [t for t, _ in group]
            # the audit's three fold assignments (the release's scaled rows read lower: 0.82 summed)
            scored = learned.learned_finder(learned.LearnedRows(turns, [learned.turn_features(t) for t in turns],
                                                                [family for _, family in group]))
            hits[dimension] = (float(np.mean([h for h in scored if h is not None])),
                               float(np.mean([t.is_constraint.sum() / t.n for t in turns])))
    return hits


@pytest.mark.slow  # the whole corpus through the dialogues stage
def test_the_shape_finder_stays_near_chance_on_base_dialogues(real_corpus) -> None:
    """With every constraint turn written to the shape of a drawn story exchange (``like:``), the learned
    shape finder finds a constraint of a base dialogue little more often than chance in every
    dimension, with the default story choice (measured on this corpus, two renderings per seed, three fold
    assignments: 1.12 summed over the five dimensions, chance 0.60; with the house-shaped constraints before,
    counting the first constraint only: 2.06 random)."""
    blueprints, fillers = real_corpus
    hits = _finder_hits(blueprints, fillers)
    assert len(hits) == 5
    assert all(hit <= chance + MARGIN for hit, chance in hits.values()), hits
    assert sum(hit for hit, _ in hits.values()) <= sum(chance for _, chance in hits.values()) + TOTAL_MARGIN, hits
