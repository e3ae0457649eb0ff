"""The audit's results cached by the fingerprint of the rows it reads.

Key: the sha256 of every shard of every audited config (known at write time, or hashed here),
else, when that misses, the digest of the columns the audit reads from them (an edit of a column
it never reads, such as ``reference_intent``, changes no audit figure); and the audit's code version (this package, the text rules it uses and its libraries), the
shortcut settings and the embedding model's key. An entry is a directory
``<cache>/audit/<key[:2]>/<key>/`` with the files the audit wrote and ``result.pkl`` (the
:class:`stages.audit.run.AuditResult`); it is assembled under a temporary name and renamed,
so a crash leaves no half entry, and an entry missing a file or with an unreadable result is
ignored (and recomputed).
"""

from __future__ import annotations

import hashlib
import pickle
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline import text, vocabulary
from pipeline.hashing import combine, sha256_file, sha256_json, source_digest
from pipeline.leftovers import entry_dir
from stages.audit.reader import COLUMNS

RESULT = "result.pkl"
LIBRARIES = ("numpy", "scikit-learn", "polars", "pyarrow", "matplotlib", "datasets", "sentence-transformers", "torch")


def code_version() -> str:
    """The audit's code: the ``stages.audit`` package, the text rules and vocabulary, library versions."""
    versions = []
    for name in LIBRARIES:
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=-")
    return combine(source_digest(sys.modules["stages.audit"], text, vocabulary), sys.version, *versions)


def input_digests(release: Path, configs: tuple[str, ...], known: dict[str, str] | None = None) -> dict[str, str]:
    """``data/<config>/<file>`` -> sha256 for every shard of ``configs`` (``known`` digests are trusted)."""
    known = known or {}
    digests = {}
    for config in configs:
        for path in sorted((release / "data" / config).glob("*.parquet")):
            relative = path.relative_to(release).as_posix()
            digests[relative] = known.get(relative) or sha256_file(path)
    return digests


def column_digests(release: Path, configs: tuple[str, ...]) -> dict[str, str]:
    """``data/<config>/<file>`` -> digest of the columns the audit reads (:data:`reader.COLUMNS`) of every
    shard of ``configs``: unchanged when an edit touched only columns the audit never reads.

    Hashes the encoded column chunks as stored (with the file's schema and row-group sizes), so nothing
    is decoded; equal chunk bytes under an equal schema decode to equal values.
    """
    digests = {}
    for config in configs:
        for path in sorted((release / "data" / config).glob("*.parquet")):
            meta = pq.ParquetFile(path).metadata
            digest = hashlib.sha256(meta.schema.to_arrow_schema().to_string().encode())
            with open(path, "rb") as handle:
                for group in range(meta.num_row_groups):
                    row_group = meta.row_group(group)
                    digest.update(f"|{row_group.num_rows}|".encode())
                    for index in range(row_group.num_columns):
                        chunk = row_group.column(index)
                        if chunk.path_in_schema.split(".", 1)[0] not in COLUMNS:
                            continue
                        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
                        handle.seek(start)
                        digest.update(chunk.path_in_schema.encode() + handle.read(chunk.total_compressed_size))
            digests[path.relative_to(release).as_posix()] = digest.hexdigest()
    return digests


def audit_key(digests: dict[str, str], settings: Any, model_key: str) -> str:
    """The cache key of one audit: its input shards, code, settings and embedding model."""
    return combine("audit", code_version(), sha256_json(digests), sha256_json(settings), model_key)


class AuditCache:
    """Audit results by key under ``<cache dir>/audit``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str, out_dir: Path) -> Any | None:
        """Copy a complete entry's files into ``out_dir`` and return its result, else None."""
        directory = self._dir(key)
        result = _complete(directory)
        if result is None:
            return None
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            for name in result.files:
                shutil.copyfile(directory / name, out_dir / name)
        except OSError:
            return None
        result.out_dir = out_dir
        return result

    def put(self, key: str, result: Any) -> None:
        """Store ``result`` and the files it wrote (from ``result.out_dir``); atomic."""
        with entry_dir(self._dir(key), lambda target: _complete(target) is not None) as temp:
            for name in result.files:
                shutil.copyfile(result.out_dir / name, temp / name)
            with open(temp / RESULT, "wb") as handle:
                pickle.dump(result, handle, protocol=pickle.HIGHEST_PROTOCOL)


def _complete(directory: Path) -> Any | None:
    """The result of the entry in ``directory`` when it is readable and has all its files, else None."""
    try:
        with open(directory / RESULT, "rb") as handle:
            result = pickle.load(handle)
        return result if all((directory / name).is_file() for name in result.files) else None
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
        return None
