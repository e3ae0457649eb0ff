"""``triggerbench publish``: push a built release to a Hugging Face Hub dataset repo, tagged ``v<version>``.

In: a release directory (``releases/<version>/`` with ``manifest.json``) and a repo id.
Out: a :class:`PublishReport`; the repo's ``main`` holds exactly the release's files, the tag
``v<version>`` points at that commit, and every config of the card was reloaded at the tag
through ``datasets`` and compared with the manifest.

Safe by design: refuses when the tag already exists or the release no longer matches its
manifest; ``--dry-run`` lists what would be uploaded without any network access; a rerun after
an interruption uploads only what the remote lacks and tags once (see ``pipeline.hub.push``).
Endpoint: ``--endpoint`` or ``HF_ENDPOINT``. Token: ``HF_TOKEN`` or the ``huggingface_hub`` login,
never printed, logged or written anywhere.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pipeline.hub.connection import HubUnreachable, TokenProblem, probe, redact, resolve_endpoint, resolve_token
from pipeline.hub.push import PushResult, RemoteMismatch, TagExists, human_size, push_release
from pipeline.hub.release_files import ReleaseFile, ReleaseProblem, card_configs, check_release, load_manifest, tag_for
from pipeline.hub.verify import Verification, verify_release


class PublishError(Exception):
    """Publishing was refused or failed; the message says why and what to do."""


@dataclass
class PublishReport:
    """Outcome of :func:`publish_release` (``ok`` is False when verification found a difference)."""

    repo_id: str
    version: str
    tag: str
    endpoint: str
    dry_run: bool
    files: list[dict[str, Any]] = field(default_factory=list)
    total_bytes: int = 0
    push: PushResult | None = None
    verification: Verification | None = None

    @property
    def ok(self) -> bool:
        return self.dry_run or self.verification is None or self.verification.ok

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        if self.verification is not None:
            data["verification"]["ok"] = self.verification.ok
        return data


def publish_release(
    release_dir: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    dry_run: bool = False,
    endpoint: str | None = None,
    token: str | None = None,
    verify: bool = True,
    allow_shortcuts: bool = False,
    out: TextIO | None = None,
) -> PublishReport:
    """Publish ``release_dir`` to the dataset repo ``repo_id``; raises :class:`PublishError` on refusal.

    A release whose shortcut check (``manifest.json`` ``shortcut_check``) is not ``pass`` is refused
    unless ``allow_shortcuts``; a dry run says so and still lists the files.

    Progress lines go to ``out`` (default: stdout); none of them contains the token.
    """
    stream = out or sys.stdout
    secret = token or None

    def say(message: str) -> None:
        print(redact(message, secret), file=stream, flush=True)

    release = Path(release_dir)
    _check_repo_id(repo_id)
    try:
        manifest = load_manifest(release)
        files = check_release(release, manifest)
    except ReleaseProblem as err:
        raise PublishError(f"refusing to publish: {err}") from None
    version = str(manifest["version"])
    report = PublishReport(repo_id, version, tag_for(version), resolve_endpoint(endpoint), dry_run,
                           files=[{"path": f.path, "size": f.size} for f in files],
                           total_bytes=sum(f.size for f in files))
    shortcut_problem = shortcut_refusal(manifest)
    if dry_run:
        _print_dry_run(report, files, say)
        if shortcut_problem and not allow_shortcuts:
            say(f"a real publish would be refused: {shortcut_problem}")
        return report
    if shortcut_problem:
        if not allow_shortcuts:
            raise PublishError(f"refusing to publish: {shortcut_problem}")
        say(f"publishing despite the shortcut check (--allow-shortcuts): {shortcut_problem.split(';')[0]}")
    try:
        secret = resolve_token(token)
        account = probe(report.endpoint, secret)
    except (HubUnreachable, TokenProblem) as err:
        raise PublishError(str(err)) from None
    say(f"publishing {manifest.get('name', 'release')} {version} to {repo_id} at {report.endpoint} as {account}")
    report.push = _push(report, files, private, secret, say)
    if verify:
        report.verification = _verify(report, release, manifest, files[-1], secret, say)
    return report


def shortcut_refusal(manifest: dict[str, Any], shown: int = 10) -> str | None:
    """Why the shortcut gate forbids publishing ``manifest``'s release (None when it passed)."""
    status = manifest.get("shortcut_check")
    if status == "pass":
        return None
    if status is None:
        return "the release has no shortcut check (built before the shortcut audit); rebuild it, or pass --allow-shortcuts"
    failing = manifest.get("shortcut_failures") or []
    cells = "; ".join(
        f"{c.get('config') or c.get('context')}/{c.get('dimension')}/{c.get('variant') or '-'}/{c.get('finder')}"
        f" {c.get('value'):.3g} vs {c.get('baseline'):.3g}" for c in failing[:shown])
    more = f"; and {len(failing) - shown} more" if len(failing) > shown else ""
    return (f"the shortcut check failed on {len(failing)} cells (audits/shortcuts.csv): {cells}{more}; "
            "fix the data, or pass --allow-shortcuts to publish it anyway")


