"""How much of a level's measured throughput a busy machine may have taken: the level's own distortion measures.

A simulated server measured in scaled real time loses throughput (never gains it) when the machine is busy: the
client's requests spend time outside the server (HTTP, a late event loop; x the time scale), the engine falls
behind its schedule, and a late client holds fewer requests open than its concurrency. Each level records all
three (``mean_e2e_over_server_ms``, ``sim_behind_schedule_wall_s``, ``achieved_concurrency``: the measures of
``workbench.bench.sim_schedule_problem``). A test comparing a level with the offline prediction adds their sum
to its quiet bound, so it holds under load without hiding a disagreement the level cannot explain.
"""

from __future__ import annotations

import math
from typing import Any


def explained_share(level: Any, time_scale: float) -> float:
    """The share of a level's throughput its own measures explain (a fraction, >= 0).

    Args:
        level: one row of a run's level table (a pandas Series whose ``name`` is the concurrency), or the
            mean over its repeats.
        time_scale: the level's simulated seconds per wall second (its ``duration_s`` is simulated).

    Returns:
        The share of the mean E2E spent outside the server, plus the share of the level's wall time the
        simulator fell behind its schedule, plus ``1 - achieved_concurrency / concurrency`` (a loaded client
        sends each next request late; on a quiet machine only the level's last requests draining, 0.2-0.4%).
    """
    outside = max(0.0, _number(level["mean_e2e_over_server_ms"])) / float(level["mean_e2e_ms"])
    behind = _number(level["sim_behind_schedule_wall_s"]) / (float(level["duration_s"]) / time_scale)
    short = max(0.0, 1.0 - float(level["achieved_concurrency"]) / float(level.name))
    return outside + behind + short


def _number(value: Any) -> float:
    """``value`` as a float, 0 for a missing one (None or NaN: the level did not measure it)."""
    number = float(value) if value is not None else 0.0
    return 0.0 if math.isnan(number) else number
