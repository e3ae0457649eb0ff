"""The audit the build ran equals the audit rerun on the finished release through the CLI, byte for byte;
the embedding model is recorded in the manifest and the card. On the run's small release (every config of
the default build, ten seeds): the equality is a property of the code, and the default release's audit
would cost the suite minutes more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import embedding_cache, run_cli

pytestmark = pytest.mark.slow


def test_audit_cli_rerun_equals_build_audit_and_hub_id_offline_fails_cleanly(small_build: dict, tmp_path: Path) -> None:
    release, out = small_build["release"], tmp_path / "audit"
    # no result cache: every finder and table is recomputed (only embeddings come from the build's cache)
    ok = run_cli("audit", str(release), "--out", str(out), "--cache-dir", embedding_cache(small_build))
    manifest = json.loads((release / "manifest.json").read_text())
    verdict = manifest["shortcut_check"]
    assert ok.returncode == (0 if verdict == "pass" else 1), ok.stderr[-2000:]
    assert f"shortcut check: {verdict}" in ok.stdout and "Traceback" not in ok.stderr
    built = sorted(p.name for p in (release / "audits").iterdir())
    assert {"lexical.csv", "semantic.csv", "shortcuts.csv", "families.csv", "rows.parquet", "report.md"} <= set(built)
    assert sorted(p.name for p in out.iterdir()) == built
    for name in built:
        assert (out / name).read_bytes() == (release / "audits" / name).read_bytes(), name
    model = manifest["fallbacks"]["embedding_model"]
    assert model and model in (out / "report.md").read_text()
    card = (release / "README.md").read_text()
    assert model in card and "ENGLISH_STOP_WORDS" in card
    offline = run_cli("audit", "someorg/triggerbench", "--revision", "v0.1.0", env={"HF_HUB_OFFLINE": "1"}, timeout=60)
    assert offline.returncode == 1 and "unreachable" in offline.stderr and "Traceback" not in offline.stderr
