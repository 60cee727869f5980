"""The closed-loop part of a sweep plan, for a sweep run on a model instead of a server.

The simulator's offline predictions and its calibration take a :class:`ClosedLoop`: the sweep plan's
levels, requests rule, output tokens and seed, with its defaults, checks and messages
(:mod:`workbench.bench._plan_checks`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from workbench.bench._plan import DEFAULT_CONCURRENCY_LEVELS, DEFAULT_MAX_NEW_TOKENS, default_requests_per_level
from workbench.bench._plan_checks import (
    _concurrency_levels,
    _requests_count,
    _requests_reach_concurrency,
    _seed,
    _tokens,
)
from workbench.bench._plan_load import _temperature

__all__ = ["ClosedLoop"]


@dataclasses.dataclass(frozen=True)
class ClosedLoop:
    """The closed-loop part of a :class:`~workbench.bench._plan.SweepPlan` (levels, requests, output tokens,
    seed), for a sweep that is run on a model instead of a server (the simulator's offline predictions and its
    calibration).

    The same names, defaults, checks and messages as :meth:`SweepPlan.build
    <workbench.bench._plan.SweepPlan.build>`, and one more use of the requests rule: :meth:`requests` answers
    for any concurrency (a calibration point may sit between the levels).

    Attributes:
        concurrency_levels: requests in flight per level, in order (checked by
            :func:`~workbench.bench._plan_checks.check_concurrency_levels`).
        requests_per_level: one count for every level (at least each level's concurrency, at most
            :data:`~workbench.bench._plan_checks.MAX_REQUESTS_PER_LEVEL`), or None for
            :func:`default_requests_per_level`.
        max_new_tokens: output tokens per request, in [1, :data:`~workbench.bench._plan_checks.MAX_TOKENS`].
        seed: seeds the prompt schedule.

    Raises:
        ConfigError: on construction, naming the first invalid field (the sweep plan's message).
    """

    concurrency_levels: tuple[int, ...] = DEFAULT_CONCURRENCY_LEVELS
    requests_per_level: int | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    seed: int = 0

    def __post_init__(self) -> None:
        put = functools.partial(object.__setattr__, self)
        put("concurrency_levels", _concurrency_levels(self.concurrency_levels))
        if self.requests_per_level is not None:
            put("requests_per_level", _requests_count(self.requests_per_level, "every level"))
            _requests_reach_concurrency(
                self.concurrency_levels, [self.requests_per_level] * len(self.concurrency_levels)
            )
        put("max_new_tokens", _tokens("max_new_tokens", self.max_new_tokens, "output tokens per request"))
        put("seed", _seed(self.seed))

    def requests(self, concurrency: int) -> int:
        """Requests a level at ``concurrency`` sends: the count, else :func:`default_requests_per_level`.

        Raises:
            ConfigError: a count below ``concurrency`` (the sweep plan's refusal: such a level never has
                ``concurrency`` requests in flight).
        """
        if self.requests_per_level is None:
            return default_requests_per_level(concurrency)
        _requests_reach_concurrency([concurrency], [self.requests_per_level])
        return self.requests_per_level

    @staticmethod
    def check_temperature(value: Any) -> float:
        """A request temperature as the sweep plan checks it (a finite number >= 0; 0.0: greedy).

        Raises:
            ConfigError: anything else, with the sweep plan's message.
        """
        return _temperature(value)
