"""Fast Hugging Face Hub reachability check and offline switch.

``huggingface_hub`` and ``datasets`` retry for ~23 s when the Hub cannot be reached unless
``HF_HUB_OFFLINE`` is set. :func:`hub_reachable` answers in well under a second and, when the
Hub is unreachable, switches both libraries to offline mode (environment and, for modules
already imported, their read-at-import constants).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_SECONDS = 0.5
_TRUTHY = {"1", "true", "yes", "on"}


def offline_requested() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set to a true value."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUTHY


def endpoint() -> str:
    """The Hub base URL in use (``HF_ENDPOINT`` or huggingface.co)."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def _probe(host: str, port: int, timeout: float) -> bool:
    """Open (and close) a TCP connection to ``host:port``; True when it succeeds in time."""
    outcome: list[bool] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                outcome.append(True)
        except OSError:
            outcome.append(False)

    # DNS resolution ignores socket timeouts, so the attempt runs in a daemon thread we stop waiting for.
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(outcome and outcome[0])


def force_offline() -> None:
    """Put ``huggingface_hub``, ``transformers`` and ``datasets`` in offline mode for this process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    hub_constants = sys.modules.get("huggingface_hub.constants")
    if hub_constants is not None:
        hub_constants.HF_HUB_OFFLINE = True
    datasets_config = sys.modules.get("datasets.config")
    if datasets_config is not None:
        datasets_config.HF_HUB_OFFLINE = True
        if hasattr(datasets_config, "HF_DATASETS_OFFLINE"):
            datasets_config.HF_DATASETS_OFFLINE = True


def hub_reachable(timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """True when the Hub endpoint accepts a TCP connection; otherwise switch to offline mode.

    Honours ``HF_HUB_OFFLINE`` (no probe at all when it is set).
    """
    if offline_requested():
        force_offline()
        return False
    parts = urlsplit(endpoint())
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if parts.hostname and _probe(parts.hostname, port, timeout):
        return True
    force_offline()
    return False
