"""The ``triggerbench`` command line (also ``python -m pipeline``).

Exit codes: 0 ok, 1 invalid input or a failed check, 2 usage error. Verbs whose code
lives in a stage package (``audit``, ``week``) or in ``pipeline.publish`` are loaded
only when used; each such module exposes ``configure(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from pathlib import Path

from pipeline.registry import VERBS

EXTERNAL_VERBS = {
    **VERBS,
    "publish": ("pipeline.publish", "push a release to the Hugging Face Hub, tagged with its version"),
    "verify": ("pipeline.verify", "check a release directory against its manifest (files, sha256, row counts)"),
    "like": ("pipeline.blueprints.like", "for seed files: the story exchange each constraint turn is to be shaped like"),
}


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="triggerbench", description="Build, audit, load and publish prospective-memory benchmarks.")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    build = sub.add_parser("build", help="run the staged pipeline and write a release")
    build.add_argument("--config", type=Path, help="build config YAML (default: configs/default.yaml)")
    build.add_argument("--out", type=Path, default=Path("releases"), help="directory that receives <version>/ (default: releases)")
    build.add_argument("--version", help="release version (default: from the config)")
    build.add_argument("--seed", type=int, help="build seed (default: from the config, 0)")
    build.add_argument("--only", nargs="+", metavar="STAGE", help="run only these stages (and what they need); writes no release")
    build.add_argument("--limit", type=int, metavar="N", help="use only the first N seed blueprints (a smoke build)")
    build.add_argument("--distractors-dir", type=Path, help="local directory with distractor corpora (default: ../shared/data)")
    build.add_argument("--llm-base-url", help="OpenAI-compatible endpoint for the LLM stages (default: $OPENAI_BASE_URL; none = offline)")
    build.add_argument("--llm-model", help="model name for the LLM stages")
    build.add_argument("--cache-dir", type=Path, help="cache directory (default: .cache, or $TRIGGERBENCH_CACHE)")
    build.add_argument("--oracle-base-url", help="own endpoint for the oracle filters (default: --llm-base-url)")
    build.add_argument("--oracle-model", help="own model for the oracle filters (default: --llm-model; the paper uses a stronger one)")
    build.add_argument("--oracle-max-drop-share", type=float, default=0.5, metavar="F",
                       help="an LLM oracle dropping more than this share of a dimension stops the build (default: 0.5)")
    build.add_argument("--oracle-proceed", action="store_true", help="only warn when an oracle drops more than that share")
    build.add_argument("--llm-max-failed-share", type=float, default=0.0, metavar="F",
                       help="share of a stage's items that may fail for transient LLM reasons (outage, timeouts, "
                            "rate limits) and still let the build finish, reported and never cached (default: 0)")

    validate = sub.add_parser("validate", help="check blueprint files; print path:line: field: message")
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    validate.add_argument("--stats", action="store_true", help="also print counts per dimension, subtype, domain and CWE")
    validate.add_argument("--json", action="store_true", help="print the statistics as JSON")

    for verb, (module, help_text) in EXTERNAL_VERBS.items():
        verb_parser = sub.add_parser(verb, help=help_text)
        verb_parser.set_defaults(external=module)
        if verb in _argv_verbs():
            importlib.import_module(module).configure(verb_parser)
    return parser


def _argv_verbs() -> set[str]:
    """Only configure the external verb actually invoked (keeps startup fast)."""
    return set(sys.argv[1:2]) | ({"__all__"} if "--help" in sys.argv[1:2] else set())


def _run_build(args: argparse.Namespace) -> int:
    import os

    from pipeline.build import BuildOptions, DiskFull, build
    from pipeline.config import ConfigError
    from pipeline.empty import EmptyRelease
    from pipeline.llm.errors import EndpointUnreachable, TransientFailures
    from pipeline.oracle_guard import OracleDropsTooMuch
    from pipeline.release import ReleaseExists
    from pipeline.runner import UnknownStage
    from pipeline.errors import InputError

    options = BuildOptions(
        config_path=args.config, out=args.out, version=args.version, seed=args.seed, only=args.only or [],
        limit=args.limit, distractors_dir=args.distractors_dir,
        llm_base_url=args.llm_base_url or os.environ.get("OPENAI_BASE_URL"), llm_model=args.llm_model,
        cache_dir=args.cache_dir, llm_max_failed_share=args.llm_max_failed_share,
        oracle_base_url=args.oracle_base_url, oracle_model=args.oracle_model,
        oracle_max_drop_share=args.oracle_max_drop_share, oracle_proceed=args.oracle_proceed,
    )
    try:
        outcome = build(options)
    except (ConfigError, InputError, ReleaseExists, UnknownStage,
            EndpointUnreachable, TransientFailures, EmptyRelease, DiskFull, OracleDropsTooMuch) as exc:
        print(f"triggerbench build: {exc}{_run_log_hint(exc)}", file=sys.stderr)
        return 1
    for record in outcome.run.records:
        state = "cached" if record.cached else f"{record.seconds:.1f}s"
        print(f"{record.name:16s} {state:>8s}  in {record.items_in:6d}  out {record.items_out:6d}  dropped {sum(record.dropped.values()):5d}")
    if outcome.release:
        print(f"release: {outcome.release}")
    print(f"run log: {outcome.log_file}  ({outcome.seconds:.1f}s)")
    return 0


def _run_log_hint(error: BaseException) -> str:
    """`` (run log: PATH)`` when the build got far enough to write one."""
    path = getattr(error, "run_log", None)
    return f" (run log: {path})" if path else ""


def _run_validate(args: argparse.Namespace) -> int:
    from pipeline.blueprints.loader import corpus_summary, load_corpus

    corpus = load_corpus(args.paths)
    for problem in corpus.problems:
        print(problem)
    if args.stats or args.json:
        summary = corpus_summary(corpus)
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            for key, value in summary.items():
                if isinstance(value, dict):
                    print(f"{key}:")
                    for name, count in value.items():
                        print(f"  {name:48s} {count:>4}")
                else:
                    print(f"{key}: {value}")
    if corpus.problems:
        print(f"{len(corpus.problems)} problem(s) in {len(corpus.blueprints)} valid blueprint(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(corpus.blueprints)} blueprint(s), {len(corpus.fillers)} filler topic(s)", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script."""
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    args = _build_parser().parse_args(argv)
    if getattr(args, "external", None):
        return int(importlib.import_module(args.external).run(args))
    if args.verb == "build":
        return _run_build(args)
    return _run_validate(args)


if __name__ == "__main__":
    raise SystemExit(main())
