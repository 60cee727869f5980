"""SGLang itself: ``python -m sglang.launch_server`` on the host's GPUs.

A real server runs in real time (any other time scale is refused), loads the
weights it is given (a missing model path is an error before launch), needs GPUs
(count and free memory are judged), and runs the SGLang the variant names: variants are
checked in full against it (the one installed for the host's Python when the variant
names no base), and patches are applied to an isolated tree it launches from. It keeps a
prefix cache, so benchmark prompts get a unique tag by default. Loading weights and
capturing CUDA graphs takes minutes, hence the long default ready timeout (SGLang's own
launch waits up to 30 min).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.engines._base import Engine, ServedVariant
from workbench.errors import ConfigError

__all__ = ["SGLANG_ENGINE", "SGLangEngine"]


class SGLangEngine(Engine):
    """A real SGLang server (``sglang.launch_server``); see :class:`~workbench.engines.Engine`."""

    # Who it is, and which server's answers are its own.
    name = "sglang"
    called = "SGLang"

    def answered(self, server_info: Mapping[str, Any]) -> bool:
        """True for any ``/server_info`` answer without the simulator's ``simulation`` block."""
        return not isinstance(server_info.get("simulation"), dict)

    # What it serves (a model, or a real server) and how it launches.
    simulated = False
    description = "SGLang itself (python -m sglang.launch_server) on the host's GPUs"
    launch_module = "sglang.launch_server"

    def engine_argv(self, variant: ServedVariant, options: dict[str, Any]) -> tuple[list[str], list[str]]:
        """The variant's flags, and no options.

        Raises:
            ConfigError: ``options`` given (simulator options do not apply to a real server).
        """
        if options:
            raise ConfigError(
                f"sim_options apply only to the simulated engine, not to engine={self.name!r} (got {options!r})"
            )
        return variant.server_flags(), []

    # How a sweep measures it.
    uploads_workbench = False
    ready_timeout_s = 1800.0
    # Three repeats per level: the fewest whose Student t interval (2 degrees of
    # freedom, t = 4.30 at 95%) separates differences of a few percent between runs.
    default_repeats = 3
    unique_prompts = True

    def time_scale(self, requested: float | None) -> float:
        """1.0: a real server runs in real time.

        Raises:
            ConfigError: any other value.
        """
        if requested not in (None, 1.0):
            raise ConfigError("time_scale applies only to the simulated engine; a real server runs in real time")
        return 1.0

    def launch_options(self, *, profile: str, time_scale: float, seed: int) -> dict[str, Any] | None:
        """None: a real server takes no simulator options."""
        return None

    # What it does with a variant: the pre-flight checks and the provenance follow from these.
    reads_weights = True
    wants_gpus = True
    runs_variant_tree = True

    def stand_in(self, variant: ServedVariant) -> str | None:
        """None: the variant's patches themselves run."""
        return None


#: The engine.
SGLANG_ENGINE = SGLangEngine()
