"""One variant's sweep, validated before anything is launched: :class:`VariantSweep` and its checks.

:func:`prepare_sweep` turns :func:`~workbench.sweeps.benchmark_variant`'s options into a validated
sweep (the variant with its template parameters, the engine, the plan, the pre-flight findings and the
sweep's identity); the other checks here refuse, before any server starts, what a sweep of several
variants cannot run (a variant spanning nodes off a fleet, ``parallel`` on a GPU host, ``host`` beside
``fleet``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import tomllib
import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from workbench import paths
from workbench.bench import DEFAULT_CONCURRENCY_LEVELS, SweepPlan
from workbench.engines import Engine, resolve_engine
from workbench.errors import ConfigError
from workbench.hosts import is_local
from workbench.names import check_name
from workbench.report import progress_bars
from workbench.servers import ServerHandle
from workbench.store import sweep_identity, writable_runs_root
from workbench.sweeps._options import SweepOptions
from workbench.variants import (
    TEMPLATE_PARAMETERS,
    Finding,
    Variant,
    apply_parameters,
    load_variant,
    nnodes_of,
    parameters_given,
    preflight,
)

__all__ = [
    "VariantSweep",
    "check_fleet_arguments",
    "one_node_only",
    "parallel_passes",
    "prepare_sweep",
    "variant_definition",
]


@dataclasses.dataclass(frozen=True)
class VariantSweep:
    """One variant's sweep, validated before anything is launched: what it runs and its identity."""

    variant: Variant
    engine: Engine
    host: str
    where: Literal["host", "local"]
    plan: SweepPlan
    sim_profile: str
    label: str | None
    identity: str
    root: Path
    progress: bool
    preflight: list[Finding]
    #: Called with the server's handle once it is started, before its ready wait (a multi-node unit's rank
    #: group watches rank 0 through it: workbench.sweeps._fleet_multinode); None: nothing.
    on_server: Callable[[ServerHandle], None] | None = None
    #: What :attr:`identity` is the hash of, but the plan (:meth:`identity_with`).
    identity_parts: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: Run on a fleet: the identity is the one-host sweep's wrapped as a fleet's (``_fleet_pass``).
    on_fleet: bool = False

    def identity_with(self, plan_json: Mapping[str, Any]) -> str:
        """The identity this sweep would have with the plan ``plan_json`` (:meth:`SweepPlan.to_json
        <workbench.bench.SweepPlan.to_json>` without prompt texts, as a run's manifest records it) instead of its
        own: the same sweep with other levels has the identity of a stored run that measured them."""
        identity = sweep_identity({**self.identity_parts, "plan": plan_json})
        return sweep_identity({"sweep": identity, "fleet": True}) if self.on_fleet else identity

    def sim_options(self, repeat: int) -> dict[str, Any] | None:
        """The engine's launch options for a server measuring ``repeat`` first (its seed)."""
        return self.engine.launch_options(
            profile=self.sim_profile, time_scale=float(self.plan.time_scale), seed=self.plan.seed_of(repeat)
        )


def variant_definition(v: Variant) -> dict[str, Any]:
    """What a run's manifest and its sweep's identity record of the variant: :meth:`Variant.to_dict` without
    ``name`` (recorded beside it) and ``description`` (words that change no figure)."""
    return {k: value for k, value in v.to_dict().items() if k not in ("name", "description")}


