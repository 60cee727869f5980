"""Pre-flight checks of the host a variant will run on: model paths, disk, GPUs.

Two round trips: one shell command answers whether each path exists, how big
each local model directory is and how much disk is free; ``remote/gpu_inventory.py``
answers what nvidia-smi knows. The judging is pure (:func:`judge_resources`).

Only values that look like filesystem paths (``/...``, ``~/...``, ``./...``) are
checked; anything else (``meta-llama/Llama-3.3-70B-Instruct``) is a hub id that
the real server downloads, and the simulated engine loads no weights at all. The engine
answers what it does (:class:`workbench.engines.Engine`: ``reads_weights``, ``wants_gpus``);
how a missing path is judged, and the sentences of the findings, follow here.
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Any

from workbench.engines import Engine, get_engine
from workbench.errors import WorkbenchError
from workbench.hosts import Host, get_host
from workbench.hosts import call_helper
from workbench.hosts import host_python
from workbench.variants._variant import Variant
from workbench.variants._findings import Finding
from workbench.variants._validate import unresolved_flags

#: Below this much free disk (GiB) in the host's home a launch gets a warning (logs, patched trees).
MIN_FREE_DISK_GIB = 2.0

#: Fields (flag destinations) whose values are paths on the host.
PATH_FLAGS = ("tokenizer_path", "speculative_token_map", "speculative_adaptive_config")


def looks_like_path(value: str) -> bool:
    """True for ``/abs``, ``~/x``, ``./x`` and ``../x``; False for hub ids like ``org/model``."""
    return value.startswith(("/", "~", "./", "../"))


def variant_paths(variant: Variant, resolved: dict[str, Any] | None = None) -> dict[str, str]:
    """What to check: ``{label: value}`` for the model, the draft and path-valued flags."""
    out = {"model_path": variant.model_path}
    if variant.draft_model_path:
        out["draft_model_path"] = variant.draft_model_path
    flags = resolved if resolved is not None else unresolved_flags(variant)
    for dest in PATH_FLAGS:
        value = flags.get(dest)
        if isinstance(value, str):
            out["--" + dest.replace("_", "-")] = value
    return out


@dataclasses.dataclass(frozen=True)
class HostFacts:
    """What the host said.

    Attributes:
        host: its name.
        paths: value -> {"exists": bool, "kib": size of a directory or file or None}.
        free_disk_kib: free space in the host's home directory (None when unknown).
        gpus: the gpu_inventory answer, or None when it could not run (``gpu_error`` says why).
        gpu_error: why GPUs are unknown.
    """

    host: str
    paths: dict[str, dict[str, Any]]
    free_disk_kib: int | None
    gpus: dict[str, Any] | None
    gpu_error: str | None = None


def gather_facts(host: Host, values: list[str], *, want_gpus: bool, python: str | None = None) -> HostFacts:
    """Ask ``host`` about ``values`` (paths), free disk and (when ``want_gpus``) its GPUs."""
    parts = ['df -Pk "$HOME" | awk \'NR==2 {print "DF", $4}\'']
    for i, value in enumerate(values):
        path = value if not value.startswith("~") else '"$HOME"' + shlex.quote(value[1:])
        target = path if path.startswith('"$HOME"') else shlex.quote(path)
        parts.append(f'if test -e {target}; then echo "P{i} 1 $(du -sk -L {target} 2>/dev/null | cut -f1)"; '
                     f'else echo "P{i} 0"; fi')  # fmt: skip
    result = host.run(["sh", "-c", "; ".join(parts)], check=False, timeout_s=120)
    paths: dict[str, dict[str, Any]] = {}
    free = None
    for line in result.stdout.splitlines():
        bits = line.split()
        if bits[:1] == ["DF"] and len(bits) > 1 and bits[1].isdigit():
            free = int(bits[1])
        elif bits and bits[0].startswith("P") and bits[0][1:].isdigit() and len(bits) > 1:
            size = int(bits[2]) if len(bits) > 2 and bits[2].isdigit() else None
            paths[values[int(bits[0][1:])]] = {"exists": bits[1] == "1", "kib": size}
    gpus, error = None, None
    if want_gpus:
        try:
            gpus = call_helper(host, "gpu_inventory", {"topology": False}, python=host_python(host, python))
        except WorkbenchError as exc:
            error = str(exc).splitlines()[0]
    return HostFacts(host.name, paths, free, gpus, error)


def judge_resources(
    variant: Variant,
    facts: HostFacts,
    *,
    engine: str | Engine,
    resolved: dict[str, Any] | None = None,
) -> list[Finding]:
    """Findings about paths, disk and GPUs (pure).

    Args:
        variant: the variant.
        facts: what :func:`gather_facts` learned.
        engine: the engine that would run it (or its name): on one that reads no weights (the
            simulated engine) missing paths are warnings, on one that does (SGLang) errors; GPU
            count and memory are judged where the engine wants GPUs.
        resolved: the variant's flags by field name (from flag validation), else the
            flags as written with dashes turned into underscores.

    Raises:
        ConfigError: an unknown engine name.
    """
    eng = get_engine(engine)
    name, out = variant.name, []
    flags = resolved if resolved is not None else unresolved_flags(variant)
    hub_id = (
        "the server downloads it into the Hugging Face cache"
        if eng.reads_weights
        else (f"{eng.called} loads no weights")
    )
    missing = "" if eng.reads_weights else f" ({eng.called} does not read it, so the run itself will work)"
    for label, value in variant_paths(variant, resolved).items():
        if not looks_like_path(value):
            out.append(Finding("info", name, label, f"{value!r} looks like a hub id, not a path, so it is not "
                               f"checked on {facts.host!r} ({hub_id}).", "", "path-hub-id"))  # fmt: skip
            continue
        seen = facts.paths.get(value)
        if seen is None or seen["exists"]:
            continue
        out.append(Finding("error" if eng.reads_weights else "warning", name, label,
                           f"{value} does not exist on host {facts.host!r}{missing}.",
                           f"fix {label} in the variant file or copy the files to the host",
                           "path-missing"))  # fmt: skip
    if facts.free_disk_kib is not None and facts.free_disk_kib < MIN_FREE_DISK_GIB * 2**20:
        out.append(Finding("warning", name, "disk", f"only {facts.free_disk_kib / 2**20:.1f} GiB free in the home "
                           f"directory of {facts.host!r} (server logs, patched trees, downloads go there).",
                           f"free at least {MIN_FREE_DISK_GIB:g} GiB", "disk"))  # fmt: skip
    if not eng.wants_gpus:
        out.append(
            Finding("info", name, "gpu", f"GPU memory not checked: {eng.called} needs no GPU.", "", "gpu-skipped")
        )
        return out
    return out + _judge_gpus(variant, facts, flags)


def _judge_gpus(variant: Variant, facts: HostFacts, flags: dict[str, Any]) -> list[Finding]:
    name = variant.name
    inv = facts.gpus
    if inv is None or not inv.get("nvidia_smi"):
        why = facts.gpu_error or f"no nvidia-smi on host {facts.host!r}"
        return [Finding("info", name, "gpu", f"GPU count and memory not checked: {why}.",
                        "run on a host with NVIDIA GPUs and nvidia-smi to have them checked",
                        "gpu-skipped")]  # fmt: skip
    gpus = inv.get("gpus") or []
    tp, dp = int(flags.get("tp_size", 1) or 1), int(flags.get("dp_size", 1) or 1)
    need = tp * dp
    out = []
    if len(gpus) < need:
        out.append(Finding("error", name, "--tp-size", f"--tp-size {tp} x --dp-size {dp} needs {need} GPUs; host "
                           f"{facts.host!r} has {len(gpus)}.", "lower --tp-size/--dp-size or use a larger host",
                           "gpu-count"))  # fmt: skip
        return out
    frac = flags.get("mem_fraction_static")
    for gpu in gpus[:need]:
        total, used = gpu.get("memory_total_mib") or 0, gpu.get("memory_used_mib") or 0
        if frac is not None and total and (total - used) < float(frac) * total:
            out.append(Finding("error", name, "--mem-fraction-static",
                               f"GPU {gpu.get('index')} ({gpu.get('name')}) has {used} of {total} MiB in use by other "
                               f"processes; --mem-fraction-static {frac} needs {float(frac) * total:.0f} MiB free.",
                               "free the GPU (nvidia-smi shows who uses it), pick other GPUs, or lower "
                               "--mem-fraction-static", "gpu-memory"))  # fmt: skip
    weights_kib = sum((facts.paths.get(v) or {}).get("kib") or 0 for v in
                      (variant.model_path, variant.draft_model_path or "") if looks_like_path(v))  # fmt: skip
    per_gpu_mib = weights_kib / 1024 / tp
    smallest = min((g.get("memory_total_mib") or 0) for g in gpus[:need])
    budget = float(frac if frac is not None else 0.9) * smallest
    if weights_kib and per_gpu_mib > budget:
        out.append(Finding("error", name, "--tp-size", f"the model files take {weights_kib / 2**20:.1f} GiB, "
                           f"{per_gpu_mib / 1024:.1f} GiB per GPU at --tp-size {tp}, more than the "
                           f"{budget / 1024:.1f} GiB the static memory fraction allows on a {smallest} MiB GPU.",
                           "raise --tp-size, use smaller (quantized) weights or larger GPUs",
                           "gpu-weights"))  # fmt: skip
    return out


def check_resources(
    variant: Variant,
    *,
    host: str | Host = "local",
    engine: str | Engine = "sglang",
    resolved: dict[str, Any] | None = None,
    python: str | None = None,
) -> list[Finding]:
    """Check paths, disk and (when the engine wants GPUs) GPUs of ``host`` for ``variant``.

    Args:
        variant: the variant.
        host: where it would run.
        engine: the engine that would run it, or its name (default SGLang); see
            :func:`judge_resources`.
        resolved: the variant's flags by field name (see :func:`judge_resources`).
        python: the host's interpreter for the GPU helper.

    Raises:
        ConfigError: an unknown engine name.
        HostError: the host cannot be reached.
    """
    eng = get_engine(engine)
    h = get_host(host)
    values = [v for v in variant_paths(variant, resolved).values() if looks_like_path(v)]
    facts = gather_facts(h, values, want_gpus=eng.wants_gpus, python=python)
    return judge_resources(variant, facts, engine=eng, resolved=resolved)
