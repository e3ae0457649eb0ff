"""Embedding-model resolution, the embedding cache, and fast offline failure for Hub ids.

Subprocess tests get a clean environment (no ``HF_HUB_OFFLINE``, an empty HF cache, an endpoint
that does not answer) so that the fast Hub probe, not an environment flag, does the work.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from stages.audit.embeddings import (  # noqa: E402
    BUNDLED_MODEL_ID,
    PAPER_MODEL_ID,
    PRECISION_VARIABLE,
    Embedder,
    EmbeddingModelError,
    _cpu_flags,
    bundled_model_dir,
    encode_precision,
    load_embedding_model,
)
from tests.conftest import REPO  # noqa: E402

PYTHON = sys.executable


def _closed_port() -> int:
    """A local TCP port with nothing listening (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"}}
    env["HF_HOME"] = str(tmp_path / "hf-home")
    env["HF_HUB_CACHE"] = str(tmp_path / "hf-home" / "hub")
    env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_port()}"
    env["TRIGGERBENCH_PROGRESS"] = "0"
    return env


def _fake_bge_in_hf_cache(hub_cache: Path) -> None:
    """Lay out a HF-cache snapshot named BAAI/bge-base-en-v1.5 whose files are the bundled MiniLM."""
    commit = "0" * 40
    repo = hub_cache / "models--BAAI--bge-base-en-v1.5"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    for source in bundled_model_dir().rglob("*"):
        if source.is_file():
            target = snapshot / source.relative_to(bundled_model_dir())
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)


RESOLVE_SCRIPT = """
import json, sys, time
from stages.audit.embeddings import _try_hub_or_cache, load_embedding_model
started = time.perf_counter()
found = _try_hub_or_cache("BAAI/bge-base-en-v1.5")
lookup = time.perf_counter() - started
choice = load_embedding_model(lazy=sys.argv[1] == "lazy").choice
print(json.dumps({"lookup_seconds": lookup, "found": found is not None, "name": choice.name, "origin": choice.origin}))
"""


