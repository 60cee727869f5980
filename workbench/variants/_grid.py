"""Variant grids: (topk x num_steps x num_draft_tokens) on a template variant, as named variants checked before launch.

A grid is a TOML file (``data/grids/<name>.toml``, or any path) or the same keys as a
mapping (a notebook's ``grid`` parameter)::

    name = "eagle3"                 # prefix of the variants' names: eagle3-t4-s3-d8
    template = "eagle3-topk4"       # the speculative variant whose other flags every point keeps
    description = "..."             # optional
    topk = [1, 4]
    num_steps = [2, 3]
    num_draft_tokens = [3, 4, 8]

Each combination becomes a :class:`Variant` named ``<name>-t<topk>-s<num_steps>-d<num_draft_tokens>``
(deterministic, so re-running the same grid resumes the same sweeps), in the order
topk, then num_steps, then num_draft_tokens, each ascending as written. :func:`expand_grid`
checks every point with the pre-flight checks of :func:`workbench.variants.check_variant`
against the SGLang it would run (flags and speculative rules read from that version's
source) and refuses, by name and with the reason, each point with an error finding or one
SGLang would silently run with other settings than its name says (topk 1 forces
``num_draft_tokens = num_steps + 1``); nothing is launched.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.engines import Engine
from workbench.errors import ConfigError
from workbench.names import check_name
from workbench.hosts import Host
from workbench.variants._variant import VARIANTS_DIR, Variant, load_variant
from workbench.variants._template import apply_parameters


def toml_value(value: Any) -> str:
    """A TOML value for a string, a boolean, a number or a list of them, as a variant or grid file writes it
    (strings as JSON's escapes, which TOML's basic strings share)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


__all__ = ["GRIDS_DIR", "Grid", "GridExpansion", "expand_grid", "grid_variants", "load_grid"]

#: Where shipped grids live.
GRIDS_DIR = VARIANTS_DIR.parent / "grids"
#: The three settings a grid spans: key -> the launch flag it sets (``[flags]`` spelling).
AXES = {
    "topk": "speculative-eagle-topk",
    "num_steps": "speculative-num-steps",
    "num_draft_tokens": "speculative-num-draft-tokens",
}
_KEYS = {"name", "template", "description", *AXES}
#: Pre-flight checks that refuse a grid point although they are not errors: SGLang would run other settings.
REFUSED_CHECKS = ("spec-draft-forced",)


@dataclasses.dataclass(frozen=True)
class Grid:
    """A grid of speculative settings on a template variant.

    Attributes:
        name: prefix of the points' variant names.
        template: the template variant's name or file.
        topk, num_steps, num_draft_tokens: the values of each axis, as written.
        description: one line for people.
        path: the file it came from, if any.
    """

    name: str
    template: str
    topk: tuple[int, ...]
    num_steps: tuple[int, ...]
    num_draft_tokens: tuple[int, ...]
    description: str = ""
    path: Path | None = None

    def points(self) -> list[tuple[int, int, int]]:
        """Every (topk, num_steps, num_draft_tokens), in grid order."""
        return list(itertools.product(self.topk, self.num_steps, self.num_draft_tokens))


def point_name(prefix: str, topk: int, num_steps: int, num_draft_tokens: int) -> str:
    """``eagle3-t4-s3-d8``: a grid point's variant name."""
    return f"{prefix}-t{topk}-s{num_steps}-d{num_draft_tokens}"


def _axis(where: str, key: str, value: Any) -> tuple[int, ...]:
    values = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if (
        not isinstance(values, (list, tuple))
        or not values
        or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values)
    ):
        raise ConfigError(
            f"{where}: {key} must be a list of positive whole numbers, e.g. {key} = [2, 4], got {value!r}"
        )
    if len(set(values)) != len(values):
        raise ConfigError(f"{where}: {key} lists a value twice ({values}); list each once")
    return tuple(int(v) for v in values)


def load_grid(grid: str | Path | Mapping[str, Any] | Grid, *, directory: Path = GRIDS_DIR) -> Grid:
    """A grid from a file path, a name in ``data/grids/``, or a mapping with the file's keys.

    Raises:
        ConfigError: no such grid (the shipped ones are listed), invalid TOML, unknown or
            missing keys, an axis that is not a list of positive whole numbers, a name prefix
            that is not usable in file names.
    """
    if isinstance(grid, Grid):
        return grid
    path = None
    if isinstance(grid, Mapping):
        data, where = dict(grid), "grid"
    else:
        path = Path(grid).expanduser()
        if path.suffix != ".toml":
            path = directory / f"{grid}.toml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in directory.glob("*.toml"))) or "none"
            raise ConfigError(
                f"No grid {str(grid)!r} (no file {path}); shipped grids: {known}; or give a grid "
                "file's path, or a mapping with template, topk, num_steps and num_draft_tokens"
            )
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"Grid file {path} is not valid TOML: {exc}") from exc
        where = f"Grid file {path}"
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; known keys: {sorted(_KEYS)}")
    missing = sorted({"template", *AXES} - set(data))
    if missing:
        raise ConfigError(
            f'{where} needs {", ".join(missing)} (e.g. template = "eagle3-topk4", topk = [1, 4], '
            "num_steps = [2, 3], num_draft_tokens = [4, 8])"
        )
    template = str(data["template"])
    prefix = str(data.get("name") or Path(template).stem)
    check_name(prefix, what="grid name (the prefix of its variants' names)", fix=f"Change 'name' in {where}")
    return Grid(
        name=prefix,
        template=template,
        description=str(data.get("description", "")),
        path=path,
        **{key: _axis(where, key, data[key]) for key in AXES},
    )


