"""One server's pass: open the variant's run, start its server, measure the units not stored, stop it.

:func:`run_pass` is the unit of work of every sweep on one host (:func:`~workbench.sweeps.benchmark_variant`,
each pass of :func:`~workbench.sweeps.benchmark_variants`); :func:`measure_pending` is the same pass
into any :class:`~workbench.sweeps._run_sink.RunSink` (a fleet unit runs it into a recorder on its Ray
worker: :mod:`workbench.sweeps._fleet_pass`). Each measured level goes through the level pipeline
(:class:`~workbench.sweeps._sweep_levels.LevelSink`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from workbench.bench import SweepPlan, run_sweep, start_host_sweep
from workbench.errors import BenchmarkError, HostError, ServerError, WorkbenchError
from workbench.hosts import is_local
from workbench.report import report_progress
from workbench.servers import ServerHandle
from workbench.store import ResumedRun, open_run
from workbench.sweeps._run_sink import RunSink
from workbench.sweeps._sweep_levels import LevelSink
from workbench.sweeps._sweep_outcomes import PassFailed, SweepResume
from workbench.sweeps._sweep_prep import VariantSweep, variant_definition
from workbench.sweeps._sweep_reuse import reuse_stored_levels
from workbench.variants import LOG_LINES, Variant, prepare_launch

__all__ = ["measure_pending", "open_sweep_run", "run_pass"]


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
        warnings.warn(
            f"Could not stop server {server_id} on {host!r} left by a killed sweep: {exc}; its "
            "host-side lease stops it once it runs out",
            stacklevel=3,
        )


def run_pass(
    sweep: VariantSweep,
    *,
    repeats: Sequence[int] | None,
    fresh: bool,
    on_open: Callable[[SweepResume], None] | None = None,
) -> Path:
    """Measure the units of ``sweep`` not stored yet (those of ``repeats`` only, when given) with one server.

    ``on_open`` is told what the run held when it was opened, before anything is launched.

    Raises:
        PassFailed: the server failed (ServerStartError, BenchmarkError); the run is
            marked failed (the units stored before are kept).
        ConfigError, HostError (DiskFullError): as :func:`benchmark_variant`.
    """
    opened = open_sweep_run(sweep, fresh=fresh, on_open=on_open)
    run = opened.writer
    try:
        return measure_pending(sweep, run, opened.previous, repeats)
    except (ServerError, BenchmarkError) as exc:
        raise PassFailed(run.path, exc) from exc


def open_sweep_run(
    sweep: VariantSweep, *, fresh: bool, on_open: Callable[[SweepResume], None] | None = None
) -> ResumedRun:
    """Open (resume, or create) and lock the run of ``sweep``; ``on_open`` is told what it held.

    A new run (none of this identity stored, ``fresh`` off) first gets the units a stored run of the same sweep
    at other levels measured of this sweep's levels (:func:`~workbench.sweeps._sweep_reuse.reuse_stored_levels`),
    so a sweep extended by levels measures only the new ones.
    """
    v, plan = sweep.variant, sweep.plan
    opened = open_run(
        v.name,
        identity=sweep.identity,
        label=sweep.label,
        fresh=fresh,
        root=sweep.root,
        engine=sweep.engine,
        host=sweep.host,
        plan=plan,
        time_scale=float(plan.time_scale),
        extra={"variant_definition": variant_definition(v)},
    )
    run = opened.writer
    reused = None
    if not opened.resumed and not fresh:
        try:
            reused = reuse_stored_levels(sweep, run)
        except BaseException as exc:
            run.finish(
                status="interrupted" if isinstance(exc, KeyboardInterrupt) else "failed",
                error=f"copying the levels stored in another run failed: {type(exc).__name__}: {exc}",
            )
            raise
    if on_open is not None:
        on_open(
            SweepResume(
                v.name,
                run.path,
                stored=len(run.units_completed),
                total=len(plan.units()),
                repeats=plan.repeats,
                reused_from=reused.source if reused is not None else None,
            )
        )
    return opened


def measure_pending(
    sweep: VariantSweep, run: RunSink, previous: dict[str, Any] | None, repeats: Sequence[int] | None
) -> Path:
    """Measure the units of ``sweep`` not in ``run`` (those of ``repeats`` only, when given) with one server, and
    finish ``run``; ``previous`` is what the run's manifest held when it was reopened (a server it left is stopped).

    Raises:
        ServerError, BenchmarkError: the server failed (``run`` is finished ``failed``; its units are kept).
    """
    v, eng, plan = sweep.variant, sweep.engine, sweep.plan
    with run:
        _stop_leftover(previous, sweep.host)
        todo = [u for u in run.pending_units(plan) if repeats is None or u[0] in repeats]
        if not todo:
            run.finish(status="incomplete" if run.pending_units(plan) else "complete")
            return run.path
        desc = (
            v.name
            if repeats is None or plan.repeats == 1
            else f"{v.name} (repeat {', '.join(str(r + 1) for r in repeats)}/{plan.repeats})"
        )
        # The (patched) tree first (the pre-flight ran in _prepare); the tree is removed after the server stops.
        with (
            prepare_launch(v, host=sweep.host, engine=eng, findings=sweep.preflight) as prep,
            _started_server(
                sweep,
                prep.launch_variant,
                todo[0][0],
                not_ready=lambda failed: run.annotate(server_log=failed.log_path),
            ) as server,
        ):
            info = server.server_info()
            report_progress(f"{desc}: server ready on {sweep.host} ({eng.name}), measuring {len(todo)} level(s)")
            run.record_server(
                launch_command=server.command,
                client_location=_client_location(server, sweep.where),
                server_info=info,
                simulation=info.get("simulation"),
                gpus=_server_gpus(server) if eng.wants_gpus else None,
                server_log=server.process.log_path,
                server_process={
                    "id": server.id,
                    "pid": server.process.pid,
                    "pgid": server.process.pgid,
                    "start_time": server.process.start_time,
                    "port": server.port,
                    # spawn to first ready answer: weights, kernel compilation and CUDA graphs on SGLang
                    "ready_after_s": server.ready_after_s,
                },
                # the KV pool it became ready with (tokens, running-request cap, context), checked against one
                # request of this plan (servers/_kv_cache.py: a pool too small for it is warned about)
                kv_pool=dataclasses.asdict(server.kv_pool) if server.kv_pool is not None else None,
                # provenance (version, base commit, dirty, patch sha256 + text, launch command),
                # sim_stand_in, pre-flight findings, effective settings and their findings
                **prep.manifest_extra(
                    server_info=info, log_text=server.logs_tail(LOG_LINES), launch_command=server.command
                ),
            )

            on_level = LevelSink(sweep, run, server, prep, todo)
            if sweep.where == "host":
                with start_host_sweep(server.host, server.port, plan, python=server.python, units=todo) as hosted:
                    run.annotate(
                        client={
                            "python": hosted.python,
                            "pid": hosted.process.pid,
                            "results_path": hosted.results_path,
                            "log_path": hosted.log_path,
                        }
                    )
                    hosted.follow(on_level=on_level, progress=sweep.progress, desc=desc)
            else:
                run_sweep(
                    server.url,
                    plan,
                    progress=sweep.progress,
                    on_level=on_level,
                    units=todo,
                    desc=desc,
                    gpu_telemetry=is_local(server.host),
                )  # this machine's GPUs are the server's only here
            try:
                final_info = server.server_info()
            except (ServerError, HostError) as exc:  # every level is stored: a last read that fails loses nothing
                final_info = None
                warnings.warn(
                    f"{v.name}: could not read /server_info after the sweep ({exc}); the run keeps the "
                    "one read after its last level",
                    stacklevel=3,
                )
        run.finish(status="incomplete" if run.pending_units(plan) else "complete", server_info=final_info)
    return run.path


def request_tokens(plan: SweepPlan) -> int:
    """Prompt + output tokens of the largest request the plan sends (what the KV pool must hold per request):
    random token ids of ``input_len``, else the longest prompt (its ids, or its text at 4 characters a token)."""
    if plan.sweep == "input_len" and plan.sweep_values:
        prompt = max(int(v) for v in plan.sweep_values)
    elif plan.input_len:
        prompt = plan.input_len
    else:
        prompt = max((len(p.input_ids) if p.input_ids else len(p.text) // 4 for p in plan.prompts), default=0)
    output = (
        max(int(v) for v in plan.sweep_values)
        if plan.sweep == "output_len" and plan.sweep_values
        else plan.max_new_tokens
    )
    return prompt + output


#: Held while a server starts: the servers of parallel passes start one at a time, since a start is
#: CPU-bound (imports, the tokenizer, the prompt set) and would hold up the levels already measuring.
_STARTING = threading.Lock()


@contextlib.contextmanager
def _started_server(
    sweep: VariantSweep, variant: Variant, repeat: int, not_ready: Callable[[ServerHandle], None] | None = None
) -> Iterator[ServerHandle]:
    """``variant``'s server for ``sweep``, started (one start at a time, :data:`_STARTING`) and stopped.

    ``not_ready`` is told of a server that did not become ready, before it is stopped (the run records its
    log's path, so the failure names the log; a ready server's is recorded with the rest of its facts).
    """
    with _STARTING:
        server = ServerHandle.start(
            variant, host=sweep.host, engine=sweep.engine, sim_options=sweep.sim_options(repeat), wait=False
        )
        try:
            if sweep.on_server is not None:
                sweep.on_server(server)
            plan = sweep.plan
            # the most requests in flight: the top concurrency (closed loop) or the open loop's cap; an uncapped
            # open loop's is not known before it runs, so its pool is checked against the context alone
            in_flight = max(plan.concurrency_levels) if plan.request_rates is None else plan.max_concurrency
            server.wait_ready(request_tokens=request_tokens(plan) if in_flight else None, concurrency=in_flight)
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
    return [
        {k: g.get(k) for k in ("index", "name", "memory_total_mib")}
        for g in answer.get("gpus") or []
        if visible is None or g.get("index") in visible
    ]


def _client_location(server: ServerHandle, where: str) -> str:
    """The manifest's ``client_location``: ``"host:<alias>"``, ``"local (tunnel)"`` or ``"local"``."""
    if where == "host":
        return f"host:{server.host.name}"
    return "local" if is_local(server.host) else "local (tunnel)"
