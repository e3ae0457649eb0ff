"""Which corpus serves each dimension: a local directory first, else a Hub id, else a clear error.

The order of sources per dimension (README, "Long contexts") lives in the build config
(``distractors.sources``); keys are a dimension or ``dimension/subtype``. A source resolves locally when its files exist under the
distractors directory (default ``../shared/data`` beside the checkout), or on the Hub when it has
a Hub id and the Hub answers a quick probe (``pipeline.hub.offline``; with ``HF_HUB_OFFLINE=1``
it is never tried).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.config import REPO_ROOT
from pipeline.errors import InputError
from pipeline.hashing import combine, sha256_file
from pipeline.hub.offline import hub_reachable
from pipeline.stage import BuildSetting

LOCAL_PATTERNS: dict[str, tuple[str, ...]] = {
    "multiwoz": ("multiwoz/data.json", "multiwoz/val.json.zip", "multiwoz/*.json.zip", "multiwoz/dialogues_*.json",
                 "multiwoz/*.parquet"),
    "openthoughts": ("openthoughts/*.jsonl", "openthoughts/*.parquet"),
    "math": ("math/*.jsonl",),
    "swe-agent": ("trajectories/**/*.traj", "trajectories/**/*.messages.json"),
    "aime2025": ("aime2025/*.jsonl",),  # not a distractor: the problems of the aime_probe config
}
HUB_IDS: dict[str, str] = {
    "multiwoz": "pfb30/multi_woz_v22",
    "openthoughts": "open-thoughts/OpenThoughts-114k",
    "math": "EleutherAI/hendrycks_math",
    "aime2025": "math-ai/aime25",
}


class DistractorSourceError(InputError):
    """No source could be resolved for a dimension; the message names both ways to supply one."""


@dataclass(frozen=True)
class ResolvedSource:
    name: str
    kind: str  # "local" or "hub"
    location: str  # directory-relative file list or Hub id
    files: tuple[str, ...]
    digest: str

    def as_environment(self) -> dict[str, object]:
        """The JSON form stages read from ``ctx.environment`` (and fingerprints hash)."""
        return {"name": self.name, "kind": self.kind, "location": self.location, "files": list(self.files),
                "digest": self.digest}


def default_dir(repo_root: Path) -> Path | None:
    candidate = repo_root.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


def setting_dir(setting: BuildSetting) -> Path | None:
    """The distractors directory of a build: the one asked for, else ``../shared/data`` beside the checkout."""
    return setting.distractors_dir or default_dir(REPO_ROOT)


def distractor_environment(setting: BuildSetting) -> dict[str, object]:
    """Each source key's resolved corpus (``routes``) and every resolved corpus (``sources``)."""
    directory = setting_dir(setting)
    routes, sources = {}, {}
    for key, names in sorted(setting.config.distractors.sources.items()):
        resolved = resolve(key, names, directory)
        routes[key] = resolved.name
        sources[resolved.name] = resolved.as_environment()
    return {"routes": routes, "sources": sources}


def resolve_local(name: str, directory: Path | None) -> ResolvedSource | None:
    if directory is None:
        return None
    for pattern in LOCAL_PATTERNS.get(name, ()):
        files = sorted(p for p in directory.glob(pattern) if p.is_file())
        if files:
            relative = tuple(p.relative_to(directory).as_posix() for p in files)
            digest = combine(*(f"{rel}:{sha256_file(p)}" for rel, p in zip(relative, files)))
            return ResolvedSource(name, "local", str(directory), relative, digest)
    return None


def resolve(key: str, sources: list[str], directory: Path | None, hub_ok: bool | None = None) -> ResolvedSource:
    """The first source of ``sources`` that resolves, or :class:`DistractorSourceError`."""
    tried = []
    for name in sources:
        local = resolve_local(name, directory)
        if local:
            return local
        hub_id = HUB_IDS.get(name)
        if hub_id and (hub_ok if hub_ok is not None else hub_reachable()):
            return ResolvedSource(name, "hub", hub_id, (), combine("hub", hub_id))
        where = f"no files matching {', '.join(LOCAL_PATTERNS.get(name, ()))} under {directory}" if directory else "no local directory"
        hub = f"Hub id {hub_id} unreachable" if hub_id else "no Hub id"
        tried.append(f"{name} ({where}; {hub})")
    raise DistractorSourceError(
        f"no distractor source for {key}: tried {'; '.join(tried)}. Supply one with --distractors-dir DIR "
        f"(a directory with the corpora, e.g. ../shared/data) or make the Hugging Face Hub reachable for a Hub id."
    )
