"""SGLang itself: ``python -m sglang.launch_server`` on the host's GPUs.

A real server runs in real time (any other time scale is refused), loads the
weights it is given (a missing model path is an error before launch), needs GPUs
(count and free memory are judged), and runs SGLang's own code: variants are
checked in full against the SGLang that will run (the one installed for the host's
Python when the variant names no base), and patches are applied to an isolated
tree it launches from. It keeps a prefix cache, so benchmark prompts get a unique
tag by default. Loading weights and capturing CUDA graphs takes minutes, hence the
long default ready timeout (SGLang's own launch waits up to 30 min).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.engines._base import Engine, variant_argv
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.variants import Variant

__all__ = ["SGLANG_ENGINE", "SGLangEngine"]


class SGLangEngine(Engine):
    """A real SGLang server (``sglang.launch_server``); see :class:`~workbench.engines.Engine`."""

    def launch_argv(
        self,
        variant: Variant,
        *,
        python: str,
        port: int,
        listen_host: str = "127.0.0.1",
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """``<python> -m sglang.launch_server <flags> --host H --port P``.

        Raises:
            ConfigError: ``options`` given (simulator options do not apply to a real server).
        """
        if options:
            raise ConfigError(f"sim_options apply only to the simulated engine, not to engine={self.name!r} "
                              f"(got {dict(options)!r})")
        return variant_argv(variant, self.launch_module, python=python, port=port, listen_host=listen_host)

    def time_scale(self, requested: float | None) -> float:
        """1.0: a real server runs in real time.

        Raises:
            ConfigError: any other value.
        """
        if requested not in (None, 1.0):
            raise ConfigError("time_scale applies only to the simulated engine; a real server runs in real time")
        return self.default_time_scale

    def launch_options(self, *, profile: str, time_scale: float, seed: int) -> dict[str, Any] | None:
        """None: a real server takes no simulator options."""
        return None

    def stand_in(self, variant: Variant) -> str | None:
        """None: the variant's patches themselves run."""
        return None

    def answered(self, server_info: Mapping[str, Any]) -> bool:
        """True for any ``/server_info`` answer without the simulator's ``simulation`` block."""
        return not isinstance(server_info.get("simulation"), dict)


#: SGLang's values.
SGLANG_ENGINE = SGLangEngine(
    name="sglang",
    simulated=False,
    description="SGLang itself (python -m sglang.launch_server) on the host's GPUs",
    launch_module="sglang.launch_server",
    default_time_scale=1.0,
    # Three repeats per level: the fewest whose Student t interval (2 degrees of
    # freedom, t = 4.30 at 95%) separates differences of a few percent between runs.
    default_repeats=3,
    unique_prompts=True,
    ready_timeout_s=1800.0,
    uploads_workbench=False,
    runs_sglang_code=True,
    checks_installed_sglang=True,
    wants_gpus=True,
    missing_path_severity="error",
    missing_path_note="",
    hub_id_note="the server downloads it into the Hugging Face cache",
    gpu_skip_note="",
    unapplied_patch_note="",
    version_meaning="the SGLang version the server runs",
)
