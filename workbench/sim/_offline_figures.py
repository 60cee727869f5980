"""Offline figures of variants on a profile: a closed-loop level's request rows on the virtual clock, their
output and per-request tok/s, a sweep's, and the seed investigation's four figures; and where one
iteration of a variant's server goes (:func:`step_breakdown`).

Each variant's own flags reach the cost model (:func:`variant_cost`). The calibration
(:mod:`workbench.sim._calibrate`) predicts its points with :func:`offline_level` and
:func:`level_figures`; :func:`level_stats` checks those figures against the benchmark's own
``summarize_level``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from workbench.bench import DEFAULT_CONCURRENCY_LEVELS, default_requests_per_level
from workbench.sim._engine import EngineCore
from workbench.sim._offline import run_closed_loop
from workbench.sim._profiles import SimProfile
from workbench.sim._roofline_terms import Efficiency
from workbench.sim._spec import EAGLE_MAX_RUNNING_REQUESTS, SpecConfig
from workbench.sim._variant_flags import variant_config

#: The seed figure names, in the order of the seed profile's calibration points.
FIGURES = (
    "baseline_c1_per_request_tok_s",
    "eagle3_c1_per_request_tok_s",
    "baseline_saturation_output_tok_s",
    "eagle3_saturation_output_tok_s",
)


def seed_eagle3_spec() -> SpecConfig:
    """The seed investigation's EAGLE-3 settings: topk 4, num_steps 2, 16 draft tokens, spec v1."""
    return SpecConfig("EAGLE3", num_steps=2, topk=4, num_draft_tokens=16, spec_v2=False)


# -- variants on a profile -----------------------------------------------------------------------
def variant_cost(profile: SimProfile, variant: str, efficiency: Efficiency | None = None):
    """The cost model a variant's flags give on this profile."""
    return profile.cost_for(variant_config(profile, variant).args, efficiency=efficiency)


def step_breakdown(
    profile: SimProfile | str,
    variant: str,
    *,
    batch: int,
    kv_tokens: int,
    accepted_tokens: int | None = None,
    prompt_tokens: Sequence[int] | None = None,
):
    """Where one iteration of a variant's server goes on a profile (a notebook's "why").

    Args:
        profile: a physical profile, or its name.
        variant: a shipped variant (its flags reach the cost model).
        batch: running requests.
        kv_tokens: cached tokens they read (sum over the batch).
        accepted_tokens: tokens accepted over the batch in a speculative iteration (default:
            ``batch x`` the profile's expected accept length for the variant's settings).
        prompt_tokens: give prompt chunk lengths for a prefill iteration instead.

    Returns:
        A :class:`~workbench.sim._roofline_terms.StepBreakdown` (decode, spec or prefill): weights, KV,
        compute, communication, draft and overhead milliseconds, summing to the step's time.
    """
    from workbench.sim._profiles import load_profile

    prof = load_profile(profile) if isinstance(profile, str) else profile
    cfg = variant_config(prof, variant)
    cost = prof.cost_for(cfg.args)
    if prompt_tokens is not None:
        return cost.prefill_breakdown(list(prompt_tokens), cfg.spec)
    if not cfg.spec.enabled:
        return cost.decode_breakdown(batch, kv_tokens)
    if accepted_tokens is None:
        accepted_tokens = round(batch * prof.acceptance.expected_accept_length(cfg.spec, samples=20000))
    return cost.spec_breakdown(batch, kv_tokens, cfg.spec, accepted_tokens)


