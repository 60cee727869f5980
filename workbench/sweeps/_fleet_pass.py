"""A sweep on a fleet (docs/FLEET.md): each (variant, repeat) unit as a Ray task, replayed into the local runs.

The unit is the same pass as on one host: :func:`_fleet_unit` runs
:func:`~workbench.sweeps._sweep_pass.measure_pending` on a Ray worker into a
:class:`~workbench.sweeps._fleet_record.UnitRecorder`, and :func:`benchmark_on_fleet` replays each finished
unit into the variant's local run (:func:`~workbench.sweeps._fleet_record.replay`), records where it ran
(manifest ``fleet_units``) and finishes every run once the units are done.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.errors import BenchmarkError, ServerError
from workbench.report import report_progress
from workbench.store import RunStatus, RunWriter, sweep_identity
from workbench.sweeps._fleet import run_units
from workbench.sweeps._fleet_connect import Fleet, connect
from workbench.sweeps._fleet_prestart import Prestart
from workbench.sweeps._fleet_units import FleetUnit, Placement, UnitOutcome
from workbench.sweeps._fleet_hosts import host_summary, unit_entry, unit_failure
from workbench.sweeps._fleet_multinode import rank_group
from workbench.sweeps._fleet_record import UnitRecorder, replay
from workbench.sweeps._sweep_outcomes import SweepFailure, SweepResume, failure_of
from workbench.sweeps._sweep_pass import measure_pending, open_sweep_run
from workbench.sweeps._sweep_prep import VariantSweep
from workbench.variants import apply_parameters, gpus_per_node, nnodes_of

__all__ = ["TRANSIENT_KINDS", "TransientUnitFailure", "benchmark_on_fleet"]

#: Server failure kinds (``workbench.servers``) that another attempt may not meet: the port taken between
#: asking for a free one and binding it, a lease that ran out while the worker was starved. Retried by Ray.
TRANSIENT_KINDS = frozenset({"port_in_use", "lease_expired"})


@dataclasses.dataclass(frozen=True)
class _FleetWork:
    """What one unit's Ray task gets: the validated sweep, the repeat and its units, the local run."""

    sweep: VariantSweep
    repeat: int
    units: tuple[tuple[int, int], ...]
    run_path: Path


class TransientUnitFailure(Exception):
    """A unit's server failed in a way another attempt may not meet (:data:`TRANSIENT_KINDS`): Ray retries it."""


def _fleet_unit(work: _FleetWork, placement: Placement) -> UnitRecorder:
    """The Ray task of one unit: measure ``work`` on this node with the GPUs Ray gave it.

    Returns:
        The recorder of the unit's writes; ``recorder.failure`` is a :class:`SweepFailure`
        when its server failed (classified, log tail attached; not retried), else None.

    Raises:
        TransientUnitFailure: the server failed transiently (Ray runs the unit again).
    """
    sweep = work.sweep
    # a variant spanning nodes: ranks > 0 start on the other nodes of the unit's placement group, rank 0 is
    # this unit's server (its per-node command); one node: the group is the variant itself
    with rank_group(
        sweep.variant, placement, engine=sweep.engine.name, sim_options=sweep.sim_options(work.repeat)
    ) as group:
        recorder = UnitRecorder(
            work.run_path,
            work.units,
            tags={"fleet_host": placement.host, "fleet_gpus": ",".join(placement.gpus), **group.row_tags(placement)},
        )
        variant = group.variant
        variant = apply_parameters(variant, gpus=",".join(placement.gpus)) if placement.gpus else variant
        here = dataclasses.replace(
            sweep,
            variant=variant,
            host="local",
            where="local",
            progress=False,
            on_server=group.adopt if group.nnodes > 1 else None,
        )
        try:
            measure_pending(here, recorder, None, [work.repeat])
        except (ServerError, BenchmarkError) as exc:
            failure = group.explain(failure_of(here.variant.name, work.run_path, exc))
            if failure.kind in TRANSIENT_KINDS:
                raise TransientUnitFailure(failure.message) from None
            recorder.failure = failure
    return recorder


