"""What a level is: its load (concurrency or request rate) and its workload.

A closed-loop level holds ``concurrency`` requests in flight; an open-loop level sends
requests at ``request_rate_req_s`` (Poisson arrivals), with or without a cap on requests in
flight (sglang.bench_serving's default mode is open loop with no cap: ``max_concurrency``
null). A study compares levels on one of the two axes, never both: :func:`load_axis` says
which, and refuses a table that mixes them.

Two levels are repeats of each other only when they ran the same workload
(``workbench.bench.workload_labels`` names it); :func:`choose_workload` picks the one a
study shows when runs hold several.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import pandas as pd

from workbench.errors import ConfigError

__all__ = ["LOAD_AXES", "LoadAxis", "choose_workload", "load_axis", "load_modes"]

LoadColumn = Literal["concurrency", "request_rate_req_s"]


@dataclasses.dataclass(frozen=True)
class LoadAxis:
    """One load axis: the level column, the words for it, and how a value reads.

    Attributes:
        column: the level column (``concurrency`` or ``request_rate_req_s``).
        words: the noun in sentences (``"concurrency"``, ``"request rate"``).
        title: a chart axis title with its unit.
        unit: appended to a value in text (``""``, ``" req/s"``).
    """

    column: LoadColumn
    words: str
    title: str
    unit: str

    def text(self, value: float) -> str:
        """``"concurrency 4"`` or ``"4 req/s"`` / ``"0.5 req/s"`` (request rates keep their decimals)."""
        if self.column == "concurrency":
            return f"concurrency {int(value)}"
        return f"{value:g}{self.unit}"

    def value(self, value: float) -> float | int:
        """A level's value as stored in tables: an int concurrency, a float request rate."""
        return int(value) if self.column == "concurrency" else float(value)


#: The two axes a study can compare levels on, by column.
LOAD_AXES: dict[str, LoadAxis] = {
    "concurrency": LoadAxis("concurrency", "concurrency", "Concurrency (requests in flight)", ""),
    "request_rate_req_s": LoadAxis("request_rate_req_s", "request rate", "Request rate (req/s, open loop)", " req/s"),
}


def load_modes(levels: pd.DataFrame) -> pd.Series:
    """Each row's loop: ``"closed"`` or ``"open"``.

    From ``mode`` where a row has it (``"trace"`` counts as open); otherwise a finite
    ``concurrency`` with an infinite or missing ``request_rate_req_s`` is closed, anything
    else open.
    """
    conc = pd.to_numeric(levels.get("concurrency", pd.Series(math.nan, index=levels.index)), errors="coerce")
    rate = pd.to_numeric(levels.get("request_rate_req_s", pd.Series(math.nan, index=levels.index)), errors="coerce")
    inferred = pd.Series(
        ["closed" if c == c and not (r == r and math.isfinite(r)) else "open" for c, r in zip(conc, rate)],
        index=levels.index,
    )
    if "mode" not in levels:
        return inferred
    mode = levels["mode"].where(levels["mode"].isin(["closed", "open"]), None)
    mode = mode.where(levels["mode"] != "trace", "open")
    return mode.fillna(inferred)


def load_axis(levels: pd.DataFrame) -> LoadAxis:
    """The one load axis of a level table (:data:`LOAD_AXES`).

    Closed-loop rows are compared on ``concurrency``; open-loop rows on ``request_rate_req_s``
    (a cap on requests in flight, where there is one, is kept as the ``concurrency`` column
    but is not the axis). An empty table is on concurrency.

    Raises:
        ConfigError: the table mixes closed- and open-loop rows (the message names which
            variants are which and how to split them), or an open-loop row has no finite
            request rate to place it.
    """
    if not len(levels):
        return LOAD_AXES["concurrency"]
    modes = load_modes(levels)
    if modes.nunique() > 1:
        names = levels["variant"] if "variant" in levels else pd.Series("?", index=levels.index)
        closed = sorted(set(names[modes == "closed"].astype(str)))
        opened = sorted(set(names[modes == "open"].astype(str)))
        raise ConfigError(
            f"these levels mix closed-loop runs (fixed concurrency: {', '.join(closed)}) and open-loop runs "
            f"(request rate: {', '.join(opened)}); a closed-loop level and an open-loop one are not the same load, "
            "so they cannot share a chart axis or be compared. Study them apart: load the closed-loop runs in one "
            "study and the open-loop runs in another (wb.load_study([...]) or `workbench report --from-runs` "
            "once for each set)"
        )
    if modes.iloc[0] == "closed":
        return LOAD_AXES["concurrency"]
    rate = pd.to_numeric(levels.get("request_rate_req_s", pd.Series(math.nan, index=levels.index)), errors="coerce")
    unplaced = ~rate.map(lambda r: r == r and math.isfinite(r) and r > 0)
    if unplaced.any():
        rows = levels[unplaced]
        where = (
            ", ".join(sorted(set(rows["variant"].astype(str)))) if "variant" in rows else f"{int(unplaced.sum())} rows"
        )
        raise ConfigError(
            f"open-loop levels of {where} have no finite request rate (all requests sent at once, or a trace), "
            "so they have no place on a request-rate axis; study them without those levels, or re-measure at "
            "finite rates (request_rates=[...]). Levels that sent every request at once (an offline throughput "
            "run) compare workload by workload instead: workbench.imports.offline_workloads(levels, "
            "baseline=...) is that table, with each variant's ratio to the baseline per workload "
            "(`workbench import FILE --dry-run` prints it)"
        )
    return LOAD_AXES["request_rate_req_s"]


def choose_workload(labels: pd.Series, variants: pd.Series, wanted: str | None = None) -> tuple[str, list[str]]:
    """The workload a study shows, and the others its rows hold.

    Args:
        labels: each row's workload (``workbench.bench.workload_labels``).
        variants: each row's variant, aligned with ``labels``.
        wanted: the workload asked for; None: the one the most variants measured, then the one
            with the most rows, then the first by name.

    Returns:
        ``(chosen, others)``, ``others`` sorted.

    Raises:
        ConfigError: ``wanted`` is not among the rows' workloads (the message lists them), or
            there are no rows.
    """
    names = sorted(set(labels))
    if not names:
        raise ConfigError("no level rows: nothing to choose a workload from")
    if wanted is not None:
        if wanted not in names:
            raise ConfigError(
                f"workload {wanted!r} is not in these runs; they hold: " + "; ".join(repr(n) for n in names)
            )
        chosen = wanted
    else:
        frame = pd.DataFrame({"workload": labels.to_numpy(), "variant": variants.to_numpy()})
        stats = frame.groupby("workload").agg(variants=("variant", "nunique"), rows=("variant", "size"))
        stats = stats.reset_index().sort_values(["variants", "rows", "workload"], ascending=[False, False, True])
        chosen = str(stats["workload"].iloc[0])
    return chosen, [n for n in names if n != chosen]
