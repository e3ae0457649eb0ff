"""``triggerbench verify RELEASE``: is this release directory exactly what its manifest says?

In: a release directory. Out: exit 0 and one summary line when every file listed in
``manifest.json`` is present with its sha256, no file is extra, and every config/split holds
the row count the manifest gives (read from the parquet metadata); else exit 1 and the list
of differences. ``publish`` and ``audit`` (on a local release) run the same check first.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline.hub.release_files import ReleaseProblem, check_release, load_manifest


@dataclass(frozen=True)
class Verified:
    """What a matching release holds."""

    release: Path
    version: str
    files: int
    configs: int
    rows: int

    def line(self) -> str:
        return (f"ok: {self.release} matches its manifest (version {self.version}: {self.files} files, "
                f"{self.configs} configs, {self.rows} rows)")


def verify_release(release_dir: Path) -> Verified:
    """Check ``release_dir`` against its manifest; raise :class:`ReleaseProblem` listing every difference."""
    manifest = load_manifest(release_dir)
    files = check_release(release_dir, manifest)
    configs = manifest.get("configs") or {}
    rows = sum(int(entry.get("rows", 0)) for splits in configs.values() for entry in splits.values())
    return Verified(release_dir, str(manifest["version"]), len(files), len(configs), rows)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the verify verb's arguments to ``parser``."""
    parser.add_argument("release", type=Path, metavar="RELEASE_DIR", help="a local release directory (releases/<version>)")


def run(args: argparse.Namespace) -> int:
    """0 when the release matches its manifest, 1 (with the differences) when not."""
    try:
        print(verify_release(args.release).line())
    except ReleaseProblem as problem:
        print(f"triggerbench verify: {problem}", file=sys.stderr)
        return 1
    return 0