def _on_fleet(sweep: VariantSweep, fleet: Fleet) -> VariantSweep:
    """``sweep`` as the driver keeps it: its run's host is the fleet, and its identity says so (a fleet
    sweep resumes fleet runs, whatever the cluster's address is today)."""
    return dataclasses.replace(
        sweep, host=fleet.name, identity=sweep_identity({"sweep": sweep.identity, "fleet": True}), on_fleet=True
    )


def _units(sweeps: Sequence[VariantSweep], writers: Sequence[RunWriter]) -> list[FleetUnit]:
    """One unit per (variant, repeat) with levels not on disk, repeat by repeat, variants alternating their
    order (as one host runs them), so the first units placed are a fair mix."""
    units = []
    repeats = sweeps[0].plan.repeats
    for repeat in range(repeats):
        order = range(len(sweeps)) if repeat % 2 == 0 else reversed(range(len(sweeps)))
        for i in order:
            todo = tuple(u for u in writers[i].pending_units(sweeps[i].plan) if u[0] == repeat)
            if not todo:
                continue
            name = sweeps[i].variant.name
            label = name if repeats == 1 else f"{name} repeat {repeat + 1}/{repeats}"
            variant = sweeps[i].variant  # a unit spanning nodes asks for its GPUs per node, on nnodes nodes
            units.append(
                FleetUnit(
                    key=(i, repeat),
                    label=label,
                    gpus=gpus_per_node(variant),
                    payload=_FleetWork(sweeps[i], repeat, todo, writers[i].path),
                    nnodes=nnodes_of(variant),
                )
            )
    return units


def benchmark_on_fleet(
    sweeps: Sequence[VariantSweep],
    fleet: str | Fleet,
    *,
    fresh: bool,
    on_failure: Callable[[SweepFailure], None] | None,
    on_resume: Callable[[SweepResume], None] | None,
    progress: bool,
) -> list[Path]:
    """Measure ``sweeps`` (validated by :func:`~workbench.sweeps._sweep_prep.prepare_sweep`) on a Ray cluster.

    Every unit not on disk is submitted at once; Ray runs as many as the GPU slots allow
    (one per host at a time with ``Fleet(one_unit_per_host=True)``). A unit whose server fails
    is reported (a :class:`UserWarning`, ``on_failure``) with its classification and log tail
    and its levels measured before are kept; the variant's other units go on. The runs are
    finished ``complete``, ``incomplete`` (units left: cancelled) or ``failed``.

    Returns:
        The run directories, in the order of ``sweeps``.

    Raises:
        ConfigError: Ray is missing, a unit needs more GPUs than any node has, or a run is
            being written by another sweep.
        HostError: the cluster cannot be reached; DiskFullError: no room for a level.
        KeyboardInterrupt: Ctrl-C, after every unit was cancelled (their servers stopped).
    """
    fleet = Fleet.of(fleet)
    connect(fleet)  # before any run is opened: a cluster that does not answer leaves no empty run
    kept = [_on_fleet(s, fleet) for s in sweeps]
    writers: list[RunWriter] = []
    try:
        for s in kept:
            writers.append(open_sweep_run(s, fresh=fresh, on_open=on_resume).writer)
            writers[-1].annotate(
                fleet={
                    "address": fleet.address,
                    "one_unit_per_host": fleet.one_unit_per_host,
                    "max_retries": fleet.max_retries,
                }
            )
        return _run_fleet(kept, writers, fleet, on_failure=on_failure, progress=progress)
    finally:
        for s, w in zip(kept, writers):
            if w.manifest.get("status") == "running":
                w.finish(status="incomplete", error="the fleet sweep was interrupted; run it again to resume")


