"""Calibrate a simulator profile's cost model to measured figures (offline, seconds).

The four figures of the seed investigation (data/profiles/seed-pcie-8gpu.toml, [calibration]) are:
per-request tok/s at concurrency 1 for baseline and EAGLE-3, and the saturation
output throughput (highest total output tok/s over the swept levels) for each.
:func:`figures` computes them from an offline sweep that mirrors the benchmark's
closed loop (the bench's default levels and requests per level,
:data:`workbench.bench.DEFAULT_CONCURRENCY_LEVELS` and
:func:`workbench.bench.default_requests_per_level`); :func:`fit_cost` solves for four cost parameters with a damped Newton
iteration in log space (finite-difference Jacobian, common random numbers).
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from workbench.sim._cost_model import CostModel
from workbench.sim._engine import EngineCore
from workbench.bench import DEFAULT_CONCURRENCY_LEVELS, default_requests_per_level
from workbench.bench import prompt_schedule
from workbench.bench import summarize_level
from workbench.sim._offline import run_closed_loop
from workbench.sim._profiles import SimProfile
from workbench.sim._spec import EAGLE_MAX_RUNNING_REQUESTS, SpecConfig

#: The figure names, in the order of the calibration targets in a profile.
FIGURES = (
    "baseline_c1_per_request_tok_s",
    "eagle3_c1_per_request_tok_s",
    "baseline_saturation_output_tok_s",
    "eagle3_saturation_output_tok_s",
)

#: Cost parameters :func:`fit_cost` solves for by default.
FIT_PARAMS = ("base_ms", "per_token_ms", "spec_overhead_ms", "spec_per_seq_ms")


def seed_eagle3_spec() -> SpecConfig:
    """The seed investigation's EAGLE-3 settings: topk 4, num_steps 2, 16 draft tokens, spec v1."""
    return SpecConfig("EAGLE3", num_steps=2, topk=4, num_draft_tokens=16, spec_v2=False)


def offline_level(
    profile: SimProfile,
    spec: SpecConfig,
    *,
    cost: CostModel | None = None,
    concurrency: int,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    num_requests: int,
    seed: int = 0,
    max_running_requests: int | None = None,
) -> list[dict]:
    """Request rows of one simulated closed-loop level (virtual clock)."""
    mrr = max_running_requests or (EAGLE_MAX_RUNNING_REQUESTS if spec.enabled else 4096)
    engine = EngineCore(
        cost=cost or profile.cost,
        acceptance=profile.acceptance,
        spec=spec,
        max_running_requests=mrr,
        rng=random.Random(seed * 1_000_003 + concurrency),
    )
    order = prompt_schedule(list(prompt_lengths), num_requests, rng=random.Random(seed))
    return run_closed_loop(engine, prompt_tokens=order, concurrency=concurrency, max_new_tokens=max_new_tokens)


def level_stats(rows: list[dict]) -> tuple[float, float]:
    """(output tok/s, mean per-request tok/s) of request rows, as the benchmark summarizes them."""
    summary = summarize_level(pd.DataFrame(rows))
    return summary["output_throughput_tok_s"], summary["mean_per_request_tok_s"]


def sweep_stats(
    profile: SimProfile,
    spec: SpecConfig,
    *,
    cost: CostModel | None = None,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    levels: Sequence[int] = DEFAULT_CONCURRENCY_LEVELS,
    requests: Callable[[int], int] = default_requests_per_level,
    seed: int = 0,
) -> dict[int, tuple[float, float]]:
    """``{concurrency: (output tok/s, mean per-request tok/s)}`` of an offline sweep."""
    return {
        c: level_stats(
            offline_level(
                profile, spec, cost=cost, concurrency=c, prompt_lengths=prompt_lengths,
                max_new_tokens=max_new_tokens, num_requests=requests(c), seed=seed,
            )
        )
        for c in levels
    }


