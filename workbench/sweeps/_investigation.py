"""Benchmarking variants from a notebook cell or ``workbench bench``: one call per cell.

Plain keyword arguments, no global state. ``benchmark_variants`` runs the whole
launch -> ready -> sweep -> stop cycle per variant (servers are context-managed, so
a failing or interrupted cell stops what it started; measured levels are already
on disk). Reading the runs back is :func:`workbench.studies.load_study`.

The entries are here; their jobs are in modules of their own: validating a sweep before anything is
launched (``_sweep_prep``), one server's pass (``_sweep_pass``) and its level pipeline
(``_sweep_levels``), what a sweep tells its caller (``_sweep_outcomes``), the fleet pass
(``_fleet_pass``), and the scheduling of passes on one host (:class:`_PassScheduler`, below).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import inspect
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from workbench.bench import DEFAULT_CONCURRENCY_LEVELS, DEFAULT_MAX_NEW_TOKENS
from workbench.engines import Engine
from workbench.errors import ConfigError
from workbench.sweeps._fleet_connect import Fleet
from workbench.sweeps._fleet_pass import benchmark_on_fleet
from workbench.sweeps._options import SweepOptions
from workbench.sweeps._sweep_outcomes import PassFailed, SweepFailure, SweepResume, failure_of
from workbench.sweeps._sweep_pass import run_pass
from workbench.sweeps._sweep_prep import (
    VariantSweep,
    check_fleet_arguments,
    one_node_only,
    parallel_passes,
    prepare_sweep,
)
from workbench.variants import TEMPLATE_PARAMETERS, Variant, expand_grid, parameters_given

__all__ = ["SweepFailure", "SweepResume", "benchmark_variant", "benchmark_variants"]


def _options(variant: str | Path | Variant, kwargs: Mapping[str, Any]) -> SweepOptions:
    """:func:`benchmark_variant`'s options for ``variant`` and ``kwargs``, its defaults filled in.

    Raises:
        ConfigError: a keyword :func:`benchmark_variant` does not take.
    """
    try:
        bound = inspect.signature(benchmark_variant).bind(variant, **kwargs)
    except TypeError as exc:
        raise ConfigError(f"{exc}; see help(workbench.benchmark_variant) for the parameters") from None
    bound.apply_defaults()
    return SweepOptions(**bound.arguments)


def benchmark_variant(
    variant: str | Path | Variant,
    *,
    host: str = "local",
    engine: str | Engine | None = None,
    client: Literal["host", "local"] | None = None,
    concurrency_levels: Sequence[int] | None = DEFAULT_CONCURRENCY_LEVELS,
    requests_per_level: int | None = None,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    prompt_set: str | Path = "default",
    seed: int = 0,
    request_rates: Sequence[float] | None = None,
    max_concurrency: int | None = None,
    sim_profile: str = "seed-pcie-8gpu",
    time_scale: float | None = None,
    warmup_requests: int = 1,
    unique_prompts: bool | None = None,
    repeats: int | None = None,
    label: str | None = None,
    fresh: bool = False,
    runs_dir: str | Path | None = None,
    progress: bool | None = None,
    model_path: str | None = None,
    draft_model_path: str | None = None,
    tp_size: int | None = None,
    gpus: str | Sequence[int] | None = None,
    load: Mapping[str, Any] | None = None,
) -> Path:
    """Launch one variant, sweep the concurrency levels (every repeat) against it, stop it.

    A sweep's identity is its plan, the variant, engine (for the simulator, also a hash of
    its code and profile), host, where the load generator runs and ``label``: running the
    same sweep again reopens its run and measures only the (level, repeat) units not stored
    yet, so a sweep stopped by an error, a full disk or ``kill -9`` resumes where it stopped
    (and stops a server the killed run left). ``fresh=True`` starts a new run instead.

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
            :data:`workbench.bench.DEFAULT_CONCURRENCY_LEVELS` (1 to 64; none with ``request_rates``).
        requests_per_level: requests per level; None:
            :func:`workbench.bench.default_requests_per_level`, ``max(16, 2 * concurrency)``.
        max_new_tokens: output tokens per request (ignore_eos on).
        prompt_set: prompt set name (``data/prompts/<name>.jsonl``) or path.
        seed: seeds the prompt order and the simulator's acceptance sampling (repeat
            ``r`` uses :func:`workbench.bench.repeat_seed`\\ ``(seed, r)``).
        request_rates: open loop instead: one level per rate (engine-time requests/s, Poisson
            arrivals); a study then compares the levels on the request rate (:attr:`Study.load`).
            Not with ``concurrency_levels``. ``inf`` (all at once: offline throughput, no place on
            that axis) is refused, as is a rate too low for its level to end within the
            plan's bound (:class:`workbench.bench.SweepPlan` names it in its message).
        max_concurrency: open loop only: a cap on requests in flight (None: none).
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
        repeats: how many times each level is measured, each with its own seed and prompt
            order; None: the engine's :attr:`~workbench.engines.Engine.default_repeats`
            (3 on a real engine, 1 on the simulator: ``workbench.engines._sim.DEFAULT_SIM_REPEATS``).
        label: your name for the sweep (part of its identity: another label is another run).
        fresh: start a new run even if this sweep was run before (the old run is kept).
        runs_dir: the runs folder; None: ``$WORKBENCH_RUNS_DIR`` or ``data/runs``
            (:func:`workbench.store.runs_root`; relative paths are under the project root).
        progress: show a progress bar (tqdm.auto: a widget in JupyterLab, text elsewhere)
            with the unit being measured and the last level's output tok/s; None (default):
            a bar in a Jupyter kernel or when stderr is a terminal, none in a notebook run by
            ``workbench report`` (whose terminal gets one line per level instead,
            :func:`workbench.report.report_progress`) nor when stderr is a file or a pipe
            (:func:`workbench.report.progress_bars`).
        model_path, draft_model_path, tp_size, gpus: template parameters replacing the
            variant file's model, draft model (speculative variants only), ``tp-size`` and GPUs
            (``CUDA_VISIBLE_DEVICES``, e.g. ``"0,1"``); None keeps the file's
            (:func:`workbench.variants.apply_parameters`). They are part of the sweep's identity.
        load: the plan's load fields (:data:`workbench.bench.SweepPlan` ``LOAD_DEFAULTS``):
            ``backend`` (``"generate"``, ``"completions"``, ``"chat"``), ``model``, ``temperature``,
            ``ignore_eos``, ``input_len`` (random-token prompts), ``random_vocab_size``, ``sweep``
            and ``sweep_values`` (a dimension swept besides the concurrency), e.g.
            ``{"sweep": "input_len", "sweep_values": [128, 2048]}``. Part of the sweep's identity.

    Returns:
        The run directory (``<runs_dir>/<run_id>``), complete or marked failed. Its
        manifest records the sweep's ``plan`` (:meth:`SweepPlan.to_json
        <workbench.bench.SweepPlan.to_json>`, prompt ids for texts), its ``identity`` and
        ``label``, the units stored (``units_completed``), ``provenance`` (SGLang version,
        base commit, dirty state, patch sha256 and text, launch command and env),
        ``sim_stand_in``, the pre-flight findings and the effective settings the server
        reports with their findings (:func:`workbench.variants.prepare_launch`).

    Raises:
        ConfigError: bad parameters (an unknown engine, a time_scale other than 1 on a
            real engine), another sweep writing the same run now; on the real engine,
            pre-flight errors or a patch that does not apply (nothing is launched).
        ServerStartError: the server never became ready.
        BenchmarkError: the sweep could not measure. The run directory keeps every
            level measured before an error.
        DiskFullError: no room to store a level; earlier levels are intact.
    """
    sweep = prepare_sweep(
        SweepOptions(
            variant=variant,
            host=host,
            engine=engine,
            client=client,
            concurrency_levels=concurrency_levels,
            requests_per_level=requests_per_level,
            max_new_tokens=max_new_tokens,
            prompt_set=prompt_set,
            seed=seed,
            request_rates=request_rates,
            max_concurrency=max_concurrency,
            sim_profile=sim_profile,
            time_scale=time_scale,
            warmup_requests=warmup_requests,
            unique_prompts=unique_prompts,
            repeats=repeats,
            label=label,
            fresh=fresh,
            runs_dir=runs_dir,
            progress=progress,
            model_path=model_path,
            draft_model_path=draft_model_path,
            tp_size=tp_size,
            gpus=gpus,
            load=load,
        )
    )
    try:
        one_node_only([sweep])
        return run_pass(sweep, repeats=None, fresh=fresh)
    except PassFailed as failed:
        raise failed.error


def benchmark_variants(
    variants: Sequence[str | Path | Variant],
    *,
    fresh: bool = False,
    on_failure: Callable[[SweepFailure], None] | None = None,
    grid: str | Path | Mapping[str, Any] | None = None,
    on_resume: Callable[[SweepResume], None] | None = None,
    parallel: int | None = None,
    fleet: str | Fleet | None = None,
    **kwargs: Any,
) -> list[Path]:
    """:func:`benchmark_variant` for each variant, repeat by repeat, alternating their order.

    Repeat 0 runs the variants in the given order, repeat 1 in reverse, repeat 2 in the
    given order again, ...: one server per (repeat, variant), so drift over time (a
    warming host, another tenant) does not favour whichever variant always runs first.
    Every variant and parameter is validated before the first server is launched.

    With ``parallel`` > 1 (the simulated engine on this machine only) up to that many of a
    repeat's passes run at once, each with its own server and its own load generator (a
    thread of this process): the repeats still run one after the other, and a level whose
    server could not keep to its schedule because the CPU was busy says so in its
    ``sim_behind_schedule_wall_s`` (docs/PERFORMANCE.md gives the fidelity measured so).
    With ``parallel`` at least the number of variants, each variant runs its repeats one after
    the other in its own thread, every variant at once: a variant's next repeat starts when its
    last one ends, not when the slowest variant's does.

    A server that fails (never ready, or dead mid-sweep) is reported with its log's
    classification and tail (a :class:`UserWarning`, and ``on_failure``), its run keeps
    what was measured and is marked failed, and the sweep goes on with the next variant
    (that variant's later repeats are skipped; running the same sweep again resumes it).

    Args:
        variants: names, files or :class:`Variant` objects.
        fresh: start new runs for every variant (see :func:`benchmark_variant`).
        on_failure: called with each :class:`SweepFailure`, as it happens.
        on_resume: called once per variant, when its run is opened (before its first server
            starts), with a :class:`SweepResume`: how many of the plan's units the run already
            holds (reused, not measured again) and how many are left.
        grid: a grid of speculative settings (a name in ``data/grids/``, a grid file, or a
            mapping with ``template``, ``topk``, ``num_steps``, ``num_draft_tokens`` and an
            optional ``name``; :func:`workbench.variants.load_grid`): its points are measured
            after ``variants``, each checked first against the SGLang it would run
            (:func:`workbench.variants.expand_grid`, with the template parameters in
            ``kwargs``); refused points are named with the reason in a :class:`UserWarning`.
        parallel: passes measured at once within a repeat (default None: 1, one after the
            other). Above 1 only on the simulated engine on this machine: on a GPU host the
            servers would share its GPUs.
        fleet: run the sweep's (variant, repeat) units as Ray tasks on this cluster (an address
            such as ``"10.0.0.5:6379"`` or ``"auto"``, or a :class:`workbench.sweeps.Fleet`),
            as many at once as its GPU slots allow (each unit takes the variant's ``tp_size x
            dp_size``), instead of one server after another here; ``host`` and ``client`` then
            stay unset. Same plan, identity (plus "on a fleet") and resume rules; a failed unit
            does not stop the variant's other units. Needs the ``fleet`` extra (Ray); docs/FLEET.md.
        kwargs: :func:`benchmark_variant`'s other keyword arguments.

    Returns:
        The run directories, in the order of ``variants`` then the grid's accepted points
        (failed ones included).

    Raises:
        ConfigError: no variants and no grid, an unknown variant or bad file, a variant
            named twice, a grid whose every point is refused, an invalid parameter, or
            ``parallel`` > 1 on a real engine or another host (or with ``fleet``).
        HostError: the host or the runs folder cannot be used (DiskFullError: no room); on a
            fleet, the cluster cannot be reached.
    """
    if fleet is not None:
        check_fleet_arguments(kwargs)
    chosen: list[str | Path | Variant] = list(variants or [])
    if grid is not None:
        params = {k: kwargs.get(k) for k in TEMPLATE_PARAMETERS}
        expansion = expand_grid(
            grid, parameters=parameters_given(params), host=kwargs.get("host"), engine=kwargs.get("engine")
        )
        if len(expansion.refused):
            warnings.warn(
                f"grid {expansion.grid.name!r}: {len(expansion.refused)} of {len(expansion.table)} points "
                "refused by the pre-flight checks (not launched):\n" + "\n".join(expansion.refusal_lines()),
                stacklevel=2,
            )
        chosen += expansion.variants
    if not chosen:
        raise ConfigError("variants is empty; name at least a baseline and one speculative variant (or a grid)")
    sweeps = [prepare_sweep(_options(v, kwargs)) for v in chosen]
    names = [s.variant.name for s in sweeps]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"variant(s) {twice} named twice (runs and charts are keyed by name); name each once")
    if fleet is not None:
        if parallel not in (None, 1):
            raise ConfigError(
                f"parallel={parallel} and fleet cannot be combined: on a fleet as many units run at once "
                "as its GPU slots allow; leave parallel unset"
            )
        return benchmark_on_fleet(
            sweeps, fleet, fresh=fresh, on_failure=on_failure, on_resume=on_resume, progress=sweeps[0].progress
        )
    one_node_only(sweeps)
    return _PassScheduler(
        sweeps, fresh=fresh, on_failure=on_failure, on_resume=on_resume, at_once=parallel_passes(parallel, sweeps)
    ).run()


@dataclasses.dataclass(frozen=True)
class _PassOutcome:
    """One pass of :class:`_PassScheduler`: variant ``i``'s run (``path``), or how its server failed."""

    i: int
    path: Path | None
    failed: PassFailed | None


class _PassScheduler:
    """Runs :func:`benchmark_variants`' passes on one host and keeps what each variant's passes left.

    A pass is one (variant, repeat) with a server of its own (:func:`~workbench.sweeps._sweep_pass.run_pass`).
    With ``at_once`` 1 the passes run one after the other, repeat by repeat, the variants' order alternating
    (given, reversed, given, ...); with ``at_once`` above 1, up to that many of a repeat's passes run at once;
    with ``at_once`` at least the number of variants, each variant runs its repeats one after the other in a
    thread of its own, every variant at once (:meth:`_chains`). A variant whose server failed is reported
    (:class:`UserWarning`, ``on_failure``) and its later repeats are skipped.

    Attributes:
        paths: each variant's run directory, by its index in ``sweeps`` (once a pass of it has ended).
        failed: each failed variant's :class:`SweepFailure`, by index.
    """

    def __init__(
        self,
        sweeps: Sequence[VariantSweep],
        *,
        fresh: bool,
        on_failure: Callable[[SweepFailure], None] | None,
        on_resume: Callable[[SweepResume], None] | None,
        at_once: int,
    ) -> None:
        self.sweeps, self.fresh, self.at_once = sweeps, fresh, at_once
        self.on_failure, self.on_resume = on_failure, on_resume
        self.paths: dict[int, Path] = {}
        self.failed: dict[int, SweepFailure] = {}
        self._opened: set[int] = set()  # variants whose run a pass has opened (fresh and on_resume: first pass only)
        self._lock = threading.Lock()  # the chains report from their own threads

    def run(self) -> list[Path]:
        """Run every pass; the run directories in the order of ``sweeps`` (failed ones included)."""
        if self.at_once > 1 and self.at_once >= len(self.sweeps):
            self._chains()
        else:
            self._by_repeat()
        return [self.paths[i] for i in range(len(self.sweeps))]

    def _pass(self, i: int, repeat: int) -> _PassOutcome:
        """Variant ``i``'s pass of ``repeat`` (a variant's passes never run at once: no lock needed here)."""
        first = i not in self._opened
        try:
            return _PassOutcome(
                i,
                run_pass(
                    self.sweeps[i],
                    repeats=[repeat],
                    fresh=self.fresh and first,
                    on_open=self.on_resume if first else None,
                ),
                None,
            )
        except PassFailed as exc:
            return _PassOutcome(i, None, exc)

    def _settle(self, outcome: _PassOutcome) -> None:
        """Keep a pass's run, or report its server's failure."""
        i = outcome.i
        with self._lock:
            if outcome.failed is None:
                assert outcome.path is not None  # a pass that did not fail returns its run
                self.paths[i] = outcome.path
            else:
                failure = failure_of(self.sweeps[i].variant.name, outcome.failed.run, outcome.failed.error)
                self.failed[i] = failure
                self.paths[i] = failure.run
                warnings.warn(
                    f"{failure.variant}: server failed ({failure.kind}); going on with the next variant. "
                    f"{failure.message}",
                    stacklevel=5,
                )
                if self.on_failure is not None:
                    self.on_failure(failure)
            self._opened.add(i)

    def _chains(self) -> None:
        """A slot for every variant: each variant's repeats one after the other in its own thread, all variants
        at once, so no variant waits at the end of a repeat for the slowest one (the repeats' server starts still
        take turns, ``_sweep_pass._STARTING``). Every pass has the same company for most of its time, which is
        what the alternating order of :meth:`_by_repeat` gives one pass after another."""

        def chain(i: int) -> None:
            for repeat in range(self.sweeps[0].plan.repeats):
                self._settle(self._pass(i, repeat))
                if i in self.failed:
                    return  # that variant's later repeats are skipped, as in _by_repeat

        with concurrent.futures.ThreadPoolExecutor(max_workers=len(self.sweeps)) as pool:
            list(pool.map(chain, range(len(self.sweeps))))

    def _by_repeat(self) -> None:
        """Repeat by repeat, the variants' order alternating; up to ``at_once`` of a repeat's passes at once."""
        for repeat in range(self.sweeps[0].plan.repeats):
            order = list(range(len(self.sweeps))) if repeat % 2 == 0 else list(reversed(range(len(self.sweeps))))
            todo = [i for i in order if i not in self.failed]
            outcomes: Iterable[_PassOutcome]
            if self.at_once > 1:
                with concurrent.futures.ThreadPoolExecutor(max_workers=self.at_once) as pool:
                    outcomes = list(pool.map(lambda i, r=repeat: self._pass(i, r), todo))
            else:
                outcomes = (self._pass(i, repeat) for i in todo)  # lazily: one pass after the other
            for outcome in outcomes:
                self._settle(outcome)