def prepare_sweep(options: SweepOptions) -> VariantSweep:
    """Validate everything about one variant's sweep (nothing is launched).

    Args:
        options: :func:`benchmark_variant`'s arguments, all of them.
    """
    host, client, time_scale, label = options.host, options.client, options.time_scale, options.label
    sim_profile, seed = options.sim_profile, options.seed
    variant = options.variant
    v = apply_parameters(
        variant if isinstance(variant, Variant) else load_variant(variant),
        **parameters_given(options.template_parameters(TEMPLATE_PARAMETERS)),
    )
    eng = resolve_engine(host, options.engine)
    time_scale = eng.time_scale(time_scale)  # the engine's default; ConfigError for a value it cannot run at
    if client not in (None, "host", "local"):
        raise ConfigError(f"client must be 'host' or 'local', got {client!r}")
    if label is not None:
        check_name(label, what="label", fix="Pass another label (or None for none)")
    where: Literal["host", "local"] = client or ("local" if is_local(host) else "host")
    # The sweep's one validated value, built before anything is launched.
    levels = options.concurrency_levels
    if options.request_rates is not None and levels is DEFAULT_CONCURRENCY_LEVELS:
        levels = None  # the closed-loop default stands aside for an open-loop sweep
    unique_prompts, repeats = options.unique_prompts, options.repeats
    plan = SweepPlan.build(
        concurrency_levels=levels,
        request_rates=options.request_rates,
        max_concurrency=options.max_concurrency,
        requests_per_level=options.requests_per_level,
        max_new_tokens=options.max_new_tokens,
        prompt_set=options.prompt_set,
        seed=seed,
        time_scale=time_scale,
        warmup_requests=options.warmup_requests,
        unique_prompts=unique_prompts if unique_prompts is not None else eng.unique_prompts,
        repeats=eng.default_repeats if repeats is None else repeats,
        **dict(options.load or {}),
    )
    _no_offline_level(plan)
    _warn_graph_below_concurrency(v, plan)
    checked = preflight(v, host=host, engine=eng)  # every engine, the notebooks' checks; ConfigError before any run
    engine_options = eng.launch_options(profile=sim_profile, time_scale=time_scale, seed=seed)
    parts = {
        "variant": v.name,
        "variant_definition": variant_definition(v),
        "engine": eng.name,
        "host": str(host),
        "engine_options": engine_options,
        "engine_code": _engine_code(eng, sim_profile),
        "client": where,
        "label": label,
    }
    identity = sweep_identity({"plan": plan.to_json(prompt_texts=False), **parts})
    return VariantSweep(
        variant=v,
        engine=eng,
        host=host,
        where=where,
        plan=plan,
        sim_profile=sim_profile,
        label=label,
        identity=identity,
        identity_parts=parts,
        root=writable_runs_root(options.runs_dir),
        progress=progress_bars(options.progress),
        preflight=checked,
    )


def _no_offline_level(plan: SweepPlan) -> None:
    """Refuse an infinite request rate in a sweep, before anything is launched.

    ``inf`` sends every request of the level at once: offline throughput, which has no place on the
    request-rate axis the summary, the crossovers and the reports compare open-loop levels on
    (:func:`workbench.analysis.load_axis`), so the run it left could never be reported. The same
    measurement is a closed-loop level with every request in flight.

    Raises:
        ConfigError: naming the rates and the closed-loop level that measures the same.
    """
    rates = plan.request_rates or ()
    if any(math.isinf(rate) for rate in rates):
        count = max(plan.requests_per_level)
        raise ConfigError(
            f"request_rates {[float(r) for r in rates]}: inf (every request at once) measures offline throughput, "
            "which has no place on the request-rate axis the summary, the crossovers and the reports compare "
            "open-loop levels on, so a sweep refuses it before launching anything. Measure it as a closed-loop "
            f"level with every request in flight instead (concurrency_levels=[{count}], requests_per_level={count}; "
            f"`workbench bench --levels {count} --requests {count}`), and drop inf from the rates"
        )


def one_node_only(sweeps: Sequence[VariantSweep]) -> None:
    """Refuse a variant spanning nodes (``nnodes`` > 1) outside a fleet: its ranks need a node each.

    Raises:
        ConfigError: naming the variant and the fix (``fleet=``).
    """
    for s in sweeps:
        nodes = nnodes_of(s.variant)
        if nodes > 1:
            raise ConfigError(
                f"{s.variant.name} spans {nodes} nodes (nnodes = {nodes} in its flags): run it on a "
                "fleet (fleet='HEAD:6379', `workbench bench --fleet`), which starts a rank on each "
                "node, or drop nnodes to run it on one host"
            )


