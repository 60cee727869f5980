"""Offline predictions: what a sweep of each server configuration would measure, in milliseconds.

:func:`predict` runs each configuration's closed-loop levels (a shipped variant, or a point of a
speculative grid: :mod:`workbench.sim._configurations`) on the virtual clock
(:mod:`workbench.sim._offline`, the engine core the HTTP server runs) and returns one row per
(configuration, level) whose keys are the stored level tables' columns
(:func:`workbench.bench.summarize_level`: ``output_throughput_tok_s``,
``mean_per_request_tok_s``, ``mean_ttft_ms``, ``mean_tpot_ms``, ``accept_length``, ...), plus the
decode step's time broken into its parts (``step_*_ms``) at the level's mean running batch.

Speed: a configuration's cost model and a profile's workload are built once per process
(cached by value); a level's summary is computed in pure Python (:func:`summarize_rows`,
the bench's definitions, checked against ``summarize_level`` by
``tests/test_sim_predict.py``), so a scan of hundreds of points takes seconds.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.sim._configurations import Configuration, variant_configuration
from workbench.sim._engine import EngineCore
from workbench.sim._offline import ClosedLoopResult, simulate_closed_loop
from workbench.sim._profiles import SimProfile, load_profile

if TYPE_CHECKING:
    from workbench.bench import ClosedLoop

#: Statistics of a level summary and the percentile each takes (None: the mean); the bench's
#: ``summarize_level`` definitions (numpy ``percentile``, linear interpolation).
STATS: dict[str, float | None] = {"mean": None, "p50": 50.0, "p90": 90.0, "p99": 99.0}
#: Per-request metrics a level summarises with :data:`STATS` (the bench's names).
SUMMARIZED = ("ttft_ms", "tpot_ms", "e2e_ms", "per_request_tok_s")
#: The step-breakdown parts, in stacking order (``step_<part>_ms`` columns).
STEP_PARTS = ("weights", "kv", "compute", "communication", "draft", "kernels", "overhead")


# -- cached per-(profile, configuration) constants -------------------------------------------------
_COSTS: dict[tuple, Any] = {}


def _cost(profile: SimProfile, config: Configuration):
    key = (
        str(profile.path),
        profile.physics.efficiency if profile.physics else None,
        tuple(sorted((k, v) for k, v in config.args.items() if not isinstance(v, (list, dict)))),
    )
    cost = _COSTS.get(key)
    if cost is None:
        if len(_COSTS) > 4096:
            _COSTS.clear()
        cost = _COSTS[key] = profile.cost_for(config.args)
    return cost


@functools.lru_cache(maxsize=32)
def _prompt_lengths(prompt_set: str) -> tuple[int, ...]:
    from workbench.bench import load_prompts
    from workbench.sim._text import TextModel

    text = TextModel()
    return tuple(text.count_tokens(p.text) for p in load_prompts(prompt_set))


def workload_prompt_lengths(profile: SimProfile) -> tuple[int, ...]:
    """Prompt lengths (tokens) of the profile's workload: its ``prompt_tokens``, or its prompt set counted once."""
    w = profile.workload
    if "prompt_tokens" in w:
        lengths = w["prompt_tokens"]
        return tuple(int(x) for x in (lengths if isinstance(lengths, list) else [lengths]))
    return _prompt_lengths(str(w.get("prompt_set", "default")))


def workload_requests(profile: SimProfile) -> int | None:
    """The profile's ``[workload] requests_per_level``: a count, or None when left out (the bench's rule,
    :func:`workbench.bench.default_requests_per_level`: ``max(16, 2 x concurrency)``).

    Raises:
        ConfigError: a value that is not a whole number >= 1.
    """
    value = profile.workload.get("requests_per_level")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"profile {profile.name}: [workload] requests_per_level must be a whole number >= 1, or "
            f"left out for the bench's rule max(16, 2 x concurrency); got {value!r}"
        )
    return value


@functools.lru_cache(maxsize=256)
def _schedule(lengths: tuple[int, ...], n: int, seed: int) -> tuple[int, ...]:
    from workbench.bench import prompt_schedule

    return tuple(prompt_schedule(list(lengths), n, rng=random.Random(seed)))


