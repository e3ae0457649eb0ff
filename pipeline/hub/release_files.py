"""Read a release directory and check it against its ``manifest.json``.

In: a release directory in the layout of ``pipeline/release.py``. Out: the list of files to
publish (path, size, sha256, git blob id) or the list of problems that make it unpublishable.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from pipeline.hashing import sha256_file

MANIFEST = "manifest.json"


class ReleaseProblem(Exception):
    """The release directory cannot be published as it is (message says why)."""


@dataclass(frozen=True)
class ReleaseFile:
    """One file of a release: posix path relative to the release root, size and content ids."""

    path: str
    local: Path
    size: int
    sha256: str

    def git_blob_id(self) -> str:
        """The git blob id (sha1 of ``blob <size>\\0<content>``), what the Hub reports for non-LFS files."""
        digest = hashlib.sha1(f"blob {self.size}\0".encode())
        with open(self.local, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        return digest.hexdigest()


def load_manifest(release_dir: Path) -> dict[str, Any]:
    """Parse ``manifest.json``; raise :class:`ReleaseProblem` if absent or lacking version/files."""
    path = release_dir / MANIFEST
    if not release_dir.is_dir():
        raise ReleaseProblem(f"{release_dir} is not a directory")
    if not path.is_file():
        raise ReleaseProblem(f"{path} is missing: not a release directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ReleaseProblem(f"{path} is not valid JSON: {err}") from err
    for key in ("version", "files"):
        if key not in manifest:
            raise ReleaseProblem(f"{path} has no {key!r} key")
    return manifest


def tag_for(version: str) -> str:
    """The Hub tag of a release version: ``v<version>`` (a leading ``v`` is not doubled)."""
    return version if version.startswith("v") else f"v{version}"


def local_paths(release_dir: Path) -> set[str]:
    """Every regular file below ``release_dir`` as a posix relative path."""
    return {p.relative_to(release_dir).as_posix() for p in release_dir.rglob("*") if p.is_file()}


def check_release(release_dir: Path, manifest: dict[str, Any]) -> list[ReleaseFile]:
    """Hash every file and compare with the manifest; return the files to publish (manifest last).

    Raises :class:`ReleaseProblem` listing every missing, extra or changed file.
    """
    expected: dict[str, str] = manifest["files"]
    present = local_paths(release_dir) - {MANIFEST}
    problems = [f"missing: {p} (listed in the manifest)" for p in sorted(set(expected) - present)]
    problems += [f"extra: {p} (not in the manifest)" for p in sorted(present - set(expected))]
    files: list[ReleaseFile] = []
    for path in sorted(set(expected) & present):
        local = release_dir / path
        digest = sha256_file(local)
        if digest != expected[path]:
            size = local.stat().st_size
            problems.append(f"changed: {path} ({size} bytes, sha256 {digest[:12]}..., manifest says {expected[path][:12]}...)")
        files.append(ReleaseFile(path, local, local.stat().st_size, digest))
    problems += row_problems(release_dir, manifest)
    if problems:
        shown = "\n  ".join(problems[:20]) + (f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise ReleaseProblem(f"{release_dir} no longer matches its manifest:\n  {shown}")
    manifest_path = release_dir / MANIFEST
    files.append(ReleaseFile(MANIFEST, manifest_path, manifest_path.stat().st_size, sha256_file(manifest_path)))
    return files


def row_problems(release_dir: Path, manifest: dict[str, Any]) -> list[str]:
    """Row counts per config and split in the manifest vs the parquet files' own metadata.

    ``manifest.json`` is the one file its own hashes do not cover, so an edited count is only
    caught here. Also flags a shard the manifest lists under no config, or one pyarrow cannot read.
    """
    problems: list[str] = []
    listed: set[str] = set()
    for config, splits in sorted((manifest.get("configs") or {}).items()):
        for split, entry in sorted(splits.items()):
            held = 0
            for relative in entry.get("files", []):
                listed.add(relative)
                path = release_dir / relative
                if not path.is_file():
                    continue  # reported as missing by the file check
                try:
                    held += pq.ParquetFile(path).metadata.num_rows
                except (pa.ArrowException, OSError) as error:
                    problems.append(f"unreadable: {relative} ({type(error).__name__}: {str(error)[:200]})")
                    held = -1
                    break
            if held >= 0 and held != entry.get("rows"):
                problems.append(f"rows: {config}/{split}: manifest says {entry.get('rows')}, its parquet files hold {held}")
    for relative in sorted(p for p in manifest.get("files", {}) if p.endswith(".parquet") and p.startswith("data/")):
        if relative not in listed:
            problems.append(f"unlisted: {relative} (in no config of the manifest)")
    return problems


def card_configs(readme_text: str) -> dict[str, list[str]]:
    """Config name -> split names from the ``configs:`` list of a dataset card's YAML front matter."""
    if not readme_text.startswith("---"):
        return {}
    front = readme_text.split("---", 2)[1]
    meta = yaml.safe_load(front) or {}
    configs: dict[str, list[str]] = {}
    for entry in meta.get("configs") or []:
        data_files = entry.get("data_files") or []
        if isinstance(data_files, (str, dict)):
            data_files = [data_files]
        splits = [d.get("split", "train") if isinstance(d, dict) else "train" for d in data_files]
        configs[entry["config_name"]] = splits
    return configs
