"""A variant's flags as the simulated server takes them: one translation for every offline path.

The HTTP front gets the same argv from :meth:`workbench.engines.Engine.launch_argv` (the
simulated engine's): the variant's ``launch_server`` flags, its target release as
``--sim-sglang-version`` and its ``sim_policy`` as ``--sim-*`` options. The offline paths
(calibration, predictions, step breakdowns) parse exactly this, so a variant behaves the same
whether it is served or predicted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.sim._profiles import SimProfile
    from workbench.sim._server_args import SimServerConfig

__all__ = ["variant_argv", "variant_config"]


def variant_argv(variant: str | Path) -> tuple[str, list[str], dict[str, str]]:
    """``(name, argv, env)`` of a variant (name in ``data/variants/`` or a file) for the simulated server.

    ``argv`` holds the variant's flags, ``--sim-sglang-version`` when it names its target release,
    and its ``--sim-*`` stand-in options; the caller adds ``--sim-profile``.

    Raises:
        ConfigError: unknown variant or a bad variant file.
    """
    from workbench.variants import load_variant

    v = load_variant(variant)
    argv = v.server_flags()
    if v.sglang_version:
        argv += ["--sim-sglang-version", v.sglang_version]
    for option, value in v.sim_options().items():
        argv += [f"--sim-{option}", str(value)]
    return v.name, argv, {k: str(x) for k, x in v.env.items()}


def variant_config(profile: SimProfile, variant: str | Path) -> SimServerConfig:
    """The simulated server's parsed flags for a variant on ``profile``: spec, caps and ``args``.

    Raises:
        ConfigError: unknown variant, or flags the server would refuse.
    """
    from workbench.sim._server_args import parse_server_args

    _, argv, env = variant_argv(variant)
    return parse_server_args([*argv, "--sim-profile", str(profile.path)], environ=env)
