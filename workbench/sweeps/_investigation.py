"""Benchmarking variants from a notebook cell or ``workbench bench``: one call per cell.

Plain keyword arguments, no global state. ``benchmark_variants`` runs the whole
launch -> ready -> sweep -> stop cycle per variant (servers are context-managed, so
a failing or interrupted cell stops what it started; measured levels are already
on disk). Reading the runs back is :func:`workbench.studies.load_study`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import inspect
import math
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from workbench import paths
from workbench.bench import (DEFAULT_CONCURRENCY_LEVELS, DEFAULT_MAX_NEW_TOKENS, SweepPlan, add_log_series,
                             add_request_columns, run_sweep, start_host_sweep)
from workbench.engines import Engine, resolve_engine
from workbench.errors import BenchmarkError, ConfigError, HostError, ServerError, WorkbenchError
from workbench.hosts import is_local
from workbench.names import check_name
from workbench.report import progress_bars, report_progress, reporting_progress
from workbench.servers import ServerHandle, classify_failure, server_died
from workbench.store import ResumedRun, load_run, open_run, sweep_identity, writable_runs_root
from workbench.sweeps._fleet import Fleet, FleetUnit, Placement, Prestart, UnitOutcome, connect, run_units
from workbench.sweeps._fleet_hosts import host_summary, unit_entry, unit_failure
from workbench.sweeps._fleet_multinode import rank_group
from workbench.sweeps._fleet_record import UnitRecorder, replay
from workbench.sweeps._options import SweepOptions
from workbench.variants import (LOG_LINES, TEMPLATE_PARAMETERS, Variant, apply_parameters, expand_grid, gpus_per_node, nnodes_of,
                                Finding, load_variant, parameters_given, preflight, prepare_launch)

#: Server log lines read after each level for its batch lines (a level's window is a small part of them).
LEVEL_LOG_LINES = 5000


@dataclasses.dataclass(frozen=True)
class _Sweep:
    """One variant's sweep, validated before anything is launched: what it runs and its identity."""

    variant: Variant
    engine: Engine
    host: str
    where: Literal["host", "local"]
    plan: SweepPlan
    sim_profile: str
    label: str | None
    identity: str
    root: Path
    progress: bool
    preflight: list[Finding]
    #: Called with the server's handle once it is started, before its ready wait (a multi-node unit's rank
    #: group watches rank 0 through it: workbench.sweeps._fleet_multinode); None: nothing.
    on_server: Callable[[ServerHandle], None] | None = None

    def sim_options(self, repeat: int) -> dict[str, Any] | None:
        """The engine's launch options for a server measuring ``repeat`` first (its seed)."""
        return self.engine.launch_options(profile=self.sim_profile, time_scale=float(self.plan.time_scale),
                                          seed=self.plan.seed_of(repeat))


@dataclasses.dataclass(frozen=True)
class SweepFailure:
    """A variant whose server failed (to start, or mid-sweep); the sweep went on without it.

    Attributes:
        variant: its name.
        run: its run directory (the units measured before are kept).
        kind: the failure's class from the server log (``workbench.servers`` kinds:
            ``out_of_memory``, ``cuda_graph``, ..., ``unknown``).
        message: what went wrong, with the server log's tail.
        suggestion: what to do about it (the classification's advice; '' when none).
        measured: units (level x repeat) its run holds; 0 when the server failed before the first.
        log_path: the server's log file on its host ('' when no server was started).
        log_tail: the log's last lines as read when it failed ('' when none were read).
    """

    variant: str
    run: Path
    kind: str
    message: str
    suggestion: str = ""
    measured: int = 0
    log_path: str = ""
    log_tail: str = ""

    def log_lines(self, lines: int = 20) -> list[str]:
        """The log's path and its last ``lines`` lines, for a terminal below :meth:`line` (none without a log)."""
        if not self.log_path and not self.log_tail:
            return []
        tail = self.log_tail.splitlines()[-lines:]
        head = f"server log {self.log_path or '(path not recorded)'}" + (
            f", last {len(tail)} lines:" if tail else ": empty, nothing was logged")
        return [head, *(f"  | {line}" for line in tail)]

    def line(self) -> str:
        """One line for a terminal: the variant, the failure's kind, what to do, and what its run keeps."""
        kept = (f"{self.measured} level(s) measured before it are kept in {self.run}; running the same sweep again "
                "resumes it" if self.measured else
                f"nothing was measured; its run {self.run} is marked failed (`workbench runs delete` removes it)")
        return (f"{self.variant}: the server failed ({self.kind}): {self.suggestion or 'see its log tail in the run manifest'}"
                f" ({kept})")


@dataclasses.dataclass(frozen=True)
class SweepResume:
    """What a variant's run held when :func:`benchmark_variants` opened it: the units it reuses.

    Attributes:
        variant: its name.
        run: its run directory.
        stored: (level, repeat) units already on disk, reused (0 for a new run or ``fresh``).
        total: units of the plan (levels x repeats).
        repeats: the plan's repeats.
    """

    variant: str
    run: Path
    stored: int
    total: int
    repeats: int

    def line(self) -> str:
        """``"eagle3-topk4: 5 of 7 levels already on disk (run R), measuring 2"`` (with repeats > 1 the
        counts are of (level, repeat) units: ``"... of 14 levels x repeats ..."``)."""
        what = "levels" if self.repeats == 1 else "levels x repeats"
        return (f"{self.variant}: {self.stored} of {self.total} {what} already on disk (run {self.run.name}), "
                f"measuring {self.total - self.stored}")


