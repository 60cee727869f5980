"""Variants as templates: the model, draft model, TP size and GPUs given as parameters.

The shipped variants name one model at TP 8 (the seed investigation's host); those values
are the defaults, and a notebook or command gives others without editing any file::

    apply_parameters(load_variant("eagle3-topk4"), model_path="meta-llama/Llama-3.1-8B-Instruct",
                     draft_model_path="yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", tp_size=1, gpus=[0])

(``-p model_path ... -p tp_size 1`` in ``workbench report``, ``--model-path ... --tp-size 1``
in ``workbench bench`` and ``workbench variants check``.) The result is an ordinary
:class:`Variant` with the same name: pre-flight checks, launch, and the run's identity
(which hashes the variant's definition) all see the values used, so a sweep at TP 1 never
resumes one at TP 8.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError
from workbench.variants._multinode import gpus_per_node, nnodes_of
from workbench.variants._variant import Variant

__all__ = ["TEMPLATE_PARAMETERS", "apply_parameters", "parameters_given", "parse_gpus"]

#: The parameters a variant takes from outside its file.
TEMPLATE_PARAMETERS = ("model_path", "draft_model_path", "tp_size", "gpus")
#: Spellings of the TP flag a variant file may use (SGLang's ``--tp-size`` and its alias).
_TP_KEYS = ("tp-size", "tensor-parallel-size")


def parse_gpus(gpus: str | int | Sequence[int] | None) -> list[int] | None:
    """GPU indices from ``"0,1"``, ``[0, 1]`` or ``3`` (one GPU, index 3); None stays None.

    Raises:
        ConfigError: not whole non-negative numbers, or one given twice.
    """
    if gpus is None:
        return None
    parts = str(gpus).split(",") if isinstance(gpus, (str, int)) else list(gpus)
    try:
        out = [int(str(p).strip()) for p in parts if str(p).strip() != ""]
    except ValueError:
        raise ConfigError(f"gpus must be GPU indices such as 0,1 or [0, 1], got {gpus!r}") from None
    if not out or any(g < 0 for g in out) or len(set(out)) != len(out):
        raise ConfigError(f"gpus must be distinct GPU indices (0, 1, ...), got {gpus!r}")
    return out


def apply_parameters(
    variant: Variant,
    *,
    model_path: str | None = None,
    draft_model_path: str | None = None,
    tp_size: int | None = None,
    gpus: str | int | Sequence[int] | None = None,
) -> Variant:
    """``variant`` with the given parameters in place of its file's values (None keeps the file's).

    Args:
        variant: the variant (its file's values are the defaults).
        model_path: the target model (``--model-path``).
        draft_model_path: the draft model (``--speculative-draft-model-path``); applied to
            speculative variants only, so one value serves a baseline and its speculative
            variants alike.
        tp_size: tensor-parallel size (``--tp-size``), replacing the file's ``tp-size`` (or
            ``tensor-parallel-size``).
        gpus: GPU indices the server may use (``CUDA_VISIBLE_DEVICES`` in its environment),
            e.g. ``"0,1"`` or ``[0, 1]``; at least ``tp_size x dp_size`` of them.

    Raises:
        ConfigError: a TP size that is not a positive whole number, malformed GPU indices,
            or fewer GPUs than the variant's TP x DP size.
    """
    flags, env = dict(variant.flags), dict(variant.env)
    if tp_size is not None:
        if isinstance(tp_size, bool) or not isinstance(tp_size, int) or tp_size < 1:
            raise ConfigError(f"tp_size must be a positive whole number of GPUs, got {tp_size!r}")
        for key in _TP_KEYS:
            flags.pop(key, None)
        flags["tp-size"] = tp_size
    indices = parse_gpus(gpus)
    if indices is not None:
        shaped = dataclasses.replace(variant, flags=flags)
        need = gpus_per_node(shaped)  # a server spanning nodes takes its share on each node
        if len(indices) < need:
            per = f" / --nnodes {nnodes_of(shaped)} per node" if nnodes_of(shaped) > 1 else ""
            raise ConfigError(
                f"variant {variant.name!r} runs at --tp-size x --dp-size{per} = {need} GPUs, "
                f"but gpus names {len(indices)} ({','.join(map(str, indices))}); give as many GPUs "
                "or a smaller tp_size"
            )
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, indices))
    return dataclasses.replace(
        variant,
        model_path=variant.model_path if model_path is None else str(model_path),
        draft_model_path=(
            str(draft_model_path) if draft_model_path is not None and variant.speculative else variant.draft_model_path
        ),
        flags=flags,
        env=env,
    )


def parameters_given(parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The template parameters in ``parameters`` that are set (not None).

    Raises:
        ConfigError: a name that is not a template parameter (the known ones are listed).
    """
    given = {k: v for k, v in (parameters or {}).items() if v is not None}
    unknown = sorted(set(given) - set(TEMPLATE_PARAMETERS))
    if unknown:
        raise ConfigError(f"unknown variant parameter(s) {unknown}; a variant takes {', '.join(TEMPLATE_PARAMETERS)}")
    return given
