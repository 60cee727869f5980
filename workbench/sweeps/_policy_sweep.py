"""When to stop speculating, as a policy you can run: sweep, derive, write the policies, run them.

:func:`dynamic_disable` sweeps a baseline and speculative variants (topk 4 and topk 1 over num_steps)
with :func:`benchmark_variants`, reads the sweep as a :class:`~workbench.studies.PolicyStudy` (which
derives the threshold, SGLang's adaptive tiers and vLLM's schedule), writes each policy as a variant
(``<policy_dir>/*.toml``, the adaptive config beside it; :func:`write_policies`), runs those variants
with the same plan (:func:`measure_policies`) and records the study's index (``study.json``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench import paths
from workbench.analysis import sglang_policy
from workbench.engines import resolve_engine
from workbench.errors import ConfigError
from workbench.store import runs_root
from workbench.studies import (
    DEFAULT_ADAPTIVE_VERSION,
    PolicyRun,
    PolicyStudy,
    load_policy_study,
    load_study,
    variant_settings,
)
from workbench.sweeps._investigation import benchmark_variants
from workbench.sweeps._policy_files import adaptive_variant, threshold_variant, write_index
from workbench.variants import load_variant


def write_policies(study: PolicyStudy, policy_dir: str | Path) -> PolicyStudy:
    """Write the threshold and adaptive-tiers policies as variant files (and the adaptive JSON) into ``policy_dir``.

    File names carry a hash of their content, so a changed policy is another sweep and never
    resumes the runs of an old one. A policy that never switches (speculation ahead or behind at
    every level) is not written: it is one of the swept variants already.

    Returns:
        ``study`` with the policies written as its runs (policy -> :class:`~workbench.studies.PolicyRun`, not yet
        measured), in place of any it had.
    """
    folder = paths.resolve(policy_dir)
    folder.mkdir(parents=True, exist_ok=True)
    runs: dict[str, PolicyRun] = {}
    t = study.threshold()
    if t.kind == "threshold":
        runs["threshold"] = threshold_variant(load_variant(t.spec), t, folder)
    topk1 = study.topk_variants(1)
    policy = sglang_policy(study.tiers(), None, sglang_version=study.adaptive_version) if topk1 else None
    if policy is not None and policy.kind == "adaptive_tiers":
        best = study.envelope(variants=[study.baseline, *topk1]).sort_values("concurrency")
        choice = {int(r.concurrency): r.best_variant for r in best.itertuples()}
        always_on = next((v for v in best["best_variant"] if v != study.baseline), next(iter(topk1)))
        runs["adaptive tiers"] = adaptive_variant(
            load_variant(next(iter(topk1))), policy, folder, always_on=always_on, choice=choice
        )
    return study.with_runs(runs)


def measure_policies(study: PolicyStudy, policy_dir: str | Path | None = None) -> PolicyStudy:
    """Write the policies (when not yet) and measure each as one server with the sweep's plan.

    Returns:
        ``study`` with each measured policy's level rows and run directory in its run
        (:attr:`~workbench.studies.PolicyRun.levels`, :attr:`~workbench.studies.PolicyRun.run_dir`).

    Raises:
        ConfigError: the study has no sweep settings (loaded from runs: pass ``bench``), or as
            :func:`workbench.benchmark_variants`.
    """
    if not study.bench:
        raise ConfigError(
            "this study has no sweep settings (bench): build it with dynamic_disable(...) or "
            "pass bench={...} with the sweep's keyword arguments"
        )
    if not study.runs:
        study = write_policies(study, policy_dir or runs_root(study.bench.get("runs_dir")) / "policies")
    runs = list(study.runs.values())
    if not resolve_engine(study.bench.get("host", "local"), study.bench.get("engine")).simulated:
        # a real SGLang runs only what its tree does: a threshold without a patch would measure always-on
        for run in [r for r in runs if r.policy == "threshold" and not r.variant.patches]:
            warnings.warn(
                f"{run.variant.name}: no patch switches drafting off in {run.always_on}'s SGLang "
                "(data/patches/eagle-spec-off-above.patch covers spec v1 of 0.5.9 only), so a real "
                "engine would run it always-on; not run. Its prediction is still shown.",
                stacklevel=2,
            )
            runs.remove(run)
    if not runs:
        return study
    dirs = benchmark_variants([r.variant for r in runs], **study.bench)
    measured = load_study(dirs, baseline=runs[0].variant.name)
    rows = study.with_goodput(measured.levels, measured.requests)
    done = {
        run.policy: dataclasses.replace(run, levels=rows[rows["variant"] == run.variant.name].copy(), run_dir=d)
        for run, d in zip(runs, dirs)
    }
    return study.with_runs({**study.runs, **done})


def dynamic_disable(
    variants: Sequence[str | Path],
    *,
    baseline: str = "baseline",
    objective: str = "throughput",
    tpot_ms: float | None = None,
    e2e_ms: float | None = None,
    adaptive_version: str = DEFAULT_ADAPTIVE_VERSION,
    run_policies: bool = True,
    policy_dir: str | Path | None = None,
    **bench: Any,
) -> PolicyStudy:
    """Sweep ``variants`` (the baseline among them), derive the policies, run them, return the study.

    Args:
        variants: variant names or files; the baseline must be one of them. Their topk and
            num_steps are read from their flags (a sweep over num_steps at topk 1 gives the
            adaptive tiers).
        baseline: the plain-decoding variant.
        objective: ``"per_request"`` (mean per-request tok/s), ``"throughput"`` (total output
            tok/s) or ``"goodput"`` (requests/s meeting ``tpot_ms`` and/or ``e2e_ms``).
        tpot_ms, e2e_ms: goodput targets in milliseconds.
        adaptive_version: the SGLang release (0.5.16 or later) the adaptive config is written for
            and run under on the simulated engine.
        run_policies: write and measure the derived policies with the same plan.
        policy_dir: where the policy variants, the adaptive config and ``study.json`` (the index
            :func:`workbench.load_dynamic_disable` reads; the latest study written there) go (default
            ``<runs_dir>/policies``).
        bench: :func:`workbench.benchmark_variants`' keyword arguments (host, levels, requests,
            repeats, time scale, ...), used for the sweep and the policies alike.

    Raises:
        ConfigError: the baseline is not among ``variants``, or as :func:`workbench.benchmark_variants`.
    """
    loaded = [load_variant(v) for v in variants]
    if baseline not in [v.name for v in loaded]:
        raise ConfigError(f"the baseline {baseline!r} must be among the variants swept: {[v.name for v in loaded]}")
    dirs = benchmark_variants(loaded, **bench)
    study = load_policy_study(
        dirs,
        baseline=baseline,
        objective=objective,
        tpot_ms=tpot_ms,
        e2e_ms=e2e_ms,
        adaptive_version=adaptive_version,
        bench=bench,
        settings={v.name: variant_settings(v) for v in loaded},
    )
    folder = policy_dir or runs_root(bench.get("runs_dir")) / "policies"
    if run_policies:
        study = measure_policies(write_policies(study, folder))
    policy_runs = {name: run.run_dir for name, run in study.runs.items() if run.run_dir is not None}
    write_index(study, dirs, policy_runs, folder)
    return study