def _variant_definition(v: Variant) -> dict[str, Any]:
    """What a run's manifest and its sweep's identity record of the variant: :meth:`Variant.to_dict` without
    ``name`` (recorded beside it) and ``description`` (words that change no figure)."""
    return {k: value for k, value in v.to_dict().items() if k not in ("name", "description")}


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


def _prepare(options: SweepOptions) -> _Sweep:
    """Validate everything about one variant's sweep (nothing is launched).

    Args:
        options: :func:`benchmark_variant`'s arguments, all of them.
    """
    host, client, time_scale, label = options.host, options.client, options.time_scale, options.label
    sim_profile, seed = options.sim_profile, options.seed
    variant = options.variant
    v = apply_parameters(variant if isinstance(variant, Variant) else load_variant(variant),
                         **parameters_given(options.template_parameters(TEMPLATE_PARAMETERS)))
    eng = resolve_engine(host, options.engine)
    time_scale = eng.time_scale(time_scale)  # the engine's default; ConfigError for a value it cannot run at
    if client not in (None, "host", "local"):
        raise ConfigError(f"client must be 'host' or 'local', got {client!r}")
    if label is not None:
        check_name(label, what="label", fix="Pass another label (or None for none)")
    where: Literal["host", "local"] = client or ("local" if is_local(host) else "host")
    # The sweep's one validated value, built before anything is launched.
    levels = options.concurrency_levels
    if options.request_rates is not None and levels is DEFAULT_CONCURRENCY_LEVELS:
        levels = None  # the closed-loop default stands aside for an open-loop sweep
    unique_prompts, repeats = options.unique_prompts, options.repeats
    plan = SweepPlan.build(concurrency_levels=levels, request_rates=options.request_rates,
                           max_concurrency=options.max_concurrency, requests_per_level=options.requests_per_level,
                           max_new_tokens=options.max_new_tokens, prompt_set=options.prompt_set, seed=seed,
                           time_scale=time_scale, warmup_requests=options.warmup_requests,
                           unique_prompts=unique_prompts if unique_prompts is not None else eng.unique_prompts,
                           repeats=eng.default_repeats if repeats is None else repeats, **dict(options.load or {}))
    _no_offline_level(plan)
    _warn_graph_below_concurrency(v, plan)
    checked = preflight(v, host=host, engine=eng)  # every engine, the notebooks' checks; ConfigError before any run
    engine_options = eng.launch_options(profile=sim_profile, time_scale=time_scale, seed=seed)
    identity = sweep_identity({"plan": plan.to_json(prompt_texts=False), "variant": v.name,
                               "variant_definition": _variant_definition(v), "engine": eng.name, "host": str(host),
                               "engine_options": engine_options, "engine_code": _engine_code(eng, sim_profile),
                               "client": where, "label": label})
    return _Sweep(variant=v, engine=eng, host=host, where=where, plan=plan, sim_profile=sim_profile, label=label,
                  identity=identity, root=writable_runs_root(options.runs_dir),
                  progress=progress_bars(options.progress), preflight=checked)


def _no_offline_level(plan: SweepPlan) -> None:
    """Refuse an infinite request rate in a sweep, before anything is launched.

    ``inf`` sends every request of the level at once: offline throughput, which has no place on the
    request-rate axis the summary, the crossovers and the reports compare open-loop levels on
    (:func:`workbench.analysis.load_axis`), so the run it left could never be reported. The same
    measurement is a closed-loop level with every request in flight.

    Raises:
        ConfigError: naming the rates and the closed-loop level that measures the same.
    """
    rates = plan.request_rates or ()
    if any(math.isinf(rate) for rate in rates):
        count = max(plan.requests_per_level)
        raise ConfigError(
            f"request_rates {[float(r) for r in rates]}: inf (every request at once) measures offline throughput, "
            "which has no place on the request-rate axis the summary, the crossovers and the reports compare "
            "open-loop levels on, so a sweep refuses it before launching anything. Measure it as a closed-loop "
            f"level with every request in flight instead (concurrency_levels=[{count}], requests_per_level={count}; "
            f"`workbench bench --levels {count} --requests {count}`), and drop inf from the rates")


def _one_node_only(sweeps: Sequence[_Sweep]) -> None:
    """Refuse a variant spanning nodes (``nnodes`` > 1) outside a fleet: its ranks need a node each.

    Raises:
        ConfigError: naming the variant and the fix (``fleet=``).
    """
    for s in sweeps:
        nodes = nnodes_of(s.variant)
        if nodes > 1:
            raise ConfigError(f"{s.variant.name} spans {nodes} nodes (nnodes = {nodes} in its flags): run it on a "
                              "fleet (fleet='HEAD:6379', `workbench bench --fleet`), which starts a rank on each "
                              "node, or drop nnodes to run it on one host")


def _warn_graph_below_concurrency(v: Variant, plan: SweepPlan) -> None:
    """Warn (before launch) when a speculative variant's CUDA-graph batch limit is below the plan's top concurrency.

    Above ``--cuda-graph-max-bs`` (``--cuda-graph-max-bs-decode`` since SGLang 0.5.20) the
    decode steps run without CUDA graphs, eagerly: with speculation every step is a draft
    chain plus a verify, so those levels measure the eager path, not the variant's.
    """
    if not v.flags.get("speculative-algorithm") or not plan.concurrency_levels:
        return
    for flag in ("cuda-graph-max-bs-decode", "cuda-graph-max-bs"):
        limit = v.flags.get(flag)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit < max(plan.concurrency_levels):
            above = [c for c in plan.concurrency_levels if c > limit]
            warnings.warn(f"{v.name}: --{flag} {limit} is below the sweep's concurrency {above} with speculative "
                          f"decoding on: those levels decode without CUDA graphs (eager draft and verify steps), "
                          f"so they measure another regime than the levels at or below {limit}. Raise --{flag} "
                          f"to {max(plan.concurrency_levels)} in the variant, or keep the levels <= {limit}.",
                          UserWarning, stacklevel=4)
            return


