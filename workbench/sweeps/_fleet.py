"""A sweep's units as Ray tasks: GPU slots, parallel scheduling, retries and cancellation.

The unit itself stays the workbench's (launch the server, wait until ready, run the load
generator beside it, classify a failure, stop it: ``task`` below); Ray only places it. Each
unit is one Ray task asking for ``num_gpus`` GPU slots: Ray gives tasks disjoint
``CUDA_VISIBLE_DEVICES`` on a node and runs as many at once as the nodes' free slots allow
(Ray 2.60, measured with fake GPUs, ``ray start --num-gpus=4``; docs/FLEET.md).

Faults (Ray's semantics, Ray 2.60 ``ray.remote`` ``max_retries``):

- a worker process that crashed, or a node that was lost, fails the task with a Ray
  system error and Ray runs it again, up to ``max_retries`` times; a unit pinned to its host
  (``one_unit_per_host``) whose host was lost is submitted again by the driver instead, pinned to a
  free alive host, also up to ``max_retries`` times (:func:`run_units`);
- an exception raised by ``task`` is not retried (``retry_exceptions`` stays off): the
  unit's own failures (a server that never became ready) are classified by ``task`` and
  returned as its result, never raised;
- Ctrl-C (``KeyboardInterrupt``) in :func:`run_units` cancels every unit: ``ray.cancel``
  raises ``KeyboardInterrupt`` inside a running task, whose ``with`` blocks stop its server;
  a unit still running :data:`CANCEL_GRACE_S` seconds later is cancelled with ``force=True``
  (its worker is killed; the server's host-side watchdog, which watches the worker's pid,
  stops the server within a second or two: :mod:`workbench.servers`).

Before the first submission :func:`run_units` prestarts one warm worker per unit slot
(:func:`~workbench.sweeps._fleet_prestart.warm_workers`), so no unit waits for a worker process to start and
import the workbench.

Ray is imported only here and in the other ``_fleet*`` modules (the ``fleet`` extra,
``pip install specbench-workbench[fleet]``); nothing else in the workbench imports it.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.sweeps._fleet_connect import Fleet, connect
from workbench.sweeps._fleet_prestart import Prestart, unit_options, warm_workers
from workbench.sweeps._fleet_units import FleetUnit, Placement, UnitOutcome

# Fleet is imported from here by the bench verb (sweeps/_bench_cli.py); it is defined in _fleet_connect.
__all__ = ["CANCEL_GRACE_S", "run_units"]

#: Seconds a cancelled unit gets to stop its server before its worker is killed (force cancel).
CANCEL_GRACE_S = 3.0


def _execute(
    task: Callable[[Any, Placement], Any], payload: Any, ended: Any = None, key: int | None = None
) -> tuple[Placement, Any]:
    """The Ray task body: where it runs, then ``task(payload, placement)``; then, however it ended (a soft cancel's
    ``KeyboardInterrupt`` included, after the task's ``with`` blocks stopped its server), tells ``ended`` (an
    :class:`_Ended` actor) that unit ``key`` is over."""
    import ray

    try:
        placement = Placement(
            node_id=ray.get_runtime_context().get_node_id(),
            host=ray.util.get_node_ip_address(),
            hostname=socket.gethostname(),
            gpus=tuple(str(g) for g in ray.get_gpu_ids()),
            pid=os.getpid(),
            started_at=time.time(),
        )
        return placement, task(payload, placement)
    finally:
        if ended is not None:
            ended.end.remote(key)  # not waited on: a force-cancelled worker may not get to send it


class _Ended:
    """A Ray actor the units tell when they are over, so that a soft cancel can wait for their servers' stop.

    Ray resolves a soft-cancelled task's reference at once (``TaskCancelledError``) while the task's
    ``KeyboardInterrupt`` is still unwinding through the ``with`` blocks that stop its server; a driver that
    took that as the end returned, and when it was a job's, Ray ended the units' workers with it and left their
    servers to the watchdogs (docs/FLEET.md, *fleet cancel*).
    """

    def __init__(self) -> None:
        self.keys: set[int] = set()

    def end(self, key: int) -> None:
        self.keys.add(key)

    def which(self, keys: list[int]) -> list[int]:
        """The ones of ``keys`` that are over."""
        return [k for k in keys if k in self.keys]


def _check_fits(ray: Any, units: Sequence[FleetUnit]) -> None:
    """Refuse units no node could ever hold (they would wait forever).

    Raises:
        ConfigError: naming the unit, its GPUs and the largest node's.
    """
    from workbench.sweeps._fleet_multinode import check_groups_fit

    nodes = ray.nodes()
    check_groups_fit(nodes, list(units))
    most = max((float(n.get("Resources", {}).get("GPU", 0)) for n in nodes if n.get("Alive")), default=0.0)
    too_big = sorted({(u.gpus, u.label) for u in units if u.gpus > most})
    if too_big:
        gpus, label = too_big[-1]
        raise ConfigError(
            f"{label} asks for {gpus} GPU(s), but the largest node of the fleet has {most:g}: lower "
            "tp_size (or dp_size), or add a node with more GPUs"
        )


class _Hosts:
    """For ``one_unit_per_host``: which node IPs are busy, and a node to pin the next unit to."""

    def __init__(self, ray: Any) -> None:
        self._ray = ray
        self.busy: set[str] = set()

    def free_node(self, gpus: int) -> tuple[str, str] | None:
        """``(node id, host)`` of an alive node on a host without a unit and with ``gpus`` slots."""
        for node in self._ray.nodes():
            host = node.get("NodeManagerAddress")
            if node.get("Alive") and host not in self.busy and float(node.get("Resources", {}).get("GPU", 0)) >= gpus:
                return node["NodeID"], host
        return None

    def alive(self, host: str) -> bool:
        """Whether an alive node has the IP ``host``."""
        return any(node.get("Alive") and node.get("NodeManagerAddress") == host for node in self._ray.nodes())


@dataclasses.dataclass(frozen=True)
class _Running:
    """A unit submitted to Ray and not yet collected (:func:`run_units` keeps one per ObjectRef).

    Attributes:
        unit: the unit.
        host: the node IP it is pinned to (``one_unit_per_host``), else None.
        lost: the pinned hosts it lost before this submission (:attr:`UnitOutcome.moved_from`).
        submitted_at: UTC wall-clock seconds of this submission.
        number: its key for the :class:`_Ended` actor.
        group: the placement group of a unit spanning nodes (removed once it ends), else None.
    """

    unit: FleetUnit
    host: str | None
    lost: tuple[str, ...]
    submitted_at: float
    number: int
    group: Any = None


def run_units(
    units: Sequence[FleetUnit],
    task: Callable[[Any, Placement], Any],
    *,
    fleet: Fleet,
    on_done: Callable[[UnitOutcome], None] | None = None,
    retry_exceptions: Sequence[type[BaseException]] = (),
    prestart: bool = True,
    on_prestart: Callable[[Prestart], None] | None = None,
    clock: Callable[[], float] = time.time,
) -> list[UnitOutcome]:
    """Run every unit as a Ray task on ``fleet`` and collect the outcomes as they finish.

    Args:
        units: the units (their ``gpus`` are the tasks' ``num_gpus``).
        task: a module-level function ``task(payload, placement) -> result`` (it runs on a
            Ray worker: it must be importable there, and its result picklable).
        fleet: the cluster and its sharing rule.
        on_done: called in the driver with each :class:`UnitOutcome` as soon as it finishes
            (e.g. to store its rows), in finishing order.
        retry_exceptions: exceptions of ``task`` that Ray retries like a crash (up to
            ``fleet.max_retries``); any other exception is reported, not retried.
            With ``fleet.one_unit_per_host`` a unit is pinned to its host (Ray's
            ``NodeAffinitySchedulingStrategy``, ``soft=False``), so Ray cannot retry it elsewhere when that host
            is lost: its retry fails with ``TaskUnschedulableError`` as soon as Ray marks the node dead (Ray
            2.60, ``ray.cluster_utils.Cluster``, health checks every 0.5 s: 1.2 s after the loss). The driver
            then submits it again itself (on that error, or a Ray error with the host no longer alive), pinned
            to a free alive host, up to ``fleet.max_retries`` times per unit (:attr:`UnitOutcome.moved_from`).
        prestart: before submitting, start one warm worker per unit slot
            (:func:`~workbench.sweeps._fleet_prestart.warm_workers`:
            Ray and the unit's modules imported), so a unit starts within a fraction of a second of
            its submission instead of a cold worker's start; units spanning nodes are left out (their
            ranks' actors start workers of their own). Default True.
        on_prestart: called in the driver with the :class:`Prestart` (when ``prestart``).
        clock: UTC wall clock for ``finished_at``.

    Returns:
        The outcomes in finishing order (cancelled units last, with ``error="cancelled"``).

    Raises:
        ConfigError: Ray is not installed, or a unit asks for more GPUs than any node has.
        HostError: the cluster cannot be reached.
        KeyboardInterrupt: after cancelling every unit (Ctrl-C).
    """
    ray = connect(fleet)
    _check_fits(ray, units)
    if prestart:
        # a unit spanning nodes gains nothing from a warm worker: its ranks > 0 are actors, each in a worker of
        # its own that no warm-up can start, and its rank 0 waits for them (workbench.sweeps._fleet_multinode)
        warmed = warm_workers(ray, [u for u in units if u.nnodes == 1], task, fleet, clock)
        if on_prestart is not None:
            on_prestart(warmed)
    from workbench.sweeps._fleet_multinode import group_options, remove_group

    remote = ray.remote(_execute)
    ended = ray.remote(num_cpus=0)(_Ended).remote()
    waiting: list[tuple[FleetUnit, tuple[str, ...]]] = [(u, ()) for u in units]  # (unit, the pinned hosts it lost)
    running: dict[Any, _Running] = {}  # ObjectRef -> the unit it runs
    numbers = itertools.count()  # each submission's key for ``ended``
    hosts = _Hosts(ray)
    outcomes: list[UnitOutcome] = []

    def submit() -> None:
        while waiting:
            unit, lost = waiting[0]
            # GPU slots bound how many run at once; a CPU-only unit (the simulator without GPUs) takes a CPU slot
            options: dict[str, Any] = {
                **unit_options(unit.gpus),
                "max_retries": fleet.max_retries,
                "retry_exceptions": list(retry_exceptions) or False,
            }
            host, group = None, None
            if unit.nnodes > 1:  # a placement group of one bundle per node (never pinned: it spans hosts)
                spread, group = group_options(unit)
                options.update(spread)
            elif fleet.one_unit_per_host:
                free = hosts.free_node(unit.gpus)
                if free is None:
                    return
                node_id, host = free
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
                hosts.busy.add(host)
            waiting.pop(0)
            number = next(numbers)
            ref = remote.options(**options).remote(task, unit.payload, ended, number)
            running[ref] = _Running(unit, host=host, lost=lost, submitted_at=clock(), number=number, group=group)

    try:
        submit()
        while running:
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            for ref in done:
                now = running[ref]  # it stays in ``running`` (so a Ctrl-C cancels it) until moved on
                outcome = dataclasses.replace(
                    _collect(ray, ref, now.unit, clock()), submitted_at=now.submitted_at, moved_from=now.lost
                )
                move = (
                    outcome.lost
                    and now.host is not None
                    and len(now.lost) < fleet.max_retries
                    and (_unschedulable(outcome) or not hosts.alive(now.host))
                )
                del running[ref]
                hosts.busy.discard(now.host)
                if now.group is not None:
                    remove_group(now.group)
                if move:
                    assert now.host is not None
                    waiting.insert(0, (now.unit, (*now.lost, now.host)))  # its pinned host is gone: pin it to another
                    continue
                outcomes.append(outcome)
                if on_done is not None:
                    on_done(outcome)
            submit()
        while waiting:  # with nothing running, no alive host has the GPUs they ask for (theirs were lost)
            unit, lost = waiting.pop(0)
            outcomes.append(
                UnitOutcome(
                    unit,
                    None,
                    None,
                    clock(),
                    f"no alive host has the {unit.gpus} GPU(s) it asks "
                    f"for after {', '.join(lost) or 'its host'} was lost",
                    lost=True,
                    moved_from=lost,
                )
            )
            if on_done is not None:
                on_done(outcomes[-1])
    except KeyboardInterrupt:
        for ref, outcome in _cancel(ray, running, clock, ended).items():
            outcome = dataclasses.replace(outcome, submitted_at=running[ref].submitted_at, moved_from=running[ref].lost)
            outcomes.append(outcome)
            if outcome.error != "cancelled" and on_done is not None:
                on_done(outcome)  # it finished before the Ctrl-C was seen: its rows are kept like any other's
        outcomes += [UnitOutcome(u, None, None, clock(), "cancelled", moved_from=lost) for u, lost in waiting]
        raise
    finally:
        for now in running.values():  # cancelled units' groups (whatever still runs in one is killed by Ray)
            if now.group is not None:
                remove_group(now.group)
    return outcomes


def _collect(ray: Any, ref: Any, unit: FleetUnit, now: float) -> UnitOutcome:
    """The outcome of a finished task (its result, or the error that ended it)."""
    try:
        placement, result = ray.get(ref)
    except ray.exceptions.TaskCancelledError:
        return UnitOutcome(unit, None, None, now, "cancelled")
    except ray.exceptions.RayTaskError as exc:  # task raised: not retried, reported
        cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else exc
        return UnitOutcome(unit, None, None, now, f"the unit raised {type(cause).__name__}: {cause}")
    except ray.exceptions.RayError as exc:  # worker crashed / node lost, after max_retries
        return UnitOutcome(unit, None, None, now, f"{type(exc).__name__} after its retries: {exc}", lost=True)
    return UnitOutcome(unit, placement, result, now)


#: How :func:`_collect` words Ray's error for a task pinned to a node that is gone (or cannot take it).
_UNSCHEDULABLE = "TaskUnschedulableError "


def _unschedulable(outcome: UnitOutcome) -> bool:
    """Whether Ray gave up on the unit as unschedulable: with ``soft=False`` node affinity, its node is gone."""
    return (outcome.error or "").startswith(_UNSCHEDULABLE)


def _cancel(
    ray: Any, running: Mapping[Any, _Running], clock: Callable[[], float], ended: Any
) -> dict[Any, UnitOutcome]:
    """Cancel every running unit: softly (``KeyboardInterrupt`` in the task, whose ``with`` blocks stop
    the server), then with ``force=True`` for those that have not told ``ended`` (:class:`_Ended`) they are
    over after :data:`CANCEL_GRACE_S` (a cancelled reference resolves at once, so it cannot say).

    Returns:
        The outcome of each unit of ``running``, by its ObjectRef: its real outcome (:func:`_collect`) for a unit that had
        already finished, ``error="cancelled"`` for the others.
    """
    # a unit that already finished is not cancelled (cancelling a task whose reply is in flight is the
    # Ray 2.60 race that crashes the driver: see _fleet_prestart.warm_workers); the window left is a unit
    # finishing just now
    finished, refs = ray.wait(list(running), num_returns=len(running), timeout=0) if running else ([], [])
    for ref in refs:
        ray.cancel(ref, force=False)
    left, deadline = list(refs), time.monotonic() + CANCEL_GRACE_S
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            over = set(
                ray.get(
                    ended.which.remote([running[ref].number for ref in left]),
                    timeout=max(0.1, deadline - time.monotonic()),
                )
            )
        except ray.exceptions.GetTimeoutError:  # the actor not up yet (a cold worker): none is known to be over
            continue
        left = [ref for ref in left if running[ref].number not in over]
    for ref in left:
        ray.cancel(ref, force=True)
    now = clock()
    return {
        **{ref: _collect(ray, ref, running[ref].unit, now) for ref in finished},
        **{ref: UnitOutcome(running[ref].unit, None, None, now, "cancelled") for ref in refs},
    }
