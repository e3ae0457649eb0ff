"""``triggerbench eval judge-check``: how well a judge model agrees with hand labels.

The labelled file (YAML list; default ``tests/fixtures/eval_judge_check.yaml`` in the
checkout) holds, per dimension, a plain intervention, a silent reply, a paraphrased
intervention and a keyword-only mention. Each case goes through the same judge prompt as
an evaluation run; the report gives accuracy and Cohen's kappa overall and per kind. A
failed judge request counts as a disagreement.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from pipeline.llm import ChatRequest, LLMClient, LLMConfig, RequestCache
from pipeline.vocabulary import Dimension
from stages.eval.endpoint import EndpointCheck, needs_network
from stages.eval.judge import JUDGE_MAX_TOKENS, JudgeView, Verdict, pm_judge_messages
from stages.eval.scorers import agreement

DEFAULT_FILE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "eval_judge_check.yaml"


class JudgeCheckError(ValueError):
    """The labelled file is missing or malformed."""


class JudgeCase(BaseModel):
    """One hand-labelled response."""

    model_config = ConfigDict(extra="forbid")
    id: str
    dimension: Dimension
    kind: Literal["positive", "negative", "paraphrase", "keyword_only"]
    context: str
    trigger: str
    intent: str
    response: str
    label: Literal["YES", "NO"]


def load_cases(path: Path) -> list[JudgeCase]:
    """Read and validate the labelled file; one clear error naming the file, case and field."""
    if not path.is_file():
        raise JudgeCheckError(f"{path}: no such file (pass --file)")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise JudgeCheckError(f"{path}: not YAML ({error})") from None
    if not isinstance(data, list) or not data:
        raise JudgeCheckError(f"{path}: expected a non-empty list of cases")
    cases = []
    for index, item in enumerate(data):
        try:
            cases.append(JudgeCase.model_validate(item))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(case)"
            raise JudgeCheckError(f"{path}: case {index + 1}: {where}: {first['msg']}") from None
    return cases


def case_request(case: JudgeCase) -> ChatRequest:
    """The judge request for one case (the evaluation's PM judge prompt, full visibility)."""
    messages = pm_judge_messages(case.dimension, JudgeView("full", case.context, case.trigger), case.intent, case.response)
    return ChatRequest(messages, temperature=0.0, max_tokens=JUDGE_MAX_TOKENS, schema=Verdict, tag=case.id)


def judge_check(judge_model: str, base_url: str | None, path: Path | None = None, concurrency: int = 8,
                timeout: float = 120.0, cache_dir: Path | None = None) -> dict[str, Any]:
    """Judge every case and return agreement overall, per kind and per dimension, with each verdict."""
    cases = load_cases(path or DEFAULT_FILE)
    config = LLMConfig.resolve(base_url=base_url, model=judge_model, concurrency=concurrency, timeout=timeout)
    assert config is not None
    cache = RequestCache(cache_dir / "judge_check.sqlite") if cache_dir is not None else None
    client = LLMClient(config, cache)
    requests = [case_request(c) for c in cases]
    if needs_network(client, requests):
        EndpointCheck(config).ensure()
    try:
        results = client.map(requests, desc="judge-check")
    finally:
        client.close()
    predicted = [r.parsed(Verdict).verdict if r.ok and r.data is not None else None for r in results]
    report: dict[str, Any] = {"judge_model": judge_model, "file": str(path or DEFAULT_FILE),
                              "overall": agreement([c.label for c in cases], predicted)}
    for field in ("kind", "dimension"):
        groups: dict[str, dict[str, float | None]] = {}
        for name in dict.fromkeys(getattr(c, field) for c in cases):
            own = [(c.label, p) for c, p in zip(cases, predicted) if getattr(c, field) == name]
            groups[name] = agreement([o[0] for o in own], [o[1] for o in own])
        report[f"by_{field}"] = groups
    report["cases"] = [{"id": c.id, "label": c.label, "verdict": p, "error": None if r.ok else r.error}
                       for c, p, r in zip(cases, predicted, results)]
    return report


def format_report(report: dict[str, Any]) -> str:
    """A short text table of :func:`judge_check`'s report."""
    lines = [f"judge {report['judge_model']} on {report['file']}", f"{'group':28s} {'n':>3s} {'accuracy':>8s} {'kappa':>6s}"]
    rows = [("overall", report["overall"]), *report["by_kind"].items(), *report["by_dimension"].items()]
    for name, stats in rows:
        kappa = "-" if stats["kappa"] is None else f"{stats['kappa']:.3f}"
        lines.append(f"{name:28s} {int(stats['n']):3d} {stats['accuracy']:8.3f} {kappa:>6s}")
    return "\n".join(lines)