def _engine_code(eng: Engine, sim_profile: str) -> str | None:
    """For a simulated engine, a hash of what computes its figures (the simulator's source and the
    profile file), so a changed model is another sweep and never resumes runs it did not produce.
    None for a real engine: its figures come from the SGLang the variant names.

    Raises:
        ConfigError: the profile names no file (a TOML path, or data/profiles/NAME.toml; the known names
            listed), before any run is opened or server started.
    """
    if not eng.simulated:
        return None
    digest = hashlib.sha256()
    folder = paths.PACKAGE_ROOT / "data" / "profiles"
    profile = Path(sim_profile) if sim_profile.endswith(".toml") else folder / f"{sim_profile}.toml"
    if not profile.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.toml")))
        raise ConfigError(f"sim_profile {sim_profile!r}: no such profile (no file {profile}); known profiles: {known}")
    for file in [*sorted((paths.PACKAGE_ROOT / "workbench" / "sim").glob("*.py")), profile]:
        digest.update(file.name.encode() + b"\0" + (file.read_bytes() if file.is_file() else b"") + b"\0")
    return digest.hexdigest()[:16]


def _stop_leftover(previous: dict[str, Any] | None, host: str) -> None:
    """Stop the server an earlier sweep of this run left running (recorded in its manifest), if it still runs:
    a killed sweep (status ``running``) or one that failed without reaching its host (a host down for longer
    than the reconnect window could not be told to stop it)."""
    if not previous or previous.get("status") not in ("running", "failed", "interrupted"):
        return  # a sweep that ended otherwise stopped its server itself
    server_id = (previous.get("server_process") or {}).get("id")
    if not server_id:
        return
    try:
        ServerHandle.attach(host, server_id, own=True, heartbeat_s=None).stop()
    except ServerError:
        pass  # not running any more (stopped by its lease, or never outlived the sweep)
    except HostError as exc:
        warnings.warn(f"Could not stop server {server_id} on {host!r} left by a killed sweep: {exc}; its "
                      "host-side lease stops it once it runs out", stacklevel=3)


def _run_pass(sweep: _Sweep, *, repeats: Sequence[int] | None, fresh: bool,
              on_open: Callable[[SweepResume], None] | None = None) -> Path:
    """Measure the units of ``sweep`` not stored yet (those of ``repeats`` only, when given) with one server.

    ``on_open`` is told what the run held when it was opened, before anything is launched.

    Raises:
        _PassFailed: the server failed (ServerStartError, BenchmarkError); the run is
            marked failed (the units stored before are kept).
        ConfigError, HostError (DiskFullError): as :func:`benchmark_variant`.
    """
    opened = _open(sweep, fresh=fresh, on_open=on_open)
    run = opened.writer
    try:
        return _measure_pending(sweep, run, opened.previous, repeats)
    except (ServerError, BenchmarkError) as exc:
        raise _PassFailed(run.path, exc) from exc


def _open(sweep: _Sweep, *, fresh: bool, on_open: Callable[[SweepResume], None] | None = None) -> ResumedRun:
    """Open (resume, or create) and lock the run of ``sweep``; ``on_open`` is told what it held."""
    v, plan = sweep.variant, sweep.plan
    opened = open_run(v.name, identity=sweep.identity, label=sweep.label, fresh=fresh, root=sweep.root,
                      engine=sweep.engine, host=sweep.host, plan=plan, time_scale=float(plan.time_scale),
                      extra={"variant_definition": _variant_definition(v)})
    run = opened.writer
    if on_open is not None:
        on_open(SweepResume(v.name, run.path, stored=len(run.units_completed), total=len(plan.units()),
                            repeats=plan.repeats))
    return opened


class _PassFailed(Exception):
    """A pass's server failed: the run it wrote (marked failed) and the error."""

    def __init__(self, run: Path, error: ServerError | BenchmarkError) -> None:
        super().__init__(str(error))
        self.run, self.error = run, error


def _measure_pending(sweep: _Sweep, run: Any, previous: dict[str, Any] | None, repeats: Sequence[int] | None) -> Path:
    v, eng, plan = sweep.variant, sweep.engine, sweep.plan
    with run:
        _stop_leftover(previous, sweep.host)
        todo = [u for u in run.pending_units(plan) if repeats is None or u[0] in repeats]
        if not todo:
            run.finish(status="incomplete" if run.pending_units(plan) else "complete")
            return run.path
        desc = v.name if repeats is None or plan.repeats == 1 else \
            f"{v.name} (repeat {', '.join(str(r + 1) for r in repeats)}/{plan.repeats})"
        # The (patched) tree first (the pre-flight ran in _prepare); the tree is removed after the server stops.
        with prepare_launch(v, host=sweep.host, engine=eng, findings=sweep.preflight) as prep, \
                _started_server(sweep, prep.launch_variant, todo[0][0],
                                not_ready=lambda failed: run.annotate(server_log=failed.log_path)) as server:
            info = server.server_info()
            report_progress(f"{desc}: server ready on {sweep.host} ({eng.name}), measuring {len(todo)} level(s)")
            run.record_server(
                launch_command=server.command, client_location=_client_location(server, sweep.where),
                server_info=info,
                simulation=info.get("simulation"),
                gpus=_server_gpus(server) if eng.wants_gpus else None,
                server_log=server.process.log_path,
                server_process={"id": server.id, "pid": server.process.pid, "pgid": server.process.pgid,
                                "start_time": server.process.start_time, "port": server.port,
                                # spawn to first ready answer: weights, kernel compilation and CUDA graphs on SGLang
                                "ready_after_s": server.ready_after_s},
                # provenance (version, base commit, dirty, patch sha256 + text, launch command),
                # sim_stand_in, pre-flight findings, effective settings and their findings
                **prep.manifest_extra(server_info=info, log_text=server.logs_tail(LOG_LINES),
                                      launch_command=server.command),
            )

            on_level = _LevelSink(sweep, run, server, prep, todo)
            if sweep.where == "host":
                with start_host_sweep(server.host, server.port, plan, python=server.python, units=todo) as hosted:
                    run.annotate(client={"python": hosted.python, "pid": hosted.process.pid,
                                         "results_path": hosted.results_path, "log_path": hosted.log_path})
                    hosted.follow(on_level=on_level, progress=sweep.progress, desc=desc)
            else:
                run_sweep(server.url, plan, progress=sweep.progress, on_level=on_level, units=todo, desc=desc,
                          gpu_telemetry=is_local(server.host))  # this machine's GPUs are the server's only here
            try:
                final_info = server.server_info()
            except (ServerError, HostError) as exc:  # every level is stored: a last read that fails loses nothing
                final_info = None
                warnings.warn(f"{v.name}: could not read /server_info after the sweep ({exc}); the run keeps the "
                              "one read after its last level", stacklevel=3)
        run.finish(status="incomplete" if run.pending_units(plan) else "complete", server_info=final_info)
    return run.path


