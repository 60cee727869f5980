"""Simulator profiles: which hardware, model and SGLang version the sim stands for.

A profile is a TOML file in ``data/profiles/<name>.toml``. A *physical* profile (the kind
shipped now) has sections:

- ``[profile]``: name, description, sglang_version;
- ``[deployment]``: ``gpu`` (``data/gpus/<gpu>.toml``), ``gpus`` on the host,
  ``interconnect`` (a kind the GPU's data sheet lists), the defaults SGLang would run with
  when a flag is absent (``tp_size``, ``custom_all_reduce``, ``cuda_graph_max_bs``,
  ``mem_fraction_static``), and ``target`` / ``draft`` (``data/models/<name>.toml``);
- ``[efficiency]``: :class:`~workbench.sim._roofline_terms.Efficiency` terms;
- ``[fit]``: ``terms``, the efficiency terms a calibration fits (the others are fixed and
  carry their source in a comment);
- ``[workload]``: the benchmark workload its calibration assumes;
- ``[acceptance]``: :class:`~workbench.sim._acceptance.AcceptanceModel` fields, or the published
  accept lengths they are solved from (``chain``, ``tree``: :meth:`AcceptanceModel.from_table`);
  ``[acceptance.prompt_sets.<name>]`` overrides any of them for one prompt set, ``[acceptance.greedy]`` /
  ``[acceptance.sampled]`` (and ``[acceptance.prompt_sets.<name>.greedy]`` ...) for one sampling regime
  (:meth:`SimProfile.acceptance_for`); the profile's :attr:`SimProfile.acceptance` is the one of its
  ``[workload]`` ``prompt_set`` and ``temperature``;
- ``[calibration]`` and ``[validation]``: measured points (``[[calibration.points]]``) the
  fit uses, and those it must not (out-of-sample checks), each with its source.

A server's flags (``--tp-size``, ``--disable-custom-all-reduce``, ``--cuda-graph-max-bs``,
``--disable-cuda-graph``, overlap scheduling, ``--mem-fraction-static``) reach the cost model
through :meth:`SimProfile.cost_for`. An older *linear* profile with a ``[cost]`` section
(:class:`~workbench.sim._cost_model.CostModel`) still loads; its flags change nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.sim._acceptance import AcceptanceModel
from workbench.sim._profile_acceptance import REGIMES, acceptance_model, acceptance_regime
from workbench.sim._api_shapes import DEFAULT_RELEASE
from workbench.sim._cost_model import CostModel
from workbench.sim._hardware import GpuSpec, ModelConfig, load_gpu, load_model_config
from workbench.paths import PACKAGE_ROOT
from workbench.releases import SPEC_V2_WIDE_DRAFT_EXTEND_SINCE, release_at_least
from workbench.sim._roofline import RooflineCost
from workbench.sim._roofline_terms import FITTABLE, Deployment, Efficiency
from workbench.sim._held_out import HeldOut, parse_held_out
from workbench.sim._gemm_costs import GemmCosts, sheet_bounds
from workbench.sim._spec_kernels import ExtendAttentionCosts, SmallKernelCosts, SpecKernelCosts

#: Where shipped profiles live.
PROFILES_DIR = Path(__file__).resolve().parents[2] / "data" / "profiles"

#: The profile used when none is named.
DEFAULT_PROFILE = "seed-pcie-8gpu"

#: ``--mem-fraction-static`` when neither the flag nor the profile sets it (an assumption close to
#: SGLang 0.5.9's automatic choice on 80-96 GB GPUs, which depends on TP and the GPU).
DEFAULT_MEM_FRACTION = 0.85


@dataclasses.dataclass(frozen=True)
class Physics:
    """The physical description of a profile (see module docstring).

    Attributes:
        gpu: the GPU's data sheet.
        gpus: GPUs on the host (the largest ``--tp-size`` it can run).
        interconnect: interconnect kind between them.
        target: the target model's shape.
        draft: the draft model's shape, or None.
        efficiency: efficiency terms (fitted and fixed).
        fit_terms: the efficiency terms a calibration may fit.
        defaults: what SGLang runs with when a flag is absent (tp_size, custom_all_reduce,
            cuda_graph_max_bs, mem_fraction_static).
        spec_kernels: the speculative step's small kernels measured on the GPU (``[spec_kernels]``:
            ``table``, a ``remote/gpu_spec_step.py`` CSV relative to the project root, and ``verify``,
            ``"greedy"`` by default; or ``small_kernels``, a real-engine ``kernels.csv``, and
            ``small_kernels_servers``, the servers of one model in it by name: :class:`SmallKernelCosts`), or None:
            not charged.
        extend_attention: the real engine's measured extend attention per speculative iteration (``[spec_kernels]``
            ``extend_attention``, a real-engine ``kernels.csv``, and ``extend_attention_servers``, the prefix of one
            model's servers in it), or None: the roofline costs the verify's attention.
        gemm: the real engine's weight GEMMs by rows (``[spec_kernels]`` ``gemm``, a real-engine ``kernels.csv``, and
            ``gemm_servers``, the servers of one model in it by name: :class:`GemmCosts`), or None: the roofline
            charges them at ``hbm_efficiency`` and ``flops_efficiency``.
    """

    gpu: GpuSpec
    gpus: int
    interconnect: str
    target: ModelConfig
    draft: ModelConfig | None
    efficiency: Efficiency
    fit_terms: tuple[str, ...]
    defaults: dict[str, Any]
    spec_kernels: SpecKernelCosts | SmallKernelCosts | None = None
    extend_attention: ExtendAttentionCosts | None = None
    gemm: GemmCosts | None = None


@dataclasses.dataclass(frozen=True)
class SimProfile:
    """A loaded profile (see module docstring for the file layout).

    Attributes:
        name: profile name (file stem).
        description: one paragraph for people.
        sglang_version: SGLang version whose API shapes the sim emulates by default.
        hardware: free-form facts (legacy profiles) or the ``[deployment]`` table.
        model: target and draft model names, and why they were chosen.
        workload: workload the calibration assumes (max_new_tokens, prompt set, ...).
        cost: the linear cost model of a legacy profile, else None.
        acceptance: the acceptance model of the workload's prompt set.
        calibration: measured targets and their source (``points`` among them).
        path: the file it was read from.
        physics: the physical description, or None for a legacy profile.
        validation: out-of-sample points (never fitted).
        acceptance_table: the ``[acceptance]`` table (figures per prompt set and sampling regime): see
            :meth:`acceptance_for`.
        policies: the ``[policies]`` table: what a non-drafting iteration of a speculative server
            costs (``spec_off_overhead``, ``switch_ms``; :class:`~workbench.sim._policies.SpecOffCost`).
        held_out: the ``[[held_out]]`` entries: the held-out error the profile was checked to, by regime
            (:mod:`workbench.sim._held_out`).
    """

    name: str
    description: str
    sglang_version: str
    hardware: dict[str, Any]
    model: dict[str, Any]
    workload: dict[str, Any]
    cost: CostModel | None
    acceptance: AcceptanceModel
    calibration: dict[str, Any]
    path: Path
    physics: Physics | None = None
    validation: dict[str, Any] = dataclasses.field(default_factory=dict)
    policies: dict[str, Any] = dataclasses.field(default_factory=dict)
    acceptance_table: dict[str, Any] = dataclasses.field(default_factory=dict)
    held_out: tuple[HeldOut, ...] = ()

    @property
    def full_width_draft_extend(self) -> bool:
        """The profile's release runs spec v2's draft extend over the whole tree width (SGLang 0.5.13+,
        :data:`~workbench.releases.SPEC_V2_WIDE_DRAFT_EXTEND_SINCE`): its step costs charge that structure."""
        return release_at_least(self.sglang_version, SPEC_V2_WIDE_DRAFT_EXTEND_SINCE)

    @property
    def prompt_sets(self) -> tuple[str, ...]:
        """The prompt sets with acceptance figures of their own (``[acceptance.prompt_sets.<name>]``)."""
        return tuple(sorted(self.acceptance_table.get("prompt_sets", {})))

    def acceptance_for(
        self,
        prompt_set: str | None = None,
        *,
        temperature: float | None = None,
        top_k: int | None = None,
        regime: str | None = None,
    ) -> AcceptanceModel:
        """The acceptance model of a prompt set under a sampling regime.

        Args:
            prompt_set: a name under ``[acceptance.prompt_sets]``; None, or a name without a table of its own,
                gets the profile's figures (``[acceptance]``), except that None means the workload's set.
            temperature, top_k: the request's sampling parameters; they pick the regime
                (:func:`acceptance_regime`: greedy below a temperature of 1e-6 or at top_k 1, else sampled),
                whose sub-table (``[acceptance.greedy]``, ``[acceptance.sampled]``, and the prompt set's own)
                lies over the regime-free figures. With neither (nor ``regime``), the workload's
                ``temperature`` decides.
            regime: ``"greedy"`` or ``"sampled"`` directly (instead of temperature/top_k).

        Raises:
            ConfigError: an unknown regime.
        """
        if regime is not None and regime not in REGIMES:
            raise ConfigError(f"unknown sampling regime {regime!r}; use one of {', '.join(REGIMES)}")
        if regime is None:
            if temperature is None and top_k is None:
                regime = acceptance_regime(self.workload.get("temperature"))
            else:
                regime = acceptance_regime(1.0 if temperature is None else temperature, top_k)
        if prompt_set is None:
            prompt_set = self.workload.get("prompt_set")
        return acceptance_model(self.acceptance_table, prompt_set, regime)

    @property
    def default_tp_size(self) -> int:
        """``--tp-size`` when the flag is absent."""
        if self.physics is not None:
            return int(self.physics.defaults.get("tp_size", 1))
        return int(self.hardware.get("tp_size", 1))

    @property
    def default_cuda_graph_max_bs(self) -> int:
        """``--cuda-graph-max-bs`` when the flag is absent."""
        return int(self.physics.defaults.get("cuda_graph_max_bs", 160)) if self.physics else 160

    def deployment(self, args: dict[str, Any] | None = None, *, overlap_schedule: bool | None = None) -> Deployment:
        """The deployment a server with these flags runs (SGLang ``ServerArgs`` names).

        Raises:
            ConfigError: a legacy profile, or more TP ranks than the host has GPUs.
        """
        if self.physics is None:
            raise ConfigError(f"profile {self.name} is a linear profile (no [deployment]); it has no physics")
        args = args or {}
        phys = self.physics
        tp = args.get("tp_size")
        tp = self.default_tp_size if tp is None else int(tp)
        if tp > phys.gpus:
            raise ConfigError(
                f"--tp-size {tp} needs {tp} GPUs; profile {self.name} has {phys.gpus} "
                f"({phys.gpu.name}): set the variant's tp-size to {phys.gpus} or less, or choose a profile "
                f"with {tp} GPUs"
            )
        custom = phys.defaults.get("custom_all_reduce", True) and not args.get("disable_custom_all_reduce", False)
        graph_bs = args.get("cuda_graph_max_bs")
        graph_bs = self.default_cuda_graph_max_bs if graph_bs is None else int(graph_bs)
        if args.get("disable_cuda_graph"):
            graph_bs = 0
        overlap = not args.get("disable_overlap_schedule", False) if overlap_schedule is None else overlap_schedule
        return Deployment(
            gpu=phys.gpu,
            interconnect=phys.gpu.interconnect(phys.interconnect),
            tp_size=tp,
            custom_all_reduce=bool(custom),
            cuda_graph_max_bs=graph_bs,
            overlap_schedule=overlap,
        )

    def cost_for(self, args: dict[str, Any] | None = None, *, efficiency: Efficiency | None = None):
        """The cost model a server launched with ``args`` (parsed flags) runs on.

        A physical profile gives a :class:`~workbench.sim._roofline.RooflineCost` built from
        the flags; a legacy profile its linear :class:`CostModel` whatever the flags.
        ``efficiency`` replaces the profile's terms (what a calibration tries).
        """
        if self.physics is None:
            assert self.cost is not None  # a legacy profile always has [cost] (checked on load)
            return self.cost
        return RooflineCost(
            self.physics.target,
            self.deployment(args),
            efficiency or self.physics.efficiency,
            draft=self.physics.draft,
            spec_kernels=self.physics.spec_kernels,
            extend_attention=self.physics.extend_attention,
            full_width_draft_extend=self.full_width_draft_extend,
            gemm=self.physics.gemm,
        )

    def kv_capacity_tokens(self, args: dict[str, Any] | None = None, *, sglang_version: str | None = None) -> int:
        """KV-cache tokens the server would hold (``max_total_num_tokens``), from memory and the flags.

        See :func:`workbench.sim._memory.kv_capacity_tokens` (SGLang's rule by version; the draft
        counts from 0.5.16 only). A legacy profile reports its ``hardware.max_total_num_tokens``.
        """
        from workbench.sim._memory import kv_capacity_tokens

        if self.physics is None:
            return int(self.hardware.get("max_total_num_tokens", 1_000_000))
        args = args or {}
        phys = self.physics
        fraction = args.get("mem_fraction_static") or phys.defaults.get("mem_fraction_static", DEFAULT_MEM_FRACTION)
        draft = phys.draft if args.get("speculative_algorithm") else None
        return kv_capacity_tokens(
            memory_gb=phys.gpu.memory_gb,
            mem_fraction_static=float(fraction),
            target=phys.target,
            draft=draft,
            tp_size=self.deployment(args).tp_size,
            sglang_version=sglang_version or args.get("sim_sglang_version") or self.sglang_version,
        )

    @property
    def max_total_num_tokens(self) -> int:
        """KV-cache capacity in tokens reported by /server_info, with the profile's default flags."""
        return self.kv_capacity_tokens()


def list_profiles(directory: Path = PROFILES_DIR) -> list[str]:
    """Names of the profiles available in ``directory``."""
    return sorted(p.stem for p in directory.glob("*.toml"))


def _physics(data: dict[str, Any], path: Path) -> Physics:
    dep = data["deployment"]
    gpu = load_gpu(dep["gpu"])
    interconnect = dep.get("interconnect", next(iter(gpu.interconnects), "pcie"))
    gpu.interconnect(interconnect)  # fail early on an unknown kind
    draft = load_model_config(dep["draft"]) if dep.get("draft") else None
    terms = tuple(data.get("fit", {}).get("terms", ()))
    unknown = [t for t in terms if t not in FITTABLE]
    if unknown:
        raise ConfigError(f"Profile {path}: [fit] terms {unknown} are not fittable; choose from {list(FITTABLE)}")
    if len(terms) > 3:
        raise ConfigError(f"Profile {path}: at most 3 fitted terms, got {len(terms)}")
    defaults = {
        k: dep[k] for k in ("tp_size", "custom_all_reduce", "cuda_graph_max_bs", "mem_fraction_static") if k in dep
    }
    kernels = data.get("spec_kernels")
    spec_kernels: SpecKernelCosts | SmallKernelCosts | None = None
    extend_attention = None
    gemm = None
    target = load_model_config(dep["target"])
    if kernels is not None:
        if not {"table", "small_kernels", "extend_attention", "gemm"} & set(kernels):
            raise ConfigError(
                f'Profile {path}: [spec_kernels] needs table = "data/calibration/.../spec_step.csv" '
                '(or small_kernels = "data/calibration/.../kernels.csv"), extend_attention = '
                '"data/calibration/.../kernels.csv" and/or gemm = "data/calibration/.../kernels.csv"'
            )
        if "table" in kernels and "small_kernels" in kernels:
            raise ConfigError(
                f"Profile {path}: [spec_kernels] names both table (the PyTorch stand-ins) and small_kernels (the "
                "real engine's); each charges the same kernels, so keep one"
            )
        if "table" in kernels:
            spec_kernels = _spec_kernel_costs(str(kernels["table"]), str(kernels.get("verify", "greedy")))
        if "small_kernels" in kernels:
            names = _server_names(
                kernels.get("small_kernels_servers"),
                f"Profile {path}: [spec_kernels] small_kernels needs small_kernels_servers = [the plain-decoding "
                'server and four speculative ones of one model, by name] (for example ["l8b-baseline", '
                '"l8b-chain3-acc3.0", "l8b-chain7-acc4.5", "l8b-tree8-acc3.4", "l8b-tree16-acc3.6"])',
            )
            spec_kernels = _small_kernels(str(kernels["small_kernels"]), tuple(names))
        if "extend_attention" in kernels:
            if "extend_attention_servers" not in kernels:
                raise ConfigError(
                    f"Profile {path}: [spec_kernels] extend_attention needs extend_attention_servers "
                    '= "<prefix of one model\'s servers in the table>" (for example "l8b-")'
                )
            extend_attention = _extend_attention(
                str(kernels["extend_attention"]), str(kernels["extend_attention_servers"])
            )
        if "gemm" in kernels:
            names = _server_names(
                kernels.get("gemm_servers"),
                f"Profile {path}: [spec_kernels] gemm needs gemm_servers = [the plain-decoding server and the "
                'speculative ones of one model to solve from, by name] (for example ["l8b-baseline", '
                '"l8b-chain3-acc3.0", "l8b-chain7-acc4.5", "l8b-tree8-acc3.4", "l8b-tree16-acc3.6"])',
            )
            bounds = sheet_bounds(gpu, interconnect, target, draft)
            gemm = _gemm(str(kernels["gemm"]), tuple(names), bounds["target"], bounds["draft"])
    return Physics(
        gpu=gpu,
        gpus=int(dep.get("gpus", 1)),
        interconnect=interconnect,
        target=target,
        draft=draft,
        efficiency=Efficiency(**data.get("efficiency", {})),
        fit_terms=terms,
        defaults=defaults,
        spec_kernels=spec_kernels,
        extend_attention=extend_attention,
        gemm=gemm,
    )


@functools.lru_cache(maxsize=8)
def _gemm(
    table: str, servers: tuple[str, ...], target_bound: tuple[float, float], draft_bound: tuple[float, float]
) -> GemmCosts:
    path = Path(table)
    return GemmCosts(
        path if path.is_absolute() else PACKAGE_ROOT / path,
        servers=servers,
        target_bound=target_bound,
        draft_bound=draft_bound,
    )


@functools.lru_cache(maxsize=8)
def _spec_kernel_costs(table: str, verify: str) -> SpecKernelCosts:
    """One loaded table per (file, regime): profiles that share a table share its curves."""
    path = Path(table)
    return SpecKernelCosts(path if path.is_absolute() else PACKAGE_ROOT / path, verify=verify)


@functools.lru_cache(maxsize=8)
def _small_kernels(table: str, servers: tuple[str, ...]) -> SmallKernelCosts:
    path = Path(table)
    return SmallKernelCosts(path if path.is_absolute() else PACKAGE_ROOT / path, servers=servers)


@functools.lru_cache(maxsize=8)
def _extend_attention(table: str, servers: str) -> ExtendAttentionCosts:
    path = Path(table)
    return ExtendAttentionCosts(path if path.is_absolute() else PACKAGE_ROOT / path, servers=servers)


def _server_names(value: object, refusal: str) -> list[str]:
    """A ``[spec_kernels]`` list of server names (a non-empty list of strings), else :class:`ConfigError` ``refusal``."""
    if not isinstance(value, list) or not value or not all(isinstance(n, str) for n in value):
        raise ConfigError(refusal)
    return value


def load_profile(name_or_path: str | Path = DEFAULT_PROFILE, *, directory: Path = PROFILES_DIR) -> SimProfile:
    """Load a profile by name (``data/profiles/<name>.toml``) or by file path.

    Raises:
        ConfigError: unknown profile, unreadable TOML, or invalid/missing fields;
            the message names the file and lists the known profiles.
    """
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = directory / f"{name_or_path}.toml"
    if not path.is_file():
        raise ConfigError(
            f"Unknown simulator profile {str(name_or_path)!r} (no file {path}); "
            f"known profiles: {', '.join(list_profiles(directory)) or 'none'}"
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Profile {path} is not valid TOML: {exc}") from exc
    try:
        head = data["profile"]
        physics = _physics(data, path) if "deployment" in data else None
        if physics is None and "cost" not in data:
            raise ConfigError(f"Profile {path} has neither [deployment] (physical) nor [cost] (linear)")
        acceptance_table = dict(data.get("acceptance", {}))
        workload = dict(data.get("workload", {}))
        acceptance = acceptance_model(
            acceptance_table, workload.get("prompt_set"), acceptance_regime(workload.get("temperature"))
        )
        model = dict(data.get("model", {}))
        if physics is not None:
            model.setdefault("target", physics.target.name)
            if physics.draft is not None:
                model.setdefault("draft", physics.draft.name)
        return SimProfile(
            name=head["name"],
            description=head.get("description", ""),
            sglang_version=head.get("sglang_version", DEFAULT_RELEASE),
            hardware=dict(data.get("hardware", data.get("deployment", {}))),
            model=model,
            workload=workload,
            cost=CostModel(**data["cost"]) if "cost" in data else None,
            acceptance=acceptance,
            calibration=dict(data.get("calibration", {})),
            path=path,
            physics=physics,
            validation=dict(data.get("validation", {})),
            acceptance_table=acceptance_table,
            policies=dict(data.get("policies", {})),
            held_out=parse_held_out(data.get("held_out"), f"Profile {path}"),
        )
    except KeyError as exc:
        raise ConfigError(f"Profile {path} lacks required key {exc.args[0]!r}") from exc
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Profile {path} has an invalid value: {exc}") from exc
