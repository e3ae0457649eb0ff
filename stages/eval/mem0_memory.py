"""``--memory mem0``: the maintained ``mem0ai`` library as a memory baseline, run offline.

Mem0 reads each dialogue in the same batches as Letta-Sim's curator (``memory.curator_batches``)
through ``Memory.add`` (its own extraction prompt and its local store), then the trigger
searches the row's memories (``Memory.search``, top ``K``). The model sees those memories, the
recent exchanges and the trigger, as with the other memories.

Offline and reproducible:

- the embedder is the bundled MiniLM (``huggingface`` provider on its local directory), the
  vector store a local on-disk qdrant and the history a SQLite file, all in a fresh directory
  of the run, removed at the end; telemetry is switched off and ``MEM0_DIR`` (where mem0 writes
  its config file on import) points into that directory unless already set;
- Mem0's LLM calls go through :class:`Mem0LLM`, which sends them with the run's client (same
  endpoint, request cache, failure log and counts as every other request), so a killed run
  resumes and a rerun replays the whole curation from the cache, sending nothing;
- Mem0 writes today's date into its extraction prompt; :class:`Mem0LLM` replaces it by the
  date of the conversation (the trigger's stamp), so a request depends on the row only.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.llm import ChatRequest, LLMResult
from pipeline.text import timestamp_of

MEM0_VERSION = "2.2.1"
MAX_TOKENS = 1024
_DATE_LINE = re.compile(r"^(## (?:Observation|Current) Date\n)\d{4}-\d{2}-\d{2}$", re.M)


class Mem0Unavailable(ValueError):
    """The ``mem0ai`` library is missing or not the supported version (one line for the CLI)."""


class Mem0RequestFailed(RuntimeError):
    """One of Mem0's LLM requests failed after the client's retries."""

    def __init__(self, result: LLMResult) -> None:
        super().__init__(result.error or "failed")
        self.result = result


def check_installed() -> None:
    """Raise :class:`Mem0Unavailable` unless ``mem0ai`` (the ``[memory]`` extra) is importable."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("mem0ai")
    except PackageNotFoundError:
        raise Mem0Unavailable("--memory mem0 needs the mem0ai library: pip install -e '.[memory]'") from None
    if found.split(".")[0] != MEM0_VERSION.split(".")[0]:
        raise Mem0Unavailable(f"--memory mem0 supports mem0ai {MEM0_VERSION} (major version 2), found {found}")


def conversation_date(row: Mapping[str, Any]) -> str:
    """The date of the row's trigger (``[YYYY-MM-DDT..]`` stamp), else of its last stamped turn, else ``"unknown"``."""
    for message in reversed(row["messages"]):
        if stamp := timestamp_of(str(message["content"])):
            return stamp[:10]
    return "unknown"


@dataclass
class Mem0LLM:
    """Mem0's LLM (its ``generate_response`` interface), answered through the run's client.

    ``send`` answers one :class:`ChatRequest`; ``date`` is the conversation date written in
    place of the wall-clock date Mem0 puts in its prompts. A failed request raises
    :class:`Mem0RequestFailed` (Mem0 wraps it in its ``LLMError``).
    """

    send: Callable[[ChatRequest], LLMResult]
    date: str = "unknown"
    tag: str = ""

    def generate_response(self, messages: Sequence[Mapping[str, str]], response_format: Any = None,
                          tools: Any = None, tool_choice: str = "auto", **_: Any) -> str:
        fixed = [{"role": str(m["role"]), "content": _DATE_LINE.sub(rf"\g<1>{self.date}", str(m["content"]))}
                 for m in messages]
        result = self.send(ChatRequest(fixed, temperature=0.0, max_tokens=MAX_TOKENS, tag=self.tag))
        if not result.ok:
            raise Mem0RequestFailed(result)
        return result.text or ""


@dataclass
class Mem0Store:
    """One Mem0 ``Memory`` over a fresh local store; rows are kept apart by ``user_id``."""

    memory: Any
    root: Path
    llm: Mem0LLM

    @classmethod
    def open(cls, run_dir: Path, send: Callable[[ChatRequest], LLMResult]) -> Mem0Store:
        """A store in a new directory under ``run_dir`` with the bundled MiniLM as embedder."""
        check_installed()
        root = Path(tempfile.mkdtemp(prefix="mem0-", dir=run_dir))
        os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: a benchmark run sends nothing home
        os.environ.setdefault("MEM0_DIR", str(root / "home"))  # mem0 writes a config file there on import, not in ~/.mem0
        from mem0 import Memory

        for name in ("mem0", "qdrant_client"):  # per-insert info lines and notes on optional extras (spaCy, BM25)
            logging.getLogger(name).setLevel(logging.ERROR)

        from stages.audit.embeddings import bundled_model_dir

        config = {
            "vector_store": {"provider": "qdrant", "config": {"path": str(root / "qdrant"), "on_disk": True,
                                                              "collection_name": "triggerbench", "embedding_model_dims": 384}},
            "embedder": {"provider": "huggingface", "config": {"model": str(bundled_model_dir()), "embedding_dims": 384}},
            # never called: Memory.llm is replaced below; the URL only keeps mem0 from reading OPENAI_* variables
            "llm": {"provider": "openai", "config": {"model": "unused", "api_key": "unused",
                                                     "openai_base_url": "http://127.0.0.1:9/v1"}},
            "history_db_path": str(root / "history.db"),
        }
        memory = Memory.from_config(config)
        llm = Mem0LLM(send)
        memory.llm = llm
        return cls(memory, root, llm)

    def remember(self, row: Mapping[str, Any], batches: Sequence[Sequence[int]]) -> None:
        """Feed the row's earlier turns to ``Memory.add``, one batch per call, in order."""
        self.llm.date, self.llm.tag = conversation_date(row), str(row["id"])
        from mem0.exceptions import LLMError

        for batch in batches:
            turns = [{"role": str(row["messages"][i]["role"]), "content": str(row["messages"][i]["content"])} for i in batch]
            try:
                self.memory.add(turns, user_id=str(row["id"]))
            except LLMError as exc:  # Mem0's wrapper around a failed request of ours: hand ours on
                if isinstance(exc.__cause__, Mem0RequestFailed):
                    raise exc.__cause__ from None
                raise

    def recall(self, row: Mapping[str, Any], k: int) -> list[str]:
        """The row's ``k`` memories that Mem0 finds for the trigger, best first."""
        found = self.memory.search(str(row["messages"][-1]["content"]), filters={"user_id": str(row["id"])}, top_k=k)
        return [str(hit["memory"]) for hit in found.get("results", [])]

    def close(self) -> None:
        """Close the local store and remove its directory."""
        client = getattr(self.memory.vector_store, "client", None)
        if client is not None and hasattr(client, "close"):
            client.close()
        shutil.rmtree(self.root, ignore_errors=True)
