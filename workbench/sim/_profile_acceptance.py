"""A profile's ``[acceptance]`` table read as acceptance models: per prompt set and per sampling regime
(greedy or sampled), each sub-table laid over the profile's own figures (:func:`acceptance_model`); and which
regime a request runs under (:func:`acceptance_regime`)."""

from __future__ import annotations

import functools
from typing import Any

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel

#: Sub-tables of ``[acceptance]`` (and of each prompt set's table) holding the figures of one sampling regime.
REGIMES = ("greedy", "sampled")

#: SGLang treats a temperature below this as greedy (0.5.9 ``srt/sampling/sampling_params.py`` ``_SAMPLING_EPS``:
#: the temperature becomes 1.0 and ``top_k`` 1).
SAMPLING_EPS = 1e-6


def acceptance_regime(temperature: float | None, top_k: int | None = None) -> str | None:
    """The sampling regime a request runs under: ``"greedy"`` (SGLang samples greedily: temperature below
    ``SAMPLING_EPS`` or ``top_k`` 1, as 0.5.9 ``SamplingParams.__init__`` makes it), ``"sampled"``, or None
    (temperature unknown). SGLang's default temperature is 1.0, so a request that names none is ``"sampled"``
    on a server; None only where no request is in view (a profile's workload that states no temperature)."""
    if top_k == 1:
        return "greedy"
    if temperature is None:
        return None
    return "greedy" if 0 <= float(temperature) < SAMPLING_EPS else "sampled"


def _overlay(table: dict[str, Any], override: dict[str, Any], model: AcceptanceModel) -> dict[str, Any]:
    """``table`` with ``override``'s figures on top (a prompt set's or a regime's sub-table).

    A point in the override replaces the value it solves; a value in the override replaces the point that
    solved it; ``carry = ["sibling", ...]`` keeps ``model``'s (solved) value of those parameters and drops the
    point that solved them (a regime with a chain figure of its own but no tree figure keeps the tree's width
    gain measured in the other regime, instead of re-solving it against the other regime's tree figure).
    """
    merged = dict(table)
    carry = list(override.get("carry", []))
    unknown = set(carry) - {"alpha", "depth_decay", "sibling", "draft_calibration"}
    if unknown:
        raise ConfigError(
            f"[acceptance] carry names {sorted(unknown)}; it may name alpha, depth_decay, sibling, draft_calibration"
        )
    solved_here = {
        "chain": {"alpha"}
        | ({"depth_decay"} if isinstance(override.get("chain"), list) and len(override["chain"]) == 2 else set()),
        "tree": {"sibling"}
        | ({"draft_calibration"} if isinstance(override.get("tree"), list) and len(override["tree"]) == 2 else set()),
    }
    for key, params in solved_here.items():  # a set's own point replaces the value it solves
        if key in override:
            for p in params:
                merged.pop(p, None)
    for param, point in (
        ("alpha", "chain"),
        ("sibling", "tree"),
        ("draft_calibration", "tree"),
    ):  # a value replaces a point
        if (param in override or param in carry) and point not in override:
            merged.pop(point, None)
    for param in carry:
        merged[param] = getattr(model, param)
    merged.update({k: v for k, v in override.items() if k != "carry"})
    return merged


def _plain(table: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k not in ("prompt_sets", *REGIMES)}


def acceptance_model(
    table: dict[str, Any], prompt_set: str | None = None, regime: str | None = None
) -> AcceptanceModel:
    """The acceptance model of (prompt set, regime) of an ``[acceptance]`` table.

    ``(None, None)`` is ``[acceptance]`` itself; otherwise ``[acceptance.<regime>]``,
    ``[acceptance.prompt_sets.<set>]`` and ``[acceptance.prompt_sets.<set>.<regime>]`` lie over it, in that
    order (each where it exists), so a set's own figures win over the profile's and a regime's over the
    regime-free ones. A set the table does not name gets the profile's figures. Solved once per table and key.

    Raises:
        ConfigError: a malformed table or an unknown ``carry`` name.
    """
    import json

    return _acceptance_model(json.dumps(table, sort_keys=True, default=str), prompt_set, regime)


@functools.lru_cache(maxsize=256)
def _acceptance_model(table_json: str, prompt_set: str | None, regime: str | None) -> AcceptanceModel:
    import json

    table = json.loads(table_json)
    sets = dict(table.get("prompt_sets", {}))
    t = _plain(table)
    m = AcceptanceModel.from_table(t)
    layers = [table.get(regime, {}) if regime else {}]
    if prompt_set in sets:
        layers += [_plain(sets[prompt_set]), sets[prompt_set].get(regime, {}) if regime else {}]
    for layer in layers:
        if layer:
            t = _overlay(t, dict(layer), m)
            m = AcceptanceModel.from_table(t)
    return m
