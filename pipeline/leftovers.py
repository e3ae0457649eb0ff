"""Remove what killed builds left behind: release staging directories and cache temp files.

A build writes its release into ``<out>/.staging-<version>-<pid>`` with an owner file beside
it (``.staging-<version>-<pid>.owner``: host and pid), and cache artifacts through temp files
named ``<pid>@<host>~<random>.tmp``. ``remove_leftovers(out, cache)`` deletes those whose
process no longer runs on this host; anything owned by a live process, or by another host
(a shared disk), is left alone. Older leftovers without an owner (from before owner files)
are taken as this host's.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("triggerbench")
LEGACY_TMP_AGE_S = 3600.0  # an ownerless cache temp file this old is no live build's


def host() -> str:
    return socket.gethostname()


def tmp_prefix() -> str:
    """The prefix of this process's cache temp files."""
    return f"{os.getpid()}@{host()}~"


@contextmanager
def entry_dir(target: Path, is_valid: Callable[[Path], bool]) -> Iterator[Path]:
    """A temp directory beside ``target`` to fill; on leaving, it becomes ``target`` atomically.

    An entry another build stored meanwhile is kept when ``is_valid`` accepts it (an invalid one is
    replaced); a failure while filling, or a lost rename race (``OSError``), leaves nothing behind.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(dir=target.parent, prefix=tmp_prefix(), suffix=".tmp"))
    try:
        yield temp
        if target.exists():
            if is_valid(target):
                shutil.rmtree(temp, ignore_errors=True)
                return
            shutil.rmtree(target, ignore_errors=True)
        os.rename(temp, target)
    except OSError:
        shutil.rmtree(temp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def write_owner(staging: Path) -> Path:
    """Record this process as the owner of ``staging`` (beside it, so it is never part of the release)."""
    path = staging.with_name(staging.name + ".owner")
    path.write_text(json.dumps({"host": host(), "pid": os.getpid()}) + "\n", encoding="utf-8")
    return path


def pid_alive(pid: int) -> bool:
    """True when a process with ``pid`` exists on this machine (a reused pid counts as alive: safe side)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _staging_owner(staging: Path) -> tuple[str, int] | None:
    owner = staging.with_name(staging.name + ".owner")
    if owner.is_file():
        try:
            data = json.loads(owner.read_text(encoding="utf-8"))
            return str(data["host"]), int(data["pid"])
        except (ValueError, KeyError, TypeError):
            return None
    pid = staging.name.rsplit("-", 1)[-1]  # legacy: .staging-<version>-<pid>, no owner file
    return (host(), int(pid)) if pid.isdigit() else None


def _stale(owner: tuple[str, int] | None) -> bool:
    return owner is not None and owner[0] == host() and owner[1] != os.getpid() and not pid_alive(owner[1])


CACHE_FOLDERS = ("artifacts", "release-shards", "audit")  # caches whose entries are written as temp + rename


def remove_leftovers(out_root: Path, cache_dir: Path) -> list[str]:
    """Delete stale staging directories under ``out_root`` and temp files under ``cache_dir``; say which."""
    removed: list[str] = []
    if out_root.is_dir():
        for staging in sorted(p for p in out_root.glob(".staging-*") if p.is_dir()):
            owner = _staging_owner(staging)
            if _stale(owner):
                shutil.rmtree(staging, ignore_errors=True)
                staging.with_name(staging.name + ".owner").unlink(missing_ok=True)
                removed.append(f"{staging} (pid {owner[1]} no longer runs)")
        for marker in out_root.glob(".staging-*.owner"):  # killed between writing the owner and mkdir
            staging = marker.with_name(marker.name.removesuffix(".owner"))
            if not staging.exists() and _stale(_staging_owner(staging)):
                marker.unlink(missing_ok=True)
    for folder in CACHE_FOLDERS:
        root = cache_dir / folder
        if not root.is_dir():
            continue
        for tmp in sorted(root.rglob("*.tmp")):
            if _tmp_stale(tmp):
                if tmp.is_dir():
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    tmp.unlink(missing_ok=True)
                removed.append(str(tmp))
    for what in removed:
        log.info("removed a leftover of a build that no longer runs: %s", what)
    return removed


def _tmp_stale(tmp: Path) -> bool:
    name = tmp.name
    if "@" in name and "~" in name:
        pid, _, rest = name.partition("@")
        return pid.isdigit() and _stale((rest.split("~", 1)[0], int(pid)))
    try:
        return time.time() - tmp.stat().st_mtime > LEGACY_TMP_AGE_S
    except FileNotFoundError:
        return False
