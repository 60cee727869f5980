"""After launch: what the server really runs, compared with what the variant asked for (pure).

SGLang adjusts speculative settings at start-up, often with only a log line:
topk 1 forces ``num_draft_tokens = num_steps + 1``; the EAGLE family caps max
running requests at 48; spec v1 turns overlap scheduling off; spec v2 may fall
back to v1 (0.5.11-0.5.12 with topk > 1); adaptive speculation falls back to
static settings with a warning ("speculative_adaptive disabled: <reason>. Falling
back to static speculative params.", ``srt/server_args.py`` 0.5.12,
``srt/arg_groups/speculative_hook.py`` 0.5.16+). ``/server_info`` echoes the
resolved ServerArgs, so :func:`confirm_effective` reads the truth there and in the
log, and says loudly where it differs from the variant.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.variants._variant import Variant
from workbench.source import version_key
from workbench.variants._findings import Finding
from workbench.releases import ADAPTIVE_SINCE, SPEC_V1_GONE_SINCE

LOUD = "EFFECTIVE SETTING DIFFERS FROM THE VARIANT:"

#: (flag, /server_info key) of the settings compared.
COMPARED = (
    ("speculative-num-steps", "speculative_num_steps"),
    ("speculative-eagle-topk", "speculative_eagle_topk"),
    ("speculative-num-draft-tokens", "speculative_num_draft_tokens"),
    ("max-running-requests", "max_running_requests"),
)
_ADAPTIVE_OFF = re.compile(r"speculative_adaptive disabled: (.*?)\. Falling back to static speculative params")
_V2_ON = ("Spec v2 is enabled", "Beta spec is enabled")
_V1_OFF = ("Overlap scheduler is disabled when spec v2 is off", "Overlap scheduler is disabled because of using")
_TRUE = ("1", "true", "yes", "on")


def effective_settings(server_info: dict[str, Any]) -> dict[str, Any]:
    """The settings :func:`confirm_effective` compares, as the server reports them.

    Returns:
        ``speculative_algorithm``, the :data:`COMPARED` keys, ``disable_overlap_schedule``,
        ``speculative_adaptive`` (None when the version lacks it), ``spec_version``
        (``"v1"``, ``"v2"`` or None without speculation) and ``sglang_version``.
    """
    info = server_info or {}
    out: dict[str, Any] = {"sglang_version": info.get("version"),
                           "speculative_algorithm": info.get("speculative_algorithm")}  # fmt: skip
    for _, key in COMPARED:
        out[key] = info.get(key)
    out["disable_overlap_schedule"] = info.get("disable_overlap_schedule")
    out["speculative_adaptive"] = info.get("speculative_adaptive")
    out["spec_version"] = _spec_version(info)
    return out


def _spec_version(info: dict[str, Any]) -> str | None:
    if not info.get("speculative_algorithm"):
        return None
    version = str(info.get("version") or "")
    if version and _has_no_v1(version):
        return "v2"
    return "v1" if info.get("disable_overlap_schedule") else "v2"


def _has_no_v1(version: str) -> bool:
    """Spec v1 is gone from ``version`` on (:data:`~workbench.releases.SPEC_V1_GONE_SINCE`: class EAGLEWorker left
    eagle_worker.py)."""
    try:
        return version_key(version) >= version_key(SPEC_V1_GONE_SINCE)
    except ValueError:
        return False


def confirm_effective(variant: Variant, server_info: dict[str, Any], log_text: str = "") -> list[Finding]:
    """Compare the running server with ``variant``; loud warnings where they differ.

    Args:
        variant: what was asked for.
        server_info: the ``/server_info`` body of the running server.
        log_text: the server's log so far (for fallbacks SGLang only logs).

    Returns:
        Findings: ``error`` when speculation is on/off against the variant, ``warning``
        (message starting with :data:`LOUD`) where a setting differs, ``info`` for what
        the server chose where the variant left it open and for a simulator stand-in.
    """
    name, eff, out = variant.name, effective_settings(server_info), []
    asked_spec = variant.speculative
    if asked_spec != bool(eff["speculative_algorithm"]):
        state = "without" if asked_spec else "with"
        out.append(Finding("error", name, "--speculative-algorithm",
                           f"{LOUD} the server runs {state} speculative decoding "
                           f"(speculative_algorithm={eff['speculative_algorithm']!r} in /server_info).",
                           "check the launch command and the server log; this run does not measure the variant",
                           "effective-speculation"))  # fmt: skip
        return out
    for flag, key in COMPARED:
        if not asked_spec and flag != "max-running-requests":
            continue
        asked, got = variant.flags.get(flag), eff[key]
        if asked is None:
            if got is not None and (asked_spec or flag != "max-running-requests"):
                out.append(Finding("info", name, f"--{flag}", f"not set by the variant; the server chose {got}.",
                                   f"set --{flag} {got} explicitly to pin it", "effective-default"))  # fmt: skip
            continue
        if got is None or _same(asked, got):
            continue
        why = ""
        if key == "speculative_num_draft_tokens" and eff["speculative_eagle_topk"] == 1:
            why = " (with topk 1 SGLang forces num_draft_tokens = num_steps + 1)"
        out.append(Finding("warning", name, f"--{flag}", f"{LOUD} --{flag} asked {asked}, the server runs {got}{why}.",
                           f"set --{flag} {got} in the variant, or change the settings it depends on",
                           "effective-differs"))  # fmt: skip
    if asked_spec:
        out += _spec_v2(variant, eff, log_text)
    out += _adaptive(variant, server_info, log_text)
    out += _stand_in(variant, server_info)
    return out


def _same(asked: Any, got: Any) -> bool:
    try:
        return float(asked) == float(got)
    except (TypeError, ValueError):
        return str(asked).upper() == str(got).upper()


def _spec_v2(variant: Variant, eff: dict[str, Any], log: str) -> list[Finding]:
    name, got = variant.name, eff["spec_version"]
    raw = variant.env.get("SGLANG_ENABLE_SPEC_V2")
    evidence = ""
    if any(s in log for s in _V2_ON):
        evidence = " (the log says spec v2 is enabled)"
    elif any(s in log for s in _V1_OFF):
        evidence = " (the log says overlap scheduling is disabled: spec v1)"
    overlap = "off" if eff["disable_overlap_schedule"] else "on"
    if raw is not None and raw.strip().lower() in _TRUE and got == "v1":
        return [Finding("warning", name, "env SGLANG_ENABLE_SPEC_V2",
                        f"{LOUD} SGLANG_ENABLE_SPEC_V2={raw} asks for spec v2 but the server runs spec v1 "
                        f"(overlap scheduling {overlap}){evidence}.",
                        "use --speculative-eagle-topk 1 (this version's v2 needs it) or drop the env var",
                        "effective-spec-v2")]  # fmt: skip
    if raw is not None and raw.strip().lower() not in _TRUE and got == "v2":
        return [Finding("warning", name, "env SGLANG_ENABLE_SPEC_V2",
                        f"{LOUD} SGLANG_ENABLE_SPEC_V2={raw} asks for spec v1 but the server runs spec v2{evidence}.",
                        "this version has no spec v1; drop the env var", "effective-spec-v2")]  # fmt: skip
    return [Finding("info", name, "env SGLANG_ENABLE_SPEC_V2",
                    f"the server runs spec {got} (overlap scheduling {overlap}){evidence}.", "",
                    "effective-spec-version")]  # fmt: skip


def _adaptive(variant: Variant, info: dict[str, Any], log: str) -> list[Finding]:
    if not variant.flags.get("speculative-adaptive"):
        return []
    flag, name = "--speculative-adaptive", variant.name
    reason = _ADAPTIVE_OFF.search(log)
    if "speculative_adaptive" not in info:
        own = variant.target_version
        fix = (f"run it on SGLang {own}, the release it is written for" if own and own != info.get("version")
               else f"run it on SGLang {ADAPTIVE_SINCE} or later ({ADAPTIVE_SINCE} runs it only under spec v1: "
               "SGLANG_ENABLE_SPEC_V2=0)")  # fmt: skip
        return [Finding("error", name, flag, f"{LOUD} the server reports no speculative_adaptive setting: "
                        f"SGLang {info.get('version')} has no adaptive speculative decoding.", fix,
                        "effective-adaptive")]  # fmt: skip
    if reason or not info.get("speculative_adaptive"):
        why = f": {reason.group(1)}" if reason else " (speculative_adaptive is false in /server_info)"
        return [Finding("warning", name, flag, f"{LOUD} adaptive speculation is SILENTLY OFF{why}; the server "
                        "runs static speculative settings.",
                        "use EAGLE or EAGLE3 with --speculative-eagle-topk 1 and no dp attention, multi-layer "
                        "EAGLE, two-batch overlap or pdmux", "effective-adaptive")]  # fmt: skip
    return [Finding("info", name, flag, "adaptive speculation is on (speculative_adaptive true, no fallback "
                    "in the log).", "", "effective-adaptive")]  # fmt: skip


def _stand_in(variant: Variant, info: dict[str, Any]) -> list[Finding]:
    if not info.get("simulated"):
        return []
    out = []
    sim = info.get("simulation") or {}
    for key, value in variant.sim_policy.items():
        got = sim.get(key)
        if got != value:
            out.append(Finding("warning", variant.name, f"sim_policy {key}",
                               f"{LOUD} the simulator reports {key}={got!r}, the variant's stand-in asks {value!r}.",
                               f"pass --sim-{key.replace('_', '-')} {value}", "effective-stand-in"))  # fmt: skip
        else:
            out.append(Finding("info", variant.name, f"sim_policy {key}", f"{variant.sim_stand_in()}.", "",
                               "stand-in"))  # fmt: skip
    if variant.patches and not variant.sim_policy:
        out.append(Finding("warning", variant.name, "patches",
                           "the simulated engine runs no SGLang code, so this variant's patches change nothing "
                           "here and it has no sim_policy standing in for them.",
                           "add a [sim_policy] table, or benchmark it on a GPU host", "stand-in"))  # fmt: skip
    return out