def figures(
    profile: SimProfile,
    *,
    cost: CostModel | None = None,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    levels: Sequence[int] = DEFAULT_CONCURRENCY_LEVELS,
    seed: int = 0,
) -> dict[str, object]:
    """The four calibration figures of an offline sweep, plus both sweeps.

    Returns:
        Dict with the keys of :data:`FIGURES` (tok/s) and ``"baseline"`` /
        ``"eagle3"`` sweeps as returned by :func:`sweep_stats`.
    """
    common = dict(cost=cost, prompt_lengths=prompt_lengths, max_new_tokens=max_new_tokens, levels=levels, seed=seed)
    base = sweep_stats(profile, SpecConfig(), **common)
    eagle = sweep_stats(profile, seed_eagle3_spec(), **common)
    first = min(levels)
    return {
        "baseline_c1_per_request_tok_s": base[first][1],
        "eagle3_c1_per_request_tok_s": eagle[first][1],
        "baseline_saturation_output_tok_s": max(v[0] for v in base.values()),
        "eagle3_saturation_output_tok_s": max(v[0] for v in eagle.values()),
        "baseline": base,
        "eagle3": eagle,
    }


@dataclasses.dataclass(frozen=True)
class FitResult:
    """Outcome of :func:`fit_cost`.

    Attributes:
        cost: the fitted cost model.
        figures: the four figures it produces (tok/s).
        targets: the four targets (tok/s).
        max_rel_error: largest |figure/target - 1|.
        iterations: Newton iterations used.
    """

    cost: CostModel
    figures: dict[str, float]
    targets: dict[str, float]
    max_rel_error: float
    iterations: int


def fit_cost(
    profile: SimProfile,
    *,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    params: Sequence[str] = FIT_PARAMS,
    max_iterations: int = 30,
    tol: float = 0.005,
) -> FitResult:
    """Fit ``params`` of the profile's cost model so the offline figures hit its targets.

    Solves ``log(figure_i) = log(target_i)`` for the log of each parameter with a
    damped Newton method (finite-difference Jacobian, step halving on no progress).

    Raises:
        ValueError: the profile has no calibration targets, or ``params`` is not 4 long.
    """
    targets = {k: float(profile.calibration[k]) for k in FIGURES if k in profile.calibration}
    if len(targets) != len(FIGURES) or len(params) != len(FIGURES):
        raise ValueError(f"need the 4 targets {FIGURES} in [calibration] and 4 params to fit")
    goal = np.log([targets[k] for k in FIGURES])

    def evaluate(x: np.ndarray) -> tuple[np.ndarray, dict[str, float]]:
        cost = dataclasses.replace(profile.cost, **{p: float(math.exp(v)) for p, v in zip(params, x)})
        f = figures(profile, cost=cost, prompt_lengths=prompt_lengths, max_new_tokens=max_new_tokens)
        vals = {k: float(f[k]) for k in FIGURES}
        return np.log([vals[k] for k in FIGURES]), vals

    x = np.log([max(getattr(profile.cost, p), 1e-3) for p in params])
    y, vals = evaluate(x)
    it = 0
    for it in range(1, max_iterations + 1):
        resid = y - goal
        if np.max(np.abs(np.expm1(resid))) < tol:
            break
        jac = np.empty((len(goal), len(x)))
        for j in range(len(x)):
            dx = np.zeros_like(x)
            dx[j] = 0.05
            jac[:, j] = (evaluate(x + dx)[0] - y) / 0.05
        step = np.linalg.lstsq(jac, -resid, rcond=None)[0]
        step = np.clip(step, -1.0, 1.0)
        for damping in (1.0, 0.5, 0.25, 0.125):
            y_new, vals_new = evaluate(x + damping * step)
            if np.linalg.norm(y_new - goal) < np.linalg.norm(resid):
                x, y, vals = x + damping * step, y_new, vals_new
                break
        else:
            break
    cost = dataclasses.replace(profile.cost, **{p: float(math.exp(v)) for p, v in zip(params, x)})
    err = max(abs(vals[k] / targets[k] - 1.0) for k in FIGURES)
    return FitResult(cost=cost, figures=vals, targets=targets, max_rel_error=err, iterations=it)
