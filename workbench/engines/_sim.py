"""The simulated engine: ``python -m workbench.sim``, SGLang's HTTP API over a performance model.

It runs no SGLang code and loads no weights: missing model paths are only warnings,
GPUs are not judged, patches are recorded but not applied (a variant's ``sim_policy``
stands in for them, labelled as such), and everything it produces is labelled
``simulated``. It runs faster than real time by default (:data:`DEFAULT_SIM_TIME_SCALE`)
and models no prefix cache, so prompts need no unique tag. On a remote host it runs
from the uploaded workbench bundle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.engines._base import Engine, ServedVariant
from workbench.errors import ConfigError

__all__ = ["DEFAULT_SIM_REPEATS", "DEFAULT_SIM_TIME_SCALE", "MAX_SIM_TIME_SCALE", "SIM_ENGINE", "SimEngine"]

#: Simulated seconds per wall-clock second when none is given: the one default of ``workbench bench``, the
#: notebooks (``make report``) and every other sweep of the simulated engine, so their runs are comparable and
#: a sweep resumes another's. Measured on 2026-12-06 (``benchmarks/sim_time_scale.py``: baseline and
#: eagle3-topk4 at concurrency 1, 8 and 64, max(16, 2c) requests of 256 tokens, against the offline
#: prediction; 2 shared cores at load 0.9-2.3): one server at a time with a chunk per token (as ``bench``
#: measures), 2x took 132 s with every level within 1.5% (median 0.3%), 4x 67 s within 1.7% (0.4%), 8x
#: 35 s within 2.4% (0.8%); every server at once with a chunk per 8 tokens (as ``spec_vs_baseline``
#: measures), 2x 77 s within 1.5%, 4x 40 s within 1.8%, 8x 21 s within 2.5% (median 1.0%); no level fell
#: behind schedule. 8x keeps every level inside the 3% fidelity target at a quarter of 2x's wall time.
#: Each level records its own distortion (``sim_behind_schedule_wall_s``, ``mean_e2e_over_server_ms``), and a
#: busy CPU widens it (docs/PERFORMANCE.md); ``time_scale=2`` (``--time-scale 2``) halves the error again.
DEFAULT_SIM_TIME_SCALE = 8.0

#: The highest time scale a sweep may ask of the simulated engine. Each request's wall-clock HTTP and
#: client overheads count the time scale times over: with 64-token requests the c=16 output tok/s
#: was 7% low at 10x and 25-40% low at 50x, and 1000x gave 7.6 tok/s where 2x gave 79.4 at c=1
#: (docs/PERFORMANCE.md, issue 24), while the engine's own behind-schedule measure stayed at 0. Up to
#: this bound each level still measures its own distortion (``sim_schedule_problem``).
MAX_SIM_TIME_SCALE = 20.0

#: Repeats per level when none are given: 1, a quick look (``workbench bench``; the
#: ``spec_vs_baseline`` report asks for 3 itself). With one repeat a summary says n=1 and gives no
#: interval over repeats (the per-request bootstrap remains); ``--repeats 3`` gives intervals at
#: about 3x the time.
DEFAULT_SIM_REPEATS = 1


class SimEngine(Engine):
    """The simulated SGLang engine (:mod:`workbench.sim`); see :class:`~workbench.engines.Engine`."""

    # Who it is, and which server's answers are its own.
    name = "sim"
    called = "the simulated engine"

    def answered(self, server_info: Mapping[str, Any]) -> bool:
        """True when ``/server_info`` carries the simulator's ``simulation`` block."""
        return isinstance(server_info.get("simulation"), dict)

    # What it serves (a model, or a real server) and how it launches.
    simulated = True
    description = "the simulated SGLang engine (python -m workbench.sim): a performance model, no GPU"
    launch_module = "workbench.sim"

    def engine_argv(self, variant: ServedVariant, options: dict[str, Any]) -> tuple[list[str], list[str]]:
        """``<flags> [--enable-metrics]`` and ``--sim-<option> <value> ...``.

        ``--enable-metrics`` is added unless the variant sets it: the simulated server then serves
        ``/metrics`` (as SGLang does with that flag), which the sweep samples during each level.

        The variant's target release (``sglang_version``) becomes ``--sim-sglang-version``, so the
        simulator applies that release's flag rules (the nearest emulated ones at or below it: an
        adaptive variant written for 0.5.12 runs); then the variant's own ``--sim-*`` options (its
        ``sim_policy``); ``options`` adds to them and wins where both name the same option. None
        values are left out.
        """
        flags = variant.server_flags()
        if "--enable-metrics" not in flags:  # serve /metrics, which each level samples (workbench.bench._observe)
            flags.append("--enable-metrics")
        target = {"sglang-version": variant.sglang_version} if variant.sglang_version else {}
        tail: list[str] = []
        for key, value in {**target, **variant.sim_options(), **options}.items():
            if value is not None:
                tail += [f"--sim-{key}", str(value)]
        return flags, tail

    # How a sweep measures it.
    uploads_workbench = True
    ready_timeout_s = 60.0
    default_repeats = DEFAULT_SIM_REPEATS
    unique_prompts = False

    def time_scale(self, requested: float | None) -> float:
        """``requested`` (simulated seconds per wall second), default :data:`DEFAULT_SIM_TIME_SCALE`.

        Its range (a finite number > 0) is the sweep plan's one check
        (:class:`workbench.bench.SweepPlan`), not repeated here; this engine's own bound is
        :data:`MAX_SIM_TIME_SCALE`.

        Raises:
            ConfigError: ``requested`` above :data:`MAX_SIM_TIME_SCALE`.
        """
        if requested is None:
            return DEFAULT_SIM_TIME_SCALE
        if isinstance(requested, (int, float)) and requested > MAX_SIM_TIME_SCALE:
            raise ConfigError(
                f"time scale {requested:g} is above {MAX_SIM_TIME_SCALE:g}, the most the simulated engine keeps "
                f"schedule at: each request's wall-clock HTTP and client overheads count {requested:g} times over "
                f"(at 50x figures came out 25-40% low, docs/PERFORMANCE.md); give --time-scale "
                f"{MAX_SIM_TIME_SCALE:g} or less (the default, {DEFAULT_SIM_TIME_SCALE:g}, kept every level within "
                "2.5% of the model)"
            )
        return float(requested)

    def launch_options(self, *, profile: str, time_scale: float, seed: int) -> dict[str, Any] | None:
        """``{"profile": ..., "time-scale": ..., "seed": ...}`` (as ``--sim-*`` options)."""
        return {"profile": profile, "time-scale": time_scale, "seed": seed}

    # What it does with a variant: the pre-flight checks and the provenance follow from these.
    reads_weights = False
    wants_gpus = False
    runs_variant_tree = False

    def stand_in(self, variant: ServedVariant) -> str | None:
        """The variant's ``SIMULATOR STAND-IN`` label (``Variant.sim_stand_in``), None without a sim_policy."""
        return variant.sim_stand_in()


#: The engine.
SIM_ENGINE = SimEngine()