def _warn_graph_below_concurrency(v: Variant, plan: SweepPlan) -> None:
    """Warn (before launch) when a speculative variant's CUDA-graph batch limit is below the plan's top concurrency.

    Above ``--cuda-graph-max-bs`` (``--cuda-graph-max-bs-decode`` since SGLang 0.5.20) the
    decode steps run without CUDA graphs, eagerly: with speculation every step is a draft
    chain plus a verify, so those levels measure the eager path, not the variant's.
    """
    if not v.flags.get("speculative-algorithm") or not plan.concurrency_levels:
        return
    for flag in ("cuda-graph-max-bs-decode", "cuda-graph-max-bs"):
        limit = v.flags.get(flag)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit < max(plan.concurrency_levels):
            above = [c for c in plan.concurrency_levels if c > limit]
            warnings.warn(
                f"{v.name}: --{flag} {limit} is below the sweep's concurrency {above} with speculative "
                f"decoding on: those levels decode without CUDA graphs (eager draft and verify steps), "
                f"so they measure another regime than the levels at or below {limit}. Raise --{flag} "
                f"to {max(plan.concurrency_levels)} in the variant, or keep the levels <= {limit}.",
                UserWarning,
                stacklevel=4,
            )
            return


def _engine_code(eng: Engine, sim_profile: str) -> str | None:
    """For a simulated engine, a hash of what computes its figures (the simulator's source and the
    profile file), so a changed model is another sweep and never resumes runs it did not produce.
    None for a real engine: its figures come from the SGLang the variant names. The source counts as its
    syntax tree and the profile as its values, so a reformatted file or an edited comment (a source named
    beside a figure) is the same model and resumes what it measured.

    Raises:
        ConfigError: the profile names no file (a TOML path, or data/profiles/NAME.toml; the known names
            listed), before any run is opened or server started.
    """
    if not eng.simulated:
        return None
    digest = hashlib.sha256()
    folder = paths.PACKAGE_ROOT / "data" / "profiles"
    profile = Path(sim_profile) if sim_profile.endswith(".toml") else folder / f"{sim_profile}.toml"
    if not profile.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.toml")))
        raise ConfigError(f"sim_profile {sim_profile!r}: no such profile (no file {profile}); known profiles: {known}")
    for file in [*sorted((paths.PACKAGE_ROOT / "workbench" / "sim").glob("*.py")), profile]:
        digest.update(file.name.encode() + b"\0" + _model_text(file).encode() + b"\0")
    return digest.hexdigest()[:16]


def _model_text(file: Path) -> str:
    """What of a simulator file computes figures: a module's syntax tree (no comments, no layout), a profile's
    values (no comments); the bytes of anything that does not parse."""
    text = file.read_text(encoding="utf-8", errors="replace") if file.is_file() else ""
    try:
        if file.suffix == ".py":
            return ast.dump(ast.parse(text))
        return json.dumps(tomllib.loads(text), sort_keys=True, default=str)
    except (SyntaxError, ValueError, tomllib.TOMLDecodeError):
        return text


def parallel_passes(parallel: Any, sweeps: Sequence[VariantSweep]) -> int:
    """How many passes :func:`benchmark_variants` runs at once: ``parallel`` checked (None: 1).

    Raises:
        ConfigError: not a whole number >= 1, or above 1 for a real engine or another host.
    """
    if parallel is None:
        return 1
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ConfigError(f"parallel must be a whole number >= 1 (passes measured at once), got {parallel!r}")
    if parallel > 1 and not all(s.engine.simulated and is_local(s.host) for s in sweeps):
        raise ConfigError(
            f"parallel={parallel} needs the simulated engine on this machine: servers on a GPU host "
            "would share its GPUs and time each other; leave parallel at 1 (or None) there"
        )
    return parallel


def check_fleet_arguments(kwargs: dict[str, Any]) -> None:
    """Refuse ``benchmark_variants`` keywords that a fleet replaces.

    Raises:
        ConfigError: ``host`` other than ``"local"`` (the fleet's nodes are the hosts), or
            ``client="host"`` (on a fleet the load generator always runs beside the server).
    """
    if kwargs.get("host", "local") != "local":
        raise ConfigError(
            f"host={kwargs['host']!r} and fleet= both say where to run; a fleet replaces host "
            "(each unit runs on the node Ray places it on): drop host"
        )
    if kwargs.get("client") not in (None, "local"):
        raise ConfigError("on a fleet the load generator runs beside the server on the unit's node; drop client=")
