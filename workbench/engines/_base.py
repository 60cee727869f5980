"""The :class:`Engine` record: everything that differs between the engines that serve a variant.

An engine is what runs a server variant on a host: the simulated engine
(:mod:`workbench.sim`) or SGLang itself. The rest of the workbench never asks an
engine's name; it asks the engine: how to launch a variant, which pre-flight checks
apply, what time scale and ready timeout to use, how to label the rows it produced.
One subclass per engine implements the methods (:mod:`workbench.engines._sim`,
:mod:`workbench.engines._sglang`) and one instance of it gives the values of the fields,
each written once; :mod:`workbench.engines._registry` maps names to them and picks the
default one for a host.

Each field below is a plain value (an engine is an immutable object) and each
method is pure: no engine touches a host, a file or the network.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from workbench.variants import Variant

__all__ = ["Engine", "PathSeverity", "variant_argv"]

#: How a missing model path is judged before launch.
PathSeverity = Literal["warning", "error"]


@dataclasses.dataclass(frozen=True)
class Engine(abc.ABC):
    """What serves a variant, and everything about it that the workbench must know.

    Attributes:
        name: the engine's name, as written by people (``engine="sim"``, ``--engine sglang``)
            and stored in the ``engine`` column of every row and in every manifest.
        simulated: True when its figures are modelled, not measured on a real server;
            stored as the ``simulated`` column and flag (charts say ``SIMULATED``).
        description: one line for people (CLI help, error messages).
        launch_module: the module started as ``<python> -m <launch_module> <flags>``.
        default_time_scale: engine seconds per wall-clock second when none is given
            (a simulator may run faster than real time; a real engine runs at 1.0).
        default_repeats: how many times a sweep measures each level when not told
            (``repeats``): enough for a 95% interval on a real engine; on the simulator
            what keeps ``make report`` within its time budget.
        unique_prompts: default of ``unique_prompts`` (a unique tag per request keeps a
            prefix cache from serving repeated prompts): on for an engine with a prefix
            cache, off for one that models none.
        ready_timeout_s: default ready-wait limit in seconds (a real server loads weights
            and captures CUDA graphs for many minutes).
        uploads_workbench: the server imports the workbench package, so on a remote host
            the workbench bundle is uploaded and put on ``PYTHONPATH`` first.
        runs_sglang_code: the server runs SGLang's own code, so a variant is checked in
            full before launch (flags and speculative rules of the SGLang it runs, patches
            on a scratch copy), its patches are applied to an isolated tree it launches
            from, and its provenance records the SGLang installed or prepared. False: the
            patches are recorded (text and sha256) but not applied, the variant's
            ``sim_policy`` stands in for them, and only host resources are checked.
        checks_installed_sglang: the SGLang installed for the host's Python is what runs, so
            it is the target a variant without a base is checked against.
        wants_gpus: the host's GPUs are inventoried and judged (count, free memory,
            weights per GPU) before launch.
        missing_path_severity: how a model path missing on the host is judged:
            ``"error"`` (the server would fail) or ``"warning"`` (the engine reads no weights).
        missing_path_note: words appended to a missing-path finding ('' for none).
        hub_id_note: why a hub id (not a path) needs no check on this engine.
        gpu_skip_note: the finding's text when GPUs are not judged (``wants_gpus`` False).
        unapplied_patch_note: why a variant's patches are recorded but not applied
            (``runs_sglang_code`` False), as the run's provenance says it.
        version_meaning: what the ``version`` in the server's ``/server_info`` means.
    """

    name: str
    simulated: bool
    description: str
    launch_module: str
    default_time_scale: float
    default_repeats: int
    unique_prompts: bool
    ready_timeout_s: float
    uploads_workbench: bool
    runs_sglang_code: bool
    checks_installed_sglang: bool
    wants_gpus: bool
    missing_path_severity: PathSeverity
    missing_path_note: str
    hub_id_note: str
    gpu_skip_note: str
    unapplied_patch_note: str
    version_meaning: str

    @abc.abstractmethod
    def launch_argv(
        self,
        variant: Variant,
        *,
        python: str,
        port: int,
        listen_host: str = "127.0.0.1",
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """The full command line that starts ``variant`` on the host.

        Args:
            variant: the variant (its flags, and for a simulator its ``sim_policy``).
            python: the host's Python interpreter.
            port: port to listen on.
            listen_host: address to bind (default: the host's loopback).
            options: engine options (for the simulator ``--sim-*``: name without the prefix
                -> value; None values are left out).

        Raises:
            ConfigError: ``options`` given to an engine that takes none.
        """
        ...

    @abc.abstractmethod
    def time_scale(self, requested: float | None) -> float:
        """The time scale to run at: ``requested``, or :attr:`default_time_scale` for None.

        Raises:
            ConfigError: a value the engine cannot run at (not 1 on a real engine). Whether
                it is a finite number > 0 is the sweep plan's check (:class:`workbench.bench.SweepPlan`).
        """
        ...

    @abc.abstractmethod
    def launch_options(self, *, profile: str, time_scale: float, seed: int) -> dict[str, Any] | None:
        """The engine options a benchmark passes to :meth:`launch_argv` (None: the engine takes none).

        Args:
            profile: the simulator profile (hardware and model modelled).
            time_scale: engine seconds per wall second (from :meth:`time_scale`).
            seed: seeds the simulator's sampling.
        """
        ...

    @abc.abstractmethod
    def stand_in(self, variant: Variant) -> str | None:
        """Words for what runs in place of the variant's patches on this engine, or None when they run."""
        ...

    @abc.abstractmethod
    def answered(self, server_info: Mapping[str, Any]) -> bool:
        """True when a server's ``/server_info`` answer says this engine served it.

        The simulator's answer carries a ``simulation`` block (its profile, time scale,
        ``"engine": "sim"``); a real SGLang's has none.
        """
        ...

    def labels(self) -> dict[str, Any]:
        """The columns every stored row of this engine carries: ``{"engine": name, "simulated": bool}``."""
        return {"engine": self.name, "simulated": self.simulated}


def variant_argv(variant: Variant, module: str, *, python: str, port: int, listen_host: str) -> list[str]:
    """``<python> -m <module> <variant flags> --host <listen_host> --port <port>`` (shared by the engines)."""
    return [python, "-m", module, *variant.server_flags(), "--host", listen_host, "--port", str(port)]
