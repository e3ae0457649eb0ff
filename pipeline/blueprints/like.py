"""``triggerbench like SEED.yaml ...``: the story exchange each constraint turn is to be shaped like.

For every constraint turn of the given seeds: the drawn exchange (:func:`stories.like_template`),
its user turn and reply with their shape (words, characters per word, punctuation and digits,
question), the turn's own shape, and what is still outside the tolerance. An author rewrites the
constraint turn (and its reply) to that shape, carrying the story forward in the story's words, and
sets ``like:`` to the index printed here; ``triggerbench validate`` then checks the shape.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.blueprints.loader import load_corpus
from pipeline.blueprints.slots import render
from pipeline.blueprints.stories import like_gaps, like_template, turn_shape
from pipeline.text import word_count


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="SEED", help="seed blueprint files")
    parser.add_argument("--corpus", type=Path, default=Path("blueprints"), help="directory with the story pools")


def _shape(text: str, reply: str | None) -> str:
    words, per_word, marks, asks = turn_shape(text)
    return (f"{words} words, {per_word:.2f} chars/word, {marks} punctuation+digits, "
            f"{'question' if asks else 'statement'}; reply {word_count(reply)} words")


def run(args: argparse.Namespace) -> int:
    pools = load_corpus([args.corpus], lint=False).fillers
    seeds = load_corpus(args.paths, lint=False)
    if seeds.problems:
        for problem in seeds.problems:
            print(problem)
        return 1
    for sourced in seeds.blueprints:
        bp = render(sourced.blueprint)
        pool = pools.get(bp.topic)
        if pool is None or pool.kind != "story":
            print(f"{sourced.path}: topic {bp.topic!r} is not a story pool; nothing to shape")
            continue
        for index, turn in enumerate(bp.constraints):
            drawn = like_template(bp.id, index, len(pool.exchanges), redraw=turn.redraw is not None)
            exchange = pool.exchanges[drawn]
            gaps = like_gaps(turn.text, turn.reply, exchange)
            second = "" if turn.redraw is not None else (
                f"; second draw, only with a 'redraw' reason when this one cannot carry the turn's facts: "
                f"{like_template(bp.id, index, len(pool.exchanges), redraw=True)}")
            print(f"== {sourced.path} constraints.{index}: like: {drawn}  (story {pool.topic}, {len(pool.exchanges)} "
                  f"exchanges{second})")
            print(f"   target : {_shape(exchange.user, exchange.assistant)}")
            print(f"   current: {_shape(turn.text, turn.reply)}  (slots filled with their first alternatives)")
            print(f"   set like: {turn.like}" + ("" if turn.like == drawn else f"  -> should be {drawn}"))
            print("   " + ("shaped like it" if not gaps else "outside: " + "; ".join(gaps)))
            print(f"   exchange user : {exchange.user}")
            print(f"   exchange reply: {exchange.assistant}")
    return 0
