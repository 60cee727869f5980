"""What a report measured: its model, GPU and workload, read from the report's own runs or parameters.

The index (``_index.py``) shows each report's scope beside what it answers, and says why two reports
disagree where their scopes differ. Nothing here is stated by hand: a scope comes from

1. the stored runs the report rendered (its ``from_runs`` parameter, under its ``runs_dir``): each
   run's model (the simulator's target, the server's ``model_path``, ``--model-path`` of the launch
   command, or an imported file's model column), GPU (the GPUs a real run recorded, an imported
   file's hardware column, or the simulator profile's GPU) and its levels' workload labels; else
2. the simulator profile the report's parameters name (``sim_profile`` or ``profile``), when it runs
   on the simulated engine (``host`` local, ``engine`` not given): the profile's target model and GPU
   data sheet (``data/profiles``, ``data/models``, ``data/gpus``), and the output length and prompt set
   its parameters give (else the profile's own); a report of a stored GPU timing table (parameters
   ``table`` and ``gpu``) is measured on that GPU, not simulated; else
3. nothing: a report that measures no model (reading SGLang source, checking variant files).
"""

from __future__ import annotations

import ast
import dataclasses
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench import paths

__all__ = ["ReportScope", "report_parameters", "report_scope", "scope_differences"]


@dataclasses.dataclass(frozen=True)
class ReportScope:
    """A report's model, GPU and workload, each as plain words (``""``: the report names none).

    Attributes:
        model: the target model(s), e.g. ``"meta-llama/Llama-3.3-70B-Instruct"``.
        gpu: the GPU(s), e.g. ``"8x NVIDIA H100 NVL 94 GB"``.
        workload: the workload(s), e.g. ``"prompts=default out=256"``.
        simulated: True when the figures come from the simulator (its GPU is a data sheet, not a card).
        source: where the scope was read: ``"runs"``, ``"profile <name>"`` or ``""``.
    """

    model: str = ""
    gpu: str = ""
    workload: str = ""
    simulated: bool = False
    source: str = ""

    @property
    def measured(self) -> bool:
        """True when the report names a model, a GPU or a workload."""
        return bool(self.model or self.gpu or self.workload)


def report_parameters(workbench_meta: Mapping[str, Any]) -> dict[str, Any]:
    """A report's effective parameters from its executed notebook's ``metadata["workbench"]``: those given,
    over the declared defaults (stored as the cell's source text, read as Python literals; one that is not a
    literal is left out)."""
    out: dict[str, Any] = {}
    for name, text in (workbench_meta.get("defaults") or {}).items():
        try:
            out[name] = ast.literal_eval(text) if isinstance(text, str) else text
        except (ValueError, SyntaxError):
            continue
    out.update(workbench_meta.get("parameters") or {})
    return out


def _joined(values: Iterable[Any]) -> str:
    return "; ".join(dict.fromkeys(str(v) for v in values if v not in (None, "")))


def _toml(folder: str, name: str) -> dict[str, Any]:
    path = paths.resolve(Path("data") / folder / f"{name}.toml")
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _gpu_words(name: str, count: Any = None) -> str:
    """``"8x NVIDIA H100 NVL 94 GB"`` from a GPU data sheet's name (its description's first clause)."""
    description = str(_toml("gpus", name).get("description") or name)
    words = description.split(" (")[0].split(",")[0].strip()
    return f"{count}x {words}" if isinstance(count, int) and count > 1 else words


def _profile_scope(profile: str, params: Mapping[str, Any]) -> ReportScope:
    data = _toml("profiles", profile)
    deployment, workload = data.get("deployment") or {}, data.get("workload") or {}
    if not deployment:
        return ReportScope()
    target = str(deployment.get("target") or "")
    model = str(_toml("models", target).get("name") or target) if target else ""
    if params.get("model_path"):
        model = str(params["model_path"])
    gpu = _gpu_words(str(deployment.get("gpu")), deployment.get("gpus")) if deployment.get("gpu") else ""
    out_len = params.get("max_new_tokens") or workload.get("max_new_tokens")
    prompts = params.get("prompt_set") or workload.get("prompt_set")
    words = " ".join(
        part for part in (f"prompts={prompts}" if prompts else "", f"out={out_len}" if out_len else "") if part
    )
    return ReportScope(model=model, gpu=gpu, workload=words, simulated=True, source=f"profile {profile}")


