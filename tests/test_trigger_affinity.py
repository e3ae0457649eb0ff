"""Trigger affinity (``stages/trigger_affinity.py``) on real state-tracking seeds and their real stories, with
the bundled MiniLM: the story turns a row draws move towards the constraints' closeness to the trigger, and
the weights favour exactly the exchanges whose cosine constraints have more often than stories do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline.blueprints.schema import Blueprint, to_json
from pipeline.blueprints.slots import render
from pipeline.stage import StageContext
from stages.audit.embeddings import Embedder, load_bundled
from stages.dialogues import Dialogues
from tests.conftest import REPO, shared_vectors

SEEDS = ("st-badge-side-door", "st-campervan-fob", "st-bike-lock-key", "st-passport-drawer", "st-spare-key-neighbour",
         "st-laptop-charger-office", "st-car-park-level", "st-glasses-case-bag", "st-umbrella-hallway", "st-gym-locker-code")
RENDERINGS = 4
WEIGHT_SEEDS = 8


def _seeds() -> list[dict]:
    """Thirty real state-tracking seeds (those of SEEDS that exist, then the first of the folder)."""
    folder = REPO / "blueprints" / "state_tracking"
    paths = [folder / f"{name}.yaml" for name in SEEDS if (folder / f"{name}.yaml").exists()]
    paths += [p for p in sorted(folder.glob("st-*.yaml")) if p not in paths]
    return [to_json(render(Blueprint.model_validate(yaml.safe_load(p.read_text(encoding="utf-8"))))) for p in paths[:30]]


def _pool(topic: str) -> dict:
    data = yaml.safe_load((REPO / "blueprints" / "stories" / f"{topic}.yaml").read_text(encoding="utf-8"))
    return {"id": f"topic:{topic}", "pool": {"topic": topic, "kind": data["kind"], "description": data.get("description", ""),
                                             "exchanges": data["exchanges"]}}


@pytest.fixture(scope="module")
def state_tracking() -> tuple[list[dict], list[dict]]:
    seeds = _seeds()
    return seeds, [_pool(bp["topic"]) for bp in seeds]


def _rows(seeds: list[dict], pools: list[dict], affinity: bool) -> list[dict]:
    items = [{"id": f"{bp['id']}--s{k:02d}", "seed_id": bp["id"], "split": "test", "blueprint": bp, "provenance": {}}
             for bp in seeds for k in range(RENDERINGS)]
    corpus = [{"id": bp["id"], "blueprint": bp, "source": f"{bp['id']}.yaml"} for bp in seeds]
    out = Dialogues({"trigger_affinity": affinity}).run(
        {"oracle_necessity": items, "load_fillers": pools, "load_blueprints": corpus},
        StageContext(seed=0, stage="dialogues", environment={"llm": "offline-rules"}, embedding_cache=shared_vectors()))
    assert not out.dropped
    return out.items


def _cosines(rows: list[dict], embedder: Embedder) -> tuple[float, float]:
    """Mean cosine to the row's trigger of its story user turns, and of its constraint turns."""
    story, constraint = [], []
    for row in rows:
        users = [t for t in row["turns"] if t["role"] == "user"]
        vectors = embedder.embed([t["content"] for t in users])
        cosines = vectors[:-1] @ vectors[-1]
        for turn, cosine in zip(users, cosines):
            (constraint if turn["kind"] == "constraint" else story if turn["kind"] == "filler" else []).append(cosine)
    return float(np.mean(story)), float(np.mean(constraint))


@pytest.mark.slow  # two runs of the stage over thirty seeds, each embedding its rows
def test_story_turns_move_towards_the_constraints_closeness_to_the_trigger(state_tracking) -> None:
    seeds, pools = state_tracking
    embedder = Embedder(load_bundled(), shared_vectors())
    plain_story, constraint = _cosines(_rows(seeds, pools, affinity=False), embedder)
    near_story, constraint_again = _cosines(_rows(seeds, pools, affinity=True), embedder)
    assert constraint_again == pytest.approx(constraint)  # the constraint turns themselves do not change
    assert constraint > plain_story  # the cue: constraints are closer to the trigger than the story around them
    # the affinity closes about 30% of the gap on these seeds (ten seeds: 26-33%, too few to hold a margin)
    assert abs(constraint - near_story) < 0.8 * abs(constraint - plain_story), (plain_story, near_story, constraint)


def test_weights_favour_the_cosines_constraints_have_and_stay_within_the_cap(state_tracking) -> None:
    seeds, pools = (part[:WEIGHT_SEEDS] for part in state_tracking)  # densities over a few seeds: a quick unit test
    stage = Dialogues({"affinity_weight_cap": 20.0})
    corpus = [{"id": bp["id"], "blueprint": bp, "source": f"{bp['id']}.yaml"} for bp in seeds]
    stage.setup({"load_fillers": pools, "load_blueprints": corpus}, StageContext(seed=0, stage="dialogues", embedding_cache=shared_vectors()))
    affinity = stage.affinity
    target, background = affinity.target["state_tracking"], affinity.background["state_tracking"]
    bp = seeds[0]
    weights = np.array(affinity.weights("state_tracking", bp["topic"], bp["trigger"]["text"]))
    assert len(weights) == len(pools[0]["pool"]["exchanges"])
    assert weights.min() >= 1 / 20 and weights.max() <= 20
    cosines = affinity._users(bp["topic"]) @ affinity.embedder.embed([bp["trigger"]["text"]])[0]
    favoured = target(cosines) > background(cosines)
    assert favoured.any() and (~favoured).any()
    assert (weights[favoured] >= 1).all() and (weights[~favoured] <= 1).all()
    assert affinity.weights("logical_adherence", bp["topic"], bp["trigger"]["text"]) == [1.0] * len(weights)
