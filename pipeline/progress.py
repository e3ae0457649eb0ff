"""Progress bars for long stages (stderr; quiet when ``TRIGGERBENCH_PROGRESS=0``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def progress(iterable: Iterable[T], total: int | None = None, desc: str = "") -> Iterator[T]:
    """Iterate with a progress bar; off when disabled by the environment."""
    disabled = os.environ.get("TRIGGERBENCH_PROGRESS", "1") == "0"
    return iter(
        tqdm(iterable, total=total, desc=desc, file=sys.stderr, disable=disabled, mininterval=1.0, leave=False, unit="item")
    )
