"""What a reader must know about how a real-engine measurement was made, read from the runs' manifests.

A figure measured on a real SGLang server can still differ from production in ways that change its
meaning: the GPU it ran on, weights that are random (``--load-format dummy``: the shapes and the cost
are the model's, the tokens are noise) and an accept length forced by SGLang's own benchmark knob
``SGLANG_SIMULATE_ACC_LEN`` (read once at import in ``srt/speculative/spec_utils.py``; the verify then
accepts that many tokens on average, whatever the draft proposed). Each of these must be said wherever
the figures are shown: the report's first sentences, the provenance line, every chart subtitle and the
terminal summary all take their words from :func:`conditions_text`.

Pure functions of manifests (dicts as :mod:`workbench.store` writes them); no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.sim import FORCED_ACCEPTANCE_ENV, forced_length

__all__ = ["RunConditions", "conditions_of", "conditions_text", "forced_accept_length"]


def _env_of(manifest: Mapping[str, Any]) -> Mapping[str, Any]:
    definition = manifest.get("variant_definition") or {}
    env = definition.get("env") if isinstance(definition, Mapping) else None
    if isinstance(env, Mapping) and env:
        return env
    launch_env = (
        (manifest.get("provenance") or {}).get("launch_env")
        if isinstance(manifest.get("provenance"), Mapping)
        else None
    )
    return launch_env if isinstance(launch_env, Mapping) else {}


def forced_accept_length(manifest: Mapping[str, Any]) -> float | None:
    """The accept length a run's server was forced to (``SGLANG_SIMULATE_ACC_LEN`` > 0), or None.

    SGLang turns the knob off for values <= 0, so those (and values that are not numbers) are None.
    """
    try:
        return forced_length(_env_of(manifest).get(FORCED_ACCEPTANCE_ENV))
    except ConfigError:
        return None


def _launch_tokens(manifest: Mapping[str, Any]) -> list[str]:
    command = manifest.get("launch_command")
    if isinstance(command, str):
        return command.split()
    return [str(x) for x in command] if isinstance(command, Sequence) else []


def _random_weights(manifest: Mapping[str, Any]) -> bool:
    tokens = _launch_tokens(manifest)
    if "--load-format=dummy" in tokens:
        return True
    return any(a == "--load-format" and b == "dummy" for a, b in zip(tokens, tokens[1:]))


def _gpu_names(manifest: Mapping[str, Any]) -> list[str]:
    gpus = manifest.get("gpus")
    if not isinstance(gpus, Sequence) or isinstance(gpus, str):
        return []
    return [str(g["name"]) for g in gpus if isinstance(g, Mapping) and g.get("name")]


@dataclasses.dataclass(frozen=True)
class RunConditions:
    """How a set of real-engine runs was measured.

    Attributes:
        gpus: GPU model names the servers ran on (sorted, distinct; empty when not recorded).
        random_weights: variants whose server loaded random weights (``--load-format dummy``).
        forced: variant -> the accept length its server was forced to.
        sglang_versions: the SGLang versions the servers reported (sorted).
        gpu_variants: GPU model name -> the variants whose servers ran on it (in run order).
    """

    gpus: tuple[str, ...]
    random_weights: tuple[str, ...]
    forced: Mapping[str, float]
    sglang_versions: tuple[str, ...]
    gpu_variants: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def any(self) -> bool:
        """True when there is something to say beyond "measured"."""
        return bool(self.gpus or self.random_weights or self.forced)


def conditions_of(manifests: Sequence[Mapping[str, Any]]) -> RunConditions:
    """The :class:`RunConditions` of real-engine runs (simulated runs are skipped: their words are the simulator's)."""
    # runs that measured something (a server that never started has no figures to qualify)
    real = [m for m in manifests if not m.get("simulated") and m.get("levels_completed") != 0]
    forced = {str(m.get("variant")): v for m in real if (v := forced_accept_length(m)) is not None}
    return RunConditions(
        gpus=tuple(sorted({g for m in real for g in _gpu_names(m)})),
        random_weights=tuple(sorted({str(m.get("variant")) for m in real if _random_weights(m)})),
        forced=dict(sorted(forced.items())),
        sglang_versions=tuple(sorted({str(m["sglang_version"]) for m in real if m.get("sglang_version")})),
        gpu_variants={
            g: tuple(dict.fromkeys(str(m.get("variant")) for m in real if g in _gpu_names(m)))
            for g in sorted({g for m in real for g in _gpu_names(m)})
        },
    )


def conditions_text(manifests: Sequence[Mapping[str, Any]], *, short: bool = False) -> str:
    """The conditions as words, '' when none apply (a production-like measurement says only "measured").

    ``"MEASURED on real SGLang 0.5.17, NVIDIA H100 80GB HBM3; random weights (--load-format dummy); accept
    length forced by SGLANG_SIMULATE_ACC_LEN: real-eagle3-chain 3.0, real-eagle3-tree 3.4 per verify"``;
    ``short`` leaves out the flag and variable names (for chart subtitles).
    """
    c = conditions_of(manifests)
    if not c.any:
        return ""
    head = "MEASURED on real SGLang" + (f" {', '.join(c.sglang_versions)}" if c.sglang_versions else "")
    if len(c.gpus) > 1:  # runs on different cards: say which ran where
        head += ", " + " and ".join(f"{g} ({', '.join(c.gpu_variants.get(g, ()))})" for g in c.gpus)
    elif c.gpus:
        head += f", {c.gpus[0]}"
    parts = [head]
    if c.random_weights:
        parts.append("random weights" + ("" if short else " (--load-format dummy: real cost, meaningless tokens)"))
    if c.forced:
        values = ", ".join(f"{name} {value:g}" for name, value in c.forced.items())
        parts.append(
            (
                "accept length forced: "
                if short
                else f"accept length forced by {FORCED_ACCEPTANCE_ENV} (not a draft model's): "
            )
            + values
            + " per verify"
        )
    return "; ".join(parts)