def test_falls_back_to_bundled_minilm_in_well_under_a_second(tmp_path: Path) -> None:
    # resolution only (loading the bundled weights is every other test's business)
    done = subprocess.run([PYTHON, "-c", RESOLVE_SCRIPT, "lazy"], env=_clean_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["found"] is False
    assert result["lookup_seconds"] < 1.0
    assert (result["name"], result["origin"]) == (BUNDLED_MODEL_ID, "bundled")


def test_prefers_bge_from_the_hf_cache(tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    _fake_bge_in_hf_cache(Path(env["HF_HUB_CACHE"]))
    done = subprocess.run([PYTHON, "-c", RESOLVE_SCRIPT, "load"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["found"], result["name"], result["origin"]) == (True, PAPER_MODEL_ID, "hf-cache")


def test_explicit_local_path_and_unloadable_id() -> None:
    loaded = load_embedding_model(str(bundled_model_dir()))
    assert loaded.choice.origin == "local-path" and loaded.choice.name == str(bundled_model_dir())
    started = time.perf_counter()
    with pytest.raises(EmbeddingModelError, match="no-such-org/no-such-model"):
        load_embedding_model("no-such-org/no-such-model")
    assert time.perf_counter() - started < 2.0


def test_embedder_encodes_each_distinct_text_once_and_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRECISION_VARIABLE, "float32")  # compared with the model's own (float32) encode below
    loaded = load_embedding_model(str(bundled_model_dir()))
    texts = ["The cello is in the trunk.", "I arrived at the office.", "The cello is in the trunk.", ""]
    embedder = Embedder(loaded, tmp_path, batch_size=2)
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, embedder.dimension())
    assert embedder.stats.distinct == 3 and embedder.stats.encoded == 3
    bare = loaded.model.encode(texts, normalize_embeddings=True)
    assert np.allclose(vectors, bare, atol=1e-5)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    embedder.close()
    again = Embedder(loaded, tmp_path)
    assert np.array_equal(again.embed(texts[:2]), vectors[:2])
    assert again.stats.encoded == 0 and again.stats.cached == 2
    again.close()
    memory_only = Embedder(loaded)  # no disk cache: a text asked for twice is still embedded once
    first = memory_only.embed(texts[:2])
    assert np.array_equal(memory_only.embed(texts[1:3]), first[[1, 0]])
    assert memory_only.stats.encoded == 2 and memory_only.stats.cached == 2


@pytest.mark.parametrize("offline_flag", [False, True])
def test_hub_id_without_network_fails_fast_and_clearly(tmp_path: Path, offline_flag: bool) -> None:
    env = _clean_env(tmp_path)
    if offline_flag:
        env["HF_HUB_OFFLINE"] = "1"
    started = time.perf_counter()
    done = subprocess.run([PYTHON, "-m", "pipeline", "audit", "someorg/triggerbench", "--revision", "v0.1.0",
                           "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    elapsed = time.perf_counter() - started
    assert done.returncode == 1
    assert "unreachable" in done.stderr and "someorg/triggerbench" in done.stderr
    assert "Traceback" not in done.stderr
    assert elapsed < 10.0  # interpreter start-up and imports included; the retry loop alone takes ~23 s
    assert not (tmp_path / "out").exists()


_RACER = """
import json, sys, time
from pathlib import Path
from stages.audit.embeddings import Embedder, load_embedding_model
cache, name, other = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
embedder = Embedder(load_embedding_model(sys.argv[4]), cache)
embedder.loaded.model  # loaded before the start line, so both processes embed at once
(cache / f"ready-{name}").touch()
while not (cache / f"ready-{other}").exists():
    time.sleep(0.01)
texts = [f"Snippet {i}: the museum opens its east wing to visitors with a guided walk." for i in range(96)]
vectors = embedder.embed(texts)
print(json.dumps({"encoded": embedder.stats.encoded, "first": vectors[0].tolist()}))
"""


@pytest.mark.slow  # two processes that each load the model (about 10 s on 2 cores)
def test_processes_sharing_a_cache_encode_each_text_once(tmp_path: Path) -> None:
    """Two builds of a test run embed the same texts at the same moment: one encodes, the other waits on the
    cache's lock and reads the stored vectors (without the lock both would encode all 96)."""
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, str(tmp_path), name, other, str(bundled_model_dir())],
                               cwd=REPO, stdout=subprocess.PIPE, text=True)
              for name, other in (("a", "b"), ("b", "a"))]
    results = [json.loads(racer.communicate(timeout=300)[0]) for racer in racers]
    assert all(racer.returncode == 0 for racer in racers)
    assert sorted(r["encoded"] for r in results) == [0, 96]
    assert results[0]["first"] == results[1]["first"]


