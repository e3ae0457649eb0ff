"""``triggerbench eval``: score a model on a release; ``eval compare``; ``eval judge-check``.

    triggerbench eval RELEASE_OR_HUB_ID --config pm_base [rm_base ...] --model NAME --out runs/NAME
    triggerbench eval compare runs/A runs/B
    triggerbench eval judge-check --judge-model NAME [--judge-base-url URL]

The lead's CLI calls :func:`configure` on the ``eval`` sub-parser and :func:`run` with the
parsed arguments; ``run`` returns 0 on success, 1 on invalid input or an unreachable
endpoint (one line on stderr, no traceback), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from stages.eval.prompts import SETTINGS

USAGE = "RELEASE_OR_HUB_ID | compare RUN_A RUN_B | judge-check"


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the eval arguments (one parser for the three forms, told apart by the first word)."""
    parser.add_argument("target", nargs="+", metavar="TARGET", help=USAGE)
    parser.add_argument("--config", nargs="+", metavar="CONFIG", help="configs to evaluate (pm_*, explicit_*, rm_*)")
    parser.add_argument("--split", default="test", help="split to evaluate (default: test)")
    parser.add_argument("--revision", help="Hub revision (tag or commit) of a Hub release")
    parser.add_argument("--model", help="model name sent to the endpoint")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else OpenAI)")
    parser.add_argument("--judge-model", help="judge model (default: --model)")
    parser.add_argument("--judge-base-url", help="judge endpoint (default: --base-url)")
    parser.add_argument("--memory", default="none", metavar="MEMORY",
                        help="none (default), rag, letta-sim or mem0: what the model sees of the history (offline only)")
    parser.add_argument("--setting", choices=SETTINGS, default="offline", help="offline (default), online or minimal")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N rows of each config")
    parser.add_argument("--per-dimension", type=int, metavar="N",
                        help="only the first N rows of each dimension of each config (with --limit: both caps)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at most (default 8)")
    parser.add_argument("--temperature", type=float, default=0.6, help="evaluated model's temperature (default 0.6)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="evaluated model's answer limit (default 1024)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per request (default 120)")
    parser.add_argument("--seed", type=int, default=0, help="request seeds and bootstrap seed (default 0)")
    parser.add_argument("--retry-failed", action="store_true", help="resend requests that failed in earlier invocations")
    parser.add_argument("--out", type=Path, help="run directory, e.g. runs/NAME")
    parser.add_argument("--file", type=Path, help="judge-check: the hand-labelled file (default: the bundled one)")
    parser.add_argument("--json", action="store_true", help="compare / judge-check: print JSON")


def _usage(message: str) -> int:
    print(f"triggerbench eval: {message} (usage: triggerbench eval {USAGE})", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Dispatch on the first positional word."""
    for name in ("httpx", "httpx2"):  # one INFO line per request otherwise
        logging.getLogger(name).setLevel(logging.WARNING)
    head, *rest = args.target
    if head == "compare":
        return _compare(args, rest) if len(rest) == 2 else _usage("compare needs two run directories")
    if head == "judge-check":
        return _judge_check(args) if not rest else _usage("judge-check takes no positional argument")
    if rest:
        return _usage(f"one release expected, got {len(args.target)} positional arguments")
    missing = [flag for flag, value in (("--config", args.config), ("--model", args.model), ("--out", args.out)) if not value]
    if missing:
        return _usage(f"missing {', '.join(missing)}")
    if args.concurrency < 1 or any(v is not None and v < 1 for v in (args.limit, args.per_dimension)):
        return _usage("--concurrency, --limit and --per-dimension must be at least 1")
    if args.memory != "none" and args.setting != "offline":
        return _usage("--memory works with --setting offline only")
    if "aime_probe" in args.config and (args.setting == "minimal" or args.memory != "none"):
        return _usage("aime_probe keeps the whole conversation: --setting offline or online, no --memory")
    return _evaluate(args, head)


def _evaluate(args: argparse.Namespace, source: str) -> int:
    from stages.eval.endpoint import EndpointError
    from stages.eval.memory import MemoryError_, check_available
    from stages.eval.run import EvalOptions
    from stages.eval.session import RunDirError, Selection, run_eval
    from stages.eval.source import EvalSourceError

    options = EvalOptions(
        model=args.model, base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"), judge_model=args.judge_model,
        judge_base_url=args.judge_base_url, setting=args.setting, temperature=args.temperature,
        max_tokens=args.max_tokens, concurrency=args.concurrency, timeout=args.timeout, seed=args.seed,
        retry_failed=args.retry_failed, memory=args.memory,
    )
    try:
        check_available(args.memory)
    except MemoryError_ as error:
        print(f"triggerbench eval: {error}", file=sys.stderr)
        return 1
    selection = Selection(source=source, configs=tuple(args.config), split=args.split, revision=args.revision,
                          limit=args.limit, per_dimension=args.per_dimension)
    try:
        outcome = run_eval(selection, options, args.out)
    except (EvalSourceError, EndpointError, RunDirError) as error:
        print(f"triggerbench eval: {error}", file=sys.stderr)
        return 1
    rows = outcome.results["rows"]
    for who, stats in outcome.stats.items():
        print(f"{who:5s} requests sent {stats['requests']:5d}  cache hits {stats['cache_hits']:5d}  "
              f"failures {stats['failures']:4d}  tokens {stats['prompt_tokens'] + stats['completion_tokens']}")
    if rows["failed"] and not args.retry_failed:
        print(f"{rows['failed']} row(s) failed; a rerun replays their failures, --retry-failed resends them")
    print(f"rows {rows['total']}, failed {rows['failed']}; results: {args.out / 'results.json'}, report: {args.out / 'report.md'}")
    return 0


def _compare(args: argparse.Namespace, runs: list[str]) -> int:
    from stages.eval.compare import compare_runs, compare_table

    try:
        table = compare_runs(Path(runs[0]), Path(runs[1]), seed=args.seed)
    except ValueError as error:
        print(f"triggerbench eval compare: {error}", file=sys.stderr)
        return 1
    print(json.dumps(table, indent=2) if args.json else compare_table(table, runs[0], runs[1]))
    return 0


def _judge_check(args: argparse.Namespace) -> int:
    from stages.eval.endpoint import EndpointError
    from stages.eval.judge_check import JudgeCheckError, format_report, judge_check

    if not args.judge_model:
        return _usage("judge-check needs --judge-model")
    base_url = args.judge_base_url or args.base_url or os.environ.get("OPENAI_BASE_URL")
    try:
        report = judge_check(args.judge_model, base_url, args.file, concurrency=args.concurrency, timeout=args.timeout,
                             cache_dir=args.out)
    except (JudgeCheckError, EndpointError) as error:
        print(f"triggerbench eval judge-check: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0
