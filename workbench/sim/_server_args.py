"""Command-line flags of the simulated server: SGLang's ``launch_server`` names, plus ``--sim-*``.

The simulated server is started exactly like ``python -m sglang.launch_server``
(flag names and defaults from SGLang 0.5.9 ``srt/server_args.py``), so a variant's
launch command differs only in the module it runs. Flags the simulator has no use
for are still accepted when SGLang has them, and echoed in ``/server_info``;
a flag SGLang does not know is an argparse error, as it would be for SGLang.
Options that only the simulator has start with ``--sim-``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.releases import ADAPTIVE_SINCE
from workbench.sim._api_shapes import DEFAULT_RELEASE, get_shape
from workbench.sim._memory import MemoryRules, default_max_running_requests, memory_rules
from workbench.sim._policies import (
    SpecOffAbove,
    SpecOffCost,
    SpecPolicy,
    adaptive_candidate_union,
    adaptive_policy,
    load_adaptive_config,
)
from workbench.sim._profiles import DEFAULT_PROFILE, SimProfile, load_profile
from workbench.sim._rendezvous import DEFAULT_TIMEOUT_S, RendezvousError, split_addr
from workbench.releases import release_at_least, release_number
from workbench.sim._spec import (
    ADAPTIVE_EMULATED_SINCE,
    ALGORITHMS_BY_VERSION,
    EAGLE_MAX_RUNNING_REQUESTS,
    SpecConfig,
    resolve_spec,
)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser (``allow_abbrev`` on, as in SGLang, so ``--tp 8`` works)."""
    p = argparse.ArgumentParser(
        prog="python -m workbench.sim",
        description="Simulated SGLang server (speaks SGLang's HTTP API; performance from a calibrated model).",
    )
    p.add_argument("--model-path", "--model", dest="model_path", required=True)
    p.add_argument("--tokenizer-path", default=None)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    # None: the profile's deployment (SGLang's own default is 1; a profile names the TP its setup ran)
    p.add_argument("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=None)
    p.add_argument("--dp-size", type=int, default=1)
    p.add_argument("--mem-fraction-static", type=float, default=None)
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--max-total-tokens", type=int, default=None)
    p.add_argument("--chunked-prefill-size", type=int, default=8192)
    p.add_argument("--context-length", type=int, default=None)
    p.add_argument("--disable-custom-all-reduce", action="store_true")
    p.add_argument("--disable-overlap-schedule", action="store_true")
    p.add_argument("--disable-cuda-graph", action="store_true")
    p.add_argument("--cuda-graph-max-bs", type=int, default=None)
    # accepted and echoed (no effect on the model): what a real-engine variant on random weights sets
    # (benchmarks/real_sglang/variants/); --cuda-graph-max-bs-decode is SGLang 0.5.14+'s name for the decode graphs
    p.add_argument("--cuda-graph-max-bs-decode", type=int, default=None)
    p.add_argument("--load-format", default="auto")
    p.add_argument("--sampling-backend", default=None)
    p.add_argument("--grammar-backend", default=None)
    p.add_argument("--mm-feature-transport", default=None)
    p.add_argument("--enable-metrics", action="store_true")
    p.add_argument("--decode-log-interval", type=int, default=40)
    p.add_argument("--stream-interval", type=int, default=1)
    p.add_argument("--log-level", default="info")
    p.add_argument("--trust-remote-code", action="store_true")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--attention-backend", default=None)
    p.add_argument("--page-size", type=int, default=1)
    p.add_argument("--random-seed", type=int, default=None)
    p.add_argument("--weight-version", default="default")
    p.add_argument(  # every emulated version's choices; resolve_spec checks the version's own
        "--speculative-algorithm",
        type=str.upper,
        default=None,
        choices=sorted({a for algos in ALGORITHMS_BY_VERSION.values() for a in algos}),
    )
    p.add_argument("--speculative-draft-model-path", default=None)
    p.add_argument("--speculative-num-steps", type=int, default=None)
    p.add_argument("--speculative-eagle-topk", type=int, default=None)
    p.add_argument("--speculative-num-draft-tokens", type=int, default=None)
    p.add_argument("--speculative-token-map", default=None)
    # --speculative-adaptive(-config): SGLang 0.5.11+ (srt/server_args.py); refused below for older versions
    p.add_argument("--speculative-adaptive", action="store_true")
    p.add_argument("--speculative-adaptive-config", default=None)
    # a server spanning nodes (SGLang 0.5.9 srt/server_args.py; --nccl-init-addr is its older alias): the ranks
    # meet at --dist-init-addr, SIMULATED over TCP (workbench.sim._rendezvous)
    p.add_argument("--dist-init-addr", "--nccl-init-addr", dest="dist_init_addr", default=None)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--node-rank", type=int, default=0)
    sim = p.add_argument_group("simulator (not SGLang flags)")
    sim.add_argument("--sim-profile", default=DEFAULT_PROFILE, help="profile name or TOML path")
    sim.add_argument(
        "--sim-time-scale", type=float, default=1.0, help="simulated seconds per wall-clock second (1 = real time)"
    )
    sim.add_argument("--sim-seed", type=int, default=0, help="seed of the acceptance sampling")
    sim.add_argument(
        "--sim-sglang-version",
        default=None,
        help="SGLang version the variant targets: the flag rules (speculative defaults) of the "
        "latest emulated version at or below it apply (default: the profile's)",
    )
    sim.add_argument(
        "--sim-api-version",
        default=None,
        help="SGLang version whose HTTP shapes to emulate: 0.4.6.post5 (alias 0.4), 0.5.4, 0.5.9, "
        "0.5.12 or 0.5.23 (default: --sim-sglang-version, else the profile's)",
    )
    sim.add_argument(
        "--sim-prompt-set",
        default=None,
        help="prompt set whose acceptance figures to use (the profile's [acceptance.prompt_sets]; "
        "default: the profile's workload's); each request's temperature then picks greedy or "
        "sampled figures",
    )
    sim.add_argument(
        "--sim-emit-timestamps",
        action="store_true",
        help="stamp every streamed /generate chunk with meta_info.emit_ts (Unix seconds at the write), "
        "for measuring a client's timing error (benchmarks/client_fidelity.py)",
    )
    sim.add_argument(
        "--sim-spec-off-above",
        type=int,
        default=None,
        help="stand-in for a patch: no drafting when more than N requests run",
    )
    sim.add_argument(
        "--sim-dist-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds a rank of a multi-node server waits for its group at --dist-init-addr",
    )
    return p


def _check_nodes(args: dict[str, Any]) -> None:
    """The multi-node flags as SGLang 0.5.9 checks them (``ServerArgs.check_server_args``), and a rank in range.

    Raises:
        ConfigError: ``--nnodes`` below 1, ``--node-rank`` outside ``0 .. nnodes - 1``, ``--tp-size`` that
            ``--nnodes`` does not divide, ``--dp-size`` > 1 across nodes, or no ``--dist-init-addr``.
    """
    nnodes, rank, tp = args["nnodes"], args["node_rank"], args["tp_size"]
    if nnodes < 1:
        raise ConfigError(f"--nnodes must be at least 1, got {nnodes}")
    if not 0 <= rank < nnodes:
        raise ConfigError(f"--node-rank {rank} is out of range for --nnodes {nnodes} (0 .. {nnodes - 1})")
    if nnodes == 1:
        return
    if tp % nnodes:
        raise ConfigError(
            f"tp_size must be divisible by number of nodes (SGLang asserts here): --tp-size {tp}, --nnodes {nnodes}"
        )
    if args["dp_size"] > 1:
        raise ConfigError(
            "multi-node data parallel is not supported unless dp attention! (SGLang asserts here; "
            "the simulator has no dp attention)"
        )
    if not args["dist_init_addr"]:
        raise ConfigError("please provide --dist-init-addr as host:port of head node (SGLang asserts here)")
    try:
        split_addr(args["dist_init_addr"])
    except RendezvousError as exc:
        raise ConfigError(f"{exc} (SGLang asserts here)") from None


@dataclasses.dataclass(frozen=True)
class SimServerConfig:
    """Parsed flags plus what the server resolved from them.

    Attributes:
        args: every parsed flag (SGLang's ServerArgs names), for /server_info.
        spec: resolved speculative settings.
        profile: the simulator profile.
        sglang_version: SGLang version whose flag rules are applied.
        api_version: SGLang version whose HTTP shapes are emulated (``--sim-api-version``).
        launch_command: the flags as given, joined by spaces (0.5.23's ``launch_command``).
        max_running_requests: effective cap (48 for the EAGLE family unless set).
        enable_spec_v2: value of ``SGLANG_ENABLE_SPEC_V2`` at start.
        kv_capacity_tokens: the KV pool (``max_total_num_tokens``), None for unlimited.
        memory: the KV-pool rules of the emulated version.
        adaptive_config: the adaptive speculation config in effect, None when static.
        off_cost: what a non-drafting iteration of a speculative server costs (the profile's).
    """

    args: dict[str, Any]
    spec: SpecConfig
    profile: SimProfile
    sglang_version: str
    max_running_requests: int
    enable_spec_v2: bool
    api_version: str = DEFAULT_RELEASE
    launch_command: str = ""
    kv_capacity_tokens: int | None = None
    memory: MemoryRules | None = None
    adaptive_config: dict[str, Any] | None = None
    off_cost: SpecOffCost = dataclasses.field(default_factory=SpecOffCost)

    def make_policy(self) -> SpecPolicy | None:
        """A fresh speculation policy for one engine (policies keep state): adaptive, the
        ``--sim-spec-off-above`` stand-in, or None (static)."""
        if not self.spec.enabled:
            return None
        if self.adaptive_config is not None:
            return adaptive_policy(
                self.sglang_version,
                self.spec.num_steps,
                self.adaptive_config,
                cuda_graph_max_bs=self.profile.default_cuda_graph_max_bs
                if self.args.get("cuda_graph_max_bs") is None
                else int(self.args["cuda_graph_max_bs"]),
            )
        off_above = self.args.get("sim_spec_off_above")
        if off_above is not None:
            return SpecOffAbove(int(off_above), self.spec.num_steps)
        return None

    def __getattr__(self, name: str) -> Any:
        try:
            return self.args[name]
        except KeyError as exc:
            raise AttributeError(name) from exc


def _env_flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def parse_server_args(argv: Sequence[str], *, environ: dict[str, str] | None = None) -> SimServerConfig:
    """Parse flags as ``sglang.launch_server`` would and resolve the speculative settings.

    Raises:
        SystemExit: argparse errors (unknown flag, bad value), like the real server.
        ConfigError: combinations SGLang rejects (see :func:`resolve_spec`), flags the
            profile's host cannot run (more TP ranks than GPUs), or an ``--sim-api-version``
            the simulator does not emulate.
    """
    env = os.environ if environ is None else environ
    ns = build_parser().parse_args(list(argv))
    args = vars(ns)
    profile = load_profile(args["sim_profile"])
    if args["sim_prompt_set"] is not None and args["sim_prompt_set"] not in profile.prompt_sets:
        raise ConfigError(
            f"--sim-prompt-set {args['sim_prompt_set']}: profile {profile.name} has no acceptance "
            f"figures for it; known: {', '.join(profile.prompt_sets) or 'none'} (leave the flag out "
            "for the profile's own figures)"
        )
    version = rules_version_for(args["sim_sglang_version"]) if args["sim_sglang_version"] else profile.sglang_version
    api_version = get_shape(args["sim_api_version"] or _api_shape_for(version)).version
    raw_v2 = env.get("SGLANG_ENABLE_SPEC_V2")
    adaptive = _adaptive_config(args, version)
    if adaptive is not None and not _adaptive_supported(args["speculative_algorithm"], args["speculative_eagle_topk"]):
        adaptive = None  # SGLang warns and falls back to static settings
        args["speculative_adaptive"] = False
    spec = resolve_spec(
        algorithm=args["speculative_algorithm"],
        num_steps=args["speculative_num_steps"],
        topk=args["speculative_eagle_topk"],
        num_draft_tokens=args["speculative_num_draft_tokens"],
        enable_spec_v2=None if raw_v2 is None else _env_flag(raw_v2),
        sglang_version=version,
        adaptive_steps=adaptive_candidate_union(adaptive, version) if adaptive is not None else None,
    )
    v2 = spec.spec_v2 if spec.enabled else _env_flag(raw_v2)
    if adaptive is not None and not _adaptive_supported(spec.algorithm, spec.topk):
        adaptive = None  # SGLang warns and falls back to static settings
        args["speculative_adaptive"] = False
    if spec.enabled:
        args["speculative_num_steps"] = spec.num_steps
        args["speculative_eagle_topk"] = spec.topk
        args["speculative_num_draft_tokens"] = spec.num_draft_tokens
        if not spec.spec_v2:
            args["disable_overlap_schedule"] = True  # spec v1 runs without overlap
    if args["tp_size"] is None:
        args["tp_size"] = profile.default_tp_size
    _check_nodes(args)
    capacity = None
    if profile.physics is not None:
        profile.deployment(args)  # the flags must fit the profile's host (e.g. --tp-size <= its GPUs)
        capacity = profile.kv_capacity_tokens(args, sglang_version=version)
        if args["max_total_tokens"] is not None:
            capacity = min(capacity, int(args["max_total_tokens"]))  # ModelRunner.init_memory_pool
        if capacity <= 0:
            raise ConfigError(
                f"Not enough memory for the KV cache on profile {profile.name} (SGLang: 'Not enough "
                f"memory. Please try to increase --mem-fraction-static'); current value: "
                f"{args['mem_fraction_static'] or 'the profile default'}"
            )
    mrr = args["max_running_requests"]
    if mrr is None:
        if spec.enabled:
            mrr = EAGLE_MAX_RUNNING_REQUESTS
        else:
            mrr = default_max_running_requests(capacity, args["context_length"] or 131072)
    args["max_running_requests"] = mrr
    max_draft = None
    if adaptive is not None:
        candidates = adaptive_candidate_union(adaptive, version)
        max_draft = max(candidates) + 1 if candidates else None
    # the reservation follows the exact release asked for (0.5.14's rule is not 0.5.12's), the flags the emulated one
    memory = memory_rules(
        spec,
        args["sim_sglang_version"] or version,
        capacity,
        page_size=int(args["page_size"]),
        max_num_draft_tokens=max_draft,
    )
    return SimServerConfig(
        args=args,
        spec=spec,
        profile=profile,
        sglang_version=version,
        max_running_requests=mrr,
        enable_spec_v2=v2,
        api_version=api_version,
        launch_command=" ".join(argv),
        kv_capacity_tokens=capacity,
        memory=memory,
        adaptive_config=adaptive,
        off_cost=SpecOffCost.from_table(profile.policies),
    )


def rules_version_for(version: str) -> str:
    """The emulated flag-rule version that stands for SGLang ``version``: itself when emulated, else the
    latest emulated version before it (0.5.14 -> 0.5.12), so a variant written for any release from the
    oldest emulated one on runs under the nearest rules; ``/server_info`` reports which
    (``simulation.emulated_sglang_version``).

    Raises:
        ConfigError: ``version`` is not a version, or is older than every emulated one.
    """
    if version in ALGORITHMS_BY_VERSION:
        return version
    key = release_number(version)
    if not key:
        raise ConfigError(f"--sim-sglang-version {version!r} is not an SGLang version such as 0.5.12")
    older = [v for v in ALGORITHMS_BY_VERSION if release_number(v) <= key]
    if not older:
        raise ConfigError(
            f"SGLang {version} is older than every version the simulator emulates "
            f"({', '.join(sorted(ALGORITHMS_BY_VERSION, key=release_number))}); pass one of those "
            "with --sim-sglang-version"
        )
    return max(older, key=release_number)


def _api_shape_for(version: str) -> str:
    """The HTTP shapes a flag-rule version speaks by default: its own, else the latest emulated shape
    before it (0.5.16 speaks 0.5.12's; pass ``--sim-api-version`` to choose)."""
    from workbench.sim._api_shapes import EMULATED_VERSIONS

    if version in EMULATED_VERSIONS or version not in ALGORITHMS_BY_VERSION:
        return version
    older = [v for v in EMULATED_VERSIONS if release_number(v) <= release_number(version)]
    return max(older, key=release_number) if older else version


def _adaptive_config(args: dict[str, Any], version: str) -> dict[str, Any] | None:
    """The adaptive config when ``--speculative-adaptive`` is on, else None.

    Raises:
        ConfigError: the flags on an SGLang version without them, or a bad config file.
    """
    if not args["speculative_adaptive"]:
        if args["speculative_adaptive_config"] is not None and not release_at_least(version, ADAPTIVE_EMULATED_SINCE):
            raise ConfigError(_no_adaptive(version, "--speculative-adaptive-config"))
        return None
    if not release_at_least(version, ADAPTIVE_EMULATED_SINCE):
        raise ConfigError(_no_adaptive(version, "--speculative-adaptive"))
    return load_adaptive_config(args["speculative_adaptive_config"], version)


def _no_adaptive(version: str, flag: str) -> str:
    return (
        f"{flag} is not a flag of SGLang {version} (adaptive speculative decoding arrived in {ADAPTIVE_SINCE}; "
        f"the simulator emulates it from {ADAPTIVE_EMULATED_SINCE}); run with --sim-sglang-version "
        f"{ADAPTIVE_EMULATED_SINCE} or later "
        f"(emulated: {', '.join(ALGORITHMS_BY_VERSION)}), or use a profile of such a version"
    )


def _adaptive_supported(algorithm: str | None, topk: int | None) -> bool:
    """``adaptive_unsupported_reason`` (0.5.12 ``srt/speculative/adaptive_spec_params.py``): EAGLE or EAGLE3
    (NEXTN is EAGLE), topk 1 (0.5.16: or unset)."""
    return algorithm in ("EAGLE", "EAGLE3", "NEXTN") and topk in (None, 1)