def grid_variants(
    grid: str | Path | Mapping[str, Any] | Grid, *, parameters: Mapping[str, Any] | None = None
) -> list[Variant]:
    """Every point of ``grid`` as a variant, unchecked (see :func:`expand_grid` for the checked list).

    Args:
        grid: see :func:`load_grid`.
        parameters: template parameters (model_path, draft_model_path, tp_size, gpus) applied
            to the template first (:func:`workbench.variants._template.apply_parameters`).

    Raises:
        ConfigError: a bad grid, an unknown template, or a template that is not speculative.
    """
    g = load_grid(grid)
    template = apply_parameters(load_variant(g.template), **dict(parameters or {}))
    if not template.speculative:
        raise ConfigError(
            f"grid template {g.template!r} is not speculative (no speculative-algorithm); name an "
            "EAGLE variant such as eagle3-topk4"
        )
    out = []
    for k, s, d in g.points():
        flags = {key: value for key, value in template.flags.items() if key not in AXES.values()}
        flags.update({AXES["topk"]: k, AXES["num_steps"]: s, AXES["num_draft_tokens"]: d})
        out.append(
            dataclasses.replace(  # path None: messages name the point, not the template's file
                template,
                name=point_name(g.name, k, s, d),
                flags=flags,
                path=None,
                description=f"grid {g.name} on {template.name}: topk {k}, num_steps {s}, num_draft_tokens {d}",
            )
        )
    return out


@dataclasses.dataclass(frozen=True)
class GridExpansion:
    """A grid checked point by point (from :func:`expand_grid`).

    Attributes:
        grid: the grid.
        variants: the accepted points, in grid order.
        table: one row per point asked: ``variant``, ``topk``, ``num_steps``,
            ``num_draft_tokens``, ``status`` (``"ok"`` or ``"refused"``), ``reason`` (the
            refusing findings, problem and fix) and ``checked_against`` (the SGLang checked).
    """

    grid: Grid
    variants: list[Variant]
    table: pd.DataFrame

    @property
    def refused(self) -> pd.DataFrame:
        """The refused points' rows."""
        return self.table[self.table["status"] == "refused"].reset_index(drop=True)

    def refusal_lines(self) -> list[str]:
        """One line per refused point: its name, settings and why."""
        return [
            f"{r.variant} (topk {r.topk}, num_steps {r.num_steps}, num_draft_tokens {r.num_draft_tokens}): "
            f"refused: {r.reason}"
            for r in self.refused.itertuples()
        ]


def expand_grid(
    grid: str | Path | Mapping[str, Any] | Grid,
    *,
    parameters: Mapping[str, Any] | None = None,
    host: str | Host | None = None,
    sglang: str | None = None,
    engine: str | Engine | None = None,
) -> GridExpansion:
    """Every point of ``grid`` as a variant, each checked before anything is launched.

    Args:
        grid: see :func:`load_grid`.
        parameters: template parameters for the template (see :func:`grid_variants`).
        host, sglang, engine: what the points are checked against, as in
            :func:`workbench.variants.check_variants` (default: each point's own SGLang version,
            i.e. the template's).

    Returns:
        A :class:`GridExpansion`: the accepted variants and a table of every point.

    Raises:
        ConfigError: a bad grid or template, or no point accepted (every refusal listed).
    """
    from workbench.variants._check import _Cache, check_variant

    g = load_grid(grid)
    cache, rows, accepted = _Cache(), [], []
    for variant in grid_variants(g, parameters=parameters):
        check = check_variant(variant, host=host, sglang=sglang, engine=engine, resources=False, cache=cache)
        refusing = [f for f in check.findings if f.severity == "error" or f.check in REFUSED_CHECKS]
        flags = variant.flags
        rows.append(
            {
                "variant": variant.name,
                "topk": flags[AXES["topk"]],
                "num_steps": flags[AXES["num_steps"]],
                "num_draft_tokens": flags[AXES["num_draft_tokens"]],
                "status": "refused" if refusing else "ok",
                "reason": "; ".join(f"{f.problem} Fix: {f.fix}" if f.fix else f.problem for f in refusing),
                "checked_against": check.target.label if check.target is not None else None,
            }
        )
        if not refusing:
            accepted.append(variant)
    expansion = GridExpansion(g, accepted, pd.DataFrame(rows))
    if not accepted:
        raise ConfigError(
            f"grid {g.name!r}: every point was refused by the pre-flight checks:\n"
            + "\n".join(expansion.refusal_lines())
        )
    return expansion
