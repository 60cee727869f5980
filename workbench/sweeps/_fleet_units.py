"""A fleet's unit of work and what became of it: :class:`FleetUnit`, :class:`Placement`, :class:`UnitOutcome`
(plain values: the driver builds units, a Ray worker reports its placement, the driver collects outcomes)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["FleetUnit", "Placement", "UnitOutcome"]


@dataclasses.dataclass(frozen=True)
class FleetUnit:
    """One unit of work to place on the fleet.

    Attributes:
        key: the caller's key for it (e.g. ``(variant index, repeat)``).
        label: words for progress lines (``"eagle3-topk4 repeat 2"``).
        gpus: GPU slots it asks for (``tp_size x dp_size``; 0 for a CPU-only engine); per node for a unit
            spanning nodes.
        payload: what ``task`` gets (picklable).
        nnodes: the nodes its server spans (default 1). Above 1 the unit gets a placement group of one
            bundle of ``gpus`` per node (``STRICT_SPREAD``) and its task runs in bundle 0
            (:mod:`workbench.sweeps._fleet_multinode`).
    """

    key: Any
    label: str
    gpus: int
    payload: Any
    nnodes: int = 1


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where a unit ran, as its Ray worker saw it.

    Attributes:
        node_id: the Ray node's id.
        host: the node's IP address (``ray.util.get_node_ip_address()``).
        hostname: the node's host name.
        gpus: the GPU ids Ray gave the task (``ray.get_gpu_ids()``, as strings), which are
            also its ``CUDA_VISIBLE_DEVICES``.
        pid: the worker's process id.
        started_at: UTC wall-clock seconds (``time.time()``) when the task began on the worker.
    """

    node_id: str
    host: str
    hostname: str
    gpus: tuple[str, ...]
    pid: int
    started_at: float


@dataclasses.dataclass(frozen=True)
class UnitOutcome:
    """What became of one unit.

    Attributes:
        unit: the unit.
        placement: where its last attempt ran (None when it never returned).
        result: what ``task`` returned (None when it did not return).
        finished_at: UTC wall-clock seconds when the driver saw it finish.
        submitted_at: UTC wall-clock seconds when the driver submitted it (its last submission;
            ``placement.started_at - submitted_at`` is the fleet's overhead before the unit runs:
            Ray's scheduling, a worker process, unpickling).
        lost: True when the error is Ray's (its worker crashed or its node was lost, after the
            retries), False when ``task`` raised or the unit was cancelled.
        moved_from: with ``one_unit_per_host``, the hosts (node IPs) the unit was pinned to that were lost
            before or while it ran there, in order; each time the driver submitted it again to a free host
            (:func:`run_units`). Empty otherwise.
        error: why it did not return: a Ray system error after its retries (worker crash,
            lost node), an exception ``task`` raised, or ``"cancelled"``; None when it returned.
    """

    unit: FleetUnit
    placement: Placement | None
    result: Any
    finished_at: float
    error: str | None = None
    submitted_at: float | None = None
    lost: bool = False
    moved_from: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when ``task`` returned."""
        return self.error is None