class _LevelSink:
    """The sweep's ``on_level``: each level a server measured, labelled, reported, then kept (one step each,
    in this order; each step is its own collaborator)."""

    def __init__(self, sweep: _Sweep, run: Any, server: ServerHandle, prep: Any, todo: Sequence[Any]) -> None:
        self.labels = _LevelLabels(server, prep)
        self.progress = _LevelProgress(sweep, todo)
        self.keeper = _LevelKeeper(run, server, variant=sweep.variant.name, plan=sweep.plan)

    def __call__(self, level: Any) -> None:
        level = self.labels(level)
        self.progress(level)
        self.keeper(level)


class _LevelLabels:
    """Labels a measured level: the server's batch log lines within the level's window join its observations
    (a log that cannot be read, because the host dropped, costs those lines only, never the level's rows),
    and the launch's labels (stand-in, effective settings) join its rows."""

    def __init__(self, server: ServerHandle, prep: Any) -> None:
        self.server, self.prep = server, prep

    def __call__(self, level: Any) -> Any:
        try:
            log_text = self.server.logs_tail(LEVEL_LOG_LINES)
        except (HostError, ServerError):
            log_text = ""
        return self.prep.label_level(add_log_series(level, log_text))


class _LevelProgress:
    """Reports a measured level: one line on ``workbench report``'s terminal (:func:`_progress_line`), with
    how many of the pass's units are done and the time since the pass began."""

    def __init__(self, sweep: _Sweep, todo: Sequence[Any]) -> None:
        self.sweep, self.todo = sweep, list(todo)
        self.started = time.monotonic()

    def __call__(self, level: Any) -> None:
        done = self.todo.index(level.unit) + 1 if level.unit in self.todo else None
        _progress_line(self.sweep, level, done=done, total=len(self.todo), elapsed_s=time.monotonic() - self.started)


class _LevelKeeper:
    """The failure policy: where a measured level goes in its run.

    Stored (:meth:`RunWriter.save_level <workbench.store.RunWriter.save_level>`) when no request failed,
    or when some failed while the server still serves (its processes run and it answers ``/server_info``:
    the failures were its answers). A level whose server stopped serving (killed by any signal, stopped by
    ``workbench servers --stop``, a scheduler or a host shutdown), or whose every request failed, is kept
    apart by :func:`_fail_level`, which stops the pass (BenchmarkError), so a re-run measures it again.
    """

    def __init__(self, run: Any, server: ServerHandle, *, variant: str, plan: SweepPlan) -> None:
        self.run, self.server, self.variant, self.plan = run, server, variant, plan

    def __call__(self, level: Any) -> None:
        errors = level.requests["error"].notna() if len(level.requests) else None
        if errors is None or not errors.any():
            self.run.save_level(level)
            return
        serving = _still_serving(self.server)
        if serving and not errors.all():
            self.run.save_level(level)  # some requests failed; the server still serves
            return
        alive = serving or _still_running(self.server)
        _fail_level(self.run, level, self.server, alive=alive, serving=serving, variant=self.variant,
                    label=self.plan.unit_label(level.unit))


#: Seconds a server that stopped answering is given to exit before its level is judged (SIGTERM, then SIGKILL
#: after 15 s: ``workbench servers --stop``), so the log read for its cause is the whole of it.
STOPPING_GRACE_S = 20.0


def _still_serving(server: ServerHandle) -> bool:
    """True when ``server``'s processes run and it answers ``/server_info``.

    Its processes alone are not enough: a server sent SIGTERM (``workbench servers --stop``, a scheduler,
    a host shutdown) stops listening at once, so the requests still to send fail in a moment, while its
    processes take up to a second (the simulator) or longer (SGLang) to exit.
    """
    if not server.alive:
        return False
    try:
        server.server_info()
    except (ServerError, HostError):
        return False
    return True