def _check_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts):
        raise PublishError(f"--repo-id must look like ORG/NAME, got {repo_id!r}")


def _print_dry_run(report: PublishReport, files: list[ReleaseFile], say) -> None:
    say(f"dry run: would publish version {report.version} to dataset repo {report.repo_id} "
        f"as tag {report.tag} (endpoint {report.endpoint}); nothing is sent")
    width = max(len(human_size(f.size)) for f in files)
    for item in files:
        say(f"  {human_size(item.size):>{width}}  {item.path}")
    say(f"{len(files)} files, {report.total_bytes} bytes ({human_size(report.total_bytes)}) in total")
    say("the remote was not contacted: a real publish skips files already on the remote with the same content")


def _push(report: PublishReport, files: list[ReleaseFile], private: bool, token: str, say) -> PushResult:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi(endpoint=report.endpoint, token=token)
    try:
        api.create_repo(report.repo_id, repo_type="dataset", private=True if private else None, exist_ok=True)
        return push_release(api, report.repo_id, files, report.tag, report.version, say)
    except TagExists as err:
        raise PublishError(f"refusing to publish: {err}") from None
    except RemoteMismatch as err:
        raise PublishError(str(err)) from None
    except HfHubHTTPError as err:
        status = err.response.status_code if err.response is not None else "?"
        raise PublishError(redact(f"the Hub refused a request (HTTP {status}): {err}. Nothing was tagged; "
                                  "rerun the same command to resume (finished files are not sent again)", token)) from None
    except OSError as err:
        raise PublishError(f"the push was interrupted ({type(err).__name__}: {err}); nothing was tagged; "
                           "rerun the same command to resume") from None


def _verify(report: PublishReport, release: Path, manifest: dict[str, Any], manifest_file: ReleaseFile,
            token: str, say) -> Verification:
    configs = card_configs((release / "README.md").read_text(encoding="utf-8")) if (release / "README.md").exists() else {}
    say(f"verifying: reloading {len(configs)} configs at {report.tag} through datasets")
    result = verify_release(report.endpoint, token, report.repo_id, report.tag, configs, manifest, manifest_file.sha256)
    if result.error:
        say(redact(f"verification FAILED: {result.error}", token))
        return result
    for config, message in result.config_errors.items():
        say(redact(f"  {config}: could not be reloaded: {message}", token))
    for config, splits in result.rows.items():
        for split, counts in splits.items():
            mark = "ok" if counts["expected"] == counts["reloaded"] else "MISMATCH"
            say(f"  {config}/{split}: {counts['reloaded']} rows reloaded, manifest {counts['expected']} [{mark}]")
    checked = len(manifest["files"]) + 1 - len(result.missing_files)
    say(f"  files: {checked} downloaded and hashed, {len(result.hash_mismatches)} differ from the manifest"
        + (f", missing: {result.missing_files}" if result.missing_files else ""))
    say(f"verification {'passed' if result.ok else 'FAILED'} for {report.repo_id}@{report.tag}")
    return result


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``publish`` arguments to ``parser`` (the lead's CLI calls this for ``triggerbench publish``)."""
    parser.add_argument("release_dir", type=Path, help="a built release directory, e.g. releases/0.1.0")
    parser.add_argument("--repo-id", required=True, help="the Hub dataset repo, ORG/NAME")
    parser.add_argument("--private", action="store_true", help="create the repo as private (if it does not exist)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be uploaded; no network, no changes")
    parser.add_argument("--endpoint", default=None, help="Hub endpoint (default: HF_ENDPOINT or https://huggingface.co)")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip reloading every config at the new tag after the push")
    parser.add_argument("--allow-shortcuts", action="store_true",
                        help="publish even though the release failed its shortcut check (manifest shortcut_check)")


def run(args: argparse.Namespace) -> int:
    """Run ``triggerbench publish``: 0 published (and verified), 1 refused or failed."""
    try:
        report = publish_release(args.release_dir, args.repo_id, private=args.private, dry_run=args.dry_run,
                                 endpoint=args.endpoint, verify=args.verify, allow_shortcuts=args.allow_shortcuts)
    except PublishError as err:
        print(f"triggerbench publish: {err}", file=sys.stderr)
        return 1
    if report.push is not None and not report.ok:
        print(f"triggerbench publish: {report.repo_id}@{report.tag} was pushed and tagged "
              f"({(report.push.tagged_commit or '')[:12]}) but verification FAILED (see above); "
              "fix the release and publish it under a new version", file=sys.stderr)
    elif report.push is not None:
        push = report.push
        print(f"published {report.repo_id}@{report.tag} ({(push.tagged_commit or '')[:12]}): "
              f"{len(push.uploaded)} uploaded ({human_size(push.bytes_uploaded)}), {len(push.skipped)} already there, "
              f"{len(push.deleted)} stale deleted")
        print(f'load it with: datasets.load_dataset("{report.repo_id}", "pm_base", revision="{report.tag}")')
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m pipeline.publish ...`` (same as ``triggerbench publish ...``)."""
    parser = argparse.ArgumentParser(prog="triggerbench publish", description=__doc__.splitlines()[0])
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