# -- summaries -------------------------------------------------------------------------------------
def _percentile(ordered: list[float], q: float) -> float:
    """numpy's ``percentile`` (linear interpolation) of sorted values."""
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _stats(values: list[float], name: str, out: dict[str, Any]) -> None:
    values = [v for v in values if v == v]
    if not values:
        for stat in STATS:
            out[f"{stat}_{name}"] = float("nan")
        return
    ordered = sorted(values)
    for stat, q in STATS.items():
        out[f"{stat}_{name}"] = math.fsum(values) / len(values) if q is None else _percentile(ordered, q)


def summarize_rows(rows: Sequence[dict]) -> dict[str, Any]:
    """A level's summary from offline request rows, without pandas.

    The definitions (and names) of :func:`workbench.bench.summarize_level` for the columns an
    offline level has: ``num_requests``, ``completed``, ``failed``, ``duration_s``,
    ``total_output_tokens``, ``total_prompt_tokens``, ``output_throughput_tok_s``,
    ``request_throughput_req_s``, ``achieved_concurrency``, mean/p50/p90/p99 of ``ttft_ms``,
    ``tpot_ms``, ``e2e_ms`` and ``per_request_tok_s``, and ``accept_length``. ITL needs every
    chunk: use ``summarize_level`` on rows simulated with ``chunks=True`` for it.
    """
    ok = [r for r in rows if r["error"] is None]
    out: dict[str, Any] = {"num_requests": len(rows), "completed": len(ok), "failed": len(rows) - len(ok)}
    duration = (max(r["end_s"] for r in rows) - min(r["start_s"] for r in rows)) if rows else float("nan")
    out["duration_s"] = duration
    total_out = sum(r["output_tokens"] for r in ok)
    out["total_output_tokens"] = int(total_out)
    out["total_prompt_tokens"] = int(sum(r["prompt_tokens"] for r in ok))
    valid = duration > 0
    out["output_throughput_tok_s"] = total_out / duration if valid else float("nan")
    out["request_throughput_req_s"] = len(ok) / duration if valid else float("nan")
    out["achieved_concurrency"] = math.fsum(r["e2e_ms"] for r in ok) / 1000.0 / duration if valid else float("nan")
    columns = {name: [r[name] for r in ok] for name in SUMMARIZED if name != "per_request_tok_s"}
    columns["per_request_tok_s"] = [r["output_tokens"] / (r["e2e_ms"] / 1000.0) for r in ok]
    for name in SUMMARIZED:
        _stats(columns[name], name, out)
    spec = [r for r in ok if r["spec_verify_ct"] is not None and r["spec_verify_ct"] > 0]
    verify = sum(r["spec_verify_ct"] for r in spec)
    out["accept_length"] = sum(r["output_tokens"] for r in spec) / verify if verify > 0 else float("nan")
    return out


# -- prediction ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PredictionPlan:
    """The workload a prediction or a calibration simulates (validated once; see :func:`prediction_plan`).

    Attributes:
        load: the closed loop (:class:`workbench.bench.ClosedLoop`, the sweep plan's levels, requests per
            level, output tokens and seed, with its checks and defaults); its fields are also read
            through this plan (``plan.concurrency_levels``, ...).
        prompt_lengths: prompt lengths of the prompt set (tokens), scheduled as the bench does.
        prompt_set: the prompt set whose acceptance figures apply (None: the profile's workload's).
        temperature: the requests' temperature (None: the workload's); picks greedy or sampled figures.
        output_lengths: the workload's output lengths (``[workload] output_tokens``, a list of token counts):
            each request draws one, as a workload that stops at EOS varies; None: every request runs to
            ``max_new_tokens`` (the bench's ``ignore_eos``).
    """

    load: ClosedLoop
    prompt_lengths: tuple[int, ...]
    prompt_set: str | None = None
    temperature: float | None = None
    output_lengths: tuple[int, ...] | None = None

    @property
    def concurrency_levels(self) -> tuple[int, ...]:
        """The closed loop's concurrency levels."""
        return self.load.concurrency_levels

    @property
    def requests_per_level(self) -> int | None:
        """A fixed count, or None for the bench's rule (``max(16, 2 x concurrency)``)."""
        return self.load.requests_per_level

    @property
    def max_new_tokens(self) -> int:
        """Output tokens per request (with ``output_lengths``, their largest)."""
        return self.load.max_new_tokens

    @property
    def seed(self) -> int:
        """Prompt order and acceptance sampling."""
        return self.load.seed

    def outputs(self, n: int) -> int | tuple[int, ...]:
        """Output tokens of ``n`` requests: the fixed count, or one per request drawn from
        :attr:`output_lengths` (seeded, as the prompts are scheduled)."""
        if self.output_lengths is None:
            return self.max_new_tokens
        return _schedule(self.output_lengths, n, self.seed + 1)

    @property
    def mean_output_tokens(self) -> float:
        """Mean output tokens per request."""
        ol = self.output_lengths
        return sum(ol) / len(ol) if ol else float(self.max_new_tokens)

    def acceptance(self, profile: SimProfile):
        """The acceptance model of this plan's prompt set and temperature."""
        return profile.acceptance_for(self.prompt_set, temperature=self.temperature)

    def requests(self, concurrency: int) -> int:
        """Requests sent at a level (:meth:`workbench.bench.ClosedLoop.requests`).

        Raises:
            ConfigError: a fixed count below ``concurrency``.
        """
        return self.load.requests(concurrency)


