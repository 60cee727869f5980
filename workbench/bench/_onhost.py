"""Run a sweep's load generator ON the host that runs the server, and pull the results back.

Measured from this machine through an SSH tunnel, every TTFT and ITL would include
the network between laptop and GPU host, and its jitter. Here the load generator
runs next to the server instead:

1. the plan (:class:`~workbench.bench._plan.SweepPlan`, validated where it was built,
   prompt texts included) is written to ``<dir>/plan.json`` on the host (``<dir>`` is a fresh directory under
   ``$WORKBENCH_SWEEPS_DIR``, else ``~/.cache/specbench-workbench/sweeps`` there,
   ``$WORKBENCH_CACHE_DIR/sweeps`` here);
2. ``python -m workbench.bench._remote_run`` starts detached on the host
   (:func:`workbench.hosts._processes.spawn`: its own session, so a dropped SSH
   connection does not stop it), with the host's Python and the workbench package
   bundle on ``PYTHONPATH`` (:func:`workbench.hosts._bundle.ensure_bundle`; the
   checkout itself on this machine), against ``http://127.0.0.1:<port>``. It needs
   only the standard library and aiohttp there;
3. it writes ``<dir>/results.jsonl`` as it measures (:mod:`workbench.bench._sweeplog`),
   and this side follows that file, one round trip per poll (the ``process_status``
   helper returns the new complete lines and whether the runner still runs), turns
   each level into the :class:`~workbench.bench._sweep.LevelResult` that
   :func:`~workbench.bench._sweep.run_sweep` would make, hands it to ``on_level``,
   and returns the same :class:`~workbench.bench._sweep.SweepResult`.

When the SSH connection drops, the next poll reconnects (for up to
``reconnect_for_s``); the runner keeps measuring meanwhile and nothing it wrote is
lost. :func:`read_host_sweep` reads a results file again later, e.g. after this
process gave up or was restarted.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from workbench import paths
from workbench.bench._plan import SweepPlan, Unit
from workbench.bench._sweep import LevelResult, SweepAssembler, SweepFollower, SweepResult
from workbench.bench._sweeplog import SweepLogReader
from workbench.errors import BenchmarkError, CommandError, CommandTimeout, ConfigError, HostError
from workbench.errors import HostAuthError, HostKeyError
from workbench.hosts import Host, SpawnedProcess, call_helper, ensure_bundle, get_host, host_python, is_local, processes

__all__ = ["HostSweep", "read_host_sweep", "run_sweep_on_host", "start_host_sweep"]

#: Sweep directories on SSH hosts (``~`` is the login user's home there).
REMOTE_SWEEPS_DIR = "~/.cache/specbench-workbench/sweeps"
#: Most bytes of the results file one poll brings back.
MAX_POLL_BYTES = 4 << 20


def _shell_dir(path: str) -> str:
    if path == "~":
        return '"$HOME"'
    return '"$HOME"/' + shlex.quote(path[2:]) if path.startswith("~/") else shlex.quote(path)


#: Seconds :meth:`HostSweep.follow` keeps retrying an unreachable host, unless told otherwise.
DEFAULT_RECONNECT_S = 300.0


def reconnect_seconds() -> float:
    """``$WORKBENCH_RECONNECT_S`` (seconds), else :data:`DEFAULT_RECONNECT_S`.

    Raises:
        ConfigError: the variable is not a number > 0.
    """
    text = os.environ.get("WORKBENCH_RECONNECT_S")
    if not text:
        return DEFAULT_RECONNECT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"WORKBENCH_RECONNECT_S must be a number of seconds > 0, got {text!r}")
    return value


def _transient(exc: HostError) -> bool:
    """True for a host error a later poll may not hit (connection dropped, host unreachable or slow);
    False for one a reconnect cannot cure (a helper that failed, a refused host key or login)."""
    if isinstance(exc, CommandTimeout):
        return True
    return not isinstance(exc, (CommandError, HostKeyError, HostAuthError))


def _new_sweep_dir(host: Host, root: str | None) -> str:
    """Create a fresh ``<root>/sweep-<random>`` on the host; its absolute path."""
    wanted = (
        root
        or os.environ.get("WORKBENCH_SWEEPS_DIR")
        or (str(paths.cache_dir() / "sweeps") if is_local(host) else REMOTE_SWEEPS_DIR)
    )
    name = f"sweep-{secrets.token_hex(6)}"
    line = (
        f'r={_shell_dir(wanted)}; mkdir -p "$r" && chmod 700 "$r" && mkdir "$r"/{shlex.quote(name)} && '
        f'cd "$r"/{shlex.quote(name)} && pwd -P'
    )
    res = host.run(line, timeout_s=60, check=False)
    found = res.stdout.strip().splitlines()[-1] if res.ok and res.stdout.strip() else ""
    if not found.startswith("/"):
        raise HostError(f"Cannot create a sweep directory under {wanted} on host {host.name!r}: {res.describe()}")
    return found


class HostSweep:
    """A load generator running on a host (from :func:`start_host_sweep`).

    A context manager: leaving the ``with`` block on an exception stops the runner,
    except on a :class:`HostError` (the host may be out of reach; the runner then
    finishes on its own, see :meth:`follow`).

    Attributes:
        host: where it runs.
        process: the detached runner (pid, process group, start time, log path).
        directory: its directory on the host (``plan.json``, ``results.jsonl``, ``runner.log``).
        python: the host's interpreter running it.
        plan: what it sends.
        base_url: the server's URL as the host sees it.
        units: the ``(repeat, level_index)`` pairs it measures, in order.
    """

    def __init__(
        self,
        host: Host,
        *,
        process: SpawnedProcess,
        directory: str,
        python: str,
        plan: SweepPlan,
        base_url: str,
        units: Sequence[Unit] | None = None,
    ) -> None:
        self.host = host
        self.process = process
        self.directory = directory
        self.python = python
        self.plan = plan
        self.base_url = base_url
        self.units = plan.units() if units is None else list(units)

    @property
    def results_path(self) -> str:
        """The results file on the host (JSON Lines, :mod:`workbench.bench._sweeplog`)."""
        return f"{self.directory}/results.jsonl"

    @property
    def log_path(self) -> str:
        """The runner's stdout and stderr on the host."""
        return self.process.log_path

    def follow(
        self,
        *,
        on_level: Callable[[LevelResult], None] | None = None,
        progress: bool = True,
        poll_s: float = 0.5,
        reconnect_for_s: float | None = None,
        desc: str | None = None,
    ) -> SweepResult:
        """Follow the results file until the runner is done; return what :func:`run_sweep` would.

        Args:
            on_level: called with each level as soon as its line is read (exceptions
                from it stop the runner and propagate).
            progress: show a progress bar over the measured requests.
            poll_s: seconds between polls while nothing new arrives.
            reconnect_for_s: how long to keep retrying while the host cannot be reached
                (default: ``$WORKBENCH_RECONNECT_S``, else :data:`DEFAULT_RECONNECT_S`).
            desc: the progress bar's label (default ``"sweep on <host>"``).

        Returns:
            The :class:`SweepResult`, equal to the one :func:`run_sweep` builds from the
            same measurements.

        Raises:
            ConfigError: the runner refused the plan (e.g. a ``time_scale`` the
                simulated server contradicts).
            BenchmarkError: the runner failed or died (its log tail is quoted); the
                levels measured before went to ``on_level``.
            HostError: the host stayed unreachable for ``reconnect_for_s`` (the runner
                is left running; :func:`read_host_sweep` reads its results later).
        """
        reconnect_for_s = reconnect_seconds() if reconnect_for_s is None else reconnect_for_s
        follower = SweepFollower(
            self.plan, self.units, progress=progress, desc=desc or f"sweep on {self.host.name}", on_level=on_level
        )
        reader = SweepLogReader(
            on_request=follower.on_request, source=f"{self.results_path} on host {self.host.name!r}"
        )
        offset, lost_since, left_running = 0, None, False
        try:
            while not reader.done:
                try:
                    status = self._poll(offset)
                    lost_since = None
                except HostError as exc:
                    if not _transient(exc):
                        raise
                    lost_since = lost_since if lost_since is not None else time.monotonic()
                    if time.monotonic() - lost_since > reconnect_for_s:
                        left_running = True
                        raise HostError(
                            f"Lost host {self.host.name!r} for over {reconnect_for_s:g} s while following the "
                            f"load generator there (pid {self.process.pid}): {exc}. It keeps measuring on its own, "
                            f"and the levels read before are stored. Once the host is back, read its results with "
                            f"workbench.bench.read_host_sweep({self.host.name!r}, {self.results_path!r}), or run "
                            "the same sweep again (it resumes and stops the server left there; its lease stops it "
                            "otherwise). WORKBENCH_RECONNECT_S sets how long to wait for the host."
                        ) from exc
                    time.sleep(min(4 * poll_s, 5.0))
                    continue
                text = (status.get("log") or {}).get("text") or ""
                complete = text[: text.rfind("\n") + 1]
                offset += len(complete.encode("utf-8"))
                for event in reader.feed(complete):
                    follower.add(event)
                if reader.done:
                    break
                if not status.get("alive") and not complete:
                    raise BenchmarkError(
                        f"The load generator on host {self.host.name!r} exited before finishing the sweep "
                        f"({len(follower.assembler.levels)} of {len(self.units)} levels measured). Does "
                        f"{self.python} there have aiohttp (SGLang's environment does)? Log "
                        f"{self.log_path}:\n{self.log_tail()}"
                    )
                if not complete:
                    time.sleep(poll_s)
        except BaseException:
            if not left_running:
                self._stop_quietly()
            raise
        finally:
            follower.close()
        if reader.failure is not None:
            raise _runner_error(reader.failure, self)
        return follower.assembler.result()

    def _poll(self, offset: int) -> dict[str, Any]:
        """The runner's status and the results file's new bytes from ``offset``, in one round trip."""
        spec = {
            "id": "sweep",
            "pid": self.process.pid,
            "pgid": self.process.pgid,
            "start_time": self.process.start_time,
            "log_path": self.results_path,
            "log_offset": offset,
        }
        answer = call_helper(
            self.host,
            "process_status",
            {"processes": [spec], "ports": False, "max_log_bytes": MAX_POLL_BYTES},
            python=self.python,
            timeout_s=60,
        )
        status = answer["processes"][0]
        if (status.get("log") or {}).get("reset"):
            raise BenchmarkError(
                f"{self.results_path} on host {self.host.name!r} shrank while being read; something else writes to it"
            )
        return status

    @property
    def alive(self) -> bool:
        """True while the runner's process group runs."""
        return bool(processes.group_members(self.host, self.process.pgid, since=self.process.start_time))

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the runner's log on the host."""
        return processes.read_tail(self.host, self.log_path, lines=lines)

    def stop(self) -> None:
        """Stop the runner's process group (SIGTERM, then SIGKILL); a no-op once it exited.

        Raises:
            HostError: processes survived SIGKILL, or the host cannot be reached.
        """
        processes.stop(self.host, self.process, grace_s=5.0)

    def _stop_quietly(self) -> None:
        try:
            self.stop()
        except HostError:
            pass  # already failing; the original error is the one to report

    def __enter__(self) -> "HostSweep":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is not None and not isinstance(exc, HostError):
            self._stop_quietly()

    def __repr__(self) -> str:
        return f"<HostSweep pid={self.process.pid} on {self.host.name} -> {self.base_url} {self.directory}>"