def _still_running(server: ServerHandle, *, grace_s: float = STOPPING_GRACE_S, poll_s: float = 0.25,
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> bool:
    """Whether a server that no longer answers still runs ``grace_s`` seconds on (False as soon as it is gone)."""
    deadline = clock() + grace_s
    while True:
        try:
            if not server.alive:
                return False
        except HostError:
            return False  # its host cannot say: judge it as gone (its level is failed either way)
        if clock() >= deadline:
            return True
        sleep(poll_s)


#: Held while a server starts: the servers of parallel passes start one at a time, since a start is
#: CPU-bound (imports, the tokenizer, the prompt set) and would hold up the levels already measuring.
_STARTING = threading.Lock()


@contextlib.contextmanager
def _started_server(sweep: _Sweep, variant: Variant, repeat: int,
                    not_ready: Callable[[ServerHandle], None] | None = None) -> Iterator[ServerHandle]:
    """``variant``'s server for ``sweep``, started (one start at a time, :data:`_STARTING`) and stopped.

    ``not_ready`` is told of a server that did not become ready, before it is stopped (the run records its
    log's path, so the failure names the log; a ready server's is recorded with the rest of its facts).
    """
    with _STARTING:
        server = ServerHandle.start(variant, host=sweep.host, engine=sweep.engine,
                                    sim_options=sweep.sim_options(repeat), wait=False)
        try:
            if sweep.on_server is not None:
                sweep.on_server(server)
            server.wait_ready()
        except BaseException as exc:
            if not_ready is not None:
                try:
                    not_ready(server)
                except HostError as note:  # the start's failure is the one to report; this is a note on it
                    exc.add_note(f"Its log's path could not be recorded in the run: {note}")
            server.stop()
            raise
    with server:
        yield server


def _server_gpus(server: ServerHandle) -> list[dict[str, Any]] | None:
    """The GPUs the server's host has (index, name, memory in MiB), for the manifest; None when they cannot be read.

    The figures of a real engine mean little without the GPU model, so every real pass records it.
    """
    from workbench.hosts import call_helper

    try:
        answer = call_helper(server.host, "gpu_inventory", {"topology": False}, python=server.python)
    except WorkbenchError:
        return None
    visible = server.record.gpus
    return [{k: g.get(k) for k in ("index", "name", "memory_total_mib")} for g in answer.get("gpus") or []
            if visible is None or g.get("index") in visible]


def _fail_level(run: Any, level: Any, server: ServerHandle, *, alive: bool, variant: str, label: str,
                serving: bool = True) -> None:
    """Keep ``level`` apart as failed (not a measured unit) and stop the pass with a BenchmarkError.

    A level whose server died or stopped answering (or whose every request failed) measures
    no load as planned: its rows go to ``failed_levels.parquet`` with the server's state, the
    classification of its log and the log's tail (manifest ``failed_levels``), never to the
    charts; the sweep stops marching into further levels of that server. ``alive``: its
    processes still run; ``serving``: it still answers ``/server_info``.
    """
    tail = server.logs_tail(30)
    launch = server.launch_text  # the env and command: a tail that repeats neither is still classified
    failure = classify_failure(tail, launch=launch) if alive else server_died(tail, launch=launch)
    first_error = str(level.requests["error"].dropna().iloc[0])
    failed = int(level.requests["error"].notna().sum())
    state = ("still running" if serving else "still running but no longer answering") if alive else \
        "no longer running"
    signal_note = (f"unknown (a signal: its log's last word is {failure.evidence!r})" if failure.evidence else
                   "unknown (no error in its log: a signal such as SIGKILL)")
    run.save_failed_level(level, {
        "label": label, "server_alive": alive, "server_serving": serving, "server_pid": server.process.pid,
        # a detached server is not our child: its exit status cannot be read, only inferred from its log
        "exit_signal": None if alive else (signal_note if failure.kind == "killed" else "unknown (it logged an error)"),
        "kind": failure.kind, "suggestion": failure.suggestion, "evidence": failure.evidence,
        "first_error": first_error, "log_tail": tail})
    counts = f"{failed} of {len(level.requests)} requests failed"
    what = (f"Every request of a level failed ({label})" if serving else
            f"The server of {variant!r} stopped answering during {label} ({counts})" if alive else
            f"The server of {variant!r} died during {label} ({counts})")
    error = BenchmarkError(
        f"{what}: server {state}; its log is classified {failure.kind}: {failure.suggestion} First error: "
        f"{first_error}. That level is kept apart as failed (manifest failed_levels, failed_levels.parquet; "
        f"not charted) and no further level of this server is measured. Measured levels are kept in {run.path}; "
        f"running the same sweep again resumes it. Server log tail:\n{tail}")
    error.kind, error.log_tail, error.suggestion = failure.kind, tail, failure.suggestion  # read by _failure
    raise error


def _progress_line(sweep: _Sweep, level: Any, *, done: int | None, total: int, elapsed_s: float) -> None:
    """One line for the terminal of ``workbench report`` (nothing elsewhere): the level just measured."""
    if not reporting_progress():
        return
    plan = sweep.plan
    repeat = f" repeat {level.repeat + 1}/{plan.repeats}" if plan.repeats > 1 else ""
    count = f" ({done}/{total})" if done is not None else ""
    rows = add_request_columns(level.requests) if len(level.requests) else None
    per_request = float(rows["per_request_tok_s"].mean()) if rows is not None else float("nan")
    failed = int((~rows["ok"]).sum()) if rows is not None else 0
    report_progress(f"{sweep.variant.name}{repeat}: {plan.level_label(level.index)} done{count}: "
                    f"{level.output_tok_s:.0f} output tok/s, {per_request:.1f} tok/s per request"
                    f"{f', {failed} failed' if failed else ''}{' (simulated)' if sweep.engine.simulated else ''}"
                    f" [{elapsed_s:.0f} s]")


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
    sweep = _prepare(SweepOptions(
        variant=variant, host=host, engine=engine, client=client, concurrency_levels=concurrency_levels,
        requests_per_level=requests_per_level, max_new_tokens=max_new_tokens, prompt_set=prompt_set, seed=seed,
        request_rates=request_rates, max_concurrency=max_concurrency, sim_profile=sim_profile, time_scale=time_scale,
        warmup_requests=warmup_requests, unique_prompts=unique_prompts, repeats=repeats, label=label, fresh=fresh,
        runs_dir=runs_dir, progress=progress, model_path=model_path, draft_model_path=draft_model_path,
        tp_size=tp_size, gpus=gpus, load=load))
    try:
        _one_node_only([sweep])
        return _run_pass(sweep, repeats=None, fresh=fresh)
    except _PassFailed as failed:
        raise failed.error


def _client_location(server: ServerHandle, where: str) -> str:
    """The manifest's ``client_location``: ``"host:<alias>"``, ``"local (tunnel)"`` or ``"local"``."""
    if where == "host":
        return f"host:{server.host.name}"
    return "local" if is_local(server.host) else "local (tunnel)"


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
        _check_fleet_arguments(kwargs)
    chosen: list[str | Path | Variant] = list(variants or [])
    if grid is not None:
        params = {k: kwargs.get(k) for k in TEMPLATE_PARAMETERS}
        expansion = expand_grid(grid, parameters=parameters_given(params), host=kwargs.get("host"),
                                engine=kwargs.get("engine"))
        if len(expansion.refused):
            warnings.warn(f"grid {expansion.grid.name!r}: {len(expansion.refused)} of {len(expansion.table)} points "
                          "refused by the pre-flight checks (not launched):\n" + "\n".join(expansion.refusal_lines()),
                          stacklevel=2)
        chosen += expansion.variants
    if not chosen:
        raise ConfigError("variants is empty; name at least a baseline and one speculative variant (or a grid)")
    sweeps = [_prepare(_options(v, kwargs)) for v in chosen]
    names = [s.variant.name for s in sweeps]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"variant(s) {twice} named twice (runs and charts are keyed by name); name each once")
    if fleet is not None:
        if parallel not in (None, 1):
            raise ConfigError(f"parallel={parallel} and fleet cannot be combined: on a fleet as many units run at once "
                              "as its GPU slots allow; leave parallel unset")
        return _benchmark_on_fleet(sweeps, fleet, fresh=fresh, on_failure=on_failure, on_resume=on_resume,
                                   progress=sweeps[0].progress)
    _one_node_only(sweeps)
    at_once = _parallel_passes(parallel, sweeps)
    paths: dict[int, Path] = {}
    failed: dict[int, SweepFailure] = {}
    started: set[int] = set()
    lock = threading.Lock()  # the chains below report from their own threads

    def one_pass(i: int, repeat: int) -> tuple[int, Path | None, _PassFailed | None]:
        try:
            return i, _run_pass(sweeps[i], repeats=[repeat], fresh=fresh and i not in started,
                                on_open=on_resume if i not in started else None), None
        except _PassFailed as exc:
            return i, None, exc

    def settle(i: int, path: Path | None, exc: _PassFailed | None) -> None:
        with lock:
            if exc is None:
                paths[i] = path  # type: ignore[assignment]
            else:
                failure = _failure(sweeps[i], exc.run, exc.error)
                failed[i] = failure
                paths[i] = failure.run
                warnings.warn(f"{failure.variant}: server failed ({failure.kind}); going on with the next variant. "
                              f"{failure.message}", stacklevel=3)
                if on_failure is not None:
                    on_failure(failure)
            started.add(i)

    repeats = sweeps[0].plan.repeats
    if at_once > 1 and at_once >= len(sweeps):
        # A slot for every variant: each variant's repeats one after the other in its own thread, all
        # variants at once, so no variant waits at the end of a repeat for the slowest one (the repeats'
        # server starts still take turns, _STARTING). Every pass has the same company for most of its
        # time, which is what the alternating order below gives one pass after another.
        def chain(i: int) -> None:
            for repeat in range(repeats):
                settle(*one_pass(i, repeat))
                if i in failed:
                    return  # that variant's later repeats are skipped, as below

        with concurrent.futures.ThreadPoolExecutor(max_workers=len(sweeps)) as pool:
            list(pool.map(chain, range(len(sweeps))))
        return [paths[i] for i in range(len(sweeps))]
    for repeat in range(repeats):
        order = list(range(len(sweeps))) if repeat % 2 == 0 else list(reversed(range(len(sweeps))))
        todo = [i for i in order if i not in failed]
        if at_once > 1:
            with concurrent.futures.ThreadPoolExecutor(max_workers=at_once) as pool:
                outcomes: Any = list(pool.map(lambda i, r=repeat: one_pass(i, r), todo))
        else:
            outcomes = (one_pass(i, repeat) for i in todo)  # lazily: one pass after the other
        for outcome in outcomes:
            settle(*outcome)
    return [paths[i] for i in range(len(sweeps))]


