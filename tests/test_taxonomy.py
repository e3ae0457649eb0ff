"""The Safe Coding groups in taxonomy.py are the 8-category stand-in of shared/data/taxonomy."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.blueprints import taxonomy


def test_cwe_groups_match_shared_taxonomy(shared_data: Path) -> None:
    data = json.loads((shared_data / "taxonomy" / "safegenbench_cwe.json").read_text())
    categories = data["fallback_taxonomy"]["categories"]
    assert len(categories) == 8
    ours = {name: set(cwes) for name, cwes in taxonomy.CWE_GROUPS.values()}
    theirs = {c["category"]: {cwe["cwe"] for cwe in c["cwes"]} for c in categories}
    assert ours == theirs
    assert set(taxonomy.CWE_GROUPS) == set(taxonomy.SUBTYPES["safe_coding"])


def test_corpus_covers_the_papers_spread() -> None:
    from pipeline.blueprints.loader import load_corpus
    from tests.conftest import REPO

    corpus = load_corpus([REPO / "blueprints"])
    assert corpus.problems == []
    dims: dict[str, int] = {}
    for sourced in corpus.blueprints:
        dims[sourced.blueprint.dimension] = dims.get(sourced.blueprint.dimension, 0) + 1
    minimum = {"state_tracking": 22, "temporal_grounding": 28, "logical_adherence": 27, "attention_recovery": 12,
               "safe_coding": 12}
    assert all(dims[d] >= n for d, n in minimum.items()), dims
    assert len({s.blueprint.domain for s in corpus.blueprints}) >= 19
    assert {s.blueprint.subtype for s in corpus.blueprints if s.blueprint.dimension == "safe_coding"} == set(
        taxonomy.SUBTYPES["safe_coding"])
