"""Where candidate runs happen: in this process, in local processes (the default: concurrent.futures, no
set-up), or on a Dask distributed cluster (the optional `cluster` extra: a LocalCluster this process starts,
or a running scheduler's address). Every backend returns the outcomes in the order the keys were given, so
the same keys give the same list whichever ran them.

`progress(done, total)` is called after each outcome (a CLI or a page draws a bar from it); `cancel` (a
threading.Event, or anything with `is_set()`) is looked at between outcomes: once set, no new run starts and
`Cancelled` carries the outcomes finished so far.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from engine_model.advise.evaluate import Outcome, evaluate
from engine_model.errors import InputError

BACKENDS = ("processes", "dask")
Progress = Callable[[int, int], None]


class Cancelled(Exception):  # noqa: N818 (a stop asked for, not a fault)
    """The search was cancelled; `done` holds the outcomes finished before it stopped, by key."""

    def __init__(self, done: dict[str, Outcome]):
        super().__init__(f"cancelled after {len(done)} run(s)")
        self.done = done


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_all(
    scenario_json: str,
    budget: tuple,
    keys: Sequence[str],
    backend: str = "processes",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Progress | None = None,
    cancel=None,
    done: dict[str, Outcome] | None = None,
) -> list[Outcome]:
    """Every key's outcome, in the order given. `done`: a dict the outcomes go into as each finishes, so a
    caller keeps them when the run stops part-way (a cancel, or the app's script interrupted by a click)."""
    done = {} if done is None else done
    if backend not in BACKENDS:
        raise InputError("--backend", f"{backend!r}: expected one of {', '.join(BACKENDS)}")
    workers = workers or default_workers()
    if not keys:
        return []
    if backend == "dask":
        _dask(scenario_json, budget, keys, workers, scheduler, progress, cancel, done)
    elif workers == 1:
        _here(scenario_json, budget, keys, progress, cancel, done)
    else:
        _processes(scenario_json, budget, keys, workers, progress, cancel, done)
    return [done[key] for key in keys]


def _stopped(cancel) -> bool:
    return cancel is not None and cancel.is_set()


def _here(scenario_json, budget, keys, progress, cancel, done) -> dict[str, Outcome]:
    for key in keys:
        if _stopped(cancel):
            raise Cancelled(done)
        done[key] = evaluate(scenario_json, budget, key)
        if progress:
            progress(len(done), len(keys))
    return done


def _processes(scenario_json, budget, keys, workers, progress, cancel, done) -> dict[str, Outcome]:
    """A pool of `workers` local processes, at most two runs queued per worker, so a cancel stops soon."""
    todo = list(reversed(keys))
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context()) as pool:
        running = {}
        while todo or running:
            while todo and len(running) < 2 * workers and not _stopped(cancel):
                key = todo.pop()
                running[pool.submit(evaluate, scenario_json, budget, key)] = key
            if _stopped(cancel):
                for future in running:
                    future.cancel()
                raise Cancelled(done)
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                done[running.pop(future)] = future.result()
                if progress:
                    progress(len(done), len(keys))
    return done


def _context():
    """Workers forked from a clean server process that has imported the engine once: safe from a threaded
    caller (the app's server, a Dask client) and quick to start."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["engine_model.advise.evaluate"])
    return ctx


def _dask(scenario_json, budget, keys, workers, scheduler, progress, cancel, done) -> dict[str, Outcome]:
    """Dask distributed: a LocalCluster of `workers` processes, or the cluster at `scheduler`."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise InputError(
            "--backend dask",
            "needs Dask distributed: pip install 'who-waits[cluster]' (or pip install 'dask[distributed]')",
        ) from None
    cluster = None
    if scheduler:
        client = Client(scheduler, timeout="10s")
    else:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
    try:
        futures = {client.submit(evaluate, scenario_json, budget, key, pure=False): key for key in keys}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            if progress:
                progress(len(done), len(keys))
            if _stopped(cancel):
                client.cancel(list(futures))
                raise Cancelled(done)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return done