def _parallel_passes(parallel: Any, sweeps: Sequence[_Sweep]) -> int:
    """How many passes :func:`benchmark_variants` runs at once: ``parallel`` checked (None: 1).

    Raises:
        ConfigError: not a whole number >= 1, or above 1 for a real engine or another host.
    """
    if parallel is None:
        return 1
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ConfigError(f"parallel must be a whole number >= 1 (passes measured at once), got {parallel!r}")
    if parallel > 1 and not all(s.engine.simulated and is_local(s.host) for s in sweeps):
        raise ConfigError(f"parallel={parallel} needs the simulated engine on this machine: servers on a GPU host "
                          "would share its GPUs and time each other; leave parallel at 1 (or None) there")
    return parallel


def _failure(sweep: _Sweep, run: Path, exc: Exception) -> SweepFailure:
    """What a failed pass of ``sweep`` leaves: its run and the classified error."""
    classified = classify_failure(str(exc))
    kind = getattr(exc, "kind", None) or classified.kind
    suggestion = getattr(exc, "suggestion", None) or (classified.suggestion if classified.kind == kind else "")
    tail = getattr(exc, "log_tail", "")
    message = f"{type(exc).__name__}: {exc}" + (f"\nServer log tail:\n{tail}" if tail and tail not in str(exc) else "")
    try:
        manifest = load_run(run).manifest
    except WorkbenchError:
        manifest = {}
    return SweepFailure(variant=sweep.variant.name, run=run, kind=kind, message=message, suggestion=suggestion,
                        measured=len(manifest.get("units_completed") or []),
                        log_path=str(manifest.get("server_log") or ""), log_tail=tail)


