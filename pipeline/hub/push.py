"""Bring a Hub dataset repo's ``main`` branch to exactly a release's files, then tag it.

In: an ``HfApi`` bound to an endpoint and token, the repo id and the checked release files.
Out: what was uploaded, skipped and deleted, and the tagged commit.

Resumable by construction: before uploading, the remote tree is compared with the release
(LFS files by sha256, regular files by git blob id), so a rerun after an interruption only
sends what is missing or different. Files are committed in bounded batches (data first,
the card and manifest last, with stale files deleted in that last commit); LFS objects that
reached the server before a failed commit are not sent again (the LFS batch API / Xet dedupe).
The tag is created once, only after the remote tree is confirmed equal to the release.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.hf_api import RepoFile

from pipeline.hub.release_files import MANIFEST, ReleaseFile

REPO_TYPE = "dataset"
KEPT_REMOTE_FILES = {".gitattributes"}
LAST_FILES = ("README.md", MANIFEST)
MAX_COMMIT_BYTES = 1 << 30
MAX_COMMIT_FILES = 200


class TagExists(Exception):
    """The release's tag is already on the Hub: a published version is never rewritten."""


class RemoteMismatch(Exception):
    """After pushing, the remote tree still differs from the release (nothing was tagged)."""


@dataclass
class PushResult:
    """What a push did: paths uploaded/skipped/deleted, bytes sent, commits made, tagged commit."""

    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    bytes_uploaded: int = 0
    commits: list[str] = field(default_factory=list)
    tagged_commit: str | None = None


def existing_tag(api: HfApi, repo_id: str, tag: str) -> str | None:
    """The commit ``tag`` points at on the Hub, or None when the tag does not exist."""
    refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    return next((t.target_commit for t in refs.tags if t.name == tag), None)


def head_commit(api: HfApi, repo_id: str, branch: str = "main") -> str | None:
    refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    return next((b.target_commit for b in refs.branches if b.name == branch), None)


def remote_files(api: HfApi, repo_id: str, revision: str) -> dict[str, RepoFile]:
    """Every file at ``revision`` (recursive tree listing), by path."""
    tree = api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=revision, recursive=True)
    return {entry.path: entry for entry in tree if isinstance(entry, RepoFile)}


def same_content(local: ReleaseFile, remote: RepoFile | None) -> bool:
    """True when the remote file holds exactly ``local``'s bytes (LFS sha256 or git blob id)."""
    if remote is None:
        return False
    if remote.lfs is not None:
        return remote.lfs.sha256 == local.sha256 and remote.lfs.size == local.size
    return remote.size == local.size and remote.blob_id == local.git_blob_id()


def differences(files: list[ReleaseFile], remote: dict[str, RepoFile]) -> tuple[list[ReleaseFile], list[str]]:
    """(release files whose remote copy is missing or different, remote paths not in the release)."""
    wanted = {f.path for f in files}
    stale = sorted(p for p in remote if p not in wanted and p not in KEPT_REMOTE_FILES)
    return [f for f in files if not same_content(f, remote.get(f.path))], stale


def batches(files: list[ReleaseFile]) -> list[list[ReleaseFile]]:
    """Split uploads into commits of at most MAX_COMMIT_BYTES / MAX_COMMIT_FILES; card+manifest last."""
    body = [f for f in files if f.path not in LAST_FILES]
    last = [f for f in files if f.path in LAST_FILES]
    groups: list[list[ReleaseFile]] = []
    current: list[ReleaseFile] = []
    size = 0
    for item in body:
        if current and (size + item.size > MAX_COMMIT_BYTES or len(current) >= MAX_COMMIT_FILES):
            groups.append(current)
            current, size = [], 0
        current.append(item)
        size += item.size
    if current:
        groups.append(current)
    return groups + [last]


def push_release(
    api: HfApi,
    repo_id: str,
    files: list[ReleaseFile],
    tag: str,
    version: str,
    say: Callable[[str], None],
) -> PushResult:
    """Upload what the remote lacks, delete stale files, confirm, then create ``tag`` once."""
    if (tagged := existing_tag(api, repo_id, tag)) is not None:
        left, extra = differences(files, remote_files(api, repo_id, tagged))
        state = ("it holds exactly this release, nothing to do" if not (left or extra)
                 else f"it holds different content ({len(left)} files differ, {len(extra)} extra)")
        raise TagExists(f"tag {tag} already exists on {repo_id} (commit {tagged[:12]}; {state}); a published "
                        "version is never rewritten: bump the release version to publish changes")
    result = PushResult()
    to_upload, stale = differences(files, remote_files(api, repo_id, "main"))
    result.skipped = [f.path for f in files if f not in to_upload]
    total = sum(f.size for f in to_upload)
    say(f"{len(result.skipped)} of {len(files)} files already on {repo_id} with the same content; "
        f"uploading {len(to_upload)} ({human_size(total)}), deleting {len(stale)} stale")
    groups = [g for g in batches(to_upload) if g] if to_upload else []
    if stale and not groups:
        groups = [[]]
    for number, group in enumerate(groups, start=1):
        operations: list = [CommitOperationAdd(path_in_repo=f.path, path_or_fileobj=str(f.local)) for f in group]
        if number == len(groups):
            operations += [CommitOperationDelete(path_in_repo=p) for p in stale]
        info = api.create_commit(repo_id, operations, repo_type=REPO_TYPE,
                                 commit_message=f"triggerbench {version}: part {number}/{len(groups)}")
        result.commits.append(info.oid)
        result.uploaded += [f.path for f in group]
        result.bytes_uploaded += sum(f.size for f in group)
        say(f"commit {number}/{len(groups)}: {len(group)} files ({human_size(sum(f.size for f in group))}) -> {info.oid[:12]}")
    result.deleted = stale if groups else []
    head = head_commit(api, repo_id)
    if head is None:
        raise RemoteMismatch(f"{repo_id} has no main branch after the push")
    left, extra = differences(files, remote_files(api, repo_id, head))
    if left or extra:
        raise RemoteMismatch(f"{repo_id}@{head[:12]} still differs from the release after the push "
                             f"(differs: {[f.path for f in left][:5]}, extra: {extra[:5]}); nothing was tagged, rerun")
    try:
        api.create_tag(repo_id, tag=tag, revision=head, repo_type=REPO_TYPE, tag_message=f"triggerbench {version}")
    except HfHubHTTPError as err:
        if err.response is not None and err.response.status_code == 409:
            raise TagExists(f"tag {tag} was created on {repo_id} by someone else during this push") from None
        raise
    result.tagged_commit = head
    say(f"tagged {head[:12]} as {tag}")
    return result


def human_size(size: int) -> str:
    """``size`` bytes as a short human string (B, KB, MB, GB; powers of 1024)."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
