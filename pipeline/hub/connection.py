"""Endpoint and token resolution, fast offline detection and token redaction.

The token is looked up (argument, ``HF_TOKEN``, or the ``huggingface_hub`` login) but never
printed: every message shown to the user passes through :func:`redact`.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 5.0


class HubUnreachable(Exception):
    """The Hub endpoint cannot be used right now (offline mode, no route, refused, timeout)."""


class TokenProblem(Exception):
    """No token, or the endpoint rejects it."""


def resolve_endpoint(endpoint: str | None = None) -> str:
    """``endpoint``, else ``HF_ENDPOINT``, else https://huggingface.co; without a trailing slash."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def resolve_token(token: str | None = None) -> str:
    """``token``, else ``HF_TOKEN``/the saved ``huggingface_hub`` login; :class:`TokenProblem` if none."""
    if token:
        return token
    from huggingface_hub import get_token

    found = get_token()
    if not found:
        raise TokenProblem("no Hugging Face token: set HF_TOKEN or run `hf auth login` (a write token is needed)")
    return found


def offline_mode_set() -> bool:
    """True when ``HF_HUB_OFFLINE`` asks huggingface_hub never to touch the network."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def probe(endpoint: str, token: str, timeout: float = PROBE_TIMEOUT_S) -> str:
    """One short request to ``<endpoint>/api/whoami-v2``; returns the account name.

    Raises :class:`HubUnreachable` within ``timeout`` seconds when the endpoint cannot be
    reached (instead of huggingface_hub's retry loops), :class:`TokenProblem` on 401/403.
    """
    if offline_mode_set():
        raise HubUnreachable("HF_HUB_OFFLINE=1 is set: publishing needs the Hub; unset it to publish")
    request = urllib.request.Request(f"{endpoint}/api/whoami-v2", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return str(json.loads(response.read() or b"{}").get("name", "?"))
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            raise TokenProblem(f"{endpoint} rejected the token (HTTP {err.code}); check HF_TOKEN") from None
        raise HubUnreachable(f"{endpoint} answered HTTP {err.code} to a connectivity check") from None
    except (urllib.error.URLError, socket.timeout, OSError) as err:
        reason = getattr(err, "reason", err)
        raise HubUnreachable(
            f"cannot reach {endpoint} ({reason}); check the network or HF_ENDPOINT, "
            "or use --dry-run to see what would be uploaded"
        ) from None


def redact(text: str, token: str | None) -> str:
    """``text`` with every occurrence of ``token`` replaced by ``hf_***``."""
    if token:
        text = text.replace(token, "hf_***")
    return text