def prediction_plan(
    profile: SimProfile,
    *,
    concurrency_levels: Sequence[int] | None = None,
    requests_per_level: int | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
    prompt_set: str | None = None,
    temperature: float | None = None,
) -> PredictionPlan:
    """The plan, each unset value from the profile's ``[workload]`` (levels, requests per level, output
    tokens, seed, the acceptance's prompt set and temperature), else the sweep plan's defaults
    (:class:`workbench.bench.ClosedLoop`): the workload the profile's figures were measured with, so a
    default prediction reproduces them.

    Raises:
        ConfigError: what the sweep plan refuses (a level outside [1, 16,384] (the bench's ``MAX_CONCURRENCY``)
            or named twice, a count below 1 or below a level's concurrency, an output count outside [1,
            1,048,576], a negative temperature; its messages), or a prompt set without
            acceptance figures in the profile.
    """
    if prompt_set is not None and prompt_set not in profile.prompt_sets:
        raise ConfigError(
            f"prompt set {prompt_set!r}: profile {profile.name} has no acceptance figures for it; "
            f"known: {', '.join(profile.prompt_sets) or 'none'}"
        )
    from workbench.bench import ClosedLoop

    if temperature is not None:
        temperature = ClosedLoop.check_temperature(temperature)
    w = profile.workload
    defaults = ClosedLoop()  # what the profile leaves out
    levels = concurrency_levels if concurrency_levels is not None else w.get("levels", defaults.concurrency_levels)
    load = ClosedLoop(
        concurrency_levels=tuple(levels),
        requests_per_level=requests_per_level if requests_per_level is not None else workload_requests(profile),
        max_new_tokens=max_new_tokens
        if max_new_tokens is not None
        else w.get("max_new_tokens", defaults.max_new_tokens),
        seed=seed if seed is not None else w.get("seed", defaults.seed),
    )
    outputs = None
    if max_new_tokens is None and "output_tokens" in w:
        raw = w["output_tokens"]
        try:
            outputs = tuple(int(x) for x in (raw if isinstance(raw, list) else [raw]))
        except (TypeError, ValueError):
            outputs = ()
        if not outputs or min(outputs) < 1:
            raise ConfigError(
                f"profile {profile.name}: [workload] output_tokens must be a list of token counts >= 1, got {raw!r}"
            )
        load = dataclasses.replace(load, max_new_tokens=max(outputs))
    return PredictionPlan(load, workload_prompt_lengths(profile), prompt_set, temperature, outputs)


def simulate_level(
    profile: SimProfile, config: Configuration, plan: PredictionPlan, concurrency: int, *, chunks: bool = False
) -> ClosedLoopResult:
    """One closed-loop level of one configuration on the virtual clock (the calibration's seeding)."""
    engine = EngineCore(
        cost=_cost(profile, config),
        acceptance=plan.acceptance(profile),
        spec=config.spec,
        max_running_requests=config.max_running_requests,
        rng=random.Random(plan.seed * 1_000_003 + concurrency),
        spec_policy=config.spec_policy(),
    )
    order = _schedule(plan.prompt_lengths, plan.requests(concurrency), plan.seed)
    return simulate_closed_loop(
        engine, prompt_tokens=order, concurrency=concurrency, max_new_tokens=plan.outputs(len(order)), chunks=chunks
    )


