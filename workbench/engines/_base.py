"""The :class:`Engine` protocol: what serves a variant, and what it can do.

An engine is what runs a server variant on a host: the simulated engine
(:mod:`workbench.sim`) or SGLang itself. The rest of the workbench never asks an
engine's name; it asks the engine what it does (does it read the model's weights, want
the host's GPUs, run the variant's own SGLang tree?) and how (the command line, the time
scale, the options of a benchmark, what stands in for a variant's patches, whether a
``/server_info`` answer is its own). Sentences about an engine are written by the module
that makes the finding, from these answers and :attr:`Engine.called`: an engine holds no
prose but its name for people.

One class per engine states its answers once, in its own body, grouped beside the methods they
go with (:mod:`workbench.engines._sim`, :mod:`workbench.engines._sglang`); its instance is
immutable and stateless, and its methods are pure: no engine touches a host, a file or the
network. :mod:`workbench.engines._registry` maps names to the instances and picks the
default one for a host.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

__all__ = ["Engine", "ServedVariant"]


class ServedVariant(Protocol):
    """What an engine reads of a variant to launch it (:class:`workbench.variants.Variant` is one).

    Engines sit below ``variants`` (which imports them), so they name this contract instead of the type.
    """

    @property
    def sglang_version(self) -> str | None:
        """The SGLang release the variant is written for, when its base does not name one."""
        ...

    def server_flags(self) -> list[str]:
        """The variant's flags as an argv fragment (model paths first)."""
        ...

    def sim_options(self) -> dict[str, Any]:
        """The simulator's options standing in for the variant's patches (name without ``--sim-`` -> value)."""
        ...

    def sim_stand_in(self) -> str | None:
        """Words for what the simulator runs in place of the variant's patches, or None."""
        ...


class Engine(abc.ABC):
    """What serves a variant: its answers (class attributes, stated once by each engine) and its methods.

    Attributes:
        name: the engine's name, as written by people (``engine="sim"``, ``--engine sglang``)
            and stored in the ``engine`` column of every row and in every manifest.
        called: what a sentence calls it (``"the simulated engine"``, ``"SGLang"``).
        description: one line for people (CLI help, error messages).
        simulated: True when its figures are modelled, not measured on a real server;
            stored as the ``simulated`` column and flag (charts say ``SIMULATED``).
        launch_module: the module started as ``<python> -m <launch_module> <flags>``.
        uploads_workbench: the server imports the workbench package, so on a remote host
            the workbench bundle is uploaded and put on ``PYTHONPATH`` first.
        ready_timeout_s: default ready-wait limit in seconds (a real server loads weights
            and captures CUDA graphs for many minutes).
        default_repeats: how many times a sweep measures each level when not told
            (``repeats``): enough for a 95% interval on a real engine; on the simulator
            what keeps ``make report`` within its time budget.
        unique_prompts: default of ``unique_prompts`` (a unique tag per request keeps a
            prefix cache from serving repeated prompts): on for an engine with a prefix
            cache, off for one that models none.
        reads_weights: the server loads the model's weights from the variant's paths, so a
            path missing on the host stops the launch and a hub id is downloaded.
        wants_gpus: the host's GPUs are inventoried and judged (count, free memory,
            weights per GPU) before launch.
        runs_variant_tree: the server runs the SGLang code the variant names (its base: a
            release, a checkout, or the SGLang installed for the host's Python) with its
            patches applied, so that SGLang is the target of the checks, the launch tree is
            prepared and the provenance records it. False (the default, an engine that is
            not SGLang): the patches are recorded but not applied, :meth:`stand_in` says what
            runs in their place, and a release whose source cannot be read only limits the checks.
    """

    name: ClassVar[str]
    called: ClassVar[str]
    description: ClassVar[str]
    simulated: ClassVar[bool]
    launch_module: ClassVar[str]
    uploads_workbench: ClassVar[bool]
    ready_timeout_s: ClassVar[float]
    default_repeats: ClassVar[int]
    unique_prompts: ClassVar[bool]
    reads_weights: ClassVar[bool]
    wants_gpus: ClassVar[bool]
    runs_variant_tree: ClassVar[bool] = False

    def launch_argv(
        self,
        variant: ServedVariant,
        *,
        python: str,
        port: int,
        listen_host: str = "127.0.0.1",
        options: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """The full command line that starts ``variant`` on the host:
        ``<python> -m <launch_module> <flags> --host <listen_host> --port <port> <options>``.

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
        flags, tail = self.engine_argv(variant, dict(options or {}))
        return [python, "-m", self.launch_module, *flags, "--host", listen_host, "--port", str(port), *tail]

    @abc.abstractmethod
    def engine_argv(self, variant: ServedVariant, options: dict[str, Any]) -> tuple[list[str], list[str]]:
        """This engine's part of :meth:`launch_argv`: the flags before ``--host`` and the options after ``--port``.

        Raises:
            ConfigError: ``options`` given to an engine that takes none.
        """

    @abc.abstractmethod
    def time_scale(self, requested: float | None) -> float:
        """The time scale to run at (engine seconds per wall-clock second): ``requested``, or the engine's
        default for None.

        Raises:
            ConfigError: a value the engine cannot run at (not 1 on a real engine). Whether
                it is a finite number > 0 is the sweep plan's check (:class:`workbench.bench.SweepPlan`).
        """

    @abc.abstractmethod
    def launch_options(self, *, profile: str, time_scale: float, seed: int) -> dict[str, Any] | None:
        """The engine options a benchmark passes to :meth:`launch_argv` (None: the engine takes none).

        Args:
            profile: the simulator profile (hardware and model modelled).
            time_scale: engine seconds per wall second (from :meth:`time_scale`).
            seed: seeds the simulator's sampling.
        """

    @abc.abstractmethod
    def stand_in(self, variant: ServedVariant) -> str | None:
        """Words for what runs in place of the variant's patches on this engine, or None when they run."""

    @abc.abstractmethod
    def answered(self, server_info: Mapping[str, Any]) -> bool:
        """True when a server's ``/server_info`` answer says this engine served it.

        The simulator's answer carries a ``simulation`` block (its profile, time scale,
        ``"engine": "sim"``); a real SGLang's has none.
        """

    def labels(self) -> dict[str, Any]:
        """The columns every stored row of this engine carries: ``{"engine": name, "simulated": bool}``."""
        return {"engine": self.name, "simulated": self.simulated}

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"an engine is immutable: {type(self).__name__}.{name} is stated in its class")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"an engine is immutable: {type(self).__name__}.{name} is stated in its class")

    def __eq__(self, other: object) -> bool:
        """Engines are values: two instances of one engine class are equal (an engine has no state)."""
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