def _launch_model(manifest: Mapping[str, Any]) -> str | None:
    command = manifest.get("launch_command")
    tokens = command.split() if isinstance(command, str) else [str(t) for t in command or []]
    for flag, value in zip(tokens, tokens[1:]):
        if flag == "--model-path":
            return value
    return next((t.split("=", 1)[1] for t in tokens if t.startswith("--model-path=")), None)


def _first(levels: Any, column: str) -> list[Any]:
    if column not in levels:
        return []
    return list(dict.fromkeys(levels[column].dropna()))


def _runs_scope(runs: Sequence[Any], runs_dir: Any) -> ReportScope:
    from workbench.errors import WorkbenchError
    from workbench.store import load_run, load_runs, stored_runs

    try:
        found = stored_runs(list(runs), runs_dir=runs_dir)
        manifests = [load_run(p).manifest for p in found]
        _, levels = load_runs(found)
    except WorkbenchError:  # runs moved or deleted since: the index still lists the report
        return ReportScope()
    models: list[Any] = []
    gpus: dict[str, list[str]] = {}  # GPU -> the variants that ran on it
    simulated = False
    for m in manifests:
        sim = m.get("simulation") or {}
        info = m.get("server_info") or {}
        models.append(sim.get("target_model") or info.get("model_path") or _launch_model(m))
        ran_on = [g.get("name") for g in m.get("gpus") or [] if isinstance(g, Mapping)]
        if sim.get("profile"):
            simulated = True
            deployment = _toml("profiles", str(sim["profile"])).get("deployment") or {}
            if deployment.get("gpu"):
                ran_on.append(_gpu_words(str(deployment["gpu"]), deployment.get("gpus")))
        for gpu in dict.fromkeys(str(g) for g in ran_on if g):
            gpus.setdefault(gpu, []).append(str(m.get("variant")))
    models.extend(_first(levels, "inferencex_model"))
    for hw in _first(levels, "inferencex_hw"):
        gpus.setdefault(str(hw), [])
    simulated = simulated or any(bool(x) for x in _first(levels, "simulated"))
    workloads = _first(levels, "workload")
    return ReportScope(
        model=_joined(models), gpu=_gpus_text(gpus), workload=_joined(workloads), simulated=simulated, source="runs"
    )


def _gpus_text(gpus: Mapping[str, Sequence[str]]) -> str:
    """One GPU as its name; several, each with the variants whose runs used it (``"NVIDIA H200 (real-baseline,
    real-eagle3-chain); NVIDIA H100 80GB HBM3 (real-eagle3-adaptive-tiers)"``), so runs on two cards never read as
    one."""
    if len(gpus) < 2:
        return _joined(gpus)
    return "; ".join(f"{gpu} ({', '.join(dict.fromkeys(v))})" if v else gpu for gpu, v in gpus.items())


def report_scope(params: Mapping[str, Any]) -> ReportScope:
    """The scope of one report from its effective parameters (:func:`report_parameters`): the runs it rendered,
    else the simulator profile it ran, else none (the module docstring gives the order)."""
    runs = params.get("from_runs")
    if runs:
        scope = _runs_scope(runs if isinstance(runs, (list, tuple)) else [runs], params.get("runs_dir"))
        if scope.measured:
            return scope
    profile = params.get("sim_profile") or params.get("profile")
    on_simulator = params.get("host") in (None, "local") and params.get("engine") is None
    if isinstance(profile, str) and profile and on_simulator:
        scope = _profile_scope(profile, params)
        if isinstance(params.get("table"), str) and isinstance(params.get("gpu"), str):  # a stored timing table:
            return dataclasses.replace(
                scope,
                gpu=_gpu_words(params["gpu"]),
                simulated=False,  # timed on that GPU
                source=f"timing table {Path(params['table']).name}",
            )
        return scope
    return ReportScope()


def scope_differences(scopes: Mapping[str, ReportScope]) -> list[str]:
    """What the reports' scopes differ in, one phrase per field that differs among the reports that measure:
    ``"model (meta-llama/Llama-3.3-70B-Instruct: spec_vs_baseline, what_if; meta-llama/Llama-3.1-8B-Instruct:
    calibration)"``. Empty when they agree (or fewer than two measure)."""
    measured = {name: s for name, s in scopes.items() if s.measured}
    out = []
    for field, words in (("model", "model"), ("gpu", "GPU"), ("workload", "workload")):
        groups: dict[str, list[str]] = {}
        for name, scope in measured.items():
            value = getattr(scope, field)
            if value:
                groups.setdefault(value, []).append(name)
        if len(groups) > 1:
            out.append(
                f"{words} (" + "; ".join(f"{value}: {', '.join(names)}" for value, names in groups.items()) + ")"
            )
    return out