class _UnitsDone:
    """``run_units``' ``on_done``: each finished unit replayed into its variant's run, recorded in the run's
    ``fleet_units``, reported (a progress line, the bar), and, when it failed, warned about and told to
    ``on_failure``. Keeps the outcomes and each variant's failures for the end of the sweep."""

    def __init__(
        self,
        sweeps: Sequence[VariantSweep],
        writers: Sequence[RunWriter],
        *,
        total: int,
        bar: Any,
        on_failure: Callable[[SweepFailure], None] | None,
    ) -> None:
        self.sweeps, self.writers, self.total, self.bar, self.on_failure = sweeps, writers, total, bar, on_failure
        #: Each run's ``fleet_units`` from earlier runs of this sweep, kept ahead of this sweep's.
        self.earlier = [list(w.manifest.get("fleet_units") or []) for w in writers]
        self.outcomes: list[UnitOutcome] = []
        self.failures: dict[int, list[SweepFailure]] = {}

    def entries(self, i: int) -> list[dict[str, Any]]:
        """Variant ``i``'s ``fleet_units``: earlier runs' units, then this sweep's (co-tenants as known now)."""
        return self.earlier[i] + [unit_entry(o, self.outcomes) for o in self.outcomes if o.unit.key[0] == i]

    def __call__(self, outcome: UnitOutcome) -> None:
        i = outcome.unit.key[0]
        self.outcomes.append(outcome)
        recorder = outcome.result
        if recorder is not None:
            replay(recorder, self.writers[i])
        failure = recorder.failure if recorder is not None else None
        failed = unit_failure(outcome)
        if outcome.error is not None and failed is not None and failed[0] != "cancelled":  # lost, or it raised
            failure = SweepFailure(
                variant=self.sweeps[i].variant.name,
                run=self.writers[i].path,
                kind=failed[0],
                message=f"{outcome.unit.label}: {failed[1]}",
            )
        self.writers[i].annotate(fleet_units=self.entries(i))
        where = outcome.placement.host if outcome.placement else "nowhere"
        report_progress(
            f"{outcome.unit.label}: {'failed' if failure else 'done'} on {where} "
            f"({len(self.outcomes)}/{self.total} units)"
        )
        self.bar.update(1)
        self.bar.set_postfix_str(" ".join(f"{r['host']}:{r['units']}" for r in host_summary(self.outcomes)))
        if failure is not None:
            self.failures.setdefault(i, []).append(failure)
            warnings.warn(
                f"{failure.variant}: a unit failed ({failure.kind}) on {where}; the other units go on. "
                f"{failure.message}",
                stacklevel=4,
            )
            if self.on_failure is not None:
                self.on_failure(failure)


def _run_fleet(
    sweeps: Sequence[VariantSweep],
    writers: Sequence[RunWriter],
    fleet: Fleet,
    *,
    on_failure: Callable[[SweepFailure], None] | None,
    progress: bool,
) -> list[Path]:
    """Run the units of ``sweeps`` not stored in ``writers`` (their open runs) on ``fleet``; finish each run."""
    from tqdm.auto import tqdm

    units = _units(sweeps, writers)
    bar = tqdm(total=len(units), disable=not progress or not units, unit="unit", desc="fleet")
    done = _UnitsDone(sweeps, writers, total=len(units), bar=bar, on_failure=on_failure)
    try:
        run_units(
            units,
            _fleet_unit,
            retry_exceptions=(TransientUnitFailure,),
            fleet=fleet,
            on_done=done,
            on_prestart=lambda warm: _prestarted(warm, writers),
        )
    finally:
        bar.close()
    for i, w in enumerate(writers):  # co-tenants again, now that every unit's interval is known
        if any(o.unit.key[0] == i for o in done.outcomes):
            w.annotate(fleet_units=done.entries(i))
    for row in host_summary(done.outcomes):
        report_progress(
            f"fleet host {row['host']}: {row['units']} unit(s) done, {row['failed']} failed, "
            f"GPUs {row['gpus_used'] or '-'}, busy {row['busy_s']:.0f} s"
        )
    for i, (s, w) in enumerate(zip(sweeps, writers)):
        if w.pending_units(s.plan):
            status: RunStatus = "failed" if i in done.failures else "incomplete"
            w.finish(
                status=status, error="; ".join(f.message.splitlines()[0] for f in done.failures.get(i, [])) or None
            )
        else:
            w.finish(status="complete")
    return [w.path for w in writers]


def _prestarted(warm: Prestart, writers: Sequence[RunWriter]) -> None:
    """Record the workers warmed before the first submission (manifest ``fleet_prestart``) and say so."""
    for w in writers:
        w.annotate(
            fleet_prestart={
                "wanted": warm.wanted,
                "warmed": warm.warmed,
                "seconds": warm.seconds,
                "workers": [list(x) for x in warm.workers],
            }
        )
    report_progress(
        f"fleet: {warm.warmed} of {warm.wanted} worker(s) warmed in {warm.seconds:.1f} s before the "
        "first unit was submitted"
    )