# -- offline levels -------------------------------------------------------------------------------
def offline_level(
    profile: SimProfile,
    spec: SpecConfig,
    *,
    cost=None,
    concurrency: int,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    num_requests: int,
    seed: int = 0,
    max_running_requests: int | None = None,
    spec_policy: Callable[[int], bool] | None = None,
    config=None,
) -> list[dict]:
    """Request rows of one simulated closed-loop level (virtual clock).

    ``cost`` defaults to the profile's cost model with its default flags. ``config`` (a parsed
    :class:`~workbench.sim._server_args.SimServerConfig`) builds the engine the server would run
    (its KV pool, caps and speculation policy) and then ``spec``, ``max_running_requests`` and
    ``spec_policy`` are not used.
    """
    from workbench.bench import prompt_schedule

    rng = random.Random(seed * 1_000_003 + concurrency)
    if config is not None:
        engine = EngineCore.from_config(config, rng=rng, cost=cost)
    else:
        mrr = max_running_requests or (EAGLE_MAX_RUNNING_REQUESTS if spec.enabled else 4096)
        engine = EngineCore(
            cost=cost if cost is not None else profile.cost_for(),
            acceptance=profile.acceptance,
            spec=spec,
            max_running_requests=mrr,
            rng=rng,
            spec_policy=spec_policy,
        )
    order = prompt_schedule(list(prompt_lengths), num_requests, rng=random.Random(seed))
    return run_closed_loop(engine, prompt_tokens=order, concurrency=concurrency, max_new_tokens=max_new_tokens)


def level_figures(rows: list[dict]) -> tuple[float, float]:
    """(output tok/s, mean per-request tok/s) of request rows, without pandas.

    The same definitions as the benchmark's ``summarize_level``: total output tokens over
    the level's span, and the mean of ``output_tokens / e2e`` per request.
    """
    if not rows:
        return float("nan"), float("nan")
    start = min(r["start_s"] for r in rows)
    end = max(r["end_s"] for r in rows)
    total = sum(r["output_tokens"] for r in rows)
    speeds = [r["output_tokens"] / (r["e2e_ms"] / 1000.0) for r in rows if r["e2e_ms"] > 0]
    return total / (end - start), sum(speeds) / len(speeds)


def level_stats(rows: list[dict]) -> tuple[float, float]:
    """(output tok/s, mean per-request tok/s) through the benchmark's own ``summarize_level``."""
    import pandas as pd

    from workbench.bench import summarize_level

    summary = summarize_level(pd.DataFrame(rows))
    return summary["output_throughput_tok_s"], summary["mean_per_request_tok_s"]


def sweep_stats(
    profile: SimProfile,
    spec: SpecConfig,
    *,
    cost=None,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    concurrency_levels: Sequence[int] = DEFAULT_CONCURRENCY_LEVELS,
    requests: Callable[[int], int] = default_requests_per_level,
    seed: int = 0,
) -> dict[int, tuple[float, float]]:
    """``{concurrency: (output tok/s, mean per-request tok/s)}`` of an offline sweep (the sweep plan's default
    levels and requests rule, :mod:`workbench.bench`, unless given)."""
    return {
        c: level_figures(
            offline_level(
                profile,
                spec,
                cost=cost,
                concurrency=c,
                prompt_lengths=prompt_lengths,
                max_new_tokens=max_new_tokens,
                num_requests=requests(c),
                seed=seed,
            )
        )
        for c in concurrency_levels
    }


def figures(
    profile: SimProfile,
    *,
    cost=None,
    prompt_lengths: Sequence[int],
    max_new_tokens: int,
    concurrency_levels: Sequence[int] = DEFAULT_CONCURRENCY_LEVELS,
    seed: int = 0,
) -> dict[str, object]:
    """The four seed figures of an offline sweep of ``baseline`` and ``eagle3-topk4``, plus both sweeps.

    Each variant runs with its own flags (TP 8, custom all-reduce off) unless ``cost`` is given.

    Returns:
        Dict with the keys of :data:`FIGURES` (tok/s) and ``"baseline"`` / ``"eagle3"`` sweeps
        as returned by :func:`sweep_stats`.
    """
    common: dict[str, Any] = dict(
        prompt_lengths=prompt_lengths, max_new_tokens=max_new_tokens, concurrency_levels=concurrency_levels, seed=seed
    )
    base = sweep_stats(profile, SpecConfig(), cost=cost or variant_cost(profile, "baseline"), **common)
    eagle = sweep_stats(profile, seed_eagle3_spec(), cost=cost or variant_cost(profile, "eagle3-topk4"), **common)
    first = min(concurrency_levels)
    return {
        "baseline_c1_per_request_tok_s": base[first][1],
        "eagle3_c1_per_request_tok_s": eagle[first][1],
        "baseline_saturation_output_tok_s": max(v[0] for v in base.values()),
        "eagle3_saturation_output_tok_s": max(v[0] for v in eagle.values()),
        "baseline": base,
        "eagle3": eagle,
    }
