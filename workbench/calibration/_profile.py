"""Write a simulator profile (``data/profiles/<name>.toml``) from a fit of a GPU timing table.

The profile names the GPU's data sheet and the table's models; its ``[efficiency]`` holds the
fitted terms (with the table they came from) and, for the rest, the values of a profile it
carries them from (``carry``: the CPU terms a kernel table cannot measure), each with its
source; its ``[workload]`` and ``[acceptance]`` are copied from that profile as they are (the
acceptance belongs to the draft, not the GPU). Pure text in, text out: :func:`profile_text`;
:func:`write_profile` only writes it.
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench.calibration._fit import CalibrationFit

#: Efficiency terms that a profile carries from another (never measured by a kernel table).
CARRIED = (
    "cpu_overhead_ms",
    "cpu_per_request_ms",
    "interconnect_efficiency",
    "allreduce_latency_us",
    "custom_allreduce_latency_us",
    "eager_layer_us",
    "spec_cpu_phases",
)


def _section(text: str, name: str) -> str:
    """The body of ``[name]`` in a TOML text, comments kept ('' when absent)."""
    m = re.search(rf"(?ms)^\[{re.escape(name)}\]\n(.*?)(?=^\[)", text + "\n[")
    return m.group(1).rstrip() + "\n" if m else ""


def _subtables(text: str, name: str) -> list[str]:
    """Every ``[name.<sub>]`` table of a TOML text (header and body, comments kept), in order: an
    ``[acceptance]`` table's sampling regimes and prompt sets."""
    return [
        f"[{m.group(1)}]\n{m.group(2).rstrip()}\n"
        for m in re.finditer(rf"(?ms)^\[({re.escape(name)}\.[^\]]+)\]\n(.*?)(?=^\[)", text + "\n[")
    ]


def _carried_lines(text: str) -> dict[str, str]:
    """``name -> its line`` (comment included) of the carried terms in a profile's [efficiency]."""
    body = _section(text, "efficiency")
    out = {}
    for line in body.splitlines():
        m = re.match(r"^([a-z_]+)\s*=", line)
        if m and m.group(1) in CARRIED:
            out[m.group(1)] = line
    return out


def profile_text(
    fit: CalibrationFit, *, name: str, description: str, carry: Path, table_path: str, sglang_version: str = "0.5.9"
) -> str:
    """The profile's TOML text (see module docstring).

    Args:
        fit: the fit of one table.
        name: the profile's name (its file stem).
        description: one paragraph for people.
        carry: the profile whose CPU terms, workload and acceptance are carried over.
        table_path: the table's path relative to the project (recorded in ``[calibration]``).
        sglang_version: the API shapes the simulator emulates.
    """
    table = fit.table
    old = carry.read_text()
    carried = _carried_lines(old)
    summary = fit.residual_summary()
    fitted = summary[summary["set"] == "fitted"]
    held = summary[summary["set"] == "held out"]
    env = table.environment
    lines = [
        f"# {description.splitlines()[0]}",
        f"# Written by `workbench calibrate fit {table_path} --write-profile {name}` from that GPU timing table",
        f"# ({table.gpu_name}, {table.date}, torch {env.get('torch')}, CUDA {env.get('cuda')}, driver {env.get('driver')};",
        f"# {table.plan['layers_timed']} of {table.plan['target']['layers']} layers timed). Attention there is PyTorch SDPA",
        "# (flash / memory-efficient kernels), not SGLang's FlashInfer or FA3, and MoE experts are torch._grouped_mm, not",
        "# SGLang's fused MoE kernels: see docs/PERFORMANCE.md for the residuals this leaves.",
        "",
        "[profile]",
        f'name = "{name}"',
        f'description = """{description}"""',
        f'sglang_version = "{sglang_version}"',
        "",
        "[deployment]",
        f'gpu = "{fit.gpu}"                      # the table\'s GPU: {table.gpu_name}',
        "gpus = 1                           # the table was timed on one GPU",
        'interconnect = "nvlink"            # unused at TP 1',
        f"tp_size = {int(table.plan.get('tp', 1))}                        # the table's TP",
        "custom_all_reduce = true",
        "cuda_graph_max_bs = 160            # ASSUMPTION: SGLang's default on an 80+ GB GPU",
        "mem_fraction_static = 0.85         # ASSUMPTION",
        f'target = "{table.target_model}"',
    ]
    if table.draft_model:
        lines.append(f'draft = "{table.draft_model}"')
    lines += [
        "",
        "[efficiency]",
        f"# Fitted ([fit].terms) to {table_path}: {int(fitted['points'].sum())} points "
        f"(decode at contexts {', '.join(str(c) for c in fitted['context'])}), {len(fit.terms)} terms;",
    ]
    lines.append(
        f"# held out ({int(held['points'].sum())} points): "
        + "; ".join(f"{r.family} C{r.context} median |error| {r.median_abs_error_pct:.0f}%" for r in held.itertuples())
    )
    for term in fit.terms:
        lines.append(f"{term} = {getattr(fit.efficiency, term):.6g}")
    if fit.allreduce:
        for term, value in fit.allreduce.items():
            lines.append(f"{term} = {value:.6g}          # fitted to the table's all-reduce rows")
    lines.append(f"# Not measured by a kernel table; carried from {carry.stem} with their sources:")
    for term in CARRIED:
        if fit.allreduce and term in fit.allreduce:
            continue
        if term in carried:
            note = f"   # ASSUMPTION: carried from {carry.stem}, where it was fitted; not measured on this GPU"
            lines.append(carried[term] if "#" in carried[term] else carried[term] + note)
        elif term in ("cpu_overhead_ms", "cpu_per_request_ms"):
            lines.append(f"{term} = 0.0   # ASSUMPTION: not in {carry.stem}")
    lines += [
        "",
        "[fit]",
        "# The terms fitted to the GPU timing table (`workbench calibrate fit`).",
        f"terms = [{', '.join(repr(t).replace(chr(39), chr(34)) for t in fit.terms)}]",
        "",
    ]
    lines += ["[workload]", f"# Carried from {carry.stem}.", _section(old, "workload").rstrip(), ""]
    lines += [
        "[acceptance]",
        f"# Carried from {carry.stem} (the acceptance is the draft's, not the GPU's).",
        _section(old, "acceptance").rstrip(),
        "",
    ]
    for sub in _subtables(old, "acceptance"):
        lines += [sub.rstrip(), ""]
    lines += [
        "[calibration]",
        f'source = "GPU kernel timings: {table_path} ({table.gpu_name}, {table.date})"',
        f'table = "{table_path}"',
        "",
    ]
    return "\n".join(lines)


def write_profile(path: str | Path, text: str) -> Path:
    """Write a profile's text (atomically)."""
    dst = Path(path)
    tmp = dst.with_name(f".{dst.name}.tmp")
    tmp.write_text(text)
    tmp.replace(dst)
    return dst
