"""Warm workers before a fleet's first unit is submitted (:func:`warm_workers`): one per unit slot, so no unit waits
for a Ray worker process to start and import the workbench (:class:`Prestart` says how many were warmed)."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.sweeps._fleet_connect import Fleet
from workbench.sweeps._fleet_units import FleetUnit, Placement

__all__ = ["PRESTART_TIMEOUT_S", "Prestart", "unit_options", "warm_workers"]

#: Seconds the driver waits for the prestarted workers before it submits the units anyway (a node whose
#: GPUs another job holds cannot take its warm-up; its units then start on cold workers).
PRESTART_TIMEOUT_S = 120.0


@dataclasses.dataclass(frozen=True)
class Prestart:
    """The workers started before the first unit was submitted (:func:`~workbench.sweeps._fleet.run_units`,
    ``prestart=True``).

    Attributes:
        wanted: warm-up tasks submitted: on each node, as many as its GPU slots hold units of the
            smallest unit's size (one with ``one_unit_per_host``), at most the number of units.
        warmed: those that ran, each in its own worker process, all alive at once.
        seconds: wall-clock seconds from the first warm-up's submission to the last one's return.
        workers: ``(node IP, worker pid)`` of each warmed worker.
    """

    wanted: int
    warmed: int
    seconds: float
    workers: tuple[tuple[str, int], ...]


class _Gate:
    """A Ray actor that counts the warm-up tasks which have started: each waits until all have, so no two
    share a worker (Ray would otherwise run a quick warm-up on the worker another just left)."""

    def __init__(self) -> None:
        self.arrived = 0
        self.closed = False

    def arrive(self) -> int:
        self.arrived += 1
        return self.arrived

    def ready(self, wanted: int) -> bool:
        """True once ``wanted`` warm-ups have started, or the driver closed the gate."""
        return self.closed or self.arrived >= wanted

    def close(self) -> None:
        """End the prestart: every warm-up still waiting (or starting later) returns at its next poll."""
        self.closed = True


def _warm_up(gate: Any, wanted: int, task: Callable[[Any, Placement], Any], payload: Any) -> tuple[str, int]:
    """A warm-up task: by the time it runs, its worker has imported Ray, and unpickling ``task`` and a unit's
    ``payload`` (its arguments) imported every module a unit needs. Waits (polling the gate) until all
    ``wanted`` warm-ups run at once, at most :data:`PRESTART_TIMEOUT_S`; returns ``(node IP, pid)``."""
    import ray

    ray.get(gate.arrive.remote())
    deadline = time.monotonic() + PRESTART_TIMEOUT_S
    while not ray.get(gate.ready.remote(wanted)) and time.monotonic() < deadline:
        time.sleep(0.2)  # a few actor calls a second per warm-up: cheap on a loaded node
    return ray.util.get_node_ip_address(), os.getpid()


def unit_options(gpus: int) -> dict[str, Any]:
    """The Ray resources of a unit of ``gpus`` GPUs: its GPU slots, or a CPU slot for a CPU-only unit."""
    return {"num_gpus": gpus, "num_cpus": 0 if gpus else 1}


def _warm_plan(nodes: Sequence[Mapping[str, Any]], units: Sequence[FleetUnit], *, one_unit_per_host: bool) -> list[str]:
    """The node id of each warm-up task to run: on every alive node, as many as its slots hold units of the
    smallest unit's size (GPU slots, or CPU slots for CPU-only units; one with ``one_unit_per_host``), at most
    ``len(units)`` per node, so wherever Ray places a unit a warm worker waits there.

    Args:
        nodes: ``ray.nodes()`` (dicts with ``Alive``, ``NodeID`` and ``Resources``).
        units: the units to run.
    """
    if not units:
        return []
    gpus = min(u.gpus for u in units)
    plan: list[str] = []
    for node in nodes:
        if not node.get("Alive"):
            continue
        have = float(node.get("Resources", {}).get("GPU" if gpus else "CPU", 0))
        slots = min(1, int(have // (gpus or 1))) if one_unit_per_host else int(have // (gpus or 1))
        plan += [node["NodeID"]] * min(slots, len(units))
    return plan


def warm_workers(
    ray: Any,
    units: Sequence[FleetUnit],
    task: Callable[[Any, Placement], Any],
    fleet: Fleet,
    clock: Callable[[], float],
) -> Prestart:
    """Start and warm the workers the units will run on, before any is submitted (:class:`Prestart`).

    A Ray worker process is started for a task the first time one needs it, and imports Ray and then
    (unpickling the task) the workbench: 18-22 s per unit on 2 loaded cores (docs/FLEET.md). Here one
    warm-up task per unit slot, pinned to its node and asking for the unit's resources, pays that before
    the first submission; Ray keeps the idle worker and runs the next task of the same resource shape
    (this driver's units) on it. Warm-ups that cannot all start within :data:`PRESTART_TIMEOUT_S` are
    released through the gate (never ``ray.cancel``: see the comment below) and the units are submitted.
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    plan = _warm_plan(ray.nodes(), units, one_unit_per_host=fleet.one_unit_per_host)
    if not plan:
        return Prestart(0, 0, 0.0, ())
    gpus = min(u.gpus for u in units)
    started = clock()
    gate = ray.remote(num_cpus=0)(_Gate).remote()
    warm = ray.remote(_warm_up)
    refs = [
        warm.options(
            **unit_options(gpus), max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
        ).remote(gate, len(plan), task, units[0].payload)
        for node_id in plan
    ]
    try:
        done, left = ray.wait(refs, num_returns=len(refs), timeout=PRESTART_TIMEOUT_S + 10)
    finally:
        # No ray.cancel here: cancelling a task whose reply is in flight crashes the driver in Ray 2.60
        # (task_manager.cc "Tried to complete task that was not pending", the race of ray-project/ray
        # PR #54798). Closing the gate ends each waiting warm-up at its next poll instead; one that has
        # not started yet returns as soon as it does, holding its slot for a moment.
        ray.get(gate.close.remote())
    workers = []
    for ref in done:
        try:
            workers.append(tuple(ray.get(ref)))
        except ray.exceptions.RayError:
            pass
    if left:
        ray.wait(left, num_returns=len(left), timeout=2.0)
    ray.kill(gate)  # an actor, not a task: a warm-up starting later fails at once on the dead gate
    return Prestart(
        wanted=len(plan),
        warmed=len(set(workers)),
        seconds=round(clock() - started, 3),
        workers=tuple(sorted(set(workers))),
    )
