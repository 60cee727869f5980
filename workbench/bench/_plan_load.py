"""The load a sweep plan sends: its shape (backend, sampling, prompt length) and the dimension it sweeps.

These fields are additive: :meth:`SweepPlan.to_json <workbench.bench._plan.SweepPlan.to_json>` writes one
only when it differs from :data:`LOAD_DEFAULTS`, so the identity of a sweep planned before they existed does
not change. :func:`_check_load` checks them, one message per mistake naming the field, as the plan's other
checks do (:mod:`workbench.bench._plan_checks`).

No pandas or numpy (standard library only): the host-side runner imports it where those may be absent.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from workbench.bench._client import ROUTES
from workbench.bench._plan_checks import _flag, _no_repeats, _tokens, _whole_at_least
from workbench.bench._prompts import DEFAULT_RANDOM_VOCAB_SIZE
from workbench.errors import ConfigError

__all__ = ["LOAD_DEFAULTS", "SWEEP_DIMENSIONS"]

#: Defaults of the load fields (see :class:`~workbench.bench._plan.SweepPlan`).
LOAD_DEFAULTS: dict[str, Any] = {
    "backend": "generate",
    "model": None,
    "temperature": 0.0,
    "ignore_eos": True,
    "input_len": None,
    "random_vocab_size": DEFAULT_RANDOM_VOCAB_SIZE,
    "sweep": None,
    "sweep_values": None,
}

#: What a sweep can vary besides the concurrency (or request rate) -> the row column holding it.
SWEEP_DIMENSIONS: dict[str, str] = {
    "input_len": "input_len",
    "output_len": "max_new_tokens",
    "temperature": "temperature",
}


def _backend(value: Any) -> str:
    if value not in ROUTES:
        raise ConfigError(
            f"backend must be one of {list(ROUTES)} (SGLang's native /generate, or the OpenAI-compatible "
            f"/v1/completions and /v1/chat/completions), got {value!r}"
        )
    return value


def _temperature(value: Any, where: str = "temperature") -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where} must be a finite number >= 0 (0.0: greedy), got {value!r}")
    return float(value)


def _sweep(dimension: Any, values: Any) -> tuple[str | None, tuple[Any, ...] | None]:
    if dimension is None:
        if values is not None:
            raise ConfigError(
                "sweep_values needs sweep (what they are values of: "
                f"{sorted(SWEEP_DIMENSIONS)}); or leave sweep_values None"
            )
        return None, None
    if dimension not in SWEEP_DIMENSIONS:
        raise ConfigError(
            f"sweep must be one of {sorted(SWEEP_DIMENSIONS)} (the dimension varied besides the "
            f"concurrency), or None, got {dimension!r}"
        )
    if values is None or isinstance(values, (str, bytes)) or not tuple(values):
        raise ConfigError(
            f"sweep={dimension!r} needs sweep_values: a non-empty list of values, e.g. "
            f"{ {'input_len': [128, 1024], 'output_len': [64, 512], 'temperature': [0.0, 1.0]}[dimension] }"
        )
    name = f"sweep_values ({dimension})"
    if dimension == "temperature":
        checked = tuple(_temperature(v, "sweep_values (temperature)") for v in values)
    else:
        checked = tuple(_tokens(name, v, "tokens") for v in values)
    _no_repeats(name, checked, "[128, 1024]")
    return dimension, checked


def _check_load(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The load fields of a plan (:data:`LOAD_DEFAULTS`' names -> values), checked and normalised.

    Raises:
        ConfigError: the first invalid field, named; or random-token prompts (``input_len``, or
            ``sweep="input_len"``) with backend ``"chat"``, which sends messages.
    """
    out: dict[str, Any] = {"backend": _backend(fields["backend"])}
    model = fields["model"]
    if model is not None and not isinstance(model, str):
        raise ConfigError(f"model must be a string (the OpenAI 'model' field) or None, got {model!r}")
    out["model"] = model
    out["temperature"] = _temperature(fields["temperature"])
    out["ignore_eos"] = _flag("ignore_eos", fields["ignore_eos"])
    out["input_len"] = (
        None
        if fields["input_len"] is None
        else _tokens("input_len", fields["input_len"], "prompt tokens of random-token prompts; None: the prompt set")
    )
    out["random_vocab_size"] = _whole_at_least(
        "random_vocab_size",
        fields["random_vocab_size"],
        1001,
        "random token ids are drawn from [1000, random_vocab_size)",
    )
    out["sweep"], out["sweep_values"] = _sweep(fields["sweep"], fields["sweep_values"])
    if out["backend"] == "chat" and (out["input_len"] is not None or out["sweep"] == "input_len"):
        raise ConfigError(
            "backend 'chat' sends messages, not token ids: random-token prompts (input_len, "
            "sweep='input_len') need backend 'generate' or 'completions'"
        )
    return out
