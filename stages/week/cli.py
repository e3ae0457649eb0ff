"""``triggerbench week ...``: generate, validate, stats, score and play a PM-Bench week.

The lead's CLI calls :func:`configure` on the ``week`` sub-parser and :func:`run` with the
parsed arguments. ``run`` returns 0 on success and 1 on invalid input or a failed check;
every error is one line naming the file (and day / step / task / line when known).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from stages.week.generator import GenerationError, generate_week
from stages.week.model import Week, dump_week
from stages.week.oracle import audit_week
from stages.week.policies import POLICIES, make_policy
from stages.week.report import format_table, setup_rows
from stages.week.runtime import RuntimeConfig, TrajectoryError, read_trajectory, run_week, write_trajectory
from stages.week.scorer import ScoringError, score_trajectory
from stages.week.setups import PLAY_SETUPS
from stages.week.stats import week_stats
from stages.week.validator import validate_week


class WeekFileError(ValueError):
    """A week file that cannot be loaded; the message names the file and field."""


class WeekCommandError(ValueError):
    """Arguments that parse but cannot be honoured (no LLM endpoint, unknown day)."""


def load_week(path: Path) -> Week:
    """Read and type-check a ``week.json`` (raises :class:`WeekFileError` or OSError)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise WeekFileError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    try:
        return Week.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise WeekFileError(f"{path}: {where}: {first['msg']} ({exc.error_count()} schema errors)") from None


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``generate / validate / stats / score / play`` sub-commands to ``parser``."""
    sub = parser.add_subparsers(dest="week_command", metavar="COMMAND", required=True)
    gen = sub.add_parser("generate", help="generate a week from a seed (default 0 = the Table 1 week)")
    gen.add_argument("--seed", type=int, default=0, help="week seed (independent of the build seed)")
    gen.add_argument("--out", type=Path, required=True, help="where to write week.json")
    val = sub.add_parser("validate", help="check every invariant and run the perfect-play audit")
    val.add_argument("file", type=Path)
    sta = sub.add_parser("stats", help="composition statistics (Table 1)")
    sta.add_argument("file", type=Path)
    sta.add_argument("--json", action="store_true", help="print one JSON object")
    sco = sub.add_parser("score", help="replay-score trajectories (JSONL) against a week")
    sco.add_argument("trajectory", type=Path, nargs="+")
    sco.add_argument("--week", type=Path, required=True)
    sco.add_argument("--json", action="store_true", help="print one JSON object")
    sco.add_argument("--allow-partial", action="store_true",
                     help="score runs cut before their run_end over the steps they reached (flagged PARTIAL)")
    play = sub.add_parser("play", help="run a reference policy through the runtime and log its trajectory")
    play.add_argument("--policy", choices=sorted(POLICIES) + ["llm"], required=True,
                      help="a reference policy, or llm (an OpenAI-compatible endpoint)")
    play.add_argument("--week", type=Path, required=True)
    play.add_argument("--out", type=Path, required=True, help="trajectory JSONL to write")
    play.add_argument("--setup", choices=sorted(PLAY_SETUPS), default=None,
                      help="one of the paper's live setups (sets --heartbeat / --ledger; union-query adds the "
                           "three subagents; its vote replays are scored by 'week score')")
    play.add_argument("--heartbeat", choices=("off", "optional", "auto30", "auto60"), default="off")
    play.add_argument("--ledger", action="store_true", help="todo-ledger mode")
    play.add_argument("--max-handles", type=int, default=8, help="handles allowed per choose (0 = no limit)")
    play.add_argument("--run-id", default=None, help="run id (default: the policy name)")
    play.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    play.add_argument("--max-turns", type=int, default=12, help="turns per step before it advances with no action")
    play.add_argument("--days", type=int, nargs="+", help="play only these days (1-7); scored on them only")
    play.add_argument("--llm-base-url", help="endpoint for --policy llm (default: $OPENAI_BASE_URL)")
    play.add_argument("--llm-model", help="model for --policy llm (default: $OPENAI_MODEL or the only served one)")
    play.add_argument("--llm-cache", type=Path, help="SQLite cache of LLM answers (default: none)")
    play.add_argument("--context-tokens", type=int, default=6000, help="conversation budget of --policy llm")


def run(args: argparse.Namespace) -> int:
    """Execute a parsed ``week`` command; returns the exit code."""
    commands = {"generate": _generate, "validate": _validate, "stats": _stats, "score": _score, "play": _play}
    try:
        return commands[args.week_command](args)
    except (WeekFileError, WeekCommandError, TrajectoryError, ScoringError, GenerationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
    return 1


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _generate(args: argparse.Namespace) -> int:
    week = generate_week(args.seed)
    _write_atomic(args.out, dump_week(week))
    print(f"{args.out}: wrote {week.id} (sha256 {week.digest()[:12]})")
    return 0


def _validate(args: argparse.Namespace) -> int:
    week = load_week(args.file)
    problems = validate_week(week)
    for problem in problems:
        print(f"{args.file}: {problem.code}: {problem.message}")
    if problems:
        return 1
    audit = audit_week(week)
    for problem in audit.problems:
        print(f"{args.file}: perfect_play: {problem}")
    if not audit.passed:
        return 1
    stats = week_stats(week)
    print(f"{args.file}: valid ({stats['days']} days, {stats['steps']} steps, {stats['task_definitions']} tasks); "
          f"perfect-play audit passed ({audit.hits}/{audit.scored_tasks} on time)")
    return 0


def _stats(args: argparse.Namespace) -> int:
    stats = week_stats(load_week(args.file))
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            value = " ".join(map(str, value))
        print(f"{key:<18} {value}")
    return 0


def _checked_week(path: Path) -> Week:
    """Load a week and refuse it (WeekFileError naming the first problem) if it is invalid."""
    week = load_week(path)
    problems = validate_week(week)
    if problems:
        raise WeekFileError(f"{path}: {problems[0]} ({len(problems)} problems; run 'week validate')")
    return week


def _score(args: argparse.Namespace) -> int:
    week = _checked_week(args.week)
    events: list[dict[str, Any]] = []
    for path in args.trajectory:
        events += read_trajectory(path)
    try:
        report = score_trajectory(week, events, allow_partial=args.allow_partial)
    except ScoringError as exc:
        raise ScoringError(f"{', '.join(map(str, args.trajectory))}: {exc}") from None
    report["setups"] = setup_rows(report)
    if report["partial_runs"]:
        print(f"warning: PARTIAL score: run(s) {', '.join(report['partial_runs'])} have no run_end and are scored "
              "only up to their last step", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    micro = report["micro"]
    print(f"week {report['week_id']}: {report['n_runs']} run(s); macro Set-F1 {report['macro_set_f1']:.4f}; "
          f"micro Set-F1 {micro['set_f1']:.4f} (P {micro['precision']:.4f}, R {micro['recall']:.4f}; "
          f"TP {micro['tp']} FP {micro['fp']} FN {micro['fn']})")
    print(format_table(report["setups"]))
    for run_score in report["runs"]:
        rates = run_score["hit_rates"]
        flag = " [PARTIAL]" if run_score["partial"] else ""
        print(f"  {run_score['run_id']}{flag} ({run_score['agent']}, {run_score['setup']}): "
              f"Set-F1 {run_score['set_f1']:.4f} "
              f"P {run_score['precision']:.4f} R {run_score['recall']:.4f} | hit {run_score['hits']} "
              f"late {run_score['late']} miss {run_score['misses']} false-alarm {run_score['false_alarms']} "
              f"wrong-content {run_score['wrong_content']} update-viol {run_score['update_violations']} "
              f"dep-viol {run_score['dependency_violations']} exact-set {run_score['exact_set_match']}/"
              f"{run_score['due_steps']} | check_time {run_score['check_time']} query_state "
              f"{run_score['query_state']} protocol-errors {run_score['protocol_errors']} | cross-day "
              f"{rates.get('cross_day', 0):.3f} update {rates.get('update', 0):.3f} proactive "
              f"{rates.get('proactive_required', 0):.3f} non-clock {rates.get('non_clock_proactive', 0):.3f}")
    return 0


def _setup_options(args: argparse.Namespace) -> dict[str, Any]:
    """heartbeat / ledger / hierarchical from ``--setup`` (refused beside a conflicting flag) or the flags."""
    if args.setup is None:
        return {"heartbeat": args.heartbeat, "ledger": args.ledger, "hierarchical": False}
    if args.heartbeat != "off" or args.ledger:
        raise WeekCommandError(f"--setup {args.setup} already sets the heartbeat and ledger; drop --heartbeat/--ledger")
    return dict(PLAY_SETUPS[args.setup])


def _play(args: argparse.Namespace) -> int:
    week = _checked_week(args.week)
    cap = args.max_handles or None
    days = tuple(sorted(set(args.days))) if args.days else None
    if days and not set(days) <= {d.index for d in week.days}:
        raise WeekCommandError(f"{args.week}: --days {' '.join(map(str, days))} names a day the week does not have")
    config = RuntimeConfig(**_setup_options(args), max_handles=cap, max_turns_per_step=max(1, args.max_turns),
                           days=days)
    policy = _llm_agent(args, week, config) if args.policy == "llm" else make_policy(args.policy, week, cap)
    if config.hierarchical:
        policy = _hierarchical(args, week, config, policy)
    events = run_week(week, policy, config, run_id=args.run_id or args.policy)
    write_trajectory(args.out, events, append=args.append)
    report = score_trajectory(week, events, replays=False)
    print(f"{args.out}: {args.policy} ({report['runs'][0]['setup']}) Set-F1 {report['micro']['set_f1']:.4f} "
          f"(TP {report['micro']['tp']} FP {report['micro']['fp']} FN {report['micro']['fn']})")
    return 0


def _llm_agent(args: argparse.Namespace, week: Week, config: RuntimeConfig) -> Any:
    """An :class:`LLMAgent` on the endpoint from the flags or the environment (the coordinator if hierarchical)."""
    from pipeline.llm import LLMClient
    from stages.week.hierarchy import coordinator_prompt
    from stages.week.llm_agent import LLMAgent
    from stages.week.protocol import system_prompt

    client = LLMClient.from_settings(base_url=args.llm_base_url, model=args.llm_model, cache_path=args.llm_cache)
    if client is None:
        raise WeekCommandError("--policy llm needs an endpoint: pass --llm-base-url or set OPENAI_BASE_URL")
    prompt = system_prompt([c.name for c in week.channels], config.heartbeat, config.ledger, config.max_handles)
    if config.hierarchical:
        prompt = coordinator_prompt(prompt)
    return LLMAgent(client, prompt, context_tokens=args.context_tokens)


def _hierarchical(args: argparse.Namespace, week: Week, config: RuntimeConfig, coordinator: Any) -> Any:
    """The union-query agent: LLM subagents for --policy llm, else the scripted council, around ``coordinator``."""
    from stages.week.hierarchy import HierarchicalAgent, ScriptedCouncil
    from stages.week.llm_agent import LLMCouncil

    channels = [c.name for c in week.channels]
    if args.policy == "llm":
        council = LLMCouncil(coordinator.client, channels, context_tokens=args.context_tokens)
        prompts = {**council.prompts, "coordinator": coordinator.system_prompt}
        return HierarchicalAgent(council, coordinator, channels, prompts)
    return HierarchicalAgent(ScriptedCouncil(week), coordinator, channels)
