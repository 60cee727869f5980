"""What a run's own record says about how its server ran: whether it drafted, and on which GPUs.

Pure functions of manifests (dicts as :mod:`workbench.store` writes them), read by the study's tables
(:class:`workbench.studies._tables.StudyTables`): a study must know which of its runs speculate (a lone
speculative run has no baseline to be compared with) and which GPU each ran on (a pair measured on two cards
compares the cards as well as speculation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["drafts", "gpu_difference", "gpu_words"]

#: How ``speculative_algorithm`` says "none" (SGLang reports None; a variant file may say so in words).
_NONE = frozenset({"", "NONE", "NULL", "FALSE"})


def _names_algorithm(value: object) -> bool:
    return value is not None and str(value).strip().upper() not in _NONE


def drafts(manifests: Sequence[Mapping[str, Any]], variant: str) -> bool | None:
    """Whether ``variant``'s server drafted (speculative decoding), as its run's manifest says; None when none says.

    Read, in order, from the ``speculative_algorithm`` its server reported in ``/server_info`` (SGLang's resolved
    settings; a ``/server_info`` without it names none), the ``speculative-algorithm`` flag of its variant file, and the ``--speculative-algorithm`` of its
    launch command (absent there: plain decoding).
    """
    for m in manifests:
        if m.get("variant") != variant:
            continue
        info = m.get("server_info")
        if isinstance(info, Mapping) and info:  # SGLang reports the setting, None for plain decoding
            return _names_algorithm(info.get("speculative_algorithm"))
        definition = m.get("variant_definition")
        flags = definition.get("flags") if isinstance(definition, Mapping) else None
        if isinstance(flags, Mapping) and "speculative-algorithm" in flags:
            return _names_algorithm(flags["speculative-algorithm"])
        command = m.get("launch_command")
        tokens = command.split() if isinstance(command, str) else [str(t) for t in command or []]
        if tokens:
            return any(t == "--speculative-algorithm" or t.startswith("--speculative-algorithm=") for t in tokens)
    return None


def gpu_words(manifests: Sequence[Mapping[str, Any]], variant: str) -> str:
    """The GPUs ``variant``'s server ran on (``"NVIDIA H200"``, ``"2x NVIDIA H100 80GB HBM3"``), from the ``gpus``
    its run's manifest records (its first run that measured something); ``""`` when it records none (a simulated
    engine, an import)."""
    for m in manifests:
        if m.get("variant") != variant or m.get("levels_completed") == 0:
            continue
        gpus = m.get("gpus")
        names = (
            [str(g["name"]) for g in gpus if isinstance(g, Mapping) and g.get("name")] if isinstance(gpus, list) else []
        )
        if names:
            return " + ".join(f"{names.count(n)}x {n}" if names.count(n) > 1 else n for n in dict.fromkeys(names))
    return ""


def gpu_difference(baseline: str, base_gpus: str, spec: str, spec_gpus: str) -> dict[str, str]:
    """A comparability row (the columns of :func:`workbench.analysis.settings_differences`) for a pair whose servers
    ran on different GPUs."""
    return {
        "variant": spec,
        "setting": "GPU",
        "baseline_value": base_gpus,
        "spec_value": spec_gpus,
        "effect": (
            f"{spec} ran on {spec_gpus} and {baseline} on {base_gpus}, so the pair's ratios mix the cards' speeds "
            "with speculation's"
        ),
        "equalise": "measure both variants on the same GPU model",
    }
