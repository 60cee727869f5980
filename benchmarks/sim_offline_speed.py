"""How many (variant, concurrency level) points per second the offline engine simulates.

Runs the report's default workload (the shipped prompts, 256 output tokens, ``max(16, 2c)``
requests per level) for the seed variants ``baseline`` and ``eagle3-topk4`` at levels
1, 2, 4, ..., 64 on the virtual clock and prints points per second, wall clock and CPU time
(the machine is shared: CPU time is what one core spends), median of ``--repeat`` runs:

- ``predict``: ``workbench.sim._predict.predict`` end to end, what ``workbench sim predict``
  and the what-if notebook call: configurations parsed from the variants' flags (cached per
  process after the first run), the closed loop recording first and last tokens only, the
  level summary and the step breakdown included;
- ``engine``: the engine core alone under the same client (no summary, nothing else), for
  scale: what is left when everything on the client's side is free;
- ``reference``: the client loop of the offline mode at git revision ``--ref`` (default: the
  commit before the prediction work, ``bbeb237``), read from git and run in this same process,
  with the calibration's pure-Python ``level_figures`` summary: "before", side by side.

- ``predict@REV`` (with ``--engine-ref REV``): ``predict`` again, its engine core
  (``workbench/sim/_engine.py``) as it was at git revision ``REV``: an engine change, before
  and after, side by side.
- ``kv-pool`` (with ``--kv-pool TOKENS``): the engine core built from the variants' parsed server
  flags plus ``--max-total-tokens TOKENS`` under the same client: the KV accounting (admission,
  retraction, each request's hold) that ``predict`` (unlimited memory) never runs; with
  ``--engine-ref REV`` also ``kv-pool@REV``.

Interleaved, so they see the same load; compare their ratios.

Usage::

    .venv/bin/python benchmarks/sim_offline_speed.py [--repeat 5] [--ref bbeb237] [--engine-ref REV]
        [--kv-pool TOKENS] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

from workbench.bench import default_requests_per_level, prompt_schedule
from workbench.sim import _calibrate as calibrate
from workbench.sim import _predict as predict_mod
from workbench.sim._engine import EngineCore
from workbench.sim._offline import simulate_closed_loop
from workbench.sim._profiles import load_profile
from workbench.sim._server_args import parse_server_args
from workbench.sim._variant_flags import variant_argv

LEVELS = (1, 2, 4, 8, 16, 32, 64)
VARIANTS = ("baseline", "eagle3-topk4")
ROOT = Path(__file__).resolve().parents[1]


def _reference_module(ref: str, path: str = "workbench/sim/_offline.py") -> types.ModuleType:
    """``path`` as it was at ``ref``, loaded as a module."""
    text = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"_{Path(path).stem.lstrip('_')}_at_{ref}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(text, f"{ref}:{path}", "exec"), module.__dict__)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ref", default="bbeb237", help="git revision of the reference client loop")
    parser.add_argument("--engine-ref", default=None, help="also run predict with the engine core at this git revision")
    parser.add_argument(
        "--kv-pool",
        type=int,
        default=None,
        metavar="TOKENS",
        help="also run the engine with a KV pool of this many tokens (--max-total-tokens)",
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one predict run")
    args = parser.parse_args()
    profile = load_profile("seed-pcie-8gpu")
    plan = predict_mod.prediction_plan(profile, concurrency_levels=LEVELS, max_new_tokens=256, seed=0)
    configs = [predict_mod.variant_configuration(profile, v) for v in VARIANTS]
    reference = _reference_module(args.ref)

    def run_predict() -> None:
        predict_mod.predict(profile, list(VARIANTS), concurrency_levels=LEVELS, max_new_tokens=256, seed=0)

    def run_engine() -> None:
        for cfg in configs:
            for c in LEVELS:
                predict_mod.simulate_level(profile, cfg, plan, c)

    def run_reference() -> None:
        for cfg in configs:
            cost = profile.cost_for(cfg.args)
            for c in LEVELS:
                engine = EngineCore(
                    cost=cost,
                    acceptance=profile.acceptance,
                    spec=cfg.spec,
                    max_running_requests=cfg.max_running_requests,
                    rng=random.Random(c),
                )
                order = prompt_schedule(list(plan.prompt_lengths), default_requests_per_level(c), rng=random.Random(0))
                calibrate.level_figures(
                    reference.run_closed_loop(engine, prompt_tokens=order, concurrency=c, max_new_tokens=256)
                )

    runs = {"predict": run_predict, "engine": run_engine, "reference": run_reference}
    old_core = _reference_module(args.engine_ref, "workbench/sim/_engine.py").EngineCore if args.engine_ref else None
    if old_core is not None:

        def run_predict_at_ref() -> None:
            new_core = predict_mod.EngineCore
            predict_mod.EngineCore = old_core
            try:
                run_predict()
            finally:
                predict_mod.EngineCore = new_core

        runs[f"predict@{args.engine_ref}"] = run_predict_at_ref
    if args.kv_pool:
        pool = ["--max-total-tokens", str(args.kv_pool)]
        servers = []
        for v in VARIANTS:
            _, argv, env = variant_argv(v)
            servers.append(parse_server_args([*argv, *pool, "--sim-profile", str(profile.path)], environ=env))

        def run_kv_pool(core: type = EngineCore) -> None:
            for cfg in servers:
                for c in LEVELS:
                    engine = core.from_config(cfg, rng=random.Random(c))
                    order = prompt_schedule(
                        list(plan.prompt_lengths), default_requests_per_level(c), rng=random.Random(0)
                    )
                    simulate_closed_loop(engine, prompt_tokens=order, concurrency=c, max_new_tokens=256)

        runs["kv-pool"] = run_kv_pool
        if old_core is not None:
            runs[f"kv-pool@{args.engine_ref}"] = lambda: run_kv_pool(old_core)
    run_predict()  # the first call parses the variants and counts the prompts' tokens once
    points = len(VARIANTS) * len(LEVELS)
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(args.repeat):
        for name, fn in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
    print(
        f"{points} points per run, median of {args.repeat} interleaved runs "
        f"(simulate_closed_loop vs {args.ref}'s run_closed_loop)"
    )
    print(f"{'':16s} {'points/s wall':>14s} {'points/s CPU':>13s} {'vs reference (CPU)':>19s}")
    ref_cpu = statistics.median(cpu["reference"])
    for name in runs:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"{name:16s} {points / w:14.1f} {points / c:13.1f} {ref_cpu / c:19.2f}x")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(run_predict)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    sys.exit(main())
