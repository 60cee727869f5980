"""Servers that span nodes: a variant's ``nnodes`` flag, the per-node command of each rank, and their checks.

A variant is declared multi-node by SGLang's own server argument, ``[flags] nnodes = 2`` (``--nnodes``):
the variant stays one SGLang launch command, the same on every engine, and the flag the release's parser
checks is the flag the user wrote. The other two multi-node flags differ per node and per launch, so the
workbench sets them on a fleet (:mod:`workbench.sweeps._fleet_multinode`): ``--node-rank R`` and
``--dist-init-addr RANK0_IP:PORT`` (rank 0's node address and a port free there). Facts from SGLang 0.5.9
(the same in 0.4.4 to 0.5.23's wheels):

- ``srt/server_args.py``: ``--nnodes`` (int, default 1), ``--node-rank`` (int, default 0), ``--dist-init-addr``
  (alias ``--nccl-init-addr``); ``check_server_args`` asserts ``(tp_size * pp_size) % nnodes == 0`` ("tp_size
  must be divisible by number of nodes") and that ``dp_size > 1`` across nodes needs ``--enable-dp-attention``.
- ``srt/entrypoints/engine.py`` (``_launch_subprocesses``, ``dp_size == 1``): each node runs
  ``tp_size_per_node = tp_size // nnodes_per_tp_group`` TP ranks (``nnodes_per_tp_group = max(nnodes // pp_size,
  1)``), on GPUs ``base_gpu_id ..``: with ``pp_size = 1`` that is ``tp_size / nnodes`` GPUs per node.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from workbench.errors import ConfigError
from workbench.variants._findings import Finding
from workbench.variants._variant import Variant

#: Flags the workbench sets on each rank's command (the variant gives ``nnodes`` only), with their aliases.
RANK_FLAGS = ("node-rank", "dist-init-addr", "nccl-init-addr")
_TP = ("tp-size", "tensor-parallel-size")
_PP = ("pp-size", "pipeline-parallel-size")


def _int_flag(variant: Variant, keys: tuple[str, ...], default: int = 1) -> Any:
    return next((variant.flags[k] for k in keys if variant.flags.get(k) not in (None, False)), default)


def nnodes_of(variant: Variant) -> int:
    """The nodes one server of ``variant`` spans: its ``nnodes`` flag (SGLang's default 1).

    Raises:
        ConfigError: ``nnodes`` is not a whole number >= 1.
    """
    value = variant.flags.get("nnodes", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"Variant {variant.name!r}: nnodes must be a whole number >= 1, got {value!r}; write "
            "e.g. `nnodes = 2` under [flags]"
        )
    return value


def gpus_per_node(variant: Variant) -> int:
    """GPUs each node of one server takes: ``Variant.gpus_wanted / nnodes`` (``tp_size / nnodes`` at ``pp_size`` 1
    and ``dp_size`` 1, SGLang's split; see the module docstring).

    Raises:
        ConfigError: ``nnodes`` is not a whole number >= 1, or does not divide the GPUs.
    """
    nodes = nnodes_of(variant)
    gpus = variant.gpus_wanted
    if gpus % nodes:
        raise ConfigError(
            f"Variant {variant.name!r}: nnodes = {nodes} does not divide its {gpus} GPU(s) "
            f"(tp_size x dp_size): SGLang splits tp_size evenly over the nodes; choose a tp-size "
            f"that is a multiple of {nodes}, or fewer nodes"
        )
    return gpus // nodes


def rank_variant(variant: Variant, *, rank: int, dist_init_addr: str) -> Variant:
    """``variant`` as node ``rank`` launches it: its flags plus ``--nnodes N --node-rank R --dist-init-addr ADDR``.

    The engine turns it into a command line as it does any variant (``Engine.launch_argv``), so rank R's
    command is the one-node command with the three flags added.

    Raises:
        ConfigError: ``rank`` outside ``0 .. nnodes - 1``, or a bad ``nnodes``.
    """
    nodes = nnodes_of(variant)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < nodes:
        raise ConfigError(
            f"Variant {variant.name!r}: node rank {rank!r} is out of range for nnodes = {nodes} (0 .. {nodes - 1})"
        )
    flags = {k: v for k, v in variant.flags.items() if k not in RANK_FLAGS and k != "nnodes"}
    flags.update({"nnodes": nodes, "node-rank": rank, "dist-init-addr": dist_init_addr})
    return dataclasses.replace(variant, flags=flags)


def check_multinode(variant: Variant) -> list[Finding]:
    """Pre-flight findings for the multi-node flags (beside the parser's own check of each flag's name and type).

    Errors: ``nnodes`` not a whole number >= 1; ``node-rank`` outside ``0 .. nnodes - 1``; ``nnodes`` not
    dividing ``tp_size x pp_size`` (SGLang's assert) or the variant's GPUs; ``dp-size`` > 1 across nodes
    without ``enable-dp-attention`` (SGLang's assert). Info: who sets ``--node-rank`` and ``--dist-init-addr``.
    """
    name, out = variant.name, list[Finding]()
    if not any(k in variant.flags for k in ("nnodes", *RANK_FLAGS)):
        return out
    try:
        nodes = nnodes_of(variant)
    except ConfigError as exc:
        return [
            Finding(
                "error", name, "--nnodes", str(exc), "set nnodes to the number of nodes, e.g. 2", "multinode-nnodes"
            )
        ]
    rank = variant.flags.get("node-rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < nodes):
        out.append(
            Finding(
                "error",
                name,
                "--node-rank",
                f"node-rank = {rank!r} is out of range for nnodes = {nodes}: ranks are 0 .. {nodes - 1}.",
                "drop node-rank (on a fleet the workbench sets each node's rank) or give one in range",
                "multinode-rank",
            )
        )
    tp, pp = _int_flag(variant, _TP), _int_flag(variant, _PP)
    if isinstance(tp, int) and isinstance(pp, int) and (tp * pp) % nodes:
        out.append(
            Finding(
                "error",
                name,
                "--nnodes",
                f"nnodes = {nodes} does not divide tp_size x pp_size = "
                f"{tp * pp}: SGLang asserts 'tp_size must be divisible by number of nodes' "
                "(srt/server_args.py check_server_args).",
                f"use a tp-size that is a multiple of {nodes}, or fewer nodes",
                "multinode-divide",
            )
        )
    elif variant.gpus_wanted % nodes:
        out.append(
            Finding(
                "error",
                name,
                "--nnodes",
                f"nnodes = {nodes} does not divide the variant's {variant.gpus_wanted} GPU(s) (tp_size x dp_size).",
                "choose tp-size and dp-size so that their product is a multiple of nnodes",
                "multinode-divide",
            )
        )
    dp = variant.flags.get("dp-size") or 1
    if nodes > 1 and isinstance(dp, int) and dp > 1 and not variant.flags.get("enable-dp-attention"):
        out.append(
            Finding(
                "error",
                name,
                "--dp-size",
                f"dp-size = {dp} across {nodes} nodes: SGLang asserts "
                "'multi-node data parallel is not supported unless dp attention!' "
                "(srt/server_args.py).",
                "drop dp-size, or add enable-dp-attention = true",
                "multinode-dp",
            )
        )
    if nodes > 1 and any(k in variant.flags for k in RANK_FLAGS[1:]):
        out.append(
            Finding(
                "info",
                name,
                "--dist-init-addr",
                "dist-init-addr is the variant's own; on a fleet the "
                "workbench replaces it with rank 0's node address and a port free there.",
                "",
                "multinode-addr",
            )
        )
    return out
