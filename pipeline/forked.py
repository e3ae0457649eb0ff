"""Run CPU-bound Python work in forked worker processes, results in order.

A :class:`~pipeline.stage.MapStage` whose ``process`` is CPU-bound Python that calls no service
(``forkable = True``; stretch's plans, say) would keep one core busy and leave the others idle.
After ``setup`` and ``prepare`` the runner forks workers that inherit the prepared stage (its
lookup tables, its embedded vectors) and hands them the uncached items in chunks; results come back
in input order as the JSON the item cache stores. Every random draw is seeded by the item, so the
results are the same bytes as in one process, and the runner caches each as it arrives (a crash
still loses only the items in flight). The release writer makes independent splits the same way
(:meth:`pipeline.release.ReleaseWriter.prewrite`). Each worker keeps its BLAS and OpenMP pools to one
thread, and dies with the process that forked it (Linux ``PR_SET_PDEATHSIG``; elsewhere it notices at its
next item): a build killed mid-stage leaves no worker behind holding its pipes open.

:func:`fork_map` is the mechanism: ``function(item)`` for every item, in workers that inherit
``function`` (only items and results are pickled). :func:`compute_items` is the runner's use of it.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from threadpoolctl import threadpool_limits

from pipeline.cache import item_result_to_json
from pipeline.stage import Item, MapStage, StageContext

WORKERS_VARIABLE = "TRIGGERBENCH_WORKERS"
CHUNKS_PER_WORKER = 8  # small enough to even out slow items, large enough that pickling stays cheap

T = TypeVar("T")
R = TypeVar("R")

# The function forked workers inherit: set only while a pool runs (fork copies it; it is never pickled).
_inherited: dict[str, Any] = {}


def worker_count() -> int:
    """``TRIGGERBENCH_WORKERS`` if set, else the cores this process may run on."""
    value = os.environ.get(WORKERS_VARIABLE, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{WORKERS_VARIABLE}={value!r}: expected a whole number of workers, 1 or more")
        return int(value)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork(workers: int, items: int) -> bool:
    """Whether :func:`fork_map` would fork: two workers or more, two items or more, a platform that forks."""
    return workers > 1 and items > 1 and "fork" in multiprocessing.get_all_start_methods()


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent dies


def _start_worker(parent: int) -> None:
    """In each worker: die with ``parent``, and one BLAS / OpenMP thread."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    threadpool_limits(1)


def _call(item: Any) -> Any:
    if os.getppid() != _inherited["parent"]:  # no prctl on this platform, and the parent is gone
        os._exit(1)
    return _inherited["function"](item)


def fork_map(function: Callable[[T], R], items: list[T], workers: int) -> Iterator[R]:
    """``function(item)`` for ``items``, in order: in forked workers when :func:`can_fork`, else here, lazily.
    An exception in a worker is raised here, at its item; closing the iterator early drops what has not
    started."""
    if not can_fork(workers, len(items)):
        yield from map(function, items)
        return
    workers = min(workers, len(items))
    chunk = max(1, len(items) // (workers * CHUNKS_PER_WORKER))
    _inherited.update(function=function, parent=os.getpid())
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_start_worker,
                               initargs=(os.getpid(),))
    try:
        yield from pool.map(_call, items, chunksize=chunk)
    finally:
        pool.shutdown(cancel_futures=True)
        _inherited.clear()


def compute_items(stage: MapStage, items: list[Item], ctx: StageContext, workers: int) -> Iterator[dict[str, Any]]:
    """Results of ``stage.process`` for ``items`` as the item cache stores them, in order; in forked workers
    when the stage is ``forkable``, else here, one at a time as they are asked for (so the runner can tell
    which item saw a transient LLM failure)."""
    return fork_map(lambda item: item_result_to_json(stage.process(item, ctx)), items,
                    workers if stage.forkable else 1)
