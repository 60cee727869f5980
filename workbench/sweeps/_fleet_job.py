"""A fleet sweep as a Ray job: submit it, re-attach and pull its finished units, cancel it.

``workbench bench ... --fleet NAME --detach`` submits the same ``bench`` command as a Ray job
(``JobSubmissionClient``, Ray 2.60, through the dashboard's SSH forward with the fleet's token) whose
entrypoint is the hosts' absolute interpreter running the workbench's CLI, with ``--fleet auto`` (the job's
driver joins the cluster it runs in: Ray sets ``RAY_ADDRESS`` for it) and ``--runs-dir`` the fleet's runs
folder on the head. The job is the sweep's driver: it runs on the head and goes on when the workbench that
submitted it disconnects; its units write each level on the head as they finish (today's store, atomic).

``workbench fleet attach [JOB]`` pulls from the head's runs folder into the local runs folder every file that
changed since the last pull into that folder (size and mtime, recorded in the fleet file per local folder; a
run deleted here is pulled again): a run folder new here is copied into a hidden temporary folder beside it and renamed into place whole; a run already here gets its
changed files each replaced atomically, ``manifest.json`` last, so ``runs list`` and ``report --from-runs``
never see a half-pulled run. ``workbench fleet cancel [JOB]`` stops the job: its driver gets SIGINT (the job
is submitted with ``RAY_JOB_STOP_SIGNAL=SIGINT``), i.e. the sweep's Ctrl-C (every unit cancelled, its server
stopped; docs/FLEET.md), and SIGKILL after :data:`STOP_WAIT_S` (then each server's watchdog stops it).
"""

from __future__ import annotations

import os
import posixpath
import shlex
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, HostError
from workbench.sweeps._fleet_state import FleetState, load_state, save_state
from workbench.sweeps._fleet_up import dashboard

__all__ = ["STOP_WAIT_S", "TERMINAL", "cancel_job", "job_entrypoint", "job_status", "pull_runs", "submit_sweep"]

#: Seconds between the job's SIGINT and its SIGKILL (``RAY_JOB_STOP_WAIT_TIME_S``; Ray's default 3 s).
STOP_WAIT_S = 8
#: The job statuses after which nothing changes (Ray's ``JobStatus``).
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
#: Runs the workbench's CLI with the arguments after it (the entrypoint needs no console script on the PATH).
#: A job's process may inherit SIGINT blocked or ignored (Ray blocks it in its processes; the job supervisor
#: unblocks it only when its own environment says so, and Python installs no handler for a signal ignored at
#: its start): unblocked here, and both SIGINT and SIGTERM raise KeyboardInterrupt, so a stopped job cancels its
#: sweep as Ctrl-C does, whichever signal Ray sends.
_CLI = (
    "import signal; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM}); "
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGTERM, signal.default_int_handler); from workbench.cli import app; app()"
)


def _client(base: str, state: FleetState) -> Any:
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as exc:
        raise ConfigError("a fleet job needs Ray: pip install 'specbench-workbench[fleet]'") from exc
    return JobSubmissionClient(base, headers={"authorization": f"Bearer {state.token()}"})


def job_entrypoint(state: FleetState, bench_args: Sequence[str]) -> str:
    """The job's shell command: ``PYTHON -c <cli> bench ARGS... --fleet auto --runs-dir RUNS --no-progress``."""
    return shlex.join(
        [
            state.python,
            "-c",
            _CLI,
            "bench",
            *bench_args,
            "--fleet",
            "auto",
            "--runs-dir",
            state.runs_dir,
            "--no-progress",
        ]
    )


def _job(state: FleetState, job: str | None) -> str:
    """``job``, else the fleet's last submitted one.

    Raises:
        ConfigError: the fleet has no job, or ``job`` is not one of its.
    """
    if job is None:
        if not state.jobs:
            raise ConfigError(
                f"fleet {state.name!r} has no job; submit one with `workbench bench VARIANT... "
                f"--fleet {state.name} --detach`"
            )
        return max(state.jobs, key=lambda j: state.jobs[j]["submitted_at"])
    if job not in state.jobs:
        raise ConfigError(f"{job!r} is not a job of fleet {state.name!r} (its jobs: {', '.join(state.jobs) or 'none'})")
    return job


