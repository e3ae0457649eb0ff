"""The shortcut gate judges an LLM-built release exactly as an offline one.

Two CLI builds of five state-tracking seeds against a scripted filler model over real HTTP. One model
plants a cue: every exchange it writes has a reply of a dozen words, so the constraint's reply (195-223
words in these seeds, each longer than its seed's update reply, which Pos-Clean also places) is the
longest of its row. The other writes replies of 100-280 words, as the story pools do. The first release
must fail its shortcut check on the longest-reply finder; the second must not fail that cell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipeline.blueprints.loader import SourcedBlueprint, load_corpus
from pipeline.blueprints.stories import placed_turns
from pipeline.text import word_count
from stages.generate.prompts import FILLER_SYSTEM
from tests.conftest import release_in, run_cli
from tests.servers.scripted import Reply, ScriptedServer
from tests.test_llm_generation import BLUEPRINTS, build_config, everything_model, number, seed_corpus, use_corpus
from tests.test_shortcuts_release import _cells

pytestmark = pytest.mark.slow



def _constraint_reply_lead(seed: SourcedBlueprint) -> int:
    """Words by which a seed's constraint reply outruns the other replies it places (update, resolution)."""
    replies = {name: word_count(reply) for name, _, reply in placed_turns(seed.blueprint) if reply}
    return replies["constraints.0"] - max((n for name, n in replies.items() if not name.startswith("constraints")),
                                          default=0)


# the five whose constraint reply is the longest placed reply by the widest margin: the planted cue singles it out
_STATE_TRACKING = sorted(load_corpus([BLUEPRINTS / "state_tracking"], lint=False).blueprints, key=lambda s: s.path)
SEEDS = sorted(Path(seed.path) for seed in sorted(_STATE_TRACKING, key=_constraint_reply_lead, reverse=True)[:5])
QUESTIONS = ["Could you suggest a calmer way to plan the rest of this, step by step?",
             "What would you suggest I sort out first, given how things stand?",
             "Is there a simple habit that would make this part easier?",
             "How do people usually keep track of small jobs like these?"]
SENTENCES = ["Pick one small habit and note it on a card.", "Review that card whenever you pause.",
             "Keep the list short, visible and honest.", "Tick things off as you finish them.",
             "Leave a little slack for surprises.", "Ask for help early rather than late."]


def filler_model(reply_words: Any) -> Any:
    """A scripted model whose filler exchanges have ``reply_words(number)`` words of reply."""

    def handler(body: dict[str, Any], index: int) -> Reply:
        if body["messages"][0]["content"] != FILLER_SYSTEM:
            return everything_model(body, index)
        k = number(body, "exchange")
        words: list[str] = []
        while len(words) < reply_words(k):
            words += SENTENCES[(k + len(words)) % len(SENTENCES)].split()
        answer = " ".join(words[: reply_words(k)]).rstrip(",") + "."
        return Reply.ok(json.dumps({"user": QUESTIONS[k % len(QUESTIONS)], "assistant": answer}))

    return handler


def longest_reply_cell(tmp_path: Path, reply_words: Any) -> tuple[dict[str, str], str]:
    """Build with the filler model; return the base implicit Pos-Clean longest-reply cell and the verdict."""
    tmp_path.mkdir(parents=True)
    config = build_config(tmp_path, scale={"max_per_seed": 1}, oracle_sufficiency={"keep_pending": True},
                          oracle_necessity={"rollouts": 1})  # fmt: skip
    use_corpus(config, seed_corpus(tmp_path / "blueprints", SEEDS))
    with ScriptedServer(handler=filler_model(reply_words)) as server:
        done = run_cli("build", "--config", str(config), "--cache-dir", str(tmp_path / "cache"), "--out",
                       str(tmp_path / "out"), "--llm-base-url", server.base_url, "--llm-model", "m")
    assert done.returncode == 0, done.stderr[-3000:]
    release = release_in(tmp_path / "out")
    rows = pq.read_table(release / "data" / "pm_base").to_pylist()
    assert rows and all(json.loads(r["provenance"])["fillers"]["from_pool"] == 0 for r in rows)  # the model wrote them
    cell = _cells(release / "audits")[("constraint_finder", "", "base", "implicit", "state_tracking", "pos_clean",
                                        "longest_reply")]
    return cell, json.loads((release / "manifest.json").read_text())["shortcut_check"]


def test_a_filler_model_that_plants_a_cue_fails_the_gate_and_one_that_does_not_passes_the_cell(tmp_path: Path) -> None:
    planted, verdict = longest_reply_cell(tmp_path / "planted", lambda k: 12 + k % 3)
    assert int(planted["families"]) == len(SEEDS) and planted["gated"] == "True"
    assert float(planted["value"]) >= 0.8 and planted["fails"] == "True", planted
    assert verdict == "fail"
    natural, _ = longest_reply_cell(tmp_path / "natural", lambda k: 100 + (37 * k) % 181)
    assert natural["fails"] == "False" and float(natural["value"]) < float(planted["value"]), natural
