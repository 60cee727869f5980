"""Calibrate a physical profile: fit only its efficiency terms to measured points, and check it.

A *point* is one measured figure of one variant: output tok/s or mean per-request tok/s at a
concurrency, the saturation output tok/s (the highest over the workload's levels), or the
speedup of a variant over a baseline at a concurrency. :class:`Predictor` runs the offline
engine (virtual clock, the benchmark's closed loop, the profile's workload:
:mod:`workbench.sim._offline_figures`) for exactly the (variant, level) pairs the points need,
with each variant's own flags reaching the cost model. :func:`fit` solves for the profile's ``[fit]`` terms (at most three, and fewer than
the points) by Gauss-Newton on the log residuals; :func:`leave_one_out` refits without each
point in turn and predicts it. Validation points (``[validation]``) are only ever predicted.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from workbench.errors import ConfigError
from workbench.sim._offline_figures import level_figures, offline_level
from workbench.sim._predict import PredictionPlan, prediction_plan
from workbench.sim._profiles import SimProfile
from workbench.sim._roofline_terms import Efficiency
from workbench.sim._variant_flags import variant_config

#: Metrics a point may name.
METRICS = ("output_tok_s", "per_request_tok_s", "saturation_output_tok_s", "speedup")


# -- points -----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Point:
    """One measured figure.

    Attributes:
        name: a label for tables.
        variant: the variant measured (``data/variants/<variant>.toml``).
        metric: one of :data:`METRICS`.
        value: the measured value (tok/s, or a ratio for ``speedup``).
        concurrency: the level (None for ``saturation_output_tok_s``).
        baseline: the variant a ``speedup`` divides by.
        source: where the figure comes from.
    """

    name: str
    variant: str
    metric: str
    value: float
    concurrency: int | None = None
    baseline: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ConfigError(f"point {self.name!r}: metric {self.metric!r} is not one of {METRICS}")
        if self.metric != "saturation_output_tok_s" and self.concurrency is None:
            raise ConfigError(f"point {self.name!r}: {self.metric} needs a concurrency")
        if self.metric == "speedup" and not self.baseline:
            raise ConfigError(f"point {self.name!r}: speedup needs a baseline variant")
        if not self.value > 0:
            raise ConfigError(f"point {self.name!r}: value must be > 0, got {self.value}")


def profile_points(profile: SimProfile, section: str = "calibration") -> list[Point]:
    """The points of a profile's ``[calibration]`` (fitted) or ``[validation]`` (never fitted) section."""
    table = profile.calibration if section == "calibration" else profile.validation
    return [
        Point(**{k: v for k, v in p.items() if k in {f.name for f in dataclasses.fields(Point)}})
        for p in table.get("points", [])
    ]


def points_from_levels(levels: Any, *, metrics: Sequence[str] = ("output_tok_s",)) -> list[Point]:
    """Points from a tidy per-level table (the workbench's ``levels.parquet``, or a CSV/parquet path).

    Needs the columns ``variant`` and ``concurrency`` plus ``output_throughput_tok_s`` and/or
    ``mean_per_request_tok_s``; one point per row and metric.
    """
    import pandas as pd

    if isinstance(levels, (str, Path)):
        path = Path(levels)
        levels = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    column = {"output_tok_s": "output_throughput_tok_s", "per_request_tok_s": "mean_per_request_tok_s"}
    out = []
    for row in levels.itertuples(index=False):
        for metric in metrics:
            value = float(getattr(row, column[metric]))
            c = int(row.concurrency)
            out.append(
                Point(
                    f"{row.variant}_c{c}_{metric}",
                    str(row.variant),
                    metric,
                    value,
                    c,
                    source=str(getattr(row, "run_id", "imported table")),
                )
            )
    return out


