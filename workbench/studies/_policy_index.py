"""A policy study's index read back: the policies it wrote (as :class:`PolicyRun`) and the swept variants' settings.

:func:`workbench.sweeps.dynamic_disable` writes ``study.json`` beside the policy variants
(``workbench/sweeps/_policy_files.py``); :func:`workbench.load_dynamic_disable` reads it here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.variants import Variant, load_variant

#: The index a :func:`workbench.dynamic_disable` study leaves in its policy folder.
INDEX_NAME = "study.json"


def _int_flag(v: Variant, name: str) -> int | None:
    value = v.flags.get(name)
    return int(value) if value is not None and value is not False else None


def variant_settings(v: Variant) -> dict[str, Any]:
    """``topk``, ``num_steps`` (None for plain decoding) and ``gpus`` (TP x DP, default 1) of a variant."""
    spec = v.flags.get("speculative-algorithm") is not None
    gpus = (_int_flag(v, "tp-size") or _int_flag(v, "tensor-parallel-size") or 1) * (_int_flag(v, "dp-size") or 1)
    return {
        "topk": (_int_flag(v, "speculative-eagle-topk") or 1) if spec else None,
        "num_steps": _int_flag(v, "speculative-num-steps") if spec else None,
        "gpus": gpus,
    }


@dataclasses.dataclass(frozen=True)
class PolicyRun:
    """A policy as one server: its variant file and, once measured, its level rows (a new value:
    ``dataclasses.replace(run, levels=..., run_dir=...)``).

    Attributes:
        policy: ``"threshold"`` or ``"adaptive tiers"``.
        variant: the variant that runs it (written to ``path``).
        path: the variant's TOML file.
        config_path: the adaptive config JSON (adaptive tiers only).
        always_on: the static speculative variant it is compared with.
        choice: concurrency -> the swept variant the prediction takes there.
        levels: its measured level rows (None until run).
        run_dir: the run that measured it (None until run).
    """

    policy: str
    variant: Variant
    path: Path
    config_path: Path | None
    always_on: str
    choice: dict[int, str]
    levels: pd.DataFrame | None = None
    run_dir: Path | None = None


def read_policy_runs(index: Mapping[str, Any], folder: Path) -> dict[str, tuple[PolicyRun, Path | None]]:
    """The policies an index names, each with its run directory (None when it was not run)."""
    out = {}
    for name, entry in index.get("policies", {}).items():
        variant_file = folder / entry["variant_file"]
        run = PolicyRun(
            name,
            load_variant(variant_file),
            variant_file,
            folder / entry["config_file"] if entry.get("config_file") else None,
            entry["always_on"],
            {int(c): v for c, v in entry["choice"].items()},
        )
        out[name] = (run, folder / entry["run"] if entry.get("run") else None)
    return out