# -- on a fleet (docs/FLEET.md) ------------------------------------------------------------
# The same unit as Ray tasks: _fleet_unit runs _measure_pending on a Ray worker into a recorder, and
# _benchmark_on_fleet replays each finished unit into the variant's local run (workbench.sweeps).

#: Server failure kinds (``workbench.servers``) that another attempt may not meet: the port taken between
#: asking for a free one and binding it, a lease that ran out while the worker was starved. Retried by Ray.
TRANSIENT_KINDS = frozenset({"port_in_use", "lease_expired"})


@dataclasses.dataclass(frozen=True)
class _FleetWork:
    """What one unit's Ray task gets: the validated sweep, the repeat and its units, the local run."""

    sweep: _Sweep
    repeat: int
    units: tuple[tuple[int, int], ...]
    run_path: Path


class TransientUnitFailure(Exception):
    """A unit's server failed in a way another attempt may not meet (:data:`TRANSIENT_KINDS`): Ray retries it."""


def _fleet_unit(work: _FleetWork, placement: Placement) -> UnitRecorder:
    """The Ray task of one unit: measure ``work`` on this node with the GPUs Ray gave it.

    Returns:
        The recorder of the unit's writes; ``recorder.failure`` is a :class:`SweepFailure`
        when its server failed (classified, log tail attached; not retried), else None.

    Raises:
        TransientUnitFailure: the server failed transiently (Ray runs the unit again).
    """
    sweep = work.sweep
    # a variant spanning nodes: ranks > 0 start on the other nodes of the unit's placement group, rank 0 is
    # this unit's server (its per-node command); one node: the group is the variant itself
    with rank_group(sweep.variant, placement, engine=sweep.engine.name,
                    sim_options=sweep.sim_options(work.repeat)) as group:
        recorder = UnitRecorder(work.run_path, work.units, tags={
            "fleet_host": placement.host, "fleet_gpus": ",".join(placement.gpus), **group.row_tags(placement)})
        variant = group.variant
        variant = apply_parameters(variant, gpus=",".join(placement.gpus)) if placement.gpus else variant
        here = dataclasses.replace(sweep, variant=variant, host="local", where="local", progress=False,
                                   on_server=group.adopt if group.nnodes > 1 else None)
        try:
            _measure_pending(here, recorder, None, [work.repeat])
        except (ServerError, BenchmarkError) as exc:
            failure = group.explain(_failure(here, work.run_path, exc))
            if failure.kind in TRANSIENT_KINDS:
                raise TransientUnitFailure(failure.message) from None
            recorder.failure = failure
    return recorder


def _on_fleet(sweep: _Sweep, fleet: Fleet) -> _Sweep:
    """``sweep`` as the driver keeps it: its run's host is the fleet, and its identity says so (a fleet
    sweep resumes fleet runs, whatever the cluster's address is today)."""
    return dataclasses.replace(sweep, host=fleet.name, identity=sweep_identity({"sweep": sweep.identity,
                                                                                "fleet": True}))


def _units(sweeps: Sequence[_Sweep], writers: Sequence[Any]) -> list[FleetUnit]:
    """One unit per (variant, repeat) with levels not on disk, repeat by repeat, variants alternating their
    order (as one host runs them), so the first units placed are a fair mix."""
    units = []
    repeats = sweeps[0].plan.repeats
    for repeat in range(repeats):
        order = range(len(sweeps)) if repeat % 2 == 0 else reversed(range(len(sweeps)))
        for i in order:
            todo = tuple(u for u in writers[i].pending_units(sweeps[i].plan) if u[0] == repeat)
            if not todo:
                continue
            name = sweeps[i].variant.name
            label = name if repeats == 1 else f"{name} repeat {repeat + 1}/{repeats}"
            variant = sweeps[i].variant  # a unit spanning nodes asks for its GPUs per node, on nnodes nodes
            units.append(FleetUnit(key=(i, repeat), label=label, gpus=gpus_per_node(variant),
                                   payload=_FleetWork(sweeps[i], repeat, todo, writers[i].path),
                                   nnodes=nnodes_of(variant)))
    return units


