"""The build configuration: a YAML file (``configs/default.yaml``) plus CLI overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.bounds import Tokens

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = REPO_ROOT / "configs" / "default.yaml"


class ConfigError(Exception):
    """A build configuration that cannot be used (message names the file and field)."""


class DistractorConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dir: str | None = None
    sources: dict[str, list[str]] = Field(default_factory=dict)
    lengths: list[Tokens] = Field(default_factory=lambda: [20000, 40000, 60000, 80000, 100000], min_length=1)

    @field_validator("lengths")
    @classmethod
    def _distinct(cls, lengths: list[int]) -> list[int]:
        repeated = sorted({n for n in lengths if lengths.count(n) > 1})
        if repeated:
            raise ValueError(f"lengths repeat {repeated}")
        return lengths


class BuildConfig(BaseModel):
    """What a build does: release version, seed, blueprint location, per-stage parameters."""

    model_config = ConfigDict(extra="forbid")
    version: str = Field(pattern=r"^\d+\.\d+\.\d+([.-][0-9A-Za-z.]+)?$")
    seed: int = Field(default=0, ge=0, lt=2**63)
    blueprints: str = "blueprints"
    license: str = "cc-by-4.0"
    stages: dict[str, dict[str, Any]] = Field(default_factory=dict)
    distractors: DistractorConfig = Field(default_factory=DistractorConfig)
    audit: dict[str, Any] = Field(default_factory=dict)  # checked by stages/audit (``shortcuts:`` gate settings)

    @field_validator("version")
    @classmethod
    def _orderable(cls, version: str) -> str:
        try:
            Version(version)
        except InvalidVersion:
            raise ValueError(f"{version!r} is not a PEP 440 version (releases are ordered by it), e.g. 0.1.0 or 0.1.0rc1") from None
        return version

    def blueprints_path(self, base: Path) -> Path:
        path = Path(self.blueprints)
        return path if path.is_absolute() else base / path

    def stage_params(self, name: str) -> dict[str, Any]:
        return dict(self.stages.get(name) or {})


def load_config(path: Path | None = None, **overrides: Any) -> tuple[BuildConfig, Path]:
    """Read a config file and apply non-None overrides; return it and its base directory."""
    path = path or DEFAULT_CONFIG
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    flags = {k: v for k, v in overrides.items() if v is not None}
    data.update(flags)
    try:
        config = BuildConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        if first["loc"] and first["loc"][0] in flags:  # the value came from the command line
            raise ConfigError(f"--{first['loc'][0]} (flag): {first['msg']}, got {first.get('input')!r}") from None
        raise ConfigError(f"{path}: {field}: {first['msg']}") from None
    base = REPO_ROOT if path.resolve() == DEFAULT_CONFIG.resolve() else path.resolve().parent
    return config, base
