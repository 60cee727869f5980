"""Policies as files: the derived threshold and adaptive-tiers policies written as variants, and a study's index.

Writing only; reading an index back is :mod:`workbench.studies` (``_policy_index``).

A policy the policy study derives (:mod:`workbench.studies._policy_study`) becomes a variant file that any
user can launch, check or edit: the threshold as its speculative variant plus "no drafting above N"
(the workbench's patch for spec v1 of SGLang 0.5.9, and on the simulated engine its ``sim_policy``
stand-in), the adaptive tiers as an EAGLE-3 topk-1 variant with ``--speculative-adaptive`` and the
``--speculative-adaptive-config`` JSON beside it. File names carry a hash of their content, so a changed
policy is another sweep and never resumes an old one's runs. ``study.json`` records what a study ran
(paths relative to it) so :func:`workbench.load_dynamic_disable` can read it again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench import paths
from workbench.analysis import SglangPolicy, Threshold
from workbench.studies import INDEX_NAME, PolicyRun
from workbench.variants import Variant, load_variant, toml_value


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _toml(top: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]]) -> str:
    """A variant file: top-level keys (None left out), then each table."""
    out = ["# Written by workbench (notebooks/dynamic_disable.ipynb): a policy derived from a measured sweep."]
    out += [f"{k} = {toml_value(v)}" for k, v in top.items() if v is not None]
    for name, table in tables.items():
        out += [
            "",
            f"[{name}]",
            *[f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in table.items() if v is not None],
        ]
    return "\n".join(out) + "\n"


def threshold_variant(spec: Variant, threshold: Threshold, folder: Path) -> PolicyRun:
    """``spec`` with no drafting above ``threshold.no_draft_above``, written to ``folder``.

    A spec v1 variant (no ``SGLANG_ENABLE_SPEC_V2``) gets the workbench's patch
    (``data/patches/eagle-spec-off-above.patch``, SGLang 0.5.9) and its ``SGLANG_SPEC_OFF_ABOVE``; every
    variant gets the simulator's stand-in (``sim_policy.spec_off_above``). No patch covers spec v2: such
    a variant says so in its description, and only the simulated engine can run it.
    """
    n = threshold.no_draft_above
    v1 = spec.env.get("SGLANG_ENABLE_SPEC_V2") not in ("1", "true", "True")
    patch = paths.PACKAGE_ROOT / "data" / "patches" / "eagle-spec-off-above.patch"
    note = "" if v1 else "; no patch covers spec v2: simulator only"
    top: dict[str, Any] = {
        "name": f"{threshold.spec}-off-above-{n}",
        "description": f"{spec.description.rstrip('.')}; no drafting above {n} running requests "
        f"(derived by notebooks/dynamic_disable.ipynb{note}).",
        "model_path": spec.model_path,
        "draft_model_path": spec.draft_model_path,
    }
    if spec.base:
        top["base"] = spec.base
    elif spec.sglang_version:
        top["sglang_version"] = spec.sglang_version
    if v1:
        top["patches"] = [os.path.relpath(patch, folder)]  # variant files name patches relative to themselves
    env = {**spec.env, **({"SGLANG_SPEC_OFF_ABOVE": str(n)} if v1 else {})}
    text = _toml(top, {"flags": spec.flags, "env": env, "sim_policy": {"spec_off_above": n}})
    path = folder / f"{top['name']}-{_digest(text)}.toml"
    path.write_text(text)
    return PolicyRun("threshold", load_variant(path), path, None, threshold.spec, threshold.choice())


def adaptive_variant(
    template: Variant, policy: SglangPolicy, folder: Path, *, always_on: str, choice: Mapping[int, str]
) -> PolicyRun:
    """An EAGLE-3 topk-1 variant running ``policy``'s adaptive config (SGLang 0.5.16+), written to ``folder``.

    It keeps ``template``'s model, draft model and other flags; ``--speculative-num-steps`` is the
    largest candidate (it must be one of them, 0.5.16 ``_init_adaptive_speculative_params``) and the
    number of draft tokens is left to SGLang (num_steps + 1). ``SGLANG_ENABLE_SPEC_V2`` is dropped:
    0.5.16 warns when it is set.
    """
    config_text = json.dumps(policy.config, indent=2) + "\n"
    config = folder / f"adaptive-config-{_digest(config_text)}.json"
    config.write_text(config_text)
    steps = sorted({s for tier in (policy.config or {}).values() for s in tier["candidate_steps"]})
    flags = {
        k: v for k, v in template.flags.items() if k not in ("speculative-num-draft-tokens", "speculative-num-steps")
    }
    flags.update(
        {
            "speculative-eagle-topk": 1,
            "speculative-num-steps": max(steps),
            "speculative-adaptive": True,
            "speculative-adaptive-config": str(config),
        }
    )
    env = {k: v for k, v in template.env.items() if k != "SGLANG_ENABLE_SPEC_V2"}
    name = f"adaptive-tiers-{_digest(config_text)}"
    top = {
        "name": name,
        "description": f"EAGLE-3 topk 1, adaptive num_steps per batch-size tier (SGLang "
        f"{policy.sglang_version}+ --speculative-adaptive-config {config.name}; derived by "
        "notebooks/dynamic_disable.ipynb).",
        "sglang_version": policy.sglang_version,
        "model_path": template.model_path,
        "draft_model_path": template.draft_model_path,
    }
    path = folder / f"{name}.toml"
    path.write_text(_toml(top, {"flags": flags, "env": env}))
    return PolicyRun("adaptive tiers", load_variant(path), path, config, always_on, dict(choice))


def _rel(path: str | Path, folder: Path) -> str:
    return os.path.relpath(Path(path).resolve(), folder.resolve())


def write_index(study: Any, sweep_runs: Sequence[Path], policy_runs: Mapping[str, Path], folder: str | Path) -> Path:
    """Record a policy study (its runs, policies and settings; paths relative to ``folder``) as ``folder/study.json``.

    Args:
        study: a :class:`workbench.PolicyStudy`.
        sweep_runs: the sweep's run directories.
        policy_runs: policy -> its run directory (those measured).
        folder: where the index goes (the policy folder).
    """
    folder = paths.resolve(folder)
    folder.mkdir(parents=True, exist_ok=True)
    index = {
        "baseline": study.baseline,
        "objective": study.objective,
        "tpot_ms": study.tpot_ms,
        "e2e_ms": study.e2e_ms,
        "adaptive_version": study.adaptive_version,
        "settings": study.settings,
        "bench": {
            k: (v if isinstance(v, (str, int, float, bool, list, type(None))) else repr(v))
            for k, v in study.bench.items()
        },
        "sweep_runs": [_rel(r, folder) for r in sweep_runs],
        "policies": {
            name: {
                "variant_file": _rel(run.path, folder),
                "config_file": None if run.config_path is None else _rel(run.config_path, folder),
                "always_on": run.always_on,
                "choice": {str(c): v for c, v in run.choice.items()},
                "run": _rel(policy_runs[name], folder) if name in policy_runs else None,
            }
            for name, run in study.runs.items()
        },
    }
    path = folder / INDEX_NAME
    path.write_text(json.dumps(index, indent=1) + "\n")
    return path
