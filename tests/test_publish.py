"""``triggerbench publish`` over real HTTP against the project's Hub-compatible test server.

The server (``tests/servers/hub.py``) runs in its own process, stores repos as git repos and
logs every request; publishes run as ``python -m pipeline publish`` subprocesses with
``HF_ENDPOINT`` pointing at it (``HF_HUB_DISABLE_XET=1``: the server speaks the LFS protocol).
Test releases are written here in the real layout (parquet + card + manifest with sha256s).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[1]
HUB_SERVER = REPO / "tests" / "servers" / "hub.py"
SECRET = "hf_SECRETtesttoken123"

pytestmark = pytest.mark.slow

CARD = """---
license: apache-2.0
pretty_name: TriggerBench
configs:
- config_name: pm_base
  data_files:
  - split: test
    path: data/pm_base/test-*.parquet
  - split: dev
    path: data/pm_base/dev-*.parquet
- config_name: blueprints
  data_files:
  - split: test
    path: data/blueprints/test-*.parquet
---
# TriggerBench (test release)
"""


def pm_rows(split: str, count: int) -> list[dict]:
    return [{"id": f"{split}-bp{i:03d}-pos_clean-implicit-base", "blueprint_id": f"bp{i:03d}",
             "dimension": "state_tracking", "variant": "pos_clean", "expected": "intervene",
             "messages": [{"role": "user", "content": f"[2026-01-0{1 + i % 9}T09:00] remember item {i}"},
                          {"role": "assistant", "content": "Noted."}],
             "trigger_turn": 1, "n_tokens": 10 + i} for i in range(count)]


FAILING_CELL = {"section": "constraint_finder", "config": None, "context": "base", "constraint_form": "implicit",
                "dimension": "state_tracking", "variant": "pos_clean", "finder": "shortest_reply", "value": 1.0,
                "baseline": 0.12}


def make_release(root: Path, version: str = "0.1.0", test_rows: int = 7, dev_rows: int = 3,
                 shortcut_check: str = "pass") -> Path:
    """A small release in the layout of RELEASE_LAYOUT.md; sha256s computed here with hashlib."""
    release = root / version
    tables = {"data/pm_base/test-00000-of-00001.parquet": pm_rows("test", test_rows),
              "data/pm_base/dev-00000-of-00001.parquet": pm_rows("dev", dev_rows),
              "data/blueprints/test-00000-of-00001.parquet": [{"id": f"bp{i:03d}"} for i in range(test_rows)]}
    for path, rows in tables.items():
        (release / path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows), release / path, compression="zstd")
    texts = {"README.md": CARD, "audits/report.md": "# audits\n", "week/week.json": "{}\n",
             "exclusions/dedupe.jsonl": '{"id": "x", "reason": "duplicate", "detail": ""}\n'}
    for path, text in texts.items():
        (release / path).parent.mkdir(parents=True, exist_ok=True)
        (release / path).write_text(text, encoding="utf-8")
    files = {p.relative_to(release).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(release.rglob("*")) if p.is_file()}
    manifest = {"name": "triggerbench", "version": version, "seed": 0, "pipeline_version": "0.1.0",
                "configs": {"pm_base": {"test": {"rows": test_rows, "files": ["data/pm_base/test-00000-of-00001.parquet"]},
                                        "dev": {"rows": dev_rows, "files": ["data/pm_base/dev-00000-of-00001.parquet"]}},
                            "blueprints": {"test": {"rows": test_rows, "files": ["data/blueprints/test-00000-of-00001.parquet"]}}},
                "files": files, "shortcut_check": shortcut_check,
                "shortcut_failures": [FAILING_CELL] if shortcut_check == "fail" else []}
    (release / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, indent=2), encoding="utf-8")
    return release


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    """A running test Hub: ``{"url", "root"}``; stopped (by its pid) after the module."""
    root = tmp_path_factory.mktemp("hub")
    proc = subprocess.Popen([sys.executable, str(HUB_SERVER), "--root", str(root / "store")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("PORT "), proc.stderr.read()
    yield {"url": f"http://127.0.0.1:{int(line.split()[1])}", "root": root / "store", "outputs": []}
    proc.terminate()
    proc.wait(timeout=10)


def publish(hub: dict, release: Path, repo_id: str, *extra: str, env: dict | None = None,
            home: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m pipeline publish`` (= ``triggerbench publish``) against the test Hub with the recognisable token."""
    full = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")}
    full.update({"HF_ENDPOINT": hub["url"], "HF_TOKEN": SECRET, "HF_HUB_DISABLE_XET": "1",
                 "HF_HOME": str(home or hub["root"].parent / "hf_home"), **(env or {})})
    result = subprocess.run([sys.executable, "-m", "pipeline", "publish", str(release), "--repo-id", repo_id, *extra],
                            cwd=REPO, env=full, capture_output=True, text=True, timeout=600)
    hub["outputs"].append(result.stdout + result.stderr)
    return result