def _runner_error(failure: Mapping[str, Any], sweep: HostSweep | None, where: str = "") -> Exception:
    kind, message = failure["error_type"], failure["message"]
    if kind == "ConfigError":
        return ConfigError(message)
    if kind == "BenchmarkError":
        return BenchmarkError(message)
    origin = f"on host {sweep.host.name!r} (log {sweep.log_path})" if sweep is not None else where
    trace = f"\n--- runner traceback ---\n{failure['traceback']}" if failure.get("traceback") else ""
    return BenchmarkError(f"The load generator {origin} stopped: {kind}: {message}{trace}")


def start_host_sweep(
    host: str | Host,
    base_port_on_host: int,
    plan: SweepPlan,
    *,
    python: str | None = None,
    config_file: str | os.PathLike[str] | None = None,
    sweeps_dir: str | None = None,
    units: Sequence[Unit] | None = None,
) -> HostSweep:
    """Start the load generator on ``host`` against ``http://127.0.0.1:<base_port_on_host>`` there.

    ``plan`` travels as :meth:`SweepPlan.to_json <workbench.bench._plan.SweepPlan.to_json>`
    (prompt texts included, so the host needs no data files) and is read back there
    unchanged.

    Args:
        host: ``"local"``, an ssh config alias, or a :class:`Host`.
        base_port_on_host: the server's port on the host's loopback (``ServerHandle.port``).
        plan: what to send (:meth:`SweepPlan.build <workbench.bench._plan.SweepPlan.build>`).
        python: the host's interpreter (needs aiohttp; default ``$WORKBENCH_REMOTE_PYTHON``
            or ``python3``, this interpreter locally). ``ServerHandle.python`` is the
            server's, which for SGLang has aiohttp.
        config_file: ssh config for an alias (like ``ssh -F``).
        sweeps_dir: parent of the sweep's directory on the host; default
            ``$WORKBENCH_SWEEPS_DIR``, else ``~/.cache/specbench-workbench/sweeps`` there
            (on this machine ``$WORKBENCH_CACHE_DIR/sweeps``).
        units: the ``(repeat, level_index)`` pairs to measure, in order (default: all).

    Returns:
        A :class:`HostSweep`; call :meth:`HostSweep.follow`.

    Raises:
        ConfigError: a port that is not one (nothing is started).
        HostError: the host cannot be used, or the runner died at once (log attached).
    """
    port = int(base_port_on_host)
    if not 0 < port < 65536:
        raise ConfigError(f"base_port_on_host must be a TCP port, got {base_port_on_host!r}")
    h = get_host(host, config_file=config_file)
    py = host_python(h, python)
    tree = ensure_bundle(h)
    directory = _new_sweep_dir(h, sweeps_dir)
    base_url = f"http://127.0.0.1:{port}"
    h.write_text(f"{directory}/plan.json", json.dumps(plan.to_json()))
    todo = plan.units() if units is None else [(int(r), int(i)) for r, i in units]
    argv = [
        py,
        "-m",
        "workbench.bench._remote_run",
        "--plan",
        f"{directory}/plan.json",
        "--results",
        f"{directory}/results.jsonl",
        "--url",
        base_url,
    ]
    if units is not None:
        argv += ["--units", json.dumps(todo, separators=(",", ":"))]
    proc = processes.spawn(h, argv, log_path=f"{directory}/runner.log", env={"PYTHONPATH": tree})
    return HostSweep(h, process=proc, directory=directory, python=py, plan=plan, base_url=base_url, units=todo)


