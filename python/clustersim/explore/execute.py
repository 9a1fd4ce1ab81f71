"""Running a sweep's points: each point is one call of the API function of its command, on one of
three executors — this process (`workers=1`), N worker processes, or a Ray cluster — which all
call `evaluate` and so give the same rows. Only this process writes the store, one point at a
time as each finishes, so the store has a single writer whichever executor runs the points.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from clustersim.errors import InputError
from clustersim.explore import store
from clustersim.explore.spec import Point, Spec, api_function
from clustersim.provenance import api_calls

# A finished point: (seq, key, options, status, result).
Outcome = tuple[int, str, dict[str, Any], str, dict[str, Any]]
# Wall time of a run: not a result (it differs from run to run), so it is not stored.
NOT_RESULTS = ("simulate_seconds", "layers")


def evaluate(command: str, point: Point) -> Outcome:
    """Simulate one point. Its own bad input (a plan that does not fit, a TP that does not divide
    the heads) is an outcome, `infeasible`, stored like any other; anything else is raised."""
    try:
        with api_calls():
            result = api_function(command)(**point.options)
    except InputError as e:
        return point.seq, point.key, point.options, "infeasible", {"error": str(e)}
    return point.seq, point.key, point.options, "ok", record(command, result)


def record(command: str, result: Any) -> dict[str, Any]:
    """What is stored of a result: its JSON (`--json`, with what made it: `provenance`), less
    per-layer rows and wall times; of a collective, the last row of its table (the largest size;
    over ECMP seeds, that size's max row), every row under `sizes` if there are several, and its
    provenance."""
    if command == "collective":
        rows = list(result.rows())
        return (
            {"op": result.op, "ranks": result.ranks}
            | rows[-1]
            | ({"sizes": rows} if len(rows) > 1 else {})
            | {"provenance": result.provenance}
        )
    return {k: v for k, v in result.to_dict().items() if k not in NOT_RESULTS}


@dataclass(frozen=True)
class Summary:
    points: int
    skipped: int  # already in the store
    simulated: int
    infeasible: int


def sweep(
    spec: Spec,
    path: str | os.PathLike[str],
    *,
    workers: int = 1,
    ray: str | None = None,
    progress: Callable[[float], None] | None = None,
) -> Summary:
    """Simulate every point of `spec` not yet in the store at `path`, storing each as it finishes."""
    cluster = None if ray is None else import_ray()  # before the store is created
    with store.open_for(spec, path) as conn:
        have = store.done(conn)
        todo = [p for p in spec.points if p.key not in have]
        if not todo:
            outcomes: Iterator[Outcome] = iter(())
        elif cluster is not None:
            outcomes = ray_map(spec.command, todo, ray, workers, cluster)
        elif workers > 1:
            outcomes = process_map(spec.command, todo, workers)
        else:
            outcomes = (evaluate(spec.command, p) for p in todo)
        infeasible = 0
        for n, (seq, key, options, status, result) in enumerate(outcomes, 1):
            store.put(conn, seq, key, options, status, result)
            infeasible += status == "infeasible"
            if progress is not None:
                progress(n / len(todo))
    return Summary(len(spec.points), len(spec.points) - len(todo), len(todo), infeasible)


def process_map(command: str, points: list[Point], workers: int) -> Iterator[Outcome]:
    """Outcomes in the order they finish, from `workers` processes (spawned: no state inherited)."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=exit_with_parent) as pool:
        pending = {pool.submit(evaluate, command, p) for p in points}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    yield future.result()
        finally:
            for future in pending:
                future.cancel()


def exit_with_parent() -> None:
    """In a worker: exit as soon as the sweep's process is gone (killed with SIGKILL, say), rather
    than wait for work that will never come."""
    import multiprocessing
    import threading
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is not None:

        def watch() -> None:
            wait([parent.sentinel])
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError("command line: --ray: needs Ray: pip install 'clustersim[ray]'") from None
    return ray


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """A `HOST:PORT` (or `ray://HOST:PORT`) address must accept a connection: ray.init waits
    minutes on one that does not."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # `local`, `auto` or a form Ray resolves itself
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as e:
        raise InputError(f"command line: --ray {address}: cannot reach a Ray cluster: {e}") from None


def ray_map(command: str, points: list[Point], address: str, workers: int, ray: Any) -> Iterator[Outcome]:
    """Outcomes in the order they finish, from Ray tasks. `address` is ray.init's: a cluster's
    `HOST:PORT`, `auto` (the cluster this machine is in) or `local` (start one here, of `workers`
    CPUs). `ray` is the module."""
    local = address == "local"
    check_reachable(address)
    try:
        ray.init(
            address=address,
            num_cpus=workers if local else None,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="WARNING",
        )
    except (ConnectionError, ValueError) as e:
        raise InputError(f"command line: --ray {address}: cannot reach a Ray cluster: {e}") from None
    try:
        task = ray.remote(evaluate)
        pending = [task.remote(command, p) for p in points]
        while pending:
            finished, pending = ray.wait(pending, num_returns=1)
            yield ray.get(finished[0])
    finally:
        ray.shutdown()
