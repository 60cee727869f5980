"""Offline predictions: what a sweep of each server configuration would measure, in milliseconds.

A *configuration* is what a server would be launched with: a shipped variant (its flags and
environment parsed exactly as ``python -m workbench.sim`` parses them), or a point of a
speculative grid (``topk``, ``num_steps``, ``num_draft_tokens``, spec v1 or v2) built on a
template variant's flags and resolved under SGLang 0.5.9's rules (:func:`spec_grid`).
:func:`predict` runs each configuration's closed-loop levels on the virtual clock
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
import itertools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.sim._api_shapes import DEFAULT_RELEASE
from workbench.sim._engine import EngineCore
from workbench.sim._offline import ClosedLoopResult, simulate_closed_loop
from workbench.sim._profiles import SimProfile, load_profile
from workbench.sim._spec import SpecConfig, resolve_spec
from workbench.sim._variant_flags import variant_argv

if TYPE_CHECKING:
    from workbench.bench import ClosedLoop

#: Statistics of a level summary and the percentile each takes (None: the mean); the bench's
#: ``summarize_level`` definitions (numpy ``percentile``, linear interpolation).
STATS: dict[str, float | None] = {"mean": None, "p50": 50.0, "p90": 90.0, "p99": 99.0}
#: Per-request metrics a level summarises with :data:`STATS` (the bench's names).
SUMMARIZED = ("ttft_ms", "tpot_ms", "e2e_ms", "per_request_tok_s")
#: The step-breakdown parts, in stacking order (``step_<part>_ms`` columns).
STEP_PARTS = ("weights", "kv", "compute", "communication", "draft", "kernels", "overhead")


# -- configurations -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Configuration:
    """One server configuration to predict.

    Attributes:
        name: its label (a variant's name, or ``topk4-steps2-draft16-v1`` for a grid point).
        spec: the resolved speculative settings.
        args: the parsed flags (SGLang's ``ServerArgs`` names), which build the cost model.
        max_running_requests: the scheduler's cap.
        spec_off_above: no drafting while more than this many requests run (a stand-in
            policy, ``--sim-spec-off-above``), or None.
    """

    name: str
    spec: SpecConfig
    args: dict[str, Any] = dataclasses.field(hash=False, compare=False)
    max_running_requests: int = 4096
    spec_off_above: int | None = None

    def spec_policy(self) -> Callable[[int], bool] | None:
        """The engine's per-iteration drafting switch, or None (always draft)."""
        t = self.spec_off_above
        return None if t is None else (lambda batch: batch <= t)

    def describe(self) -> dict[str, Any]:
        """The configuration's columns in a prediction row."""
        s = self.spec
        return {
            "variant": self.name,
            "speculative": s.enabled,
            "topk": s.topk if s.enabled else None,
            "num_steps": s.num_steps if s.enabled else None,
            "num_draft_tokens": s.num_draft_tokens if s.enabled else None,
            "spec_v2": s.spec_v2 if s.enabled else None,
            "spec_off_above": self.spec_off_above,
            "max_running_requests": self.max_running_requests,
        }


def _parsed(profile: SimProfile, argv: list[str], env: dict[str, str]):
    from workbench.sim._server_args import parse_server_args

    return parse_server_args([*argv, "--sim-profile", str(profile.path)], environ=env)


def variant_configuration(profile: SimProfile, variant: str | Path, *, name: str | None = None) -> Configuration:
    """A shipped variant (name or file) on this profile, its flags parsed as the simulated server parses them.

    Raises:
        ConfigError: unknown variant, or flags the server would refuse.
    """
    vname, argv, env = variant_argv(variant)
    cfg = _parsed(profile, argv, env)
    return Configuration(
        name or vname, cfg.spec, cfg.args, cfg.max_running_requests, cfg.args.get("sim_spec_off_above")
    )


def configuration(
    profile: SimProfile,
    template: str | Path,
    *,
    topk: int,
    num_steps: int,
    num_draft_tokens: int,
    spec_v2: bool = False,
    spec_off_above: int | None = None,
    max_running_requests: int | None = None,
    name: str | None = None,
) -> Configuration:
    """A speculative configuration: the template variant's flags with these speculative settings.

    The settings go through the same parsing and SGLang 0.5.9 rules as a launched server
    (:func:`~workbench.sim._spec.resolve_spec`: topk 1 forces ``num_draft_tokens = num_steps + 1``,
    spec v2 refuses topk > 1, ...) and :func:`check_draft_budget`. ``spec_off_above`` adds the
    stand-in policy ``--sim-spec-off-above``; ``max_running_requests`` replaces the template's
    ``--max-running-requests`` (the EAGLE family's default cap is 48).

    Raises:
        ConfigError: a combination SGLang 0.5.9 refuses or cannot run; the message says why.
    """
    _, argv, env = variant_argv(template)
    drop = {
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--sim-spec-off-above",
        *(["--max-running-requests"] if max_running_requests is not None else []),
    }
    kept: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token in drop:
            skip = True
            continue
        kept.append(token)
    if "--speculative-algorithm" not in kept:
        raise ConfigError(f"template variant {template!r} is not speculative; name one with --speculative-algorithm")
    kept += [
        "--speculative-num-steps",
        str(num_steps),
        "--speculative-eagle-topk",
        str(topk),
        "--speculative-num-draft-tokens",
        str(num_draft_tokens),
    ]
    if spec_off_above is not None:
        kept += ["--sim-spec-off-above", str(spec_off_above)]
    if max_running_requests is not None:
        kept += ["--max-running-requests", str(max_running_requests)]
    env = {k: v for k, v in env.items() if k != "SGLANG_ENABLE_SPEC_V2"}
    if spec_v2:
        env["SGLANG_ENABLE_SPEC_V2"] = "1"
    cfg = _parsed(profile, kept, env)
    check_draft_budget(cfg.spec)
    label = name or grid_name(cfg.spec) + (f"-off-above-{spec_off_above}" if spec_off_above is not None else "")
    return Configuration(label, cfg.spec, cfg.args, cfg.max_running_requests, spec_off_above)


def grid_name(spec: SpecConfig) -> str:
    """``topk4-steps2-draft16-v1``: a grid point's label."""
    return f"topk{spec.topk}-steps{spec.num_steps}-draft{spec.num_draft_tokens}-{'v2' if spec.spec_v2 else 'v1'}"


def check_draft_budget(spec: SpecConfig) -> None:
    """Refuse draft-token counts SGLang 0.5.9 cannot pick from its draft tree.

    The rule is the variants pre-flight's (:func:`workbench.variants.draft_tree_problem`:
    ``num_draft_tokens - 1 <= topk + (num_steps - 1) * topk**2``, from SGLang's
    ``eagle_utils.organize_draft_results``); a larger value fails at the first verify.

    Raises:
        ConfigError: the count exceeds the tree's candidates.
    """
    from workbench.variants import draft_tree_problem

    if not spec.enabled:
        return
    problem = draft_tree_problem(spec.topk, spec.num_steps, spec.num_draft_tokens, version=DEFAULT_RELEASE)
    if problem is not None:
        raise ConfigError(f"{problem[0]} Fix: {problem[1]}")


@dataclasses.dataclass(frozen=True)
class GridPoint:
    """One (topk, num_steps, num_draft_tokens, spec v2) combination as asked and as SGLang 0.5.9 takes it.

    Attributes:
        topk, num_steps, num_draft_tokens, spec_v2: as asked.
        name: the resolved configuration's label (None when refused).
        status: ``"ok"``, ``"adjusted"`` (SGLang changes a setting: topk 1 forces
            ``num_draft_tokens = num_steps + 1``), ``"duplicate"`` (resolves to a point
            already in the grid) or ``"refused"``.
        reason: why it was adjusted, duplicated or refused.
    """

    topk: int
    num_steps: int
    num_draft_tokens: int
    spec_v2: bool
    name: str | None
    status: str
    reason: str = ""


def spec_grid(
    *,
    topk: Iterable[int] = (1, 2, 4, 8),
    num_steps: Iterable[int] = (1, 2, 3, 4, 5),
    num_draft_tokens: Iterable[int] = (2, 4, 8, 16, 32),
    spec_v2: Iterable[bool] = (False, True),
    algorithm: str = "EAGLE3",
    sglang_version: str = DEFAULT_RELEASE,
) -> list[GridPoint]:
    """Every combination of the grid, each resolved (or refused) under SGLang's rules.

    :func:`~workbench.sim._spec.resolve_spec` applies the flag rules of the server (spec v2
    refuses topk > 1; topk 1 forces ``num_draft_tokens = num_steps + 1``) and
    :func:`check_draft_budget` the draft tree's limit. Combinations resolving to the same
    settings are kept once (the first), the others marked ``duplicate``.

    Returns:
        One :class:`GridPoint` per combination asked, in grid order.
    """
    out: list[GridPoint] = []
    seen: set[str] = set()
    for k, s, d, v2 in itertools.product(topk, num_steps, num_draft_tokens, spec_v2):
        try:
            spec = resolve_spec(
                algorithm=algorithm,
                num_steps=s,
                topk=k,
                num_draft_tokens=d,
                enable_spec_v2=v2,
                sglang_version=sglang_version,
            )
            check_draft_budget(spec)
        except ConfigError as exc:
            out.append(GridPoint(k, s, d, v2, None, "refused", str(exc)))
            continue
        name = grid_name(spec)
        if name in seen:
            out.append(GridPoint(k, s, d, v2, name, "duplicate", f"resolves to {name}"))
            continue
        seen.add(name)
        if spec.num_draft_tokens != d:
            out.append(
                GridPoint(
                    k,
                    s,
                    d,
                    v2,
                    name,
                    "adjusted",
                    f"topk 1: SGLang sets num_draft_tokens = num_steps + 1 = {spec.num_draft_tokens}",
                )
            )
        else:
            out.append(GridPoint(k, s, d, v2, name, "ok"))
    return out


def grid_configurations(profile: SimProfile, template: str | Path, grid: Iterable[GridPoint]) -> list[Configuration]:
    """The configurations of a grid's usable points (``ok`` and ``adjusted``) on the template's flags."""
    return [
        configuration(
            profile,
            template,
            topk=p.topk,
            num_steps=p.num_steps,
            num_draft_tokens=p.num_draft_tokens,
            spec_v2=p.spec_v2,
        )
        for p in grid
        if p.status in ("ok", "adjusted")
    ]


def profile_variants(profile: SimProfile) -> tuple[str, str]:
    """(baseline, speculative template) variants of a profile: the first plain and the first
    speculative variant its calibration points name.

    Raises:
        ConfigError: the profile's points do not name both kinds.
    """
    from workbench.variants import load_variant

    names = list(dict.fromkeys(p["variant"] for p in profile.calibration.get("points", []) if "variant" in p))
    plain = [n for n in names if not load_variant(n).speculative]
    spec = [n for n in names if load_variant(n).speculative]
    if not plain or not spec:
        raise ConfigError(
            f"profile {profile.name}: its calibration points do not name a baseline and a speculative "
            "variant; pass baseline= and template= explicitly"
        )
    return plain[0], spec[0]


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
