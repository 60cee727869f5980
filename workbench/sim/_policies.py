"""Speculation policies: how many draft steps a decode iteration runs, chosen per iteration.

A policy answers :meth:`SpecPolicy.steps` (the running batch size -> draft steps, 0 meaning
"no drafting this iteration") and hears every verify's result (:meth:`SpecPolicy.observe`).
The engine (:class:`~workbench.sim._engine.EngineCore`) asks it once per decode iteration; no
policy at all is static speculation (the server's ``num_steps`` every time), the fast path.

- :class:`SpecOffAbove`: no drafting while more than N requests run: the simulator's stand-in
  for the workbench's example patch (``data/patches/eagle-spec-off-above.patch``,
  ``--sim-spec-off-above``, a variant's ``sim_policy.spec_off_above``).
- :class:`AdaptiveEma`: SGLang 0.5.12's ``--speculative-adaptive``
  (``srt/speculative/adaptive_spec_params.py`` ``AdaptiveSpeculativeParams``, PR #21599): one EMA of
  the accepted drafts per request over the candidate steps.
- :class:`AdaptiveTiers`: SGLang 0.5.16+'s batch-size tiers (same file, ``AdaptiveStepSlot`` and
  ``AdaptiveSpeculativeParams``, PR #24055): one EMA slot per tier of the
  ``--speculative-adaptive-config`` JSON; steps 0 turns drafting off.

A decode iteration of a speculative server that does not draft is **not free**: it costs the
plain decode step times ``1 + overhead(batch)`` (:class:`SpecOffCost`, a profile's
``[policies].spec_off_overhead``). The default comes from a public vLLM measurement (vLLM issue
#49548, comment of 2026-08-24: vLLM 0.27.1 on one H100 NVL, a per-batch-size schedule that always
asks for K=0 versus no speculation configured: TPOT +6.56% at concurrency 2 and +21.58% at 189).
That is an ASSUMPTION for SGLang: a different engine, model and GPU; SGLang 0.5.16's steps-0 path
still runs a one-token verify and a draft extend (``EAGLEWorkerV2.forward_batch_generation``), so
it has a cost of the same kind.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from workbench.errors import ConfigError
from workbench.releases import ADAPTIVE_DEFAULT_TIERS_REVISED_SINCE, ADAPTIVE_TIERS_SINCE
from workbench.releases import release_at_least

#: ``[policies].spec_off_overhead`` when a profile has none: (batch size, fractional TPOT increase) of
#: the public vLLM measurement (vLLM issue #49548; see the module docstring). ASSUMPTION for SGLang.
DEFAULT_SPEC_OFF_OVERHEAD: tuple[tuple[int, float], ...] = ((2, 0.0656), (189, 0.2158))

#: SGLang 0.5.12's default candidate steps (``candidate_steps`` of ``AdaptiveSpeculativeParams``).
DEFAULT_CANDIDATE_STEPS_0_5_12 = (1, 3, 7)

#: SGLang 0.5.16's ``DEFAULT_ADAPTIVE_CONFIG`` (``srt/speculative/adaptive_spec_params.py``).
DEFAULT_TIERS_0_5_16: dict[str, Any] = {
    "1": {"candidate_steps": [1, 3, 7], "up_hysteresis": 0.0, "down_hysteresis": -0.25, "ceiling_coeff": 0},
    "8": {"candidate_steps": [0, 1, 3], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
    "32": {"candidate_steps": [0, 1], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
    "64": {"candidate_steps": [0], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
}

#: 0.5.23's default differs in tier 1 only: ``[1, 3, 5, 7]`` (../shared/sglang-facts.md section 4).
DEFAULT_TIERS_0_5_23: dict[str, Any] = {
    **DEFAULT_TIERS_0_5_16,
    "1": {**DEFAULT_TIERS_0_5_16["1"], "candidate_steps": [1, 3, 5, 7]},
}


class SpecPolicy(Protocol):
    """What the engine asks a speculation policy (see module docstring)."""

    def steps(self, batch_size: int) -> int:
        """Draft steps for a decode iteration of ``batch_size`` running requests (0: no drafting)."""
        ...

    def observe(self, batch_size: int, correct_drafts: int) -> None:
        """One verify's result: draft tokens accepted, summed over the batch (bonus tokens excluded)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The policy's settings and state, for ``/server_info``."""
        ...


@dataclasses.dataclass(frozen=True)
class SpecOffCost:
    """What a non-drafting decode iteration of a speculative server costs beyond a plain decode step.

    Attributes:
        points: (batch size, fractional increase of the step time), sorted by batch size;
            linear in between, constant outside.
        switch_ms: cost of changing the number of draft steps between iterations (ms). SGLang
            pre-builds one runtime state (attention backends, CUDA graphs) per candidate step and
            switching swaps references (0.5.12 ``srt/speculative/adaptive_runtime_state.py``
            ``AdaptiveController._activate``): 0 unless a profile says otherwise.
    """

    points: tuple[tuple[int, float], ...] = DEFAULT_SPEC_OFF_OVERHEAD
    switch_ms: float = 0.0

    def overhead(self, batch_size: int) -> float:
        """The fractional increase at this batch size."""
        pts = self.points
        if batch_size <= pts[0][0]:
            return pts[0][1]
        for (b0, f0), (b1, f1) in zip(pts, pts[1:]):
            if batch_size <= b1:
                return f0 + (f1 - f0) * (batch_size - b0) / (b1 - b0)
        return pts[-1][1]

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None) -> SpecOffCost:
        """From a profile's ``[policies]`` table (``spec_off_overhead = [[b, f], ...]``, ``switch_ms``).

        Raises:
            ConfigError: malformed points.
        """
        table = table or {}
        raw = table.get("spec_off_overhead", DEFAULT_SPEC_OFF_OVERHEAD)
        try:
            points = tuple(sorted((int(b), float(f)) for b, f in raw))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[policies].spec_off_overhead must be [[batch, fraction], ...], got {raw!r}") from exc
        if not points or any(f < 0 for _, f in points):
            raise ConfigError(f"[policies].spec_off_overhead needs at least one [batch, fraction >= 0], got {raw!r}")
        return cls(points=points, switch_ms=float(table.get("switch_ms", 0.0)))


class SpecOffAbove:
    """No drafting while more than ``limit`` requests run (the patch's stand-in).

    Args:
        limit: the largest batch that still drafts.
        num_steps: the server's draft steps otherwise.
    """

    def __init__(self, limit: int, num_steps: int) -> None:
        self.limit, self.num_steps = limit, num_steps

    def steps(self, batch_size: int) -> int:
        return self.num_steps if batch_size <= self.limit else 0

    def observe(self, batch_size: int, correct_drafts: int) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"policy": "spec_off_above", "spec_off_above": self.limit}


class FunctionPolicy:
    """A plain ``(batch size) -> speculate?`` function as a policy (the engine's older interface)."""

    def __init__(self, speculate: Callable[[int], bool], num_steps: int) -> None:
        self.speculate, self.num_steps = speculate, num_steps

    def steps(self, batch_size: int) -> int:
        return self.num_steps if self.speculate(batch_size) else 0

    def observe(self, batch_size: int, correct_drafts: int) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"policy": "function"}


class _EmaSlot:
    """One EMA of accepted drafts per request and the step it picks (SGLang's update rule).

    ``zero_steps`` selects 0.5.16's ``AdaptiveStepSlot`` (candidate 0 allowed, probes up from 0,
    no step-up after a step-down, ``ceiling_coeff``); otherwise 0.5.12's ``AdaptiveSpeculativeParams``.
    """

    def __init__(self, initial_steps: int, cfg: Mapping[str, Any], *, zero_steps: bool) -> None:
        candidates = sorted(set(int(s) for s in cfg.get("candidate_steps", DEFAULT_CANDIDATE_STEPS_0_5_12)))
        if not zero_steps and initial_steps not in candidates:
            candidates = sorted({*candidates, initial_steps})  # 0.5.12 adds the initial steps
        self.candidates = candidates
        self.zero_steps = zero_steps
        self.ema_alpha = float(cfg.get("ema_alpha", 0.2))
        self.update_interval = int(cfg.get("update_interval", 5))
        self.warmup_batches = int(cfg.get("warmup_batches", 10))
        self.down_hysteresis = float(cfg.get("down_hysteresis", -0.25))
        self.up_hysteresis = float(cfg.get("up_hysteresis", 0.0))
        self.ceiling_coeff = float(cfg.get("ceiling_coeff", 0))
        if initial_steps in candidates:
            self.current = initial_steps
        else:
            self.current = candidates[len(candidates) // 2]
        self.ema = float(self.current - 1)
        self.batches = 0

    def update(self, batch_size: int, correct_drafts: int) -> None:
        if batch_size <= 0:
            return
        if self.current > 0 or not self.zero_steps:
            self.ema = (1 - self.ema_alpha) * self.ema + self.ema_alpha * (correct_drafts / batch_size)
        self.batches += 1
        if self.batches <= self.warmup_batches or (self.batches - self.warmup_batches) % self.update_interval:
            return
        self._recompute()

    def _recompute(self) -> None:
        cands = self.candidates
        idx = old_idx = cands.index(self.current)
        if self.zero_steps and self.current == 0:  # probe the next candidate up
            idx = min(idx + 1, len(cands) - 1)
            if cands[idx] > 0 and self.ema < 0:
                self.ema = float(cands[idx] - 1)
            self.current = cands[idx]
            return
        while idx > 0:
            prev = cands[idx - 1]
            drop = (0.5 if prev == 0 else prev - 0.5) if self.zero_steps else prev - 0.5
            if self.ema <= drop + self.down_hysteresis:
                idx -= 1
            else:
                break
        if not (self.zero_steps and idx < old_idx):  # 0.5.16 does not step up after stepping down
            while idx < len(cands) - 1 and self.ema > cands[idx] - 0.5 + self.up_hysteresis:
                idx += 1
        target = cands[idx]
        if self.zero_steps and self.ceiling_coeff > 0:
            ceiling = max(1, math.ceil(self.ema * self.ceiling_coeff))
            if ceiling < target <= self.current:
                while idx > 0 and cands[idx] > ceiling:
                    idx -= 1
                target = cands[idx]
        self.current = target


class AdaptiveEma:
    """SGLang 0.5.12's adaptive speculation: one EMA slot over the candidate steps.

    Args:
        initial_steps: ``--speculative-num-steps`` (added to the candidates if missing, as SGLang does).
        config: the ``--speculative-adaptive-config`` object (ema_alpha 0.2, update_interval 5,
            warmup_batches 10, down_hysteresis -0.25, up_hysteresis 0, candidate_steps [1, 3, 7]).

    Raises:
        ConfigError: fewer than two candidate steps (SGLang asserts).
    """

    def __init__(self, initial_steps: int, config: Mapping[str, Any] | None = None) -> None:
        self.slot = _EmaSlot(initial_steps, config or {}, zero_steps=False)
        if len(self.slot.candidates) < 2:
            raise ConfigError(
                f"adaptive candidate_steps must have at least 2 distinct values, got {self.slot.candidates}"
            )
        if self.slot.candidates[0] < 1:
            raise ConfigError(f"SGLang 0.5.12's adaptive candidate_steps must be >= 1, got {self.slot.candidates}")

    @property
    def candidate_steps(self) -> list[int]:
        return list(self.slot.candidates)

    def steps(self, batch_size: int) -> int:
        return self.slot.current

    def observe(self, batch_size: int, correct_drafts: int) -> None:
        self.slot.update(batch_size, correct_drafts)

    def describe(self) -> dict[str, Any]:
        return {
            "policy": "adaptive (SGLang 0.5.12, EMA)",
            "candidate_steps": self.candidate_steps,
            "current_steps": self.slot.current,
            "ema_accept_len": round(self.slot.ema, 4),
        }


def spec_capture_batch_sizes(max_bs: int) -> list[int]:
    """CUDA-graph batch sizes SGLang captures for a speculative server (0.5.16 ``srt/server_args.py``
    ``_generate_decode_cuda_graph_batch_sizes``, spec branch; ``max_bs`` itself is added)."""
    sizes = [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8), *range(272, max_bs + 1, 16)]
    sizes = [b for b in sizes if b <= max_bs]
    if max_bs > 0 and max_bs not in sizes:
        sizes.append(max_bs)
    return sizes


class AdaptiveTiers:
    """SGLang 0.5.16+'s adaptive speculation: one EMA slot per batch-size tier.

    A batch is padded up to the next captured CUDA-graph batch size, then routed to the largest
    tier key at or below it (the smallest tier when none is); steps 0 turns drafting off, and a
    slot at 0 probes its next candidate up at every update.

    Args:
        initial_steps: the resolved ``--speculative-num-steps``.
        config: the JSON object: digit-string tier keys, each ``{"candidate_steps": [...],
            "up_hysteresis", "down_hysteresis", "ceiling_coeff"}``; other keys are global
            defaults merged under every tier.
        cuda_graph_bs: captured batch sizes (None: no padding, CUDA graphs off).

    Raises:
        ConfigError: no tier, or a tier whose candidate_steps is not a list of ints >= 0.
    """

    def __init__(self, initial_steps: int, config: Mapping[str, Any], cuda_graph_bs: Sequence[int] | None) -> None:
        tiers = tier_entries(config)
        self.tiers = sorted(tiers)
        self.slots = {bs: _EmaSlot(initial_steps, {**config, **tiers[bs]}, zero_steps=True) for bs in self.tiers}
        self.cuda_graph_bs = sorted(cuda_graph_bs) if cuda_graph_bs else None

    @property
    def candidate_steps(self) -> list[int]:
        return sorted({s for slot in self.slots.values() for s in slot.candidates})

    def tier(self, batch_size: int) -> int:
        """The tier key a batch of this size routes to."""
        padded = batch_size
        if self.cuda_graph_bs is not None:
            i = bisect.bisect_left(self.cuda_graph_bs, batch_size)
            padded = self.cuda_graph_bs[i] if i < len(self.cuda_graph_bs) else batch_size
        i = bisect.bisect_right(self.tiers, padded) - 1
        return self.tiers[max(0, i)]

    def steps(self, batch_size: int) -> int:
        return self.slots[self.tier(batch_size)].current

    def observe(self, batch_size: int, correct_drafts: int) -> None:
        self.slots[self.tier(batch_size)].update(batch_size, correct_drafts)

    def describe(self) -> dict[str, Any]:
        return {
            "policy": "adaptive (SGLang 0.5.16+, batch-size tiers)",
            "tiers": {
                str(bs): {"candidate_steps": s.candidates, "current_steps": s.current} for bs, s in self.slots.items()
            },
        }


def tier_entries(config: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """The digit-string tiers of a 0.5.16+ adaptive config (``_load_adaptive_config``).

    Raises:
        ConfigError: no tier, or bad candidate_steps.
    """
    out: dict[int, dict[str, Any]] = {}
    for key, entry in config.items():
        if not str(key).isdigit():
            continue
        steps = entry.get("candidate_steps") if isinstance(entry, Mapping) else None
        if not isinstance(steps, list) or not steps or not all(isinstance(s, int) and s >= 0 for s in steps):
            raise ConfigError(
                f"adaptive config tier {key}: candidate_steps must be a list of non-negative ints, got {steps!r}"
            )
        out[int(key)] = dict(entry)
    if not out:
        raise ConfigError(
            "--speculative-adaptive-config must contain at least one integer-string batch-size key, "
            f'e.g. {{"1": {{"candidate_steps": [1,3,7]}}}}; got keys {list(config)}'
        )
    return out


def load_adaptive_config(path: str | Path | None, sglang_version: str) -> dict[str, Any]:
    """The ``--speculative-adaptive-config`` JSON object, or the version's default when ``path`` is None.

    Raises:
        ConfigError: unreadable file, not JSON, not an object.
    """
    if path is None:
        if release_at_least(sglang_version, ADAPTIVE_DEFAULT_TIERS_REVISED_SINCE):
            return json.loads(json.dumps(DEFAULT_TIERS_0_5_23))
        if release_at_least(sglang_version, ADAPTIVE_TIERS_SINCE):
            return json.loads(json.dumps(DEFAULT_TIERS_0_5_16))
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"--speculative-adaptive-config {path}: cannot read it ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--speculative-adaptive-config {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--speculative-adaptive-config {path} must hold a JSON object, got {type(data).__name__}")
    return data


def adaptive_candidate_union(config: Mapping[str, Any], sglang_version: str) -> list[int] | None:
    """0.5.16+: the union of the tiers' candidate steps (``resolve_candidate_steps_from_config``); else None."""
    if not release_at_least(sglang_version, ADAPTIVE_TIERS_SINCE):
        return None
    return sorted({s for entry in tier_entries(config).values() for s in entry["candidate_steps"]})


def adaptive_policy(
    sglang_version: str, initial_steps: int, config: Mapping[str, Any], *, cuda_graph_max_bs: int
) -> AdaptiveEma | AdaptiveTiers:
    """The adaptive policy of the emulated version (0.5.12: :class:`AdaptiveEma`; 0.5.16+: :class:`AdaptiveTiers`)."""
    if release_at_least(sglang_version, ADAPTIVE_TIERS_SINCE):
        graph_bs = spec_capture_batch_sizes(cuda_graph_max_bs) if cuda_graph_max_bs > 0 else None
        return AdaptiveTiers(initial_steps, config, graph_bs)
    return AdaptiveEma(initial_steps, config)
