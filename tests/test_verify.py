"""``triggerbench verify``, and ``audit`` / ``publish`` refusing a release that differs from its manifest (issue 18, item 4).

Three tamperings of a release in the real layout: a deleted shard, an edited row count in
``manifest.json`` (the one file the manifest's hashes do not cover) and a flipped byte in a
shard. Each is refused with the difference named; the untouched release passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_publish import make_release

REPO = Path(__file__).resolve().parents[1]
SHARD = "data/pm_base/dev-00000-of-00001.parquet"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRIGGERBENCH_PROGRESS": "0", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)


def delete_shard(release: Path, shard: str) -> str:
    (release / shard).unlink()
    return f"missing: {shard} (listed in the manifest)"


def edit_count(release: Path, shard: str) -> str:
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    config, split = next((c, s) for c, splits in manifest["configs"].items() for s, e in splits.items() if shard in e["files"])
    real = manifest["configs"][config][split]["rows"]
    manifest["configs"][config][split]["rows"] = real + 1
    (release / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    return f"rows: {config}/{split}: manifest says {real + 1}, its parquet files hold {real}"


def flip_byte(release: Path, shard: str) -> str:
    data = bytearray((release / shard).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (release / shard).write_bytes(bytes(data))
    return f"changed: {shard} ({len(data)} bytes, sha256 "


TAMPERINGS = {"deleted shard": delete_shard, "edited row count": edit_count, "flipped byte": flip_byte}


@pytest.mark.parametrize("tamper", TAMPERINGS, ids=list(TAMPERINGS))
def test_verify_refuses_a_tampered_release_naming_the_difference(tmp_path: Path, tamper: str) -> None:
    release = make_release(tmp_path / "releases")
    assert cli("verify", str(release)).returncode == 0
    expected = TAMPERINGS[tamper](release, SHARD)
    result = cli("verify", str(release))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"triggerbench verify: {release} no longer matches its manifest:")
    assert expected in result.stderr


def test_verify_passes_an_untouched_release_with_its_counts(tmp_path: Path) -> None:
    release = make_release(tmp_path / "releases", test_rows=7, dev_rows=3)
    result = cli("verify", str(release))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"ok: {release} matches its manifest (version 0.1.0: 8 files, 2 configs, 17 rows)"


def test_publish_dry_run_refuses_an_edited_row_count(tmp_path: Path) -> None:
    release = make_release(tmp_path / "releases")
    expected = edit_count(release, SHARD)
    result = cli("publish", str(release), "--repo-id", "org/name", "--dry-run")
    assert result.returncode == 1 and expected in result.stderr


@pytest.fixture(scope="module")
def built(small_build: dict) -> Path:
    """A real release: the run's small one (tests/conftest.py), copied before it is tampered with."""
    return small_build["release"]


@pytest.mark.slow
@pytest.mark.parametrize("tamper", TAMPERINGS, ids=list(TAMPERINGS))
def test_audit_of_a_tampered_real_release_is_refused_unless_told_not_to_verify(built: Path, tmp_path: Path,
                                                                              tamper: str) -> None:
    assert cli("verify", str(built)).returncode == 0
    copy = tmp_path / built.name
    shutil.copytree(built, copy)
    shard = sorted(p.relative_to(copy).as_posix() for p in (copy / "data").rglob("*.parquet") if "pm_" in p.as_posix())[0]
    expected = TAMPERINGS[tamper](copy, shard)
    verify = cli("verify", str(copy))
    assert verify.returncode == 1 and expected in verify.stderr
    audit = cli("audit", str(copy), "--out", str(tmp_path / "audit"))
    assert audit.returncode == 1 and expected in audit.stderr and "--no-verify" in audit.stderr
    assert not (tmp_path / "audit").exists()
    if tamper == "edited row count":  # the data are intact: a deliberate audit of the copy runs and says so
        forced = cli("audit", str(copy), "--out", str(tmp_path / "audit"), "--no-verify")
        assert forced.stdout.startswith(f"note: --no-verify: {copy} is audited as it is"), forced.stderr[-3000:]
        assert (tmp_path / "audit" / "lexical.csv").is_file()  # the audit ran (its own verdict is another matter)
