"""The audit the build ran equals ``run_audit`` rerun on the finished release; the model is recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stages.audit import run_audit
from tests.conftest import run_cli

pytestmark = pytest.mark.slow


def test_rerun_audit_equals_build_audit(default_build: dict, tmp_path: Path) -> None:
    release = default_build["release"]
    result = run_audit(release, tmp_path / "rerun", cache_dir=default_build["cache"] / "embeddings")
    assert result.files
    for name in result.files:
        assert (tmp_path / "rerun" / name).read_bytes() == (release / "audits" / name).read_bytes(), name
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["fallbacks"]["embedding_model"] == result.embedding_model
    card = (release / "README.md").read_text()
    assert result.embedding_model in card and "ENGLISH_STOP_WORDS" in card


def test_audit_cli_on_release_and_offline_hub_id(default_build: dict, tmp_path: Path) -> None:
    out = tmp_path / "audit"
    ok = run_cli("audit", str(default_build["release"]), "--out", str(out), "--cache-dir", str(default_build["cache"] / "embeddings"))
    verdict = json.loads((default_build["release"] / "manifest.json").read_text())["shortcut_check"]
    assert ok.returncode == (0 if verdict == "pass" else 1), ok.stderr[-2000:]
    assert f"shortcut check: {verdict}" in ok.stdout and "Traceback" not in ok.stderr
    assert {"lexical.csv", "semantic.csv", "shortcuts.csv", "families.csv", "report.md"} <= {p.name for p in out.iterdir()}
    assert (out / "shortcuts.csv").read_bytes() == (default_build["release"] / "audits" / "shortcuts.csv").read_bytes()
    offline = run_cli("audit", "someorg/triggerbench", "--revision", "v0.1.0", env={"HF_HUB_OFFLINE": "1"}, timeout=60)
    assert offline.returncode == 1 and "unreachable" in offline.stderr and "Traceback" not in offline.stderr
