"""From a what-if's prediction to a measurement: its recommended settings written as grid files.

:func:`save_grids` writes the configurations a what-if recommends (:func:`recommended_points`) in
``data/grids/``' format, each with the ``workbench bench --grid`` command that measures it against the baseline
at the what-if's levels; a spec v2 (or v1) template the shipped variants lack is written beside them. Functions
of :class:`workbench.studies._whatif_tables.WhatIfTables`; they write grid and variant files, never a run.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.errors import ConfigError
from workbench.studies._whatif_tables import WhatIfTables
from workbench.variants import Variant, toml_value

__all__ = ["recommended_points", "save_grids"]


def recommended_points(tables: WhatIfTables) -> pd.DataFrame:
    """The speculative configurations the recommended policy runs (:attr:`WhatIfTables.policy`), one row each: ``variant``
    (the what-if's label), ``topk``, ``num_steps``, ``num_draft_tokens``, ``spec_v2``, ``concurrency`` (the
    levels it is recommended at, as text) and ``spec_off_above`` (a threshold policy's N, else None). Empty when
    plain decoding is recommended everywhere."""
    kind = tables.recommended()
    rows: list[dict[str, Any]] = []
    t = tables.threshold
    if kind == "threshold" and t is not None:  # a recommended threshold was simulated
        rows.append({"variant": t.variant, "concurrency": f"1-{t.threshold}", "spec_off_above": t.threshold})
    elif kind == "adaptive tiers":
        for a, b, name in tables.tiers():
            if name != tables.baseline:
                rows.append({"variant": name, "concurrency": f"{a}-{b}" if a != b else f"{a}", "spec_off_above": None})
    cols = ["variant", "topk", "num_steps", "num_draft_tokens", "spec_v2", "concurrency", "spec_off_above"]
    if not rows:
        return pd.DataFrame(columns=cols)
    settings = tables.levels.drop_duplicates("variant").set_index("variant")
    out = pd.DataFrame(rows).drop_duplicates("variant")
    for key in ("topk", "num_steps", "num_draft_tokens"):
        out[key] = [int(settings.loc[v, key]) for v in out["variant"]]
    out["spec_v2"] = [bool(settings.loc[v, "spec_v2"]) for v in out["variant"]]
    return out[cols].reset_index(drop=True)


def save_grids(tables: WhatIfTables, out_dir: str | Path) -> pd.DataFrame:
    """Write the recommended configurations as grid files (``data/grids/``' format) that ``workbench bench
    --grid FILE`` and the spec_vs_baseline notebook's ``grid`` measure, so a prediction becomes a measurement in
    one step (relative ``out_dir``: to the project root).

    Points are named as every grid names them, ``<name>-t<topk>-s<num_steps>-d<num_draft_tokens>``
    (:func:`workbench.variants.expand_grid`); ``<name>`` is the what-if's template's
    (``eagle3-topk4-t4-s2-d16``), with ``-v2`` for spec v2 points (``eagle3-topk4-v2-t1-s5-d6``), whose template is a
    shipped variant that differs from the what-if's only by ``SGLANG_ENABLE_SPEC_V2=1`` and the grid's own three
    settings (or, with none shipped, a variant file written beside the grid). A grid holds every combination of its
    lists, so configurations that are not one product (topk-1 chains of two lengths) go to one file each.

    Returns:
        One row per file: ``grid`` (its path, shown relative), ``points`` (the variant names it measures, each
        with the what-if's label of the same settings and the levels it is recommended at), ``template``, ``command`` (``workbench bench`` with this what-if's
        profile, levels and output length; the baseline's levels are measured once and reused by the next
        command) and ``note`` (a threshold policy's switch, which a grid cannot express). No row when plain
        decoding is recommended everywhere.
    """
    from workbench import paths

    folder = paths.resolve(out_dir)
    points = recommended_points(tables)
    rows: list[dict[str, Any]] = []
    if not len(points):
        return pd.DataFrame(columns=["grid", "points", "template", "command", "note"])
    folder.mkdir(parents=True, exist_ok=True)
    for v2, group in points.groupby("spec_v2", sort=True):
        template = _grid_template(tables, bool(v2), folder)
        prefix = Path(tables.template).stem + ("-v2" if v2 else "")
        for part in _products(group):
            stem = f"whatif-{tables.profile}-{prefix}-" + "-".join(
                f"{letter}{'_'.join(str(x) for x in part['axes'][axis])}"
                for letter, axis in (("t", "topk"), ("s", "num_steps"), ("d", "num_draft_tokens"))
            )
            path = folder / f"{stem}.toml"
            path.write_text(_grid_toml(prefix, template, part["axes"], tables.profile), encoding="utf-8")
            names = [
                f"{prefix}-t{r.topk}-s{r.num_steps}-d{r.num_draft_tokens} = {r.variant} (concurrency {r.concurrency})"
                for r in part["rows"].itertuples()
            ]
            thresholds = [int(n) for n in part["rows"]["spec_off_above"].dropna()]
            note = (
                f"recommended with no drafting above {thresholds[0]} running requests: a grid point drafts at "
                f"every level; the switch needs a variant with sim_policy spec_off_above = {thresholds[0]} on "
                "the simulator, or the eagle-spec-off-above patch on SGLang"
                if thresholds
                else ""
            )
            rows.append(
                {
                    "grid": paths.shown(path),
                    "points": "; ".join(names),
                    "template": str(template),
                    "command": _bench_command(tables, paths.shown(path)),
                    "note": note,
                }
            )
    return pd.DataFrame(rows)


def _bench_command(tables: WhatIfTables, grid: str) -> str:
    """``workbench bench BASELINE --grid FILE`` with this what-if's profile, levels and output length."""
    levels = ",".join(str(int(c)) for c in sorted(set(tables.levels["concurrency"])))
    tokens = int(tables.levels["max_new_tokens"].iloc[0])
    extra = (
        ""
        if tables.settings.get("requests_per_level") is None
        else f" --requests {tables.settings['requests_per_level']}"
    )
    return (
        f"workbench bench {tables.baseline} --grid {grid} --sim-profile {tables.profile} --levels {levels} "
        f"--max-new-tokens {tokens}{extra}"
    )


def _grid_template(tables: WhatIfTables, spec_v2: bool, folder: Path) -> str:
    """The variant a grid's points keep their other flags from: the what-if's template, or for spec v2 (v1) a
    shipped variant equal to it but for SGLANG_ENABLE_SPEC_V2 (and the grid's settings), else a file written
    into ``folder``."""
    from workbench.variants import list_variants, load_variant

    base = load_variant(tables.template)
    if (base.env.get("SGLANG_ENABLE_SPEC_V2") == "1") == spec_v2:
        return tables.template
    env = {k: v for k, v in base.env.items() if k != "SGLANG_ENABLE_SPEC_V2"}
    if spec_v2:
        env["SGLANG_ENABLE_SPEC_V2"] = "1"
    wanted = _grid_point(tables.template, env)
    for name in list_variants():
        if _grid_point(name) == wanted:
            return name
    name = f"{base.name}-{'v2' if spec_v2 else 'v1'}"
    path = folder / f"{name}.toml"
    path.write_text(
        _variant_toml(
            dataclasses.replace(
                base,
                name=name,
                env=env,
                description=(
                    f"{base.name} with spec {'v2' if spec_v2 else 'v1'} (SGLANG_ENABLE_SPEC_V2 "
                    f"{'on' if spec_v2 else 'off'}): the template of the what-if's grid"
                ),
            )
        ),
        encoding="utf-8",
    )
    return str(path)


def _products(group: pd.DataFrame) -> list[dict[str, Any]]:
    """``group``'s configurations as grids: one when they are every combination of their values, else one each."""
    axes = {key: sorted({int(v) for v in group[key]}) for key in ("topk", "num_steps", "num_draft_tokens")}
    wanted = {(int(r.topk), int(r.num_steps), int(r.num_draft_tokens)) for r in group.itertuples()}
    if wanted == set(itertools.product(*axes.values())):
        return [{"axes": axes, "rows": group}]
    return [
        {
            "axes": {
                "topk": [int(r.topk)],
                "num_steps": [int(r.num_steps)],
                "num_draft_tokens": [int(r.num_draft_tokens)],
            },
            "rows": group.iloc[[i]],
        }
        for i, r in enumerate(group.itertuples())
    ]


def _grid_toml(name: str, template: str, axes: dict[str, list[int]], profile: str) -> str:
    """A grid file: its name, template and the three axes, with a header saying where it came from."""
    lines = [
        f"# Written by the what-if on profile {profile}: the settings it recommends (a MODEL PREDICTION), to",
        "# measure them: workbench bench BASELINE --grid THIS_FILE (or the spec_vs_baseline notebook's grid).",
        f"name = {toml_value(name)}",
        f"template = {toml_value(template)}",
        f"description = {toml_value(f'What-if recommendation on profile {profile}')}",
    ]
    lines += [f"{key} = {toml_value(values)}" for key, values in axes.items()]
    return "\n".join(lines) + "\n"


def _variant_toml(variant: Variant) -> str:
    """A variant file of ``variant`` (a :class:`workbench.variants.Variant` without patches)."""
    top = {
        "name": variant.name,
        "description": variant.description,
        "model_path": variant.model_path,
        "draft_model_path": variant.draft_model_path,
        "sglang_version": variant.sglang_version,
        "base": variant.base,
    }
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items() if v is not None]
    for table, values in (("flags", variant.flags), ("env", variant.env), ("sim_policy", variant.sim_policy)):
        if values:
            lines += ["", f"[{table}]", *(f"{json.dumps(k)} = {toml_value(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


def _grid_point(template: str | Path, env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """What a grid on ``template`` makes of one point, but for its name, text and file (with ``env`` in place of
    the template's, when given): two templates are interchangeable for a grid when these agree. None for a
    template a grid refuses (not speculative)."""
    from workbench.variants import grid_variants

    try:
        point = grid_variants({"template": str(template), "topk": [1], "num_steps": [1], "num_draft_tokens": [2]})[0]
    except ConfigError:
        return None
    point = dataclasses.replace(point, name="point", description="", path=None, env=point.env if env is None else env)
    return point.to_dict()
