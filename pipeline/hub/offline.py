"""Fast Hugging Face Hub reachability check and offline switch.

``huggingface_hub`` and ``datasets`` retry for ~23 s when the Hub cannot be reached unless
``HF_HUB_OFFLINE`` is set. :func:`hub_reachable` answers in well under a second and, when the
Hub is unreachable, switches both libraries to offline mode (environment and, for modules
already imported, their read-at-import constants).
"""

from __future__ import annotations

import os
import sys
import threading
import urllib.error
import urllib.request

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_SECONDS = 0.5
_TRUTHY = {"1", "true", "yes", "on"}


def offline_requested() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set to a true value."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUTHY


def endpoint() -> str:
    """The Hub base URL in use (``HF_ENDPOINT`` or huggingface.co)."""
    return os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


def _probe(url: str, timeout: float) -> bool:
    """True when ``url`` answers HTTP at all (any status) within ``timeout`` seconds."""
    outcome: list[bool] = []

    def attempt() -> None:
        request = urllib.request.Request(url, method="HEAD")
        try:
            with urllib.request.urlopen(request, timeout=timeout):
                outcome.append(True)
        except urllib.error.HTTPError:
            outcome.append(True)  # the server answered, even if with an error status
        except (urllib.error.URLError, OSError, ValueError):
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
    """True when the Hub endpoint answers HTTP within ``timeout``; otherwise switch to offline mode.

    Honours ``HF_HUB_OFFLINE`` (no probe at all when it is set).
    """
    if offline_requested():
        force_offline()
        return False
    if _probe(endpoint() + "/api/datasets?limit=1", timeout):
        return True
    force_offline()
    return False
