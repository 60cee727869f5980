"""Read a GPU timing table (``remote/gpu_calibrate.py``'s ``NAME.json``) into tidy step points.

The table has one row per (point, kernel group) with times in ms for ``layers_timed`` of the
model's ``layers_model`` decoder layers (the layers are identical, so a stack's time scales by
their ratio; the LM head is timed once, ``layers_model = 0``). :func:`step_points` turns it into
one row per point with every time scaled to the whole model:

- ``decode`` / ``verify`` / ``prefill`` (the target): ``layers_ms`` (the decoder stack),
  ``attention_ms``, ``dense_ms``, ``experts_ms`` (its kernel groups, timed on their own), and
  ``lm_head_ms``: the LM head over the point's logit rows (every query token of a decode or a
  verify, one row per sequence for a prefill), read from the ``lm_head`` family's rows;
  ``measured_ms`` = ``layers_ms + lm_head_ms``, one forward of the target;
- ``lm_head`` (the target's LM head alone): ``measured_ms`` = ``lm_head_ms``;
- ``draft`` (an EAGLE-3 draft's step: fusion FC, its layer, its LM head over every token):
  ``measured_ms`` = the ``step`` group;
- ``allreduce``: ``measured_ms`` per all-reduce of ``message_bytes``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.errors import ConfigError

#: The table format this reader knows (``remote/gpu_calibrate.py``'s ``FORMAT``).
FORMAT = "workbench-gpu-calibration/1"
#: Families whose ``layers`` group is a forward of the target's decoder stack.
FORWARD_FAMILIES = ("decode", "verify", "prefill")
#: Kernel groups timed on their own inside a target forward (ms columns ``<group>_ms``).
GROUPS = ("layers", "attention", "dense", "experts", "lm_head")


@dataclasses.dataclass(frozen=True)
class GpuTable:
    """One shape's timing table.

    Attributes:
        name: the shape's name (the preset, e.g. ``llama3-8b``).
        path: the JSON file it was read from.
        status: ``complete``, ``incomplete`` or ``running``.
        calibration: False for a CPU test run (never a calibration).
        plan: the run's plan (shapes, grid, layers timed, ``target_model`` / ``draft_model`` stems).
        environment: GPU, driver, torch, CUDA, clocks seen.
        rows: the raw rows (one per point and kernel group).
    """

    name: str
    path: Path
    status: str
    calibration: bool
    plan: dict[str, Any]
    environment: dict[str, Any]
    rows: pd.DataFrame

    @property
    def gpu_name(self) -> str:
        """The GPU the table was measured on (``"cpu"`` for a test run)."""
        return str(self.environment.get("gpu_name") or "cpu")

    @property
    def date(self) -> str:
        """The day the run started (``YYYY-MM-DD``)."""
        return str(self.environment.get("started_at", ""))[:10]

    @property
    def target_model(self) -> str:
        """The target's ``data/models`` stem."""
        return str(self.plan["target_model"])

    @property
    def draft_model(self) -> str | None:
        """The draft's ``data/models`` stem, or None."""
        return self.plan.get("draft_model")

    @property
    def layers_scale(self) -> float:
        """Model layers over timed layers (1 when every layer was timed)."""
        return self.plan["target"]["layers"] / self.plan["layers_timed"]

    def provenance(self) -> str:
        """One line for chart subtitles: ``MEASURED (NVIDIA H200, 2026-12-01, ...)``."""
        env = self.environment
        timed = f"{self.plan['layers_timed']} of {self.plan['target']['layers']} layers timed"
        label = "MEASURED" if self.calibration else "CPU TEST RUN (not a calibration)"
        return (
            f"{label} ({self.gpu_name}, {self.date}, torch {env.get('torch')}, CUDA {env.get('cuda')}, "
            f"{timed}, attention: PyTorch SDPA)"
        )