def _multiwoz_turns(shared_data: Path, dialogues: int) -> list[str]:
    with zipfile.ZipFile(shared_data / "multiwoz" / "val.json.zip") as archive:
        found = list(json.loads(archive.read("val.json")).values())
    return list(dict.fromkeys(turn["text"] for dialogue in found[:dialogues] for turn in dialogue["log"]))


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_batches_hold_one_length_and_every_text_gets_the_vector_it_gets_alone(
        precision: str, monkeypatch: pytest.MonkeyPatch, shared_data: Path) -> None:
    """Texts are encoded longest first, in batches of one token count sized to it (a 64-batch of 256-token texts
    holds about a gigabyte of activations). No batch holds padding, so each vector is the one the text gets
    encoded alone: to the bit in bfloat16 (with padding, its vectors moved by up to 1e-3 with their batch), within
    float32's rounding in float32. Whatever filled an embedding cache, it holds what a cold build computes."""
    monkeypatch.setenv(PRECISION_VARIABLE, precision)
    loaded = load_embedding_model(str(bundled_model_dir()))
    synthetic = [f"{k}: " + " ".join(["the ferry leaves from the north pier"] * n) for k, n in enumerate((1, 4, 8, 40) * 3)]
    texts = synthetic + _multiwoz_turns(shared_data, 4)[:60]
    embedder = Embedder(loaded)
    counts = embedder._token_counts(texts)
    chunks = list(embedder._chunks(dict(enumerate(counts))))
    assert sorted(i for chunk, _ in chunks for i in chunk) == list(range(len(texts)))
    assert [counts[chunk[0]] for chunk, _ in chunks] == sorted(set(counts), reverse=True)
    assert all(len({counts[i] for i in chunk}) == 1 for chunk, _ in chunks)
    assert max(len(chunk) for chunk, _ in chunks) > 1  # some batches do hold several texts
    sizes = {counts[chunk[0]]: size for chunk, size in chunks}
    assert sizes[256] == 8 and sizes[max(c for c in counts if c < 16)] == 64  # 40 repeats pass MiniLM's cut
    assert all(size == min(64, max(8, 2 ** int(np.log2(2048 // count)))) for count, size in sizes.items())
    vectors = embedder.embed(texts)
    alone = np.vstack([Embedder(loaded).embed([text]) for text in texts])
    if precision == "bfloat16":
        assert np.array_equal(vectors, alone)
    else:  # MKL's float32 products round by the number of rows
        assert np.abs(vectors - alone).max() < 1e-6


def test_precision_follows_the_cpu_unless_the_variable_names_one(tmp_path: Path) -> None:
    assert encode_precision({}, {"fpu", "avx2", "avx512f"}) == "float32"  # bfloat16 would be emulated
    native = encode_precision({}, {"avx2", "avx512_bf16"})
    assert native == ("bfloat16" if os.uname().machine in ("x86_64", "aarch64") else "float32")
    assert encode_precision({PRECISION_VARIABLE: "float32"}, {"avx512_bf16"}) == "float32"
    assert encode_precision({PRECISION_VARIABLE: "bfloat16"}, set()) == "bfloat16"
    with pytest.raises(EmbeddingModelError, match=f"{PRECISION_VARIABLE}='fp8'"):
        encode_precision({PRECISION_VARIABLE: "fp8"}, set())
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx512_bf16 amx_tile\n\nprocessor\t: 1\nflags\t: fpu\n")
    assert _cpu_flags(cpuinfo) == {"fpu", "sse", "avx512_bf16", "amx_tile"}
    assert _cpu_flags(tmp_path / "missing") == set()


def test_bfloat16_vectors_stay_within_a_rounding_of_float32_and_never_share_their_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_data: Path) -> None:
    """Real MultiWOZ turns, short and long, encoded both ways: the same neighbours, cosine >= 0.999 per text,
    and separate cache files, keys and labels."""
    turns = _multiwoz_turns(shared_data, 12)[:80]
    turns.append(" ".join(turns[:30]))  # one past MiniLM's 256-token cut
    encoded = {}
    for precision in ("float32", "bfloat16"):
        monkeypatch.setenv(PRECISION_VARIABLE, precision)
        embedder = Embedder(load_embedding_model(str(bundled_model_dir())), tmp_path)
        encoded[precision] = (embedder.embed(turns), embedder.choice)
        assert embedder.stats.encoded == len(turns)  # nothing read from the other precision's cache
        embedder.close()
    (full, full_choice), (half, half_choice) = encoded["float32"], encoded["bfloat16"]
    assert full_choice.key != half_choice.key and "bfloat16" in half_choice.label and "bfloat16" not in full_choice.label
    cosines = (full * half).sum(axis=1)
    assert cosines.min() >= 0.999 and not np.array_equal(full, half)
    nearest = lambda vectors: (vectors @ vectors.T - 2 * np.eye(len(turns))).argmax(axis=1)  # noqa: E731
    assert (nearest(full) == nearest(half)).mean() >= 0.95
    assert len(list((tmp_path / "embeddings").glob("*.sqlite"))) == 2
