"""Entry points for the investigation notebooks: one call per notebook cell.

Plain keyword arguments, no global state. ``benchmark_variants`` runs the whole
launch -> ready -> sweep -> stop cycle per variant (servers are context-managed, so
a failing or interrupted cell stops what it started; measured levels are already
on disk); ``load_study`` turns run directories into a :class:`~workbench._study.Study`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from workbench import paths
from workbench.bench import DEFAULT_CONCURRENCY_LEVELS, SweepPlan
from workbench.bench import start_host_sweep
from workbench.bench import run_sweep
from workbench.engines import Engine, resolve_engine
from workbench.errors import BenchmarkError, ConfigError
from workbench.hosts import is_local
from workbench.servers import ServerHandle
from workbench.variants import Variant, load_variant
from workbench.store import load_run, load_runs, new_run
from workbench._study import Study
from workbench.variants import LOG_LINES, prepare_launch

if TYPE_CHECKING:
    import pandas as pd


def setup_notebook() -> None:
    """Render altair charts offline (SVG for exported HTML, vega-lite JSON for JupyterLab); show table text in full."""
    import pandas as pd

    from workbench.charts import enable_offline_renderer

    enable_offline_renderer()
    pd.set_option("display.max_colwidth", None)  # crossover descriptions and findings in full


def benchmark_variant(
    variant: str | Path | Variant,
    *,
    host: str = "local",
    engine: str | Engine | None = None,
    client: Literal["host", "local"] | None = None,
    concurrency_levels: Sequence[int] = DEFAULT_CONCURRENCY_LEVELS,
    requests_per_level: int | None = None,
    max_new_tokens: int = 256,
    prompt_set: str | Path = "default",
    seed: int = 0,
    sim_profile: str = "seed-pcie-8gpu",
    time_scale: float | None = None,
    warmup_requests: int = 1,
    unique_prompts: bool | None = None,
    runs_dir: str | Path = "data/runs",
    progress: bool = True,
) -> Path:
    """Launch one variant, sweep the concurrency levels against it, stop it.

    Args:
        variant: a variant name in ``data/variants/``, a variant file, or a :class:`Variant`.
        host: ``"local"`` or an ssh config alias.
        engine: ``"sim"``, ``"sglang"`` or an :class:`~workbench.engines.Engine`; default:
            sim on this machine, sglang elsewhere (:func:`workbench.engines.resolve_engine`).
        client: where the load generator runs. ``"host"``: on the server's host, in the
            server's Python (it needs aiohttp, which SGLang's environment has), against
            the host's 127.0.0.1, results pulled back (:mod:`workbench.bench._onhost`), so
            the network between here and the host stays out of TTFT and ITL. ``"local"``:
            in this process, through the SSH tunnel. Default: ``"host"`` on an SSH host,
            ``"local"`` on the local host (where both measure the same). The manifest's
            ``client_location`` says which: ``"host:<alias>"``, ``"local (tunnel)"`` or ``"local"``.
        concurrency_levels: closed-loop levels (requests in flight); default
            :data:`workbench.bench.DEFAULT_CONCURRENCY_LEVELS` (1 to 64).
        requests_per_level: requests per level; None:
            :func:`workbench.bench.default_requests_per_level`, ``max(16, 2 * concurrency)``.
        max_new_tokens: output tokens per request (ignore_eos on).
        prompt_set: prompt set name (``data/prompts/<name>.jsonl``) or path.
        seed: seeds the prompt order and the simulator's acceptance sampling.
        sim_profile: simulator profile (sim engine only).
        time_scale: simulated seconds per wall second (sim engine only; 1 = real time);
            None: the engine's default, :data:`~workbench.engines.DEFAULT_SIM_TIME_SCALE`
            (2.0) on the simulator, real time on a real engine. Its fidelity at 2x and 4x
            is in docs/PERFORMANCE.md.
        warmup_requests: requests before the first level, not measured.
        unique_prompts: start every request's text with a unique tag so repeated
            prompts never hit the radix (prefix) cache; None: the engine's default, on
            for a real engine, off for the simulator (which models no prefix cache, so
            the tag would only add a few prompt tokens).
        runs_dir: runs root (relative paths are under the project root).
        progress: show a progress bar.

    Returns:
        The run directory (``<runs_dir>/<run_id>``), complete or marked failed. Its
        manifest records the sweep's ``plan`` (:meth:`SweepPlan.to_json
        <workbench.bench.SweepPlan.to_json>`, prompt ids for texts), ``provenance``
        (SGLang version, base commit, dirty state, patch sha256 and text, launch command and env), ``sim_stand_in``, the
        pre-flight findings and the effective settings the server reports with their
        findings (:func:`workbench.variants.prepare_launch`).

    Raises:
        ConfigError: bad parameters (an unknown engine, a time_scale other than 1 on a
            real engine); on the real engine, pre-flight errors or a patch that does not
            apply (nothing is launched). ServerStartError: the server never
            became ready.
        BenchmarkError: the sweep could not measure. The run directory keeps every
        level measured before an error.
    """
    v = variant if isinstance(variant, Variant) else load_variant(variant)
    eng = resolve_engine(host, engine)
    time_scale = eng.time_scale(time_scale)  # the engine's default; ConfigError for a value it cannot run at
    if client not in (None, "host", "local"):
        raise ConfigError(f"client must be 'host' or 'local', got {client!r}")
    where = client or ("local" if is_local(host) else "host")
    sim_options = eng.launch_options(profile=sim_profile, time_scale=time_scale, seed=seed)
    # The sweep's one validated value, built before anything is launched.
    plan = SweepPlan.build(concurrency_levels=concurrency_levels, requests_per_level=requests_per_level,
                           max_new_tokens=max_new_tokens, prompt_set=prompt_set, seed=seed, time_scale=time_scale,
                           warmup_requests=warmup_requests,
                           unique_prompts=unique_prompts if unique_prompts is not None else eng.unique_prompts)
    # Pre-flight checks and the (patched) tree first; the tree is removed after the server stops.
    with prepare_launch(v, host=host, engine=eng) as prep, \
            ServerHandle.start(prep.launch_variant, host=host, engine=eng, sim_options=sim_options) as server:
        info = server.server_info()
        run = new_run(
            v.name,
            engine=eng,
            launch_command=server.command,
            host=host,
            client_location=_client_location(server, where),
            server_info=info,
            plan=plan,
            time_scale=time_scale,
            extra={
                "variant_definition": {"path": str(v.path) if v.path else None, "flags": v.flags, "env": v.env,
                                       "model_path": v.model_path, "draft_model_path": v.draft_model_path,
                                       "base": v.base, "sglang_version": v.sglang_version,
                                       "patches": [str(p) for p in v.patches], "sim_policy": v.sim_policy},
                "simulation": info.get("simulation"),
                "server_log": server.process.log_path,
                "server_process": {"pid": server.process.pid, "pgid": server.process.pgid,
                                   "start_time": server.process.start_time, "port": server.port},
                # provenance (version, base commit, dirty, patch sha256 + text, launch command),
                # sim_stand_in, pre-flight findings, effective settings and their findings
                **prep.manifest_extra(server_info=info, log_text=server.logs_tail(LOG_LINES),
                                      launch_command=server.command),
            },
            root=paths.resolve(runs_dir),
        )
        def on_level(level: Any) -> None:
            run.save_level(prep.label_level(level))
            if len(level.requests) and level.requests["error"].notna().all():
                alive = "still running" if server.alive else "no longer running"
                raise BenchmarkError(
                    f"Every request of a level failed against {v.name!r} (server {alive}); first error: "
                    f"{level.requests['error'].iloc[0]}. Measured levels are kept in {run.path}. "
                    f"Server log tail:\n{server.logs_tail(30)}"
                )

        with run:
            if where == "host":
                with start_host_sweep(server.host, server.port, plan, python=server.python) as sweep:
                    run.annotate(client={"python": sweep.python, "pid": sweep.process.pid,
                                         "results_path": sweep.results_path, "log_path": sweep.log_path})
                    sweep.follow(on_level=on_level, progress=progress)
            else:
                run_sweep(server.url, plan, progress=progress, on_level=on_level)
            run.finish(server_info=server.server_info())
    return run.path


def _client_location(server: ServerHandle, where: str) -> str:
    """The manifest's ``client_location``: ``"host:<alias>"``, ``"local (tunnel)"`` or ``"local"``."""
    if where == "host":
        return f"host:{server.host.name}"
    return "local" if is_local(server.host) else "local (tunnel)"


def benchmark_variants(variants: Sequence[str | Path | Variant], **kwargs: Any) -> list[Path]:
    """:func:`benchmark_variant` for each variant in turn (same keyword arguments).

    Every variant is loaded before the first is launched, so a misspelt name fails
    at once instead of after the variants before it were benchmarked.

    Returns:
        The run directories, in the order of ``variants``.

    Raises:
        ConfigError: ``variants`` is empty or names an unknown variant or bad file.
    """
    if not variants:
        raise ConfigError("variants is empty; name at least a baseline and one speculative variant")
    loaded = [v if isinstance(v, Variant) else load_variant(v) for v in variants]
    return [benchmark_variant(v, **kwargs) for v in loaded]


def load_study(runs: Sequence[str | Path], *, baseline: str = "baseline") -> Study:
    """A :class:`Study` over run directories (or run ids under the default runs root).

    Rows of runs whose figures come from a simulator stand-in for a patch carry its
    label in ``sim_stand_in`` (None elsewhere), taken from each run's manifest.
    """
    requests, levels = load_runs(runs)
    manifests = [load_run(r).manifest for r in runs]
    stand_in = {m.get("run_id"): m.get("sim_stand_in") for m in manifests}
    for frame in (requests, levels):
        if "run_id" in frame:
            frame["sim_stand_in"] = frame["run_id"].map(stand_in).astype("object")
    return Study(levels=levels, requests=requests, manifests=manifests, baseline=baseline)


def show_ratio_charts(study: Study) -> None:
    """Display the spec/baseline ratio chart of every speculative variant."""
    from IPython.display import display

    for stem, chart in study.charts().items():
        if stem.startswith("ratio_"):
            display(chart)


def show_markdown(text: str) -> None:
    """Display markdown text in the notebook."""
    from IPython.display import Markdown, display

    display(Markdown(text))


def save_study_charts(study: Study, report_dir: str | Path) -> pd.DataFrame:
    """Save every chart as PNG and SVG under ``report_dir`` (relative: to the project root).

    Returns:
        One row per chart: ``chart``, ``png`` and ``svg`` file names, and ``folder``.
    """
    import pandas as pd

    folder = paths.resolve(report_dir)
    saved = study.save_charts(folder)
    return pd.DataFrame(
        [{"chart": stem, "png": files["png"].name, "svg": files["svg"].name, "folder": str(folder)}
         for stem, files in saved.items()]
    )