# -- the predictor -------------------------------------------------------------------------------
class Predictor:
    """Predicts points with the offline engine, for any efficiency terms of one profile.

    Args:
        profile: a physical profile.
        plan: the workload the points were measured with (default: the profile's ``[workload]``,
            :func:`workbench.sim._predict.prediction_plan`: the one plan of offline predictions, its levels,
            requests per level, output tokens and seed checked as a sweep plan checks them).

    Raises:
        ConfigError: a profile without physics, or a ``[workload]`` the sweep plan refuses.
    """

    def __init__(self, profile: SimProfile, plan: PredictionPlan | None = None) -> None:
        if profile.physics is None:
            raise ConfigError(f"profile {profile.name} has no physics ([deployment]); nothing to calibrate")
        self.profile = profile
        self.plan = plan or prediction_plan(profile)
        self._configs: dict[str, Any] = {}
        self.levels_run = 0

    def _config(self, variant: str):
        if variant not in self._configs:
            self._configs[variant] = variant_config(self.profile, variant)
        return self._configs[variant]

    def level(self, variant: str, concurrency: int, efficiency: Efficiency) -> tuple[float, float]:
        """(output tok/s, mean per-request tok/s) of one variant at one level."""
        cfg = self._config(variant)
        plan = self.plan
        rows = offline_level(
            self.profile,
            cfg.spec,
            cost=self.profile.cost_for(cfg.args, efficiency=efficiency),
            concurrency=concurrency,
            prompt_lengths=plan.prompt_lengths,
            max_new_tokens=plan.max_new_tokens,
            num_requests=plan.requests(concurrency),
            seed=plan.seed,
            config=cfg,
        )
        self.levels_run += 1
        return level_figures(rows)

    def predict(self, points: Sequence[Point], efficiency: Efficiency) -> list[float]:
        """Each point's predicted value with these efficiency terms (one offline level per pair needed)."""
        cache: dict[tuple[str, int], tuple[float, float]] = {}

        def at(variant: str | None, c: int | None) -> tuple[float, float]:
            key = (cast(str, variant), cast(int, c))  # each metric's point names what it needs
            if key not in cache:
                cache[key] = self.level(*key, efficiency)
            return cache[key]

        out = []
        for p in points:
            if p.metric == "output_tok_s":
                out.append(at(p.variant, p.concurrency)[0])
            elif p.metric == "per_request_tok_s":
                out.append(at(p.variant, p.concurrency)[1])
            elif p.metric == "saturation_output_tok_s":
                out.append(max(at(p.variant, c)[0] for c in self.plan.concurrency_levels))
            else:
                out.append(at(p.variant, p.concurrency)[0] / at(p.baseline, p.concurrency)[0])
        return out


# -- fitting -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FitResult:
    """Outcome of :func:`fit`.

    Attributes:
        terms: the fitted efficiency terms.
        efficiency: all efficiency terms with the fitted values in.
        points: the points fitted.
        predicted: each point's prediction after the fit.
        iterations: Gauss-Newton iterations used.
    """

    terms: tuple[str, ...]
    efficiency: Efficiency
    points: tuple[Point, ...]
    predicted: tuple[float, ...]
    iterations: int

    @property
    def values(self) -> dict[str, float]:
        """The fitted terms' values."""
        return {t: getattr(self.efficiency, t) for t in self.terms}

    @property
    def residuals(self) -> list[float]:
        """predicted / measured - 1, per point."""
        return [q / p.value - 1.0 for p, q in zip(self.points, self.predicted)]

    @property
    def max_abs_residual(self) -> float:
        """The largest |residual|."""
        return max(abs(r) for r in self.residuals)


_UPPER = {
    "hbm_efficiency": 1.0,
    "flops_efficiency": 1.0,
    "interconnect_efficiency": 1.0,
    "cpu_overhead_ms": 1e3,
    "cpu_per_request_ms": 1e3,
    "layer_fixed_us": 1e4,
    "moe_layer_floor_us": 1e4,
    "routing_overlap": 0.99,
    "cpu_per_draft_step_ms": 1e3,
    "verify_mask_ns": 1e3,
}


def _efficiency(base: Efficiency, terms: Sequence[str], x: Iterable[float]) -> Efficiency:
    changes: dict[str, Any] = {t: min(math.exp(v), _UPPER[t]) for t, v in zip(terms, x)}
    return dataclasses.replace(base, **changes)


