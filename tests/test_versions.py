"""Releases are ordered by PEP 440 (``packaging.version``), pre-releases included (issue 18, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.assemble import previous_manifest
from pipeline.config import ConfigError, load_config


def releases(root: Path, *names: str) -> Path:
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "manifest.json").write_text(json.dumps({"version": name}), encoding="utf-8")
    (root / "notes").mkdir()  # not a release: no version name
    (root / "notes" / "manifest.json").write_text("{}", encoding="utf-8")
    return root


@pytest.mark.parametrize(("building", "previous"), [
    ("0.0.1.5", "0.0.1"),  # beside a pre-release this used to raise TypeError at the very end of a build
    ("0.0.1", "0.0.1-rc1"),  # a pre-release comes before its release
    ("0.0.2", "0.0.2rc1"),
    ("0.0.10", "0.0.2"),  # numeric, not string order
    ("0.0.1-rc1", None),
])
def test_the_changelog_compares_with_the_newest_older_release(tmp_path: Path, building: str, previous: str | None) -> None:
    root = releases(tmp_path, "0.0.1-rc1", "0.0.1", "0.0.1.5", "0.0.2rc1", "0.0.2", "0.0.10")
    found = previous_manifest(root, building)
    assert (found or {}).get("version") == previous


def test_a_version_that_cannot_be_ordered_is_refused_naming_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"--version \(flag\): Value error, '0.1.0-foo' is not a PEP 440 version"):
        load_config(version="0.1.0-foo")
