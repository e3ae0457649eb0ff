"""Every number in a build config is range-checked; the error names the option and its source (issue 18, item 3).

Each case is one edit of the real default config; the build must refuse it before any stage
runs, with one line naming the file (or flag) and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.build import BuildOptions, build
from pipeline.config import DEFAULT_CONFIG, ConfigError

CASES: list[tuple[str, Any, str]] = [  # (dotted path in the config, bad value, expected message fragment)
    ("distractors.lengths", [-20000], "distractors.lengths.0: Input should be greater than or equal to 1"),
    ("distractors.lengths", [0], "distractors.lengths.0: Input should be greater than or equal to 1"),
    ("distractors.lengths", [20000, 20000], "distractors.lengths: Value error, lengths repeat [20000]"),
    ("distractors.lengths", [5_000_000], "distractors.lengths.0: Input should be less than or equal to 1048576"),
    ("stages.scale.max_per_seed", 0, "stages.scale.max_per_seed: Input should be greater than or equal to 1"),
    ("stages.scale.max_per_seed", -1, "stages.scale.max_per_seed: Input should be greater than or equal to 1"),
    ("stages.split.dev_fraction", 1.5, "stages.split.dev_fraction: Input should be less than 1"),
    ("stages.split.dev_fraction", -0.1, "stages.split.dev_fraction: Input should be greater than or equal to 0"),
    ("stages.dedupe.max_similarity", -3, "stages.dedupe.max_similarity: Input should be greater than or equal to 0"),
    ("stages.dedupe.targets.state_tracking", 0, "stages.dedupe.targets.state_tracking: Input should be greater than"),
    ("stages.dialogues.filler_exchanges.safe_coding", [5, 3],
     "stages.dialogues.filler_exchanges.safe_coding: Value error, minimum 5 is larger than maximum 3"),
    ("stages.dialogues.filler_exchanges.safe_coding", [-2, 3],
     "stages.dialogues.filler_exchanges.safe_coding: Value error, minimum must be at least 1, got -2"),
    ("stages.oracle_necessity.temperature", 7, "stages.oracle_necessity.temperature: Input should be less than or equal to 2"),
    ("stages.dialogues.llm.max_tokens", 0, "stages.dialogues.llm.max_tokens: Input should be greater than or equal to 1"),
    ("seed", -5, "seed: Input should be greater than or equal to 0"),
]


def config_with(tmp_path: Path, dotted: str, value: Any) -> Path:
    data = yaml.safe_load(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    data["blueprints"] = str(DEFAULT_CONFIG.parents[1] / "blueprints")
    node = data
    *parents, last = dotted.split(".")
    for key in parents:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[last] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("dotted", "value", "expected"), CASES, ids=[f"{c[0]}={c[1]}" for c in CASES])
def test_an_out_of_range_number_in_the_config_file_is_refused_naming_file_and_field(
        tmp_path: Path, dotted: str, value: Any, expected: str) -> None:
    path = config_with(tmp_path, dotted, value)
    with pytest.raises(ConfigError) as caught:
        build(BuildOptions(config_path=path, out=tmp_path / "out", cache_dir=tmp_path / "cache"))
    assert str(caught.value).startswith(f"{path}: ") and expected in str(caught.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("options", "expected"), [
    ({"limit": 0}, "--limit (flag): must be at least 1, got 0"),
    ({"limit": -1}, "--limit (flag): must be at least 1, got -1"),
    ({"version": "0.1"}, "--version (flag): String should match pattern"),
    ({"llm_max_failed_share": 1.0}, "--llm-max-failed-share (flag): must be in [0, 1), got 1"),
])
def test_an_out_of_range_flag_is_blamed_on_the_flag_not_the_file(tmp_path: Path, options: dict, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build(BuildOptions(out=tmp_path / "out", cache_dir=tmp_path / "cache", **options))
    assert str(caught.value).startswith(expected)
    assert "default.yaml" not in str(caught.value)