def submit_sweep(name: str, bench_args: Sequence[str]) -> str:
    """Submit ``workbench bench BENCH_ARGS...`` as a Ray job on fleet ``name``; returns its submission id."""
    state = load_state(name)
    with dashboard(state) as base:
        job = _client(base, state).submit_job(
            entrypoint=job_entrypoint(state, bench_args),
            runtime_env={"env_vars": {"RAY_JOB_STOP_SIGNAL": "SIGINT", "RAY_JOB_STOP_WAIT_TIME_S": str(STOP_WAIT_S)}},
        )
    state = load_state(name)
    state.jobs[job] = {"submitted_at": time.time(), "argv": list(bench_args)}
    save_state(state)
    return str(job)


def job_status(name: str, job: str | None = None) -> tuple[str, str]:
    """``(job id, status)`` of ``job`` (default: the fleet's last)."""
    state = load_state(name)
    chosen = _job(state, job)
    with dashboard(state) as base:
        return chosen, str(_client(base, state).get_job_status(chosen))


def cancel_job(name: str, job: str | None = None, *, timeout_s: float = 60.0) -> tuple[str, str, float, float]:
    """Stop ``job`` (default: the fleet's last) and wait until Ray says it ended.

    Returns:
        ``(job id, final status, seconds from the stop request to that status, the stop request's UTC time)``.

    Raises:
        HostError: still not ended after ``timeout_s``.
    """
    state = load_state(name)
    chosen = _job(state, job)
    with dashboard(state) as base:
        client = _client(base, state)
        start, asked_at = time.monotonic(), time.time()
        client.stop_job(chosen)
        while time.monotonic() - start < timeout_s:
            status = str(client.get_job_status(chosen)).split(".")[-1]
            if status in TERMINAL:
                return chosen, status, time.monotonic() - start, asked_at
            time.sleep(0.2)
    raise HostError(f"job {chosen} of fleet {name!r} did not end within {timeout_s:.0f} s of its stop request")


def _remote_files(host: Any, runs_dir: str) -> dict[str, tuple[int, float]]:
    """``relative path -> (size, mtime)`` of the files under ``runs_dir`` on ``host`` (hidden ones left out:
    the store's temporary files)."""
    listing = host.run(
        ["sh", "-c", f"cd {shlex.quote(runs_dir)} 2>/dev/null && find . -type f -printf '%P\\t%s\\t%T@\\n' || true"],
        timeout_s=120,
    ).stdout
    found = {}
    for line in listing.splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or any(p.startswith(".") for p in parts[0].split("/")):
            continue
        found[parts[0]] = (int(parts[1]), float(parts[2]))
    return found


def pull_runs(name: str, runs_root: Path) -> dict[str, list[str]]:
    """Copy what changed in fleet ``name``'s runs folder on the head into ``runs_root``.

    Returns:
        run id -> the files pulled now (empty: nothing new).

    Raises:
        HostError: the head cannot be read or a local file not written (what was pulled before stays).
    """
    from workbench.hosts import get_host

    state = load_state(name)
    host = get_host(state.head, config_file=state.ssh_config)
    seen = state.pulled.setdefault(str(runs_root.resolve()), {})  # per local runs folder
    changed: dict[str, list[str]] = {}
    remote = _remote_files(host, state.runs_dir)
    for rel, stamp in sorted(remote.items()):
        run = rel.split("/", 1)[0]
        if rel.count("/") == 0 or (seen.get(rel) == list(stamp) and (runs_root / run).exists()):
            continue
        changed.setdefault(run, []).append(rel)
    runs_root.mkdir(parents=True, exist_ok=True)
    for run, files in changed.items():
        files.sort(key=lambda rel: rel.endswith("/manifest.json"))  # the manifest last
        final = runs_root / run
        whole = not final.exists()
        into = runs_root / f".pull-{run}.{os.getpid()}.tmp" if whole else runs_root
        try:
            for rel in sorted(r for r in remote if r.startswith(run + "/")) if whole else files:
                host.get(posixpath.join(state.runs_dir, rel), into / (rel.split("/", 1)[1] if whole else rel))
            if whole:
                os.rename(into, final)
        finally:
            if whole and into.exists():
                shutil.rmtree(into, ignore_errors=True)
        for rel in (r for r in remote if r.startswith(run + "/")):
            seen[rel] = list(remote[rel])
        save_state(state)
    return {run: sorted(files) for run, files in changed.items()}
