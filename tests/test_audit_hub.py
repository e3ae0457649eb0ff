"""``triggerbench audit ORG/NAME --revision TAG`` over real HTTP against the project's test Hub.

The fixture release of ``test_audit_release`` is uploaded and tagged with ``huggingface_hub``;
the audit of the Hub id (read through ``datasets``) must equal the audit of the directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from test_audit_release import write_release

REPO = Path(__file__).resolve().parents[1]
HUB_SERVER = REPO / "tests" / "servers" / "hub.py"
REPO_ID = "audit-org/triggerbench-fixture"
TAG = "v0.0.1"

pytestmark = pytest.mark.slow

UPLOAD = """
import sys
from huggingface_hub import HfApi
url, folder, repo_id, tag = sys.argv[1:5]
api = HfApi(endpoint=url, token="hf_audit_test_token")
api.create_repo(repo_id, repo_type="dataset")
api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset")
api.create_tag(repo_id, tag=tag, repo_type="dataset")
"""


def _env(url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"}}
    env.update({"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_DISABLE_XET": "1", "TRIGGERBENCH_PROGRESS": "0"})
    return env


@pytest.fixture(scope="module")
def hub_release(tmp_path_factory: pytest.TempPathFactory):
    """A running test Hub holding the fixture release tagged ``v0.0.1``; stopped by pid afterwards."""
    root = tmp_path_factory.mktemp("audit-hub")
    release = write_release(root / "release" / "0.0.1")
    server = subprocess.Popen([sys.executable, str(HUB_SERVER), "--root", str(root / "store")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    assert line.startswith("PORT "), server.stderr.read()
    url = f"http://127.0.0.1:{int(line.split()[1])}"
    upload = subprocess.run([sys.executable, "-c", UPLOAD, url, str(release), REPO_ID, TAG],
                            env=_env(url, root / "hf-upload"), capture_output=True, text=True, timeout=300)
    assert upload.returncode == 0, upload.stderr[-3000:]
    yield {"url": url, "release": release, "root": root}
    server.terminate()
    server.wait(timeout=10)


def test_audit_of_hub_id_equals_audit_of_directory(hub_release: dict, tmp_path: Path) -> None:
    env = _env(hub_release["url"], tmp_path / "hf-home")
    cache = tmp_path / "cache"
    hub_out, dir_out = tmp_path / "hub-audit", tmp_path / "dir-audit"
    from_hub = subprocess.run([sys.executable, "-m", "pipeline", "audit", REPO_ID, "--revision", TAG, "--out",
                               str(hub_out), "--cache-dir", str(cache)], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)
    assert from_hub.returncode in (0, 1) and "shortcut check:" in from_hub.stdout, from_hub.stderr[-3000:]
    from_dir = subprocess.run([sys.executable, "-m", "pipeline", "audit", str(hub_release["release"]), "--out",
                               str(dir_out), "--cache-dir", str(cache), "--no-verify"], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)
    assert from_dir.returncode == from_hub.returncode, from_dir.stderr[-3000:]
    for name in ("lexical.csv", "semantic.csv", "shortcuts.csv"):
        assert (hub_out / name).read_bytes() == (dir_out / name).read_bytes(), name
    hub_rows, dir_rows = pl.read_parquet(hub_out / "rows.parquet"), pl.read_parquet(dir_out / "rows.parquet")
    assert hub_rows.height == dir_rows.height == 33
    assert hub_rows.equals(dir_rows)
    assert np.isfinite(hub_rows.drop_nulls("cos_ct")["cos_ct"].to_numpy()).all()
    assert "audit of audit-org/triggerbench-fixture" in from_hub.stdout
