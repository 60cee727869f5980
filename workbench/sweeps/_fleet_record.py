"""A unit's writes, recorded on the Ray worker and replayed into the local run by the driver.

The unit on a fleet is the same code as on one host (it writes through a run writer's
``record_server``, ``annotate``, ``save_level``, ``save_failed_level`` and ``finish``); on
a worker it writes into a :class:`UnitRecorder` instead, which keeps the calls in order.
The recorder travels back to the driver as the task's result, and :func:`replay` applies
its calls to the local :class:`~workbench.store.RunWriter` of the variant's run: one run
per variant with today's layout, each level committed atomically by the store as it is
replayed, so ``runs list``, studies and ``report --from-runs`` read fleet runs unchanged.

Every request row a recorder keeps is tagged with where it was measured: ``fleet_host``
(the Ray node's IP) and ``fleet_gpus`` (its ``CUDA_VISIBLE_DEVICES``, e.g. ``"2,3"``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.bench import LevelResult, SweepPlan
from workbench.sweeps._run_sink import RunSink
from workbench.sweeps._sweep_outcomes import SweepFailure

__all__ = ["REPLAYED", "UnitRecorder", "replay"]

#: The writer methods a replay applies (``finish`` is the driver's: it knows every unit of the run).
REPLAYED = ("record_server", "annotate", "save_level", "save_failed_level")


class UnitRecorder:
    """Stands in for a run writer inside a unit on a Ray worker: keeps its writes, in order (a
    :class:`~workbench.sweeps._run_sink.RunSink`, as the local :class:`~workbench.store.RunWriter` is).

    Args:
        path: the local run directory the writes are meant for (named in error messages).
        pending: the ``(repeat, level_index)`` units this unit measures.
        tags: columns added to every request row (``{"fleet_host": ..., "fleet_gpus": ...}``).

    Attributes:
        calls: ``(method, args, kwargs)`` in the order the unit made them.
        status: what ``finish`` (or leaving the ``with`` block on an error) said.
        error: the error text a failing unit finished with.
        failure: what the task found when the unit's server failed (set by the task; None).
        ready_at: UTC wall-clock seconds (``time.time()``) of the first ``record_server`` call,
            i.e. when the unit's server was ready (None before).
    """

    def __init__(self, path: Path, pending: Sequence[tuple[int, int]], *, tags: Mapping[str, str]) -> None:
        self.path = path
        self._pending = [(int(r), int(i)) for r, i in pending]
        self._stored: list[tuple[int, int]] = []
        self.tags = dict(tags)
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.status: str | None = None
        self.error: str | None = None
        self.failure: SweepFailure | None = None
        self.ready_at: float | None = None

    @property
    def units_completed(self) -> list[tuple[int, int]]:
        """The units this recorder has saved."""
        return list(self._stored)

    def pending_units(self, plan: SweepPlan) -> list[tuple[int, int]]:
        """The units given at construction not saved yet, in the plan's order."""
        done = set(self._stored)
        return [u for u in plan.units() if u in self._pending and u not in done]

    def _tagged(self, level: LevelResult) -> LevelResult:
        requests = level.requests.assign(**self.tags) if len(level.requests) else level.requests
        return dataclasses.replace(level, requests=requests)

    def record_server(
        self,
        *,
        launch_command: str | Sequence[str] | None,
        client_location: str,
        server_info: Mapping[str, Any] | None,
        **extra: Any,
    ) -> None:
        """Keep :meth:`RunWriter.record_server <workbench.store.RunWriter.record_server>`'s call."""
        self.calls.append(
            (
                "record_server",
                (),
                {
                    "launch_command": launch_command,
                    "client_location": client_location,
                    "server_info": server_info,
                    **extra,
                },
            )
        )
        self.ready_at = self.ready_at or time.time()

    def annotate(self, **keys: Any) -> None:
        """Keep :meth:`RunWriter.annotate <workbench.store.RunWriter.annotate>`'s call."""
        self.calls.append(("annotate", (), keys))

    def save_level(self, level: LevelResult) -> None:
        """Keep a measured level (its rows tagged)."""
        self.calls.append(("save_level", (self._tagged(level),), {}))
        self._stored.append(level.unit)

    def save_failed_level(self, level: LevelResult, failure: Mapping[str, Any]) -> None:
        """Keep a level cut short by its server's failure (its rows tagged)."""
        self.calls.append(("save_failed_level", (self._tagged(level), dict(failure)), {}))

    def finish(self, *, status: str = "complete", error: str | None = None, server_info: Any = None) -> Path:
        """Note how the unit ended (the driver finishes the run)."""
        self.status, self.error = status, error
        return self.path

    def __enter__(self) -> UnitRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self.status is None:
            self.finish(
                status="failed" if exc is not None else "complete",
                error=None if exc is None else f"{type(exc).__name__}: {exc}",
            )


def replay(recorder: UnitRecorder, writer: RunSink) -> int:
    """Apply a recorder's writes to ``writer`` (a :class:`~workbench.store.RunWriter`), in order.

    Args:
        recorder: what the unit wrote on its worker.
        writer: the variant's local run, open (status ``running``).

    Returns:
        The number of levels saved.

    Raises:
        ConfigError, HostError (DiskFullError): as the writer's methods.
    """
    saved = 0
    for method, args, kwargs in recorder.calls:
        getattr(writer, method)(*args, **kwargs)
        saved += method == "save_level"
    return saved