def load_table(path: str | Path) -> GpuTable:
    """Read ``NAME.json`` (or the ``.json`` beside a given ``.csv``).

    Raises:
        ConfigError: missing file, not JSON, another format, or no rows.
    """
    p = Path(path)
    if p.suffix == ".csv":
        p = p.with_suffix(".json")
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"no GPU timing table {p}; run `workbench calibrate --host H` to make one") from None
    except ValueError as exc:
        raise ConfigError(f"{p} is not a JSON timing table: {exc}") from exc
    if doc.get("format") != FORMAT:
        raise ConfigError(f"{p} has format {doc.get('format')!r}; this reader knows {FORMAT!r}")
    rows = pd.DataFrame(doc.get("rows", []))
    if rows.empty:
        raise ConfigError(
            f"{p} holds no timed rows (status {doc.get('status')!r}); run the calibration again to resume it"
        )
    return GpuTable(
        name=str(doc["plan"]["name"]),
        path=p,
        status=str(doc.get("status")),
        calibration=bool(doc.get("calibration")),
        plan=doc["plan"],
        environment=dict(doc.get("environment") or {}),
        rows=rows,
    )


def load_tables(directory: str | Path) -> dict[str, GpuTable]:
    """Every table (``*.json`` except plans) in a calibration folder, by shape name.

    Raises:
        ConfigError: the folder holds none.
    """
    folder = Path(directory)
    paths = sorted(p for p in folder.glob("*.json") if not p.name.endswith(".plan.json"))
    if not paths:
        raise ConfigError(f"no timing tables (*.json) in {folder}")
    return {t.name: t for t in map(load_table, paths)}


def _lm_head_ms(lm: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """The LM head's time over ``rows`` logit rows, from its measured sweep (linear between points)."""
    if lm.empty:
        return np.full(len(rows), np.nan)
    lm = lm.sort_values("tokens")
    return np.interp(rows, lm["tokens"].to_numpy(float), lm["median_ms"].to_numpy(float))


def step_points(table: GpuTable) -> pd.DataFrame:
    """One row per timed point, times scaled to the whole model (see module docstring).

    Returns:
        Columns ``point``, ``family``, ``role``, ``tokens``, ``seqs``, ``q_len``, ``context``,
        ``kv_tokens``, ``logits``, ``measured_ms`` and the group columns ``layers_ms``,
        ``attention_ms``, ``dense_ms``, ``experts_ms``, ``lm_head_ms`` (NaN where not timed), plus
        ``message_bytes`` and ``gpus`` for all-reduce points; ordered as the table.
    """
    raw = table.rows
    scaled = (raw["layers_timed"] > 0) & (raw["layers_model"] > 0)
    scale = np.where(scaled, raw["layers_model"] / raw["layers_timed"].where(raw["layers_timed"] > 0, 1), 1.0)
    raw = raw.assign(ms=raw["median_ms"] * scale)
    lm = raw[raw["family"] == "lm_head"][["tokens", "median_ms"]]
    keys = ["point", "family", "role", "tokens", "seqs", "q_len", "context", "kv_tokens"]
    wide = raw.pivot_table(index=keys, columns="group", values="ms", aggfunc="first", sort=False).reset_index()
    wide.columns.name = None
    extra = raw.drop_duplicates("point").set_index("point")[["message_bytes", "gpus"]]
    wide = wide.join(extra, on="point")
    for group in (*GROUPS, "step", "allreduce"):
        if group not in wide:
            wide[group] = np.nan
    fwd = wide["family"].isin(FORWARD_FAMILIES)
    logits = np.where(wide["family"] == "prefill", wide["seqs"], wide["tokens"])
    wide["logits"] = logits
    wide.loc[fwd, "lm_head"] = _lm_head_ms(lm, logits[fwd.to_numpy()])
    measured = np.select(
        [fwd, wide["family"] == "lm_head", wide["family"] == "draft", wide["family"] == "allreduce"],
        [wide["layers"] + wide["lm_head"], wide["lm_head"], wide["step"], wide["allreduce"]],
        default=np.nan,
    )
    wide["measured_ms"] = measured
    wide = wide.rename(columns={g: f"{g}_ms" for g in (*GROUPS, "step", "allreduce")})
    cols = [*keys, "logits", "measured_ms", *(f"{g}_ms" for g in GROUPS), "step_ms", "message_bytes", "gpus"]
    out = wide[cols].copy()
    for c in ("tokens", "seqs", "q_len", "context", "kv_tokens", "logits"):
        out[c] = out[c].astype(int)
    return out
