"""What one server's pass writes to: a :class:`RunSink`, the contract both run writers keep.

A pass (:func:`workbench.sweeps._sweep_pass.measure_pending`) and its level pipeline
(:mod:`workbench.sweeps._sweep_levels`) write to a run without knowing which kind it is:

- on one host, the variant's :class:`~workbench.store.RunWriter` (each call writes the run's files);
- on a fleet's Ray worker, a :class:`~workbench.sweeps._fleet_record.UnitRecorder`, which keeps the calls
  in order and is replayed into the local run writer by the driver (:func:`~workbench.sweeps._fleet_record.replay`).

Both implement every member below; mypy checks it where a pass is handed either one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from workbench.bench import LevelResult, SweepPlan
from workbench.store import RunStatus

__all__ = ["RunSink"]


class RunSink(Protocol):
    """A run being written by one pass (a :class:`~workbench.store.RunWriter` or a fleet unit's recorder).

    Members (the seven a pass uses, and the ``with`` block that finishes the run on an error):

    - ``path``: the run directory (for a recorder: the local run its writes are meant for).
    - ``pending_units(plan)``: the plan's ``(repeat, level_index)`` units not stored yet, in the plan's order.
    - ``record_server(...)``: the server the pass measures now (launch command, client location,
      ``/server_info``, other manifest keys such as ``server_process``).
    - ``annotate(**keys)``: more manifest keys (never a standard one).
    - ``save_level(level)``: a measured level, stored as a unit.
    - ``save_failed_level(level, failure)``: a level its server's failure cut short, kept apart (not a unit).
    - ``finish(status=, error=, server_info=)``: how the pass ended; returns :attr:`path`.
    - ``with run:`` finishes the run as ``failed`` (or ``interrupted`` on Ctrl-C) when the block raises.
    """

    @property
    def path(self) -> Path:
        """The run directory."""
        ...

    def pending_units(self, plan: SweepPlan) -> list[tuple[int, int]]:
        """The units of ``plan`` not stored yet, in the plan's order."""
        ...

    def record_server(
        self,
        *,
        launch_command: str | Sequence[str] | None,
        client_location: str,
        server_info: Mapping[str, Any] | None,
        **extra: Any,
    ) -> None:
        """Record the server measured now."""
        ...

    def annotate(self, **keys: Any) -> None:
        """Add non-standard manifest keys."""
        ...

    def save_level(self, level: LevelResult) -> None:
        """Store one measured level."""
        ...

    def save_failed_level(self, level: LevelResult, failure: Mapping[str, Any]) -> None:
        """Keep a level cut short by its server's failure apart from the measured ones."""
        ...

    def finish(
        self, *, status: RunStatus = "complete", error: str | None = None, server_info: Mapping[str, Any] | None = None
    ) -> Path:
        """Stamp how the run (or the unit) ended; returns the run directory."""
        ...

    def __enter__(self) -> RunSink: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