def requests(hub: dict, since: int = 0) -> list[dict]:
    lines = (hub["root"] / "requests.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[since:]]


def admin(hub: dict, route: str, body: dict) -> None:
    import urllib.request

    request = urllib.request.Request(f"{hub['url']}/_admin/{route}", data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_publish_then_load_by_tag_returns_the_release_rows(hub, tmp_path):
    release = make_release(tmp_path / "releases")
    result = publish(hub, release, "org/bench")
    assert result.returncode == 0, result.stderr
    assert "verification passed for org/bench@v0.1.0" in result.stdout
    assert "pm_base/test: 7 rows reloaded, manifest 7 [ok]" in result.stdout
    git_dir = hub["root"] / "datasets" / "org" / "bench"
    tagged = subprocess.run(["git", "rev-parse", "v0.1.0^{commit}", "main"], cwd=git_dir,
                            capture_output=True, text=True, check=True).stdout.split()
    assert tagged[0] == tagged[1]
    script = ("import datasets, json; ds = datasets.load_dataset('org/bench', 'pm_base', revision='v0.1.0', "
              "split='test'); print(json.dumps(ds.to_list()))")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
    env.update({"HF_ENDPOINT": hub["url"], "HF_HOME": str(tmp_path / "reader_home")})
    loaded = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    rows = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert rows == pm_rows("test", 7)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_olah_serves_the_published_tag_from_the_server_git_repos(hub, tmp_path):
    """The read path through the PyPI mirror ``olah``, offline, over the git repos the test Hub wrote."""
    release = make_release(tmp_path / "releases", test_rows=5, dev_rows=2)
    assert publish(hub, release, "org/mirrored", "--no-verify").returncode == 0
    port = free_port()
    (tmp_path / "olah.toml").write_text(
        f'[basic]\nhost = "127.0.0.1"\nport = {port}\nmirror-netloc = "127.0.0.1:{port}"\n'
        f'mirror-lfs-netloc = "127.0.0.1:{port}"\nrepos-path = "{tmp_path / "olah_cache"}"\n'
        f'mirrors-path = ["{hub["root"]}"]\n[accessibility]\noffline = true\n')
    olah = subprocess.Popen([str(Path(sys.executable).parent / "olah-cli"), "-c", str(tmp_path / "olah.toml")],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import urllib.request

        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/datasets/org/mirrored/refs", timeout=2) as r:
                    assert "v0.1.0" in r.read().decode()
                    break
            except OSError:
                assert time.monotonic() < deadline, "olah did not start"
                time.sleep(0.5)
        script = ("import datasets, json; ds = datasets.load_dataset('org/mirrored', 'pm_base', revision='v0.1.0'); "
                  "print(json.dumps({s: ds[s].to_list() for s in ds}))")
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
        env.update({"HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_HOME": str(tmp_path / "olah_reader")})
        loaded = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert loaded.returncode == 0, loaded.stderr[-2000:]
        splits = json.loads(loaded.stdout.strip().splitlines()[-1])
        assert splits == {"test": pm_rows("test", 5), "dev": pm_rows("dev", 2)}
    finally:
        olah.terminate()
        olah.wait(timeout=10)


def test_second_publish_of_the_same_version_is_refused(hub, tmp_path):
    release = make_release(tmp_path / "releases")
    assert publish(hub, release, "org/twice", "--no-verify").returncode == 0
    before = len(requests(hub))
    again = publish(hub, release, "org/twice")
    assert again.returncode == 1
    assert "refusing to publish: tag v0.1.0 already exists on org/twice" in again.stderr
    assert "it holds exactly this release, nothing to do" in again.stderr
    changed = make_release(tmp_path / "changed", test_rows=8)  # differs: pm_base/test, blueprints/test, manifest
    different = publish(hub, changed, "org/twice")
    assert different.returncode == 1 and "it holds different content (3 files differ, 0 extra)" in different.stderr
    kinds = [r["kind"] for r in requests(hub, before)]
    assert not {"preupload", "lfs_put", "commit", "tag"} & set(kinds), kinds


def test_rerun_after_a_deleted_file_reuploads_only_that_file_and_tags_once(hub, tmp_path):
    release = make_release(tmp_path / "releases")
    admin(hub, "fail", {"kind": "tag", "status": 500})
    first = publish(hub, release, "org/resume")
    assert first.returncode == 1 and "Nothing was tagged" in first.stderr
    victim = "data/pm_base/dev-00000-of-00001.parquet"
    admin(hub, "delete", {"repo": "org/resume", "path": victim, "purge_lfs": True})
    before = len(requests(hub))
    second = publish(hub, release, "org/resume")
    assert second.returncode == 0, second.stderr
    log = requests(hub, before)
    puts = [r["detail"]["oid"] for r in log if r["kind"] == "lfs_put" and r["status"] == 200]
    assert puts == [sha256(release / victim)]
    commits = [r["detail"] for r in log if r["kind"] == "commit"]
    assert commits == [{victim: "lfsFile"}]
    tags = [r for r in requests(hub) if r["kind"] == "tag" and r["repo"] == "org/resume" and r["status"] == 200]
    assert len(tags) == 1


def test_interrupted_upload_resumes_without_resending_finished_files(hub, tmp_path):
    release = make_release(tmp_path / "releases")
    admin(hub, "fail", {"kind": "lfs_put", "status": 507})
    before = len(requests(hub))
    first = publish(hub, release, "org/partial", "--no-verify")
    assert first.returncode == 1
    second = publish(hub, release, "org/partial", "--no-verify")
    assert second.returncode == 0, second.stderr
    puts = [r["detail"]["oid"] for r in requests(hub, before) if r["kind"] == "lfs_put" and r["status"] == 200]
    parquet = sorted(sha256(p) for p in release.rglob("*.parquet"))
    assert sorted(puts) == parquet, "every parquet file reached the server exactly once"


def test_a_row_count_that_differs_from_the_manifest_is_refused_before_any_upload(hub, tmp_path):
    release = make_release(tmp_path / "releases")
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["configs"]["pm_base"]["dev"]["rows"] = 4  # the dev shard really holds 3 rows
    (release / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, indent=2))
    result = publish(hub, release, "org/miscounted")
    assert result.returncode == 1
    assert "rows: pm_base/dev: manifest says 4, its parquet files hold 3" in result.stderr
    assert not (hub["root"] / "datasets" / "org" / "miscounted").exists()  # refused before anything was sent


def test_private_repo_is_hidden_from_anonymous_readers_and_verified_with_the_token(hub, tmp_path):
    import urllib.error
    import urllib.request

    release = make_release(tmp_path / "releases")
    result = publish(hub, release, "org/secret", "--private")
    assert result.returncode == 0, result.stderr
    assert "verification passed for org/secret@v0.1.0" in result.stdout
    assert (hub["root"] / "datasets" / "org" / "secret" / ".git" / "hub-private").read_text() == "1"
    with pytest.raises(urllib.error.HTTPError) as anonymous:
        urllib.request.urlopen(f"{hub['url']}/api/datasets/org/secret/refs", timeout=10)
    assert anonymous.value.code == 404


def reshard(release: Path, shards: int) -> None:
    """Rewrite pm_base/test as ``shards`` files (``test-0000i-of-0000n``) and update the manifest."""
    folder = release / "data" / "pm_base"
    rows = pq.read_table(folder / "test-00000-of-00001.parquet").to_pylist()
    (folder / "test-00000-of-00001.parquet").unlink()
    manifest = json.loads((release / "manifest.json").read_text())
    del manifest["files"]["data/pm_base/test-00000-of-00001.parquet"]
    names = []
    for index in range(shards):
        name = f"data/pm_base/test-{index:05d}-of-{shards:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[index::shards]), release / name, compression="zstd")
        manifest["files"][name] = sha256(release / name)
        names.append(name)
    manifest["configs"]["pm_base"]["test"]["files"] = names
    (release / "manifest.json").write_text(json.dumps(manifest, sort_keys=True, indent=2))


def test_next_version_replaces_stale_shards_and_old_tag_still_loads(hub, tmp_path):
    old = make_release(tmp_path / "releases", version="0.1.0", test_rows=6)
    new = make_release(tmp_path / "releases", version="0.2.0", test_rows=9)
    reshard(new, 2)
    assert publish(hub, old, "org/versions", "--no-verify").returncode == 0
    result = publish(hub, new, "org/versions")
    assert result.returncode == 0, result.stderr
    assert "deleting 1 stale" in result.stdout and "pm_base/test: 9 rows reloaded, manifest 9 [ok]" in result.stdout
    git_dir = hub["root"] / "datasets" / "org" / "versions"
    listed = {tag: subprocess.run(["git", "ls-tree", "-r", "--name-only", tag, "data/pm_base"], cwd=git_dir,
                                  capture_output=True, text=True, check=True).stdout.split()
              for tag in ("v0.1.0", "v0.2.0")}
    assert listed["v0.1.0"] == ["data/pm_base/dev-00000-of-00001.parquet", "data/pm_base/test-00000-of-00001.parquet"]
    assert listed["v0.2.0"] == ["data/pm_base/dev-00000-of-00001.parquet", "data/pm_base/test-00000-of-00002.parquet",
                                "data/pm_base/test-00001-of-00002.parquet"]
    script = ("import datasets, json; print(json.dumps([datasets.load_dataset('org/versions', 'pm_base', "
              "revision=t, split='test').num_rows for t in ('v0.1.0', 'v0.2.0')]))")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
    env.update({"HF_ENDPOINT": hub["url"], "HF_HOME": str(tmp_path / "reader_home")})
    loaded = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert json.loads(loaded.stdout.strip().splitlines()[-1]) == [6, 9]


def test_git_blob_id_matches_git_itself(tmp_path):
    from pipeline.hub.release_files import ReleaseFile

    path = tmp_path / "card.md"
    path.write_bytes(b"---\nlicense: mit\n---\n# caf\xc3\xa9\n")
    expected = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True).stdout.strip()
    assert ReleaseFile("card.md", path, path.stat().st_size, sha256(path)).git_blob_id() == expected


def test_changed_or_extra_files_are_refused_before_any_request(hub, tmp_path):
    release = make_release(tmp_path / "releases")
    shard = release / "data/pm_base/test-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes() + b"\0")
    (release / "audits" / "notes.txt").write_text("added after the build\n")
    before = len(requests(hub))
    result = publish(hub, release, "org/changed")
    assert result.returncode == 1
    assert "no longer matches its manifest" in result.stderr
    assert "changed: data/pm_base/test-00000-of-00001.parquet" in result.stderr
    assert "extra: audits/notes.txt" in result.stderr
    assert requests(hub, before) == []


def test_unreachable_hub_and_offline_mode_fail_fast(tmp_path):
    release = make_release(tmp_path / "releases")
    fake = {"url": "http://127.0.0.1:9", "root": tmp_path / "none", "outputs": []}
    started = time.monotonic()
    result = publish(fake, release, "org/offline")
    assert result.returncode == 1
    assert "cannot reach http://127.0.0.1:9" in result.stderr
    offline = publish(fake, release, "org/offline", env={"HF_HUB_OFFLINE": "1"})
    assert offline.returncode == 1 and "HF_HUB_OFFLINE=1 is set" in offline.stderr
    assert time.monotonic() - started < 20


def test_dry_run_lists_files_sizes_and_total_without_network(tmp_path):
    release = make_release(tmp_path / "releases")
    fake = {"url": "http://127.0.0.1:9", "root": tmp_path / "none", "outputs": []}
    result = publish(fake, release, "org/dry", "--dry-run", env={"HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    files = sorted(p for p in release.rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in files)
    for path in files:
        assert str(path.relative_to(release).as_posix()) in result.stdout
    assert f"{len(files)} files, {total} bytes" in result.stdout
    assert "as tag v0.1.0" in result.stdout


def test_dry_run_python_api_reports_the_plan(tmp_path):
    from pipeline.publish import publish_release

    release = make_release(tmp_path / "releases", version="2.0.0")
    report = publish_release(release, "org/api", dry_run=True, endpoint="http://127.0.0.1:9", out=io.StringIO())
    assert report.tag == "v2.0.0" and report.push is None and report.ok
    assert report.total_bytes == sum(p.stat().st_size for p in release.rglob("*") if p.is_file())


def test_token_never_appears_in_output_logs_or_written_files(hub, tmp_path):
    """Runs after the publishes above (same server): searches every output and every stored byte."""
    release = make_release(tmp_path / "releases", version="0.2.0")
    publish(hub, release, "org/bench", home=tmp_path / "home", env={"HF_DEBUG": "1"})
    publish(hub, release, "org/bench", "--dry-run", home=tmp_path / "home")
    for text in hub["outputs"]:
        assert SECRET not in text
    roots = [hub["root"], hub["root"].parent / "hf_home", tmp_path]
    for root in roots:
        for path in (p for p in root.rglob("*") if p.is_file()):
            assert SECRET.encode() not in path.read_bytes(), path
    for git_dir in (hub["root"] / "datasets").glob("*/*"):
        objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=git_dir,
                                 capture_output=True, check=True).stdout
        assert SECRET.encode() not in objects, git_dir


def test_a_release_that_fails_the_shortcut_check_is_refused_unless_allowed(hub, tmp_path):
    release = make_release(tmp_path / "releases", shortcut_check="fail")
    log = hub["root"] / "requests.jsonl"
    before = len(requests(hub)) if log.exists() else 0
    refused = publish(hub, release, "org/shortcuts")
    assert refused.returncode == 1
    assert "shortcut check failed on 1 cells" in refused.stderr
    assert "base/state_tracking/pos_clean/shortest_reply 1 vs 0.12" in refused.stderr
    assert "--allow-shortcuts" in refused.stderr
    assert not log.exists() or not [r for r in requests(hub, before) if "org/shortcuts" in r.get("path", "")]
    allowed = publish(hub, release, "org/shortcuts", "--allow-shortcuts")
    assert allowed.returncode == 0, allowed.stderr
    assert "publishing despite the shortcut check (--allow-shortcuts)" in allowed.stdout