def _step_columns(
    profile: SimProfile, config: Configuration, result: ClosedLoopResult, summary: dict[str, Any], plan: PredictionPlan
) -> dict[str, Any]:
    """The decode step at the level's mean running batch, split into its parts (ms)."""
    out: dict[str, Any] = {
        "decode_iterations": result.decode_iterations,
        "spec_iterations": result.spec_iterations,
        "mean_decode_batch": result.mean_decode_batch,
        "mean_decode_step_ms": result.mean_decode_step_ms,
        "prefill_time_share": result.prefill_s / result.duration_s if result.duration_s else float("nan"),
    }
    if not result.decode_iterations:
        out.update({f"step_{p}_ms": float("nan") for p in (*STEP_PARTS, "total")})
        out["step_batch"] = 0
        out["step_tokens_per_request"] = float("nan")
        return out
    batch = max(1, round(result.mean_decode_batch))
    prompts = plan.prompt_lengths
    kv = round(batch * (sum(prompts) / len(prompts) + plan.mean_output_tokens / 2))
    cost = _cost(profile, config)
    speculating = config.spec.enabled and result.spec_iterations > result.decode_iterations / 2
    if speculating and hasattr(cost, "spec_breakdown"):
        per_request = summary["accept_length"] if summary["accept_length"] == summary["accept_length"] else 1.0
        part = cost.spec_breakdown(batch, kv, config.spec, max(batch, round(batch * per_request)))
    elif hasattr(cost, "decode_breakdown"):
        per_request = 1.0
        part = cost.decode_breakdown(batch, kv)
    else:  # a linear (legacy) profile has no breakdown
        out.update({f"step_{p}_ms": float("nan") for p in (*STEP_PARTS, "total")})
        out["step_batch"], out["step_tokens_per_request"] = batch, float("nan")
        return out
    for p in STEP_PARTS:
        out[f"step_{p}_ms"] = getattr(part, f"{p}_ms")
    out["step_total_ms"] = part.total_ms
    out["step_batch"] = batch
    out["step_tokens_per_request"] = per_request
    return out


def predict(
    profile: SimProfile | str,
    configurations: Sequence[Configuration | str | Path],
    *,
    concurrency_levels: Sequence[int] | None = None,
    requests_per_level: int | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
    prompt_set: str | None = None,
    temperature: float | None = None,
) -> list[dict[str, Any]]:
    """Predict a closed-loop sweep of each configuration, offline.

    Args:
        profile: a profile or its name.
        configurations: :class:`Configuration` values or variant names/files.
        concurrency_levels: concurrency levels (default: the profile's workload levels).
        requests_per_level: requests per level (default: the profile's workload's, else
            ``max(16, 2 x concurrency)``).
        max_new_tokens: output tokens per request (default: the profile's workload's).
        seed: prompt order and acceptance sampling (default: the profile's workload's).
        prompt_set: the prompt set whose acceptance figures apply (``[acceptance.prompt_sets]``; default:
            the workload's).
        temperature: the requests' temperature (default: the workload's): below 1e-6 greedy figures,
            else sampled ones (:meth:`SimProfile.acceptance_for`).

    Returns:
        One row per (configuration, level), in that order: ``profile``, ``variant``, the
        speculative settings, ``concurrency``, ``max_new_tokens``, ``simulated`` (True),
        ``prediction`` (``"offline"``), the summary columns of :func:`summarize_rows` (the
        stored level tables' names), and the step breakdown (``step_<part>_ms`` of
        :data:`STEP_PARTS`, ``step_total_ms``, ``step_batch``, ``step_tokens_per_request``,
        ``mean_decode_step_ms``, ``prefill_time_share``, ...).

    Raises:
        ConfigError: unknown profile or variant, or settings the server would refuse.
    """
    prof = load_profile(profile) if isinstance(profile, str) else profile
    plan = prediction_plan(
        prof,
        concurrency_levels=concurrency_levels,
        requests_per_level=requests_per_level,
        max_new_tokens=max_new_tokens,
        seed=seed,
        prompt_set=prompt_set,
        temperature=temperature,
    )
    configs = [c if isinstance(c, Configuration) else variant_configuration(prof, c) for c in configurations]
    rows = []
    for config in configs:
        head = {"profile": prof.name, **config.describe()}
        for c in plan.concurrency_levels:
            result = simulate_level(prof, config, plan, c)
            summary = summarize_rows(result.rows)
            row = {
                **head,
                "concurrency": c,
                "max_new_tokens": plan.max_new_tokens,
                "simulated": True,
                "prediction": "offline",
                **summary,
            }
            row.update(_step_columns(prof, config, result, summary, plan))
            rows.append(row)
    return rows
