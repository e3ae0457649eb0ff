"""Stable hashing of JSON-like values, files and source code.

Everything that decides whether cached work can be reused goes through here, so the
rules are in one place: canonical JSON (sorted keys, no whitespace, UTF-8) and sha256.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path
from types import ModuleType
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialize ``value`` to canonical JSON: sorted keys, compact, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def _default(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot hash value of type {type(value).__name__}")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_text(canonical_json(value))


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def combine(*parts: str) -> str:
    """Hash an ordered list of hex digests (or short strings) into one digest."""
    return sha256_text("\x1f".join(parts))


def source_digest(*objects: ModuleType | type | Any) -> str:
    """Digest of the source code of modules, classes or functions (their code version).

    A package module contributes every ``.py`` file below its directory, so editing any
    helper of a stage package invalidates that stage's cache.
    """
    digest = hashlib.sha256()
    for obj in objects:
        module = inspect.getmodule(obj) if not isinstance(obj, ModuleType) else obj
        path = Path(inspect.getfile(module))
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for file in files:
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()