def fit(
    profile: SimProfile,
    points: Sequence[Point],
    *,
    terms: Sequence[str] | None = None,
    predictor: Predictor | None = None,
    start: Efficiency | None = None,
    max_iterations: int = 25,
    tol: float = 1e-4,
    exact_ok: bool = False,
) -> FitResult:
    """Fit the profile's ``[fit]`` terms (or ``terms``) to ``points``; nothing else moves.

    Minimises the sum of squared log residuals ``log(predicted / measured)`` with a damped
    Gauss-Newton method (finite-difference Jacobian in log parameters; common random numbers,
    so predictions are smooth in the terms). Efficiencies are capped at 1. ``exact_ok`` allows
    as many terms as points (an exact solve: what a leave-one-out refit of a profile with
    one point more than terms is).

    Raises:
        ConfigError: no terms, more than three, or not fewer terms than points (unless ``exact_ok``).
    """
    import numpy as np

    if profile.physics is None:
        raise ConfigError(
            f"profile {profile.name} has no [physics] table: only a physical profile's efficiency terms can be fitted"
        )
    terms = tuple(terms if terms is not None else profile.physics.fit_terms)
    if not terms or len(terms) > 3:
        raise ConfigError(f"fit {len(terms)} terms: need 1 to 3 ({terms})")
    if len(terms) > len(points) or (len(terms) == len(points) and not exact_ok):
        raise ConfigError(
            f"{len(terms)} free terms and {len(points)} points: a fit needs fewer terms than "
            "points, or it only memorises them"
        )
    predictor = predictor or Predictor(profile)
    base = start or profile.physics.efficiency
    goal = np.log([p.value for p in points])
    x = np.log([max(getattr(base, t), 1e-6) for t in terms])

    def resid(xv: np.ndarray) -> tuple[np.ndarray, list[float]]:
        pred = predictor.predict(points, _efficiency(base, terms, xv))
        return np.log(pred) - goal, pred

    r, pred = resid(x)
    it, lam, h = 0, 1e-3, 0.02
    for it in range(1, max_iterations + 1):
        jac = np.empty((len(points), len(terms)))
        for j in range(len(terms)):
            dx = np.zeros_like(x)
            dx[j] = h
            jac[:, j] = (resid(x + dx)[0] - r) / h
        improved = False
        for _ in range(6):
            a = jac.T @ jac + lam * np.diag(np.diag(jac.T @ jac) + 1e-9)
            step = np.clip(np.linalg.solve(a, -jac.T @ r), -1.0, 1.0)
            r_new, pred_new = resid(x + step)
            if r_new @ r_new < r @ r:
                gain = r @ r - r_new @ r_new
                x, r, pred, lam, improved = x + step, r_new, pred_new, max(lam / 3, 1e-6), True
                break
            lam *= 4
        if not improved or gain < tol * max(r @ r, 1e-12) or r @ r < 1e-10:
            break
    x = np.array([min(v, math.log(_UPPER[t])) for t, v in zip(terms, x)])
    return FitResult(terms, _efficiency(base, terms, x), tuple(points), tuple(pred), it)


def leave_one_out(
    profile: SimProfile,
    points: Sequence[Point],
    *,
    terms: Sequence[str] | None = None,
    predictor: Predictor | None = None,
    start: Efficiency | None = None,
) -> list[dict[str, Any]]:
    """For each point: refit without it, predict it. One row per point.

    Row keys: ``point``, ``measured``, ``loo_predicted``, ``loo_error`` (predicted / measured - 1)
    and ``loo_<term>`` (the refit's value of each term).

    A profile with one point more than terms refits each time on as many points as terms
    (an exact solve); the left-out point is still a true out-of-sample prediction.

    Raises:
        ConfigError: fewer points than ``len(terms) + 1``.
    """
    predictor = predictor or Predictor(profile)
    rows = []
    for i, p in enumerate(points):
        rest = [q for j, q in enumerate(points) if j != i]
        result = fit(profile, rest, terms=terms, predictor=predictor, start=start, exact_ok=True)
        predicted = predictor.predict([p], result.efficiency)[0]
        row = {"point": p.name, "measured": p.value, "loo_predicted": predicted, "loo_error": predicted / p.value - 1.0}
        row.update({f"loo_{t}": v for t, v in result.values.items()})
        rows.append(row)
    return rows


def write_efficiency(path: Path, values: dict[str, float]) -> None:
    """Replace the fitted terms' values in a profile file's ``[efficiency]`` table, keeping the rest."""
    text = path.read_text()
    head, sep, rest = text.partition("[efficiency]\n")
    if not sep:
        raise ConfigError(f"{path} has no [efficiency] table to write the fit into")
    body, nxt, tail = rest.partition("\n[")
    for name, value in values.items():
        line = f"{name} = {value:.6g}"
        body, n = re.subn(
            rf"(?m)^{re.escape(name)}\s*=\s*[^#\n]*?(\s*#.*)?$", lambda m: line + (m.group(1) or ""), body
        )
        if n == 0:
            body = line + "\n" + body
    path.write_text(head + sep + body + nxt + tail)