def run_sweep_on_host(
    host: str | Host,
    base_port_on_host: int,
    plan: SweepPlan,
    *,
    on_level: Callable[[LevelResult], None] | None = None,
    progress: bool = True,
    poll_s: float = 0.5,
    reconnect_for_s: float | None = None,
    python: str | None = None,
    config_file: str | os.PathLike[str] | None = None,
    sweeps_dir: str | None = None,
    units: Sequence[Unit] | None = None,
) -> SweepResult:
    """:func:`~workbench.bench._sweep.run_sweep`, with the load generator running on ``host``.

    The same plan gives the same :class:`SweepResult` (identical tables for the same
    measurements); the clocks are the host's. ``on_level`` is called as each level's
    results arrive here.

    Args:
        host, base_port_on_host, plan, python, config_file, sweeps_dir, units: see :func:`start_host_sweep`.
        on_level, progress: as for ``run_sweep``.
        poll_s, reconnect_for_s: see :meth:`HostSweep.follow`.

    Raises:
        ConfigError, BenchmarkError, HostError: see :func:`start_host_sweep` and
        :meth:`HostSweep.follow`.
    """
    with start_host_sweep(
        host, base_port_on_host, plan, python=python, config_file=config_file, sweeps_dir=sweeps_dir, units=units
    ) as sweep:
        return sweep.follow(on_level=on_level, progress=progress, poll_s=poll_s, reconnect_for_s=reconnect_for_s)


def read_host_sweep(
    host: str | Host,
    results_path: str,
    *,
    config_file: str | os.PathLike[str] | None = None,
) -> SweepResult:
    """The :class:`SweepResult` in a results file on ``host`` (pulled back with one read).

    A runner still going, or one that died, leaves fewer levels than planned; compare
    ``result.plan.num_levels`` with ``len(result.levels)``.

    Raises:
        HostError: the file cannot be read.
        ConfigError, BenchmarkError: the runner recorded a failure, or measured no level.
    """
    h = get_host(host, config_file=config_file)
    text = h.read_text(results_path)
    reader = SweepLogReader(source=f"{results_path} on host {h.name!r}")
    assembler = SweepAssembler()
    for event in reader.feed(text[: text.rfind("\n") + 1]):
        assembler.add(event)
    if reader.failure is not None:
        raise _runner_error(reader.failure, None, where=f"that wrote {results_path} on host {h.name!r}")
    return assembler.result()
