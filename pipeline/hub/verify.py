"""Reload a published release at its tag and compare it with the manifest.

In: endpoint, repo id, revision (the tag), the card's configs and the manifest. Out: a
:class:`Verification` with per config/split row counts (expected vs reloaded) and every file
whose downloaded sha256 differs from the manifest.

The reload runs ``datasets.load_dataset(repo_id, config, revision=tag)`` in a subprocess
(``python -m pipeline.hub.verify``) with ``HF_ENDPOINT`` set to the endpoint and a fresh, empty
``HF_HOME``, so it is a real download from the Hub and not a read of a local cache. The token
reaches the child only through its environment (never its command line).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from pipeline.hashing import sha256_file

VERIFY_TIMEOUT_S = 3600


@dataclass
class Verification:
    """Result of reloading a release: ``ok`` when every count and hash matches."""

    rows: dict[str, dict[str, dict[str, int | None]]] = field(default_factory=dict)
    hash_mismatches: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    config_errors: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        rows_ok = all(c["expected"] == c["reloaded"] for splits in self.rows.values() for c in splits.values())
        clean = self.error is None and not self.config_errors
        return clean and rows_ok and not self.hash_mismatches and not self.missing_files


def verify_release(endpoint: str, token: str | None, repo_id: str, revision: str,
                   configs: dict[str, list[str]], manifest: dict[str, Any], manifest_sha256: str) -> Verification:
    """Reload every config at ``revision`` in a clean subprocess; compare with ``manifest``."""
    with tempfile.TemporaryDirectory(prefix="triggerbench-verify-") as home:
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
        env.update({"HF_ENDPOINT": endpoint, "HF_HOME": home, "HF_HUB_DISABLE_TELEMETRY": "1"})
        if token:
            env["HF_TOKEN"] = token
        request = {"repo_id": repo_id, "revision": revision, "configs": configs,
                   "files": sorted(manifest["files"]) + ["manifest.json"]}
        proc = subprocess.run([sys.executable, "-m", "pipeline.hub.verify"], input=json.dumps(request), env=env,
                              capture_output=True, text=True, timeout=VERIFY_TIMEOUT_S, check=False)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        return Verification(error=f"reload failed (exit {proc.returncode}):\n{tail}")
    reloaded = json.loads(proc.stdout.strip().splitlines()[-1])
    expected_hashes = {**manifest["files"], "manifest.json": manifest_sha256}
    result = Verification(config_errors=reloaded.get("errors", {}))
    for config, splits in configs.items():
        if config in result.config_errors:
            continue
        result.rows[config] = {}
        for split in splits:
            expected = manifest.get("configs", {}).get(config, {}).get(split, {}).get("rows")
            result.rows[config][split] = {"expected": expected, "reloaded": reloaded["rows"].get(config, {}).get(split)}
    for path, digest in expected_hashes.items():
        got = reloaded["files"].get(path)
        if got is None:
            result.missing_files.append(path)
        elif got != digest:
            result.hash_mismatches.append(path)
    return result


def reload(repo_id: str, revision: str, configs: dict[str, list[str]], files: list[str]) -> dict[str, Any]:
    """In the child: row counts per config/split through datasets (or the error a config raised),
    sha256 of each downloaded file."""
    import datasets
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    rows: dict[str, dict[str, int]] = {}
    errors: dict[str, str] = {}
    for config in configs:
        try:
            loaded = datasets.load_dataset(repo_id, config, revision=revision)
        except Exception as err:  # noqa: BLE001 - any failure to load is reported per config
            cause = f" (cause: {type(err.__cause__).__name__}: {err.__cause__})" if err.__cause__ else ""
            errors[config] = f"{type(err).__name__}: {err}{cause}"
            continue
        rows[config] = {split: loaded[split].num_rows for split in loaded}
    hashes: dict[str, str] = {}
    for path in files:
        try:
            local = hf_hub_download(repo_id, path, repo_type="dataset", revision=revision)
        except EntryNotFoundError:
            continue
        hashes[path] = sha256_file(local)
    return {"rows": rows, "files": hashes, "errors": errors}


def main() -> int:
    """Child entry point: read ``{"repo_id", "revision", "configs", "files"}`` JSON on stdin,
    print one JSON line ``{"rows": ..., "files": ..., "errors": ...}``."""
    request = json.loads(sys.stdin.read())
    result = reload(request["repo_id"], request["revision"], request["configs"], request["files"])
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