def _benchmark_on_fleet(sweeps: Sequence[_Sweep], fleet: str | Fleet, *, fresh: bool,
                       on_failure: Callable[[SweepFailure], None] | None,
                       on_resume: Callable[[SweepResume], None] | None, progress: bool) -> list[Path]:
    """Measure ``sweeps`` (validated by :func:`workbench._investigation._prepare`) on a Ray cluster.

    Every unit not on disk is submitted at once; Ray runs as many as the GPU slots allow
    (one per host at a time with ``Fleet(one_unit_per_host=True)``). A unit whose server fails
    is reported (a :class:`UserWarning`, ``on_failure``) with its classification and log tail
    and its levels measured before are kept; the variant's other units go on. The runs are
    finished ``complete``, ``incomplete`` (units left: cancelled) or ``failed``.

    Returns:
        The run directories, in the order of ``sweeps``.

    Raises:
        ConfigError: Ray is missing, a unit needs more GPUs than any node has, or a run is
            being written by another sweep.
        HostError: the cluster cannot be reached; DiskFullError: no room for a level.
        KeyboardInterrupt: Ctrl-C, after every unit was cancelled (their servers stopped).
    """
    fleet = Fleet.of(fleet)
    connect(fleet)  # before any run is opened: a cluster that does not answer leaves no empty run
    kept = [_on_fleet(s, fleet) for s in sweeps]
    writers: list[Any] = []
    try:
        for s in kept:
            writers.append(_open(s, fresh=fresh, on_open=on_resume).writer)
            writers[-1].annotate(fleet={"address": fleet.address, "one_unit_per_host": fleet.one_unit_per_host,
                                        "max_retries": fleet.max_retries})
        return _run_fleet(kept, writers, fleet, on_failure=on_failure, progress=progress)
    finally:
        for s, w in zip(kept, writers):
            if w.manifest.get("status") == "running":
                w.finish(status="incomplete", error="the fleet sweep was interrupted; run it again to resume")


def _run_fleet(sweeps: Sequence[_Sweep], writers: Sequence[Any], fleet: Fleet, *,
               on_failure: Callable[[SweepFailure], None] | None, progress: bool) -> list[Path]:
    units = _units(sweeps, writers)
    earlier = [list(w.manifest.get("fleet_units") or []) for w in writers]  # units of earlier runs of this sweep
    outcomes: list[UnitOutcome] = []
    failures: dict[int, list[SweepFailure]] = {}
    from tqdm.auto import tqdm

    bar = tqdm(total=len(units), disable=not progress or not units, unit="unit", desc="fleet")

    def on_done(outcome: UnitOutcome) -> None:
        i = outcome.unit.key[0]
        outcomes.append(outcome)
        recorder = outcome.result
        if recorder is not None:
            replay(recorder, writers[i])
        failure = recorder.failure if recorder is not None else None
        failed = unit_failure(outcome)
        if outcome.error is not None and failed is not None and failed[0] != "cancelled":  # lost, or it raised
            failure = SweepFailure(variant=sweeps[i].variant.name, run=writers[i].path, kind=failed[0],
                                   message=f"{outcome.unit.label}: {failed[1]}")
        mine = [o for o in outcomes if o.unit.key[0] == i]
        writers[i].annotate(fleet_units=earlier[i] + [unit_entry(o, outcomes) for o in mine])
        where = outcome.placement.host if outcome.placement else "nowhere"
        report_progress(f"{outcome.unit.label}: {'failed' if failure else 'done'} on {where} "
                        f"({len(outcomes)}/{len(units)} units)")
        bar.update(1)
        bar.set_postfix_str(" ".join(f"{r['host']}:{r['units']}" for r in host_summary(outcomes)))
        if failure is not None:
            failures.setdefault(i, []).append(failure)
            warnings.warn(f"{failure.variant}: a unit failed ({failure.kind}) on {where}; the other units go on. "
                          f"{failure.message}", stacklevel=4)
            if on_failure is not None:
                on_failure(failure)

    try:
        run_units(units, _fleet_unit, retry_exceptions=(TransientUnitFailure,), fleet=fleet, on_done=on_done,
                  on_prestart=lambda warm: _prestarted(warm, writers))
    finally:
        bar.close()
    for i, w in enumerate(writers):  # co-tenants again, now that every unit's interval is known
        if any(o.unit.key[0] == i for o in outcomes):
            w.annotate(fleet_units=earlier[i] + [unit_entry(o, outcomes) for o in outcomes if o.unit.key[0] == i])
    for row in host_summary(outcomes):
        report_progress(f"fleet host {row['host']}: {row['units']} unit(s) done, {row['failed']} failed, "
                        f"GPUs {row['gpus_used'] or '-'}, busy {row['busy_s']:.0f} s")
    for i, (s, w) in enumerate(zip(sweeps, writers)):
        if w.pending_units(s.plan):
            status = "failed" if i in failures else "incomplete"
            w.finish(status=status, error="; ".join(f.message.splitlines()[0] for f in failures.get(i, [])) or None)
        else:
            w.finish(status="complete")
    return [w.path for w in writers]


def _prestarted(warm: Prestart, writers: Sequence[Any]) -> None:
    """Record the workers warmed before the first submission (manifest ``fleet_prestart``) and say so."""
    for w in writers:
        w.annotate(fleet_prestart={"wanted": warm.wanted, "warmed": warm.warmed, "seconds": warm.seconds,
                                   "workers": [list(x) for x in warm.workers]})
    report_progress(f"fleet: {warm.warmed} of {warm.wanted} worker(s) warmed in {warm.seconds:.1f} s before the "
                    "first unit was submitted")


def _check_fleet_arguments(kwargs: dict[str, Any]) -> None:
    """Refuse ``benchmark_variants`` keywords that a fleet replaces.

    Raises:
        ConfigError: ``host`` other than ``"local"`` (the fleet's nodes are the hosts), or
            ``client="host"`` (on a fleet the load generator always runs beside the server).
    """
    if kwargs.get("host", "local") != "local":
        raise ConfigError(f"host={kwargs['host']!r} and fleet= both say where to run; a fleet replaces host "
                          "(each unit runs on the node Ray places it on): drop host")
    if kwargs.get("client") not in (None, "local"):
        raise ConfigError("on a fleet the load generator runs beside the server on the unit's node; drop client=")
