"""Timebase: one injectable clock per benchmark run, mapped to engine time and epoch time.

Every timestamp the load generator takes comes from one :class:`Timebase`, so
durations share one monotonic clock, absolute times share one epoch anchor, and
the simulated engine's speed-up (``time_scale``) is applied in exactly one place.

``time_scale=s`` means the engine's clock runs ``s`` times faster than wall time
(1 s of wall time = ``s`` s of simulated time). Durations in request rows are then
multiplied by ``s`` so they read in the engine's time; absolute epoch timestamps
stay real wall-clock instants.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

from workbench.errors import ConfigError

__all__ = ["Clock", "Timebase"]

#: A monotonic clock: a callable returning seconds (only differences matter).
Clock = Callable[[], float]


@dataclasses.dataclass(frozen=True)
class Timebase:
    """A monotonic clock plus the anchors that turn its readings into row values.

    Attributes:
        clock: monotonic seconds (default :func:`time.perf_counter`, as in
            sglang ``bench_serving``).
        origin: ``clock()`` reading at the run's start (seconds).
        epoch_at_origin: Unix epoch seconds at that same instant.
        time_scale: engine seconds per wall second (1.0 for a real server).
    """

    clock: Clock
    origin: float
    epoch_at_origin: float
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if not (isinstance(self.time_scale, (int, float)) and math.isfinite(self.time_scale) and self.time_scale > 0):
            raise ConfigError(f"time_scale must be a finite number > 0, got {self.time_scale!r}")

    @classmethod
    def start(
        cls,
        *,
        clock: Clock = time.perf_counter,
        wall_clock: Clock = time.time,
        time_scale: float = 1.0,
    ) -> "Timebase":
        """Anchor a new timebase at the current instant.

        Args:
            clock: monotonic clock in seconds.
            wall_clock: epoch clock in seconds (read once, for the anchor).
            time_scale: engine seconds per wall second (> 0).

        Raises:
            ConfigError: ``time_scale`` is not a finite positive number.
        """
        origin = clock()
        return cls(clock=clock, origin=origin, epoch_at_origin=wall_clock(), time_scale=float(time_scale))

    def now(self) -> float:
        """Current raw clock reading (seconds, clock units)."""
        return self.clock()

    def duration_ms(self, t0: float, t1: float) -> float:
        """Engine-time milliseconds between two raw readings: ``(t1 - t0) * 1000 * time_scale``."""
        return (t1 - t0) * 1000.0 * self.time_scale

    def run_s(self, t: float) -> float:
        """Engine-time seconds from the run's origin to raw reading ``t``."""
        return (t - self.origin) * self.time_scale

    def epoch_s(self, t: float) -> float:
        """Real Unix epoch seconds of raw reading ``t`` (not scaled)."""
        return self.epoch_at_origin + (t - self.origin)
